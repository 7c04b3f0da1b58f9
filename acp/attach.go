package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// This file re-attaches a session to the agent's conversation: after a
// restart of the bridge (SessionOptions.Resume) and after the agent process
// died and was restarted. ACP session/resume is used when the agent
// advertises sessionCapabilities.resume, else session/load when it
// advertises loadSession (its replay of the conversation is swallowed: the
// bridge has it already), else, or when those fail, a new session with
// session/new. Each outcome is reported as a backend.Attached event.

// replayStart and replayEnd are queued around a session/load: the
// conversation updates the agent replays between them are dropped.
type (
	replayStart struct{}
	replayEnd   struct{}
)

// attach opens the ACP session on a running agent: a new one when prev
// is "", else the conversation prev continued if the agent can, else a
// new one reported as AttachFresh.
func (s *session) attach(ctx context.Context, prev string) error {
	if s.opts.Fork != "" && prev == "" {
		if err := s.fork(ctx, s.opts.Fork); err != nil {
			return err
		}
		s.attached(backend.AttachNew, "")
		return nil
	}
	if prev == "" {
		if err := s.create(ctx); err != nil {
			return err
		}
		s.attached(backend.AttachNew, "")
		return nil
	}
	a, err := s.p.ensure(ctx)
	if err != nil {
		return err
	}
	reason := "the agent can neither resume nor load an earlier session"
	var tries []string
	if a.caps.SessionCapabilities.Resume != nil {
		tries = append(tries, sdk.AgentMethodSessionResume)
	}
	if a.caps.LoadSession {
		tries = append(tries, sdk.AgentMethodSessionLoad)
		if s.opts.Import {
			// The bridge has none of its history: have the agent replay it.
			tries = append([]string{sdk.AgentMethodSessionLoad}, slices.DeleteFunc(tries, func(m string) bool { return m == sdk.AgentMethodSessionLoad })...)
		}
	}
	for _, method := range tries {
		err := s.reopen(ctx, a, method, prev)
		if err == nil {
			how := backend.AttachResumed
			if method == sdk.AgentMethodSessionLoad {
				how = backend.AttachLoaded
			}
			s.log.Info().Str("acp_session", prev).Str("method", method).Msg("agent session re-attached")
			s.attached(how, "")
			if s.opts.Import {
				// The replayed history is the chat's before its first turn.
				if err := s.queue.flush(ctx); err != nil {
					return err
				}
			}
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		s.log.Warn().Err(err).Str("acp_session", prev).Str("method", method).Msg("the agent could not continue its earlier session")
		reason = err.Error()
	}
	s.log.Warn().Str("acp_session", prev).Str("reason", reason).
		Msg("starting a new agent session: the agent does not remember the earlier turns")
	if err := s.create(ctx); err != nil {
		return err
	}
	s.attached(backend.AttachFresh, reason)
	return nil
}

// attached reports the ACP session the session now lives on.
func (s *session) attached(how backend.AttachKind, reason string) {
	s.mu.Lock()
	id := s.acpID
	s.mu.Unlock()
	s.queue.push(queueItem{event: backend.Attached{ID: id, How: how, Reason: reason}})
}

// reopen continues the ACP session id on agent a with method
// (session/resume or session/load). Its updates are routed to s from
// before the request, so that the replay of a session/load is dropped
// rather than left for the next session that registers the id.
func (s *session) reopen(ctx context.Context, a *agentProc, method, id string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("session closed")
	}
	load := method == sdk.AgentMethodSessionLoad
	// The replay of a session/load: dropped (the bridge has the
	// conversation), or passed on for one of the agent's own sessions.
	var start, end any = replayStart{}, replayEnd{}
	if s.opts.Import {
		start, end = backend.Replay{}, backend.Replay{Done: true}
	}
	if load {
		s.queue.push(queueItem{event: start})
	}
	a.register(id, s)
	// The same MCP servers as session/new (mcp.go); both requests have
	// this shape.
	servers, left := mcpServers(s.opts.McpServers, a.caps.McpCapabilities)
	params := s.sessionParams(a, servers)
	params["sessionId"] = id
	// Raw, as session/new: claude-code-acp's answer carries `models`.
	raw, err := a.call(ctx, method, params)
	if load {
		// Every update of the replay was queued before the answer.
		s.queue.push(queueItem{event: end})
	}
	if err != nil {
		a.unregister(id, s)
		return a.describeErr(fmt.Sprintf("continuing the agent session %s (%s)", id, method), err)
	}
	var resp newSessionResult
	if len(raw) > 0 && !isNull(raw) {
		if err := json.Unmarshal(raw, &resp); err != nil {
			a.unregister(id, s)
			return fmt.Errorf("continuing the agent session %s (%s): the agent's answer cannot be read: %w", id, method, err)
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		a.unregister(id, s)
		return errors.New("session closed")
	}
	s.proc, s.acpID = a, id
	s.mu.Unlock()
	s.opened(ctx, a, id, resp, left, false)
	return nil
}

// replayedUpdate reports whether a raw update that arrives during a
// session/load is part of the replayed conversation (dropped), rather than
// the session's settings, commands, title or context window (kept).
func replayedUpdate(raw json.RawMessage) bool {
	var u struct {
		Kind string `json:"sessionUpdate"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return true
	}
	switch u.Kind {
	case "available_commands_update", kindCurrentModeUpdate, kindConfigOptionUpdate, "session_info_update", "usage_update":
		return false
	}
	return true
}
