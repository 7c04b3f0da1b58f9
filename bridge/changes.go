package bridge

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// The session's changeset (docs/mapping.md, "The session's changes"): every
// file edit of the session's chats — a diff in a tool call that completed,
// or an fs/write_text_file — joins the session's changeset channel
// (changeset/fileSet, changeset/fileRemoved), whose before/after contents
// ResourceRead serves, and SessionSummary.changes is kept current.

// changesetHost is what the changeset needs of the host beyond Host
// (*host.Host has it; a test host may not, and then the session has none).
type changesetHost interface {
	CreateChangeset(channel string, st wire.ChangesetState) error
	RemoveChangeset(channel string)
	SetSessionChanges(session string, changes wire.ChangesSummary)
}

// startChanges opens the session's changeset channel and names it in the
// session's catalogue.
func (s *session) startChanges(cwd string) {
	ch, ok := s.b.host.(changesetHost)
	if !ok {
		return
	}
	c := mapping.NewChanges(mapping.ChangesetURI(s.uri), cwd)
	if err := ch.CreateChangeset(c.URI(), mapping.NewChangesetState()); err != nil {
		s.log.Warn().Err(err).Msg("the session's changeset channel could not be created; its changes are not shown")
		return
	}
	s.changesMu.Lock()
	s.changes = c
	s.changesMu.Unlock()
	if _, err := s.b.host.Dispatch(s.uri, mapping.ChangesetCatalogue(c.URI())); err != nil {
		s.log.Debug().Err(err).Msg("dispatch refused")
	}
}

// observeChanges gives one event of chat to the changeset. It is called
// under the chat's lock, so the changeset actions keep the events' order.
func (s *session) observeChanges(chat string, ev backend.Event) {
	switch ev.(type) {
	case backend.FileEdited, backend.ToolCall:
	default:
		return
	}
	s.changesMu.Lock()
	lazy := s.changes == nil && s.changesLater
	cwd := s.changesCwd
	s.changesLater = false
	s.changesMu.Unlock()
	if lazy {
		// A restored session gets its changeset channel with its first
		// change (the host restores it after RestoreSession returns); the
		// changes from before the restart are not kept.
		s.startChanges(cwd)
	}
	s.changesMu.Lock()
	defer s.changesMu.Unlock()
	if s.changes == nil {
		return
	}
	acts := s.changes.Observe(chat, ev)
	if len(acts) == 0 {
		return
	}
	for _, a := range acts {
		if _, err := s.b.host.Dispatch(s.changes.URI(), a); err != nil {
			s.log.Debug().Err(err).Msg("dispatch refused")
		}
	}
	if ch, ok := s.b.host.(changesetHost); ok {
		ch.SetSessionChanges(s.uri, s.changes.Summary())
	}
}

// changesResource returns a content of the session's changeset.
func (s *session) changesResource(uri string) (mapping.Resource, bool) {
	s.changesMu.Lock()
	defer s.changesMu.Unlock()
	if s.changes == nil {
		return mapping.Resource{}, false
	}
	return s.changes.Resource(uri)
}

// stopChanges removes the session's changeset channel.
func (s *session) stopChanges() {
	s.changesMu.Lock()
	c := s.changes
	s.changes = nil
	s.changesMu.Unlock()
	if ch, ok := s.b.host.(changesetHost); ok && c != nil {
		ch.RemoveChangeset(c.URI())
	}
}
