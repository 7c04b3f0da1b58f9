package acp

import (
	"context"

	"github.com/ahp-bridge/ahp-bridge/backend"
	sdk "github.com/coder/acp-go-sdk"
)

// clientHandler serves the agent's requests to the client (fs, terminals)
// through the SDK. session/update and session/request_permission never get
// here: agentProc.route handles them from the raw JSON.
type clientHandler struct{ a *agentProc }

var _ sdk.Client = (*clientHandler)(nil)

func (c *clientHandler) session(id sdk.SessionId) (*session, error) {
	s := c.a.session(string(id))
	if s == nil {
		return nil, fsError(codeInvalidParams, "unknown session %q", string(id))
	}
	return s, nil
}

// ReadTextFile implements fs/read_text_file.
func (c *clientHandler) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	s, err := c.session(p.SessionId)
	if err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	text, err := s.readTextFile(p.Path, p.Line, p.Limit)
	if err != nil {
		s.log.Info().Str("path", p.Path).Err(err).Msg("refused fs/read_text_file")
		return sdk.ReadTextFileResponse{}, err
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile implements fs/write_text_file.
func (c *clientHandler) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	s, err := c.session(p.SessionId)
	if err != nil {
		return sdk.WriteTextFileResponse{}, err
	}
	// What the file held before, for the session's changeset (nil: it did
	// not exist, or cannot be read, which the write then says).
	var old *string
	if text, err := s.readTextFile(p.Path, nil, nil); err == nil {
		old = &text
	}
	if err := s.writeTextFile(p.Path, p.Content); err != nil {
		s.log.Info().Str("path", p.Path).Err(err).Msg("refused fs/write_text_file")
		return sdk.WriteTextFileResponse{}, err
	}
	s.queue.push(queueItem{event: backend.FileEdited{Path: s.absPath(p.Path), Old: old, New: p.Content}})
	return sdk.WriteTextFileResponse{}, nil
}

// RequestPermission is not reached (see agentProc.routePermission); should
// it be, the request is answered "cancelled" rather than left hanging.
func (c *clientHandler) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{
		Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"},
	}}, nil
}

// SessionUpdate is not reached (see agentProc.routeUpdate).
func (c *clientHandler) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }

// CreateTerminal implements terminal/create.
func (c *clientHandler) CreateTerminal(_ context.Context, p sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	s, err := c.session(p.SessionId)
	if err != nil {
		return sdk.CreateTerminalResponse{}, err
	}
	id, err := s.createTerminal(p)
	if err != nil {
		return sdk.CreateTerminalResponse{}, err
	}
	return sdk.CreateTerminalResponse{TerminalId: id}, nil
}

// KillTerminal implements terminal/kill.
func (c *clientHandler) KillTerminal(_ context.Context, p sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	s, err := c.session(p.SessionId)
	if err != nil {
		return sdk.KillTerminalResponse{}, err
	}
	return sdk.KillTerminalResponse{}, s.killTerminal(p.TerminalId)
}

// TerminalOutput implements terminal/output.
func (c *clientHandler) TerminalOutput(_ context.Context, p sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	s, err := c.session(p.SessionId)
	if err != nil {
		return sdk.TerminalOutputResponse{}, err
	}
	return s.terminalOutput(p.TerminalId)
}

// ReleaseTerminal implements terminal/release.
func (c *clientHandler) ReleaseTerminal(_ context.Context, p sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	s, err := c.session(p.SessionId)
	if err != nil {
		return sdk.ReleaseTerminalResponse{}, err
	}
	return sdk.ReleaseTerminalResponse{}, s.releaseTerminal(p.TerminalId)
}

// WaitForTerminalExit implements terminal/wait_for_exit.
func (c *clientHandler) WaitForTerminalExit(ctx context.Context, p sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	s, err := c.session(p.SessionId)
	if err != nil {
		return sdk.WaitForTerminalExitResponse{}, err
	}
	return s.waitForExit(ctx, p.TerminalId)
}
