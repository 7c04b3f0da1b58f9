package bridge

import (
	"sync"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/logfield"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// session is one AHP session: the provider, working directories and
// `_meta` its chats share. Its chats are registered in Bridge.chats as
// well; both maps are guarded by Bridge.mu.
type session struct {
	b          *Bridge
	log        zerolog.Logger
	uri        string
	providerID string
	provider   backend.Provider
	dirs       []string // createSession's workingDirectories

	chats map[string]*chat // by chat URI; guarded by b.mu

	// metaMu guards meta and is held while a session/metaChanged carrying
	// it is dispatched, so that the host gets the values of every chat's
	// changes in the order they were made. It is taken after a chat's mu.
	metaMu sync.Mutex
	// meta is the session's `_meta` as the bridge last set it:
	// session/metaChanged replaces the whole object, so each change starts
	// from it (the plan of any chat, custom agent updates).
	meta map[string]any

	mcp *sessionMcp // its MCP servers (mcp.go); set before its first chat opens

	changesMu sync.Mutex       // guards changes; taken after a chat's mu
	changes   *mapping.Changes // the session's changeset (changes.go); nil without one
	// changesLater is set for a restored session: its changeset starts
	// with its first change, in changesCwd (changes.go).
	changesLater bool
	changesCwd   string
}

func newSession(b *Bridge, uri, providerID string, p backend.Provider, dirs []string) *session {
	return &session{
		b:          b,
		log:        logfield.Str(b.log, "session", uri, "provider", providerID),
		uri:        uri,
		providerID: providerID,
		provider:   p,
		dirs:       append([]string(nil), dirs...),
		chats:      map[string]*chat{},
	}
}

// updateMeta changes the session's `_meta` with change, which returns the
// actions that carry the new value and the value, and dispatches them with
// dispatch while metaMu is held, so that the host gets every chat's
// changes in the order they were made.
func (s *session) updateMeta(change func(meta map[string]any) ([]wire.StateAction, map[string]any), dispatch func([]wire.StateAction)) {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	acts, next := change(s.meta)
	s.meta = next
	dispatch(acts)
}
