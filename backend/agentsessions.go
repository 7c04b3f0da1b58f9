package backend

import "context"

// This file is the vocabulary of the agent's own sessions: those an agent
// keeps itself (every Claude Code session run in a terminal, say), which
// the bridge can list, open, fork, close and delete when the agent says it
// can. A Provider that can talk about them implements AgentSessions.

// SessionCaps is what an agent says it can do with its sessions (ACP
// initialize: loadSession and agentCapabilities.sessionCapabilities).
type SessionCaps struct {
	List, Load, Resume, Fork, Close, Delete bool
	// AdditionalDirectories: the agent takes working directories beyond
	// the first (SessionOptions.Roots) for a session.
	AdditionalDirectories bool
}

// AgentSession is one of the agent's own sessions as its list gives it.
type AgentSession struct {
	// ID is the agent's id of the session (SessionOptions.Resume takes it).
	ID  string
	Cwd string
	// Title is "" when the agent gave none.
	Title string
	// UpdatedAt is the agent's RFC 3339 time of the session's last
	// change, "" when it gave none.
	UpdatedAt string
	// AdditionalDirectories are the session's working directories beyond
	// Cwd, when the agent reports them.
	AdditionalDirectories []string
}

// AgentSessionPage is one page of the agent's session list; Next is the
// cursor of the next page, "" after the last.
type AgentSessionPage struct {
	Sessions []AgentSession
	Next     string
}

// AgentSessions is implemented by a Provider whose agent may keep sessions
// of its own.
type AgentSessions interface {
	// SessionCaps returns what the agent advertised when it last started
	// (known is false when it has not been started yet), and whether it
	// runs now. It never starts the agent.
	SessionCaps() (caps SessionCaps, known, running bool)
	// ListAgentSessions returns one page of the agent's sessions, those in
	// cwd when it is not "", from cursor ("" for the first page). It
	// starts the agent when it is not running; it fails when the agent
	// cannot list its sessions.
	ListAgentSessions(ctx context.Context, cwd, cursor string) (AgentSessionPage, error)
	// DeleteAgentSession deletes one of the agent's sessions, starting the
	// agent when it is not running. It reports false, and no error, when
	// the agent cannot delete sessions.
	DeleteAgentSession(ctx context.Context, id string) (bool, error)
	// ListsWithoutRunning says the provider's configuration allows
	// starting the agent only to list its sessions (listAgentSessions:
	// true); without it the bridge lists them only while the agent runs
	// anyway.
	ListsWithoutRunning() bool
}

// Replay brackets the earlier conversation an agent replays when a session
// is opened with SessionOptions.Import: the events between Replay{} and
// Replay{Done: true} are earlier turns, each started by a UserMessage.
type Replay struct{ Done bool }

// UserMessage is a user's message of a replayed conversation (ACP
// user_message_chunk); consecutive ones belong to one message.
type UserMessage struct{ Text string }

func (Replay) isEvent()      {}
func (UserMessage) isEvent() {}
