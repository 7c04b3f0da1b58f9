package host

import (
	"fmt"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Changeset channels (`ahp-changeset:` URIs) hold a ChangesetState that the
// handler drives with changeset/* actions through Dispatch, like terminals:
// clients subscribe to them by the URI a session's `changesets` catalogue
// names, and only the host's handler changes them (no changeset action is
// client-dispatchable here: the bridge advertises no review capability).

// CreateChangeset adds a changeset channel with the given initial state.
// The handler announces it in the owning session's catalogue itself
// (session/changesetsChanged).
func (h *Host) CreateChangeset(channel string, st wire.ChangesetState) error {
	if !strings.HasPrefix(channel, "ahp-changeset:") {
		return fmt.Errorf("host: %q is not a valid changeset channel URI", channel)
	}
	ch := newChannel(channel, chanChangeset)
	if st.Files == nil {
		st.Files = []wire.ChangesetFile{}
	}
	ch.changes = &st
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	if _, exists := h.channels[channel]; exists {
		return fmt.Errorf("host: channel %s already exists", channel)
	}
	h.channels[channel] = ch
	return nil
}

// RemoveChangeset removes a changeset channel and drops its
// subscriptions. Unknown channels are ignored.
func (h *Host) RemoveChangeset(channel string) {
	ch := h.lookup(channel)
	if ch == nil || ch.kind != chanChangeset {
		return
	}
	ch.mu.Lock()
	h.removeChannelLocked(ch)
	ch.mu.Unlock()
}

// SetSessionChanges sets the session's SessionSummary.changes (the lines
// added and removed, and the files changed, as its handler counts them)
// and announces it to root subscribers (root/sessionSummaryChanged) when
// it changed. Unknown sessions are ignored.
func (h *Host) SetSessionChanges(session string, changes wire.ChangesSummary) {
	ch := h.lookup(session)
	if ch == nil || ch.kind != chanSession {
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return
	}
	ch.group.changes = &changes
	h.refreshSummaryLocked(ch.group)
}
