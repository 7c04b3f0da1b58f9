package acp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// This file serves the agent's own sessions (backend.AgentSessions):
// what the agent advertised at initialize (loadSession and
// sessionCapabilities: list, resume, fork, close, delete,
// additionalDirectories), and session/list, session/delete and
// session/fork. The requests are sent raw (agentProc.call), like
// session/new: acp-go-sdk v0.13.5 types them, but its typed results drop
// what its schema lacks, and several of these methods are still marked
// unstable in the ACP schema.

var _ backend.AgentSessions = (*Provider)(nil)

// sessionCaps reads what the agent can do with its sessions from its
// initialize answer.
func sessionCaps(c sdk.AgentCapabilities) backend.SessionCaps {
	sc := c.SessionCapabilities
	return backend.SessionCaps{
		List:                  sc.List != nil,
		Load:                  c.LoadSession,
		Resume:                sc.Resume != nil,
		Fork:                  sc.Fork != nil,
		Close:                 sc.Close != nil,
		Delete:                sc.Delete != nil,
		AdditionalDirectories: sc.AdditionalDirectories != nil,
	}
}

// SessionCaps returns what the agent advertised when it last started, and
// whether it runs; it never starts the agent.
func (p *Provider) SessionCaps() (caps backend.SessionCaps, known, running bool) {
	p.mu.Lock()
	a := p.proc
	p.mu.Unlock()
	if a == nil {
		return backend.SessionCaps{}, false, false
	}
	caps = sessionCaps(a.caps)
	if p.cfg.HideAgentSessions {
		caps.List = false
	}
	return caps, true, !a.isExited()
}

// ListsWithoutRunning reports the provider's listAgentSessions setting.
func (p *Provider) ListsWithoutRunning() bool { return p.cfg.ListAgentSessions }

// listResult is the part of a session/list result this package reads.
type listResult struct {
	Sessions []struct {
		SessionID             string   `json:"sessionId"`
		Cwd                   string   `json:"cwd"`
		Title                 *string  `json:"title"`
		UpdatedAt             *string  `json:"updatedAt"`
		AdditionalDirectories []string `json:"additionalDirectories"`
	} `json:"sessions"`
	NextCursor *string `json:"nextCursor"`
}

// ListAgentSessions sends session/list (params cwd and cursor, each only
// when given) and returns the page the agent answered. Entries without a
// session id are dropped.
func (p *Provider) ListAgentSessions(ctx context.Context, cwd, cursor string) (backend.AgentSessionPage, error) {
	a, err := p.ensure(ctx)
	if err != nil {
		return backend.AgentSessionPage{}, err
	}
	if a.caps.SessionCapabilities.List == nil {
		return backend.AgentSessionPage{}, fmt.Errorf("the %s agent cannot list its sessions (it does not advertise sessionCapabilities.list)", p.cfg.ID)
	}
	params := map[string]any{}
	if cwd != "" {
		params["cwd"] = cwd
	}
	if cursor != "" {
		params["cursor"] = cursor
	}
	raw, err := a.call(ctx, sdk.AgentMethodSessionList, params)
	if err != nil {
		return backend.AgentSessionPage{}, a.describeErr("listing the agent's sessions", err)
	}
	var res listResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return backend.AgentSessionPage{}, fmt.Errorf("listing the agent's sessions: the agent's answer cannot be read: %w", err)
	}
	page := backend.AgentSessionPage{Sessions: make([]backend.AgentSession, 0, len(res.Sessions))}
	for _, s := range res.Sessions {
		if s.SessionID == "" {
			continue
		}
		as := backend.AgentSession{ID: s.SessionID, Cwd: s.Cwd, AdditionalDirectories: s.AdditionalDirectories}
		if s.Title != nil {
			as.Title = *s.Title
		}
		if s.UpdatedAt != nil {
			as.UpdatedAt = *s.UpdatedAt
		}
		page.Sessions = append(page.Sessions, as)
	}
	if res.NextCursor != nil && *res.NextCursor != cursor {
		// A cursor that does not move would page forever.
		page.Next = *res.NextCursor
	}
	return page, nil
}

// DeleteAgentSession sends session/delete when the agent advertises it.
func (p *Provider) DeleteAgentSession(ctx context.Context, id string) (bool, error) {
	a, err := p.ensure(ctx)
	if err != nil {
		return false, err
	}
	if a.caps.SessionCapabilities.Delete == nil {
		return false, nil
	}
	if _, err := a.call(ctx, sdk.AgentMethodSessionDelete, map[string]any{"sessionId": id}); err != nil {
		return false, a.describeErr(fmt.Sprintf("deleting the agent session %s", id), err)
	}
	return true, nil
}

// sessionParams are the parameters session/new, session/load,
// session/resume and session/fork share: the working directory, the MCP
// servers, and the other working directories when the agent takes them.
func (s *session) sessionParams(a *agentProc, servers any) map[string]any {
	params := map[string]any{"cwd": s.cwd, "mcpServers": servers}
	if a.caps.SessionCapabilities.AdditionalDirectories != nil {
		var extra []string
		for _, r := range s.opts.Roots {
			if r != "" && r != s.cwd && r != s.cwdReal {
				extra = append(extra, r)
			}
		}
		if len(extra) > 0 {
			params["additionalDirectories"] = extra
		}
	}
	return params
}

// fork opens the session as a fork of the agent's session from
// (session/fork); it fails when the agent cannot fork.
func (s *session) fork(ctx context.Context, from string) error {
	a, err := s.p.ensure(ctx)
	if err != nil {
		return err
	}
	if a.caps.SessionCapabilities.Fork == nil {
		return fmt.Errorf("the %s agent cannot fork a session (it does not advertise sessionCapabilities.fork)", s.p.cfg.ID)
	}
	servers, left := mcpServers(s.opts.McpServers, a.caps.McpCapabilities)
	params := s.sessionParams(a, servers)
	params["sessionId"] = from
	raw, err := a.call(ctx, sdk.AgentMethodSessionFork, params)
	if err != nil {
		return a.describeErr(fmt.Sprintf("forking the agent session %s", from), err)
	}
	var resp newSessionResult
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("forking the agent session %s: the agent's answer cannot be read: %w", from, err)
	}
	if resp.SessionID == "" {
		return fmt.Errorf("forking the agent session %s: the agent returned no session id", from)
	}
	return s.adopt(ctx, a, resp, left)
}

// userMessage reads a replayed user_message_chunk as a UserMessage; a
// chunk that is not text is kept as the custom update it was.
func userMessage(raw json.RawMessage) []backend.Event {
	var u struct {
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &u) != nil || u.Content.Type != "text" {
		return []backend.Event{backend.Custom{Kind: kindUserMessageChunk, Raw: cloneRaw(raw)}}
	}
	return []backend.Event{backend.UserMessage{Text: u.Content.Text}}
}
