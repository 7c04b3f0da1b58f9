package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// This file keeps the agent's memory of a chat across restarts. Each chat
// records the agent's id of its conversation in the host
// (Host.SetAgentSessionID, kept in the state store) whenever its backend
// session reports one (backend.Attached). A session the host brings back
// from its store after a restart (RestoreSession) gets its chats back
// without backend sessions; a chat opens its backend session when it next
// gets a turn (or a setting), asking the backend to continue the recorded
// conversation (SessionOptions.Resume: for ACP, session/resume, else
// session/load). When the agent does not remember the earlier turns — the
// backend reports AttachFresh, or no conversation was recorded — the chat's
// turn starts with a notice saying so. The same event covers an agent
// process that died and was restarted under a live session.

// forgotNotice is the notice of a chat whose agent does not remember the
// earlier turns.
const forgotNotice = "The agent was restarted and does not remember earlier turns of this chat"

var _ host.SessionRestorer = (*Bridge)(nil)

// restoredChat is what a chat the host restored needs to open its backend
// session on first use.
type restoredChat struct {
	once sync.Once
	// agentID is the agent's conversation to continue ("" when none was
	// recorded).
	agentID  string
	settings []setting
	// imported: agentID is one of the agent's own sessions, whose
	// history the chat does not have (external.go).
	imported bool
}

// RestoreSession implements host.SessionRestorer: the session and its
// chats come back without backend sessions, each opened when the chat is
// next used. A session whose provider is no longer configured, or whose
// creation had failed, has chats whose turns fail and say why.
func (b *Bridge) RestoreSession(ctx context.Context, rs host.RestoredSession) {
	var p backend.Provider
	if rs.Provider != "" {
		p, _, _ = b.provider(rs.Provider)
	}
	s := newSession(b, rs.Session, rs.Provider, p, rs.WorkingDirectories)
	if p != nil {
		// The configured MCP servers (mcp.go); a client's plugins are not
		// kept across a restart.
		s.mcp = b.buildMcp(rs.Provider, p.Info(), nil)
	}
	s.changesLater = true // changes.go
	s.changesCwd, _ = mapping.WorkingDirectory(s.dirs, nil)
	settings := settingsOf(rs.Config)
	imported := b.importing(rs.Session) // external.go
	for _, rc := range rs.Chats {
		cwd, cwdErr := mapping.WorkingDirectory(s.dirs, rc.WorkingDirectories)
		c := newChat(s, rc.Chat, cwd, rc.Default)
		if rc.Model != nil {
			c.model = rc.Model.ID
		}
		c.restored = &restoredChat{agentID: rc.AgentSessionID, settings: settings, imported: imported && rc.Default}
		b.noteAgentSession(c, rc.AgentSessionID) // external.go: not the agent's to list
		if !b.add(s, c) {
			return
		}
		switch {
		case rs.Failed:
			c.fail(errors.New("the session could not be created before the bridge restarted"))
		case p == nil:
			c.fail(fmt.Errorf("the agent provider %q of this session is no longer configured", rs.Provider))
		case cwdErr != nil:
			c.fail(cwdErr)
		}
	}
	s.log.Debug().Int("chats", len(rs.Chats)).Msg("session restored; its agent sessions open on first use")
}

// openRestored opens the backend session of a restored chat the first
// time it is needed, continuing the agent conversation it recorded. It
// returns at once for a chat opened live, and after the first call.
func (c *chat) openRestored() {
	r := c.restored
	if r == nil {
		return
	}
	r.once.Do(func() {
		select {
		case <-c.ready: // failed at restore
			return
		default:
		}
		c.mu.Lock()
		disposed := c.disposed
		c.mu.Unlock()
		if disposed {
			c.fail(errors.New("the chat was disposed"))
			return
		}
		if r.agentID == "" && c.hadTurns() {
			c.mu.Lock()
			c.notices = append(c.notices, forgotNotice+" (no agent session was recorded for it).")
			c.mu.Unlock()
		}
		c.open(c.b.ctx, r.settings)
	})
}

// restoreConfig gives a restored chat's new backend session a setting the
// session had before the restart. An agent that continued the conversation
// may have kept it, or may not offer it in its answer: a failure is only
// logged, since the user changed nothing.
func (c *chat) restoreConfig(be backend.Session, st setting) {
	ctx, cancel := context.WithTimeout(c.b.ctx, configTimeout)
	defer cancel()
	if err := be.SetConfig(ctx, st.key, st.value); err != nil {
		c.log.Info().Err(err).Str("key", st.key).Str("value", st.value).
			Msg("a setting the session had before the restart was not given to its new agent session")
		return
	}
	if st.key == "model" {
		c.mu.Lock()
		c.model = st.value
		c.mu.Unlock()
	}
}

// resumeID is the agent conversation a chat's backend session continues
// when it is opened.
func (c *chat) resumeID() string {
	if c.restored == nil {
		return ""
	}
	return c.restored.agentID
}

// hadTurns reports whether the chat has turns in its history.
func (c *chat) hadTurns() bool {
	had := false
	c.b.host.ReadChat(c.uri, func(st *wire.ChatState) {
		had = len(st.Turns) > 0 || (st.TurnsNextCursor != nil && *st.TurnsNextCursor != "")
	})
	return had
}

// attachedLocked records the agent conversation the chat's backend session
// now talks to, and tells the user when the agent forgot the earlier
// turns: in the running turn, else at the start of the next one.
func (c *chat) attachedLocked(e backend.Attached) {
	if e.ID != "" {
		if err := c.b.host.SetAgentSessionID(c.uri, e.ID); err != nil {
			c.log.Debug().Err(err).Msg("the agent session id could not be recorded")
		}
	}
	c.log.Debug().Str("agent_session", e.ID).Str("how", string(e.How)).Msg("agent session attached")
	c.b.noteAgentSession(c, e.ID) // external.go
	if e.How == backend.AttachResumed && c.restored != nil && c.restored.imported {
		c.notices = append(c.notices, resumedNotice)
		if c.turnOpenLocked() {
			c.noticesLocked(c.turn)
		}
	}
	if e.How != backend.AttachFresh {
		return
	}
	n := forgotNotice + "."
	if e.Reason != "" {
		n = forgotNotice + ": " + e.Reason + "."
	}
	c.notices = append(c.notices, n)
	if c.turnOpenLocked() {
		c.noticesLocked(c.turn)
	}
}
