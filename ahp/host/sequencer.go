package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// Dispatch submits a server-originated action on channel through the same
// sequencer as client actions and returns its serverSeq. The envelope
// carries no origin. It fails for an unknown channel or an action that
// does not belong to the channel's kind.
//
// Dispatch takes ownership of the action: the reducer may keep parts of it
// in the channel state, so the caller must not modify it afterwards.
func (h *Host) Dispatch(channel string, a wire.StateAction) (int64, error) {
	a = wire.NewStateAction(a.Value) // variant values become pointers
	ch := h.lookup(channel)
	if ch == nil {
		return 0, errUnknownChannel(channel)
	}
	if err := checkScope(ch, a); err != nil {
		return 0, err
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return 0, errUnknownChannel(channel)
	}
	seq, err := h.applyLocked(ch, a, nil, nil)
	if err != nil {
		return 0, err
	}
	h.settleLocked(ch)
	return seq, nil
}

// checkScope refuses actions whose type prefix does not match the channel.
func checkScope(ch *channel, a wire.StateAction) error {
	t := a.Type()
	if t == "" {
		return fmt.Errorf("host: the action has no known type (%T)", a.Value)
	}
	var want string
	switch ch.kind {
	case chanRoot:
		want = "root/"
	case chanSession:
		want = "session/"
	case chanTerminal:
		want = "terminal/"
	}
	if !strings.HasPrefix(t, want) {
		return fmt.Errorf("host: action %s cannot be applied to %s channel %s", t, ch.kind, ch.uri)
	}
	return nil
}

// applyLocked reduces a (already validated) action into ch's state,
// sequences and broadcasts it, and announces any session summary change
// on the root channel. Called with ch.mu held.
func (h *Host) applyLocked(ch *channel, a wire.StateAction, origin *wire.ActionOrigin, sender *conn) (int64, error) {
	actionJSON, err := encodeAction(a)
	if err != nil {
		return 0, fmt.Errorf("host: encoding action %s for %s: %w", a.Type(), ch.uri, err)
	}
	// The summary before the action, by value. The reducer replaces the
	// summary's pointer members rather than writing through them, so this
	// shallow copy stays the true "before", and comparing it with == finds
	// the common case — no change, e.g. every streamed delta — without
	// encoding the summary twice per action.
	var before wire.SessionSummary
	if ch.kind == chanSession {
		before = ch.session.Summary
	}
	if err := h.reduce(ch, a); err != nil {
		return 0, fmt.Errorf("host: applying %s to %s: %w", a.Type(), ch.uri, err)
	}
	var extra func(int64)
	if ch.kind == chanSession && before != ch.session.Summary {
		if changes := h.summaryChanges(ch, summaryFields(&before)); changes != nil {
			params := map[string]any{"channel": RootURI, "session": ch.uri, "changes": changes}
			extra = func(int64) { h.broadcastRootLocked("root/sessionSummaryChanged", params) }
		}
	}
	seq := h.commit(ch, actionJSON, origin, sender, extra)
	if ch.kind == chanTerminal {
		switch a.Value.(type) {
		case *wire.TerminalTitleChangedAction, *wire.TerminalClaimedAction, *wire.TerminalExitedAction:
			h.refreshTerminalInfo(ch)
		}
	}
	return seq, nil
}

// summaryFields encodes a summary member by member for change detection.
func summaryFields(s *wire.SessionSummary) map[string]json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// summaryChanges returns the changed mutable summary members, or nil.
// Changes that only bump modifiedAt are coalesced to one per second
// (the spec allows debouncing this notification).
func (h *Host) summaryChanges(ch *channel, before map[string]json.RawMessage) map[string]json.RawMessage {
	after := summaryFields(&ch.session.Summary)
	changes := map[string]json.RawMessage{}
	for k, v := range after {
		switch k {
		case "resource", "provider", "createdAt":
			continue // identity fields never change
		}
		if !bytes.Equal(before[k], v) {
			changes[k] = v
		}
	}
	if len(changes) == 0 {
		return nil
	}
	now := h.opts.Clock()
	if _, onlyTime := changes["modifiedAt"]; onlyTime && len(changes) == 1 && now-ch.lastSummaryNote < 1000 {
		return nil
	}
	ch.lastSummaryNote = now
	return changes
}

// settleLocked runs the server's follow-ups once a session action has been
// applied: deferred model/agent changes and queued messages are consumed
// when no turn is active. Called with ch.mu held.
func (h *Host) settleLocked(ch *channel) {
	if ch.kind != chanSession || ch.removed {
		return
	}
	st := ch.session
	if st.ActiveTurn != nil {
		return
	}
	for len(ch.deferred) > 0 {
		d := ch.deferred[0]
		ch.deferred = ch.deferred[1:]
		origin := d.origin
		if _, err := h.applyLocked(ch, d.action, &origin, d.sender); err != nil {
			h.log.Error().Err(err).Msg("failed to apply a deferred client action")
			continue
		}
		h.handoff(ch, d.action, d.origin)
	}
	// Queued messages start the next turn (spec: Pending Message Consumption).
	if st.Lifecycle != wire.SessionLifecycleReady || st.ActiveTurn != nil || len(st.QueuedMessages) == 0 {
		return
	}
	q := st.QueuedMessages[0]
	removed := wire.Action(&wire.SessionPendingMessageRemovedAction{Kind: wire.PendingMessageKindQueued, ID: q.ID})
	if _, err := h.applyLocked(ch, removed, nil, nil); err != nil {
		h.log.Error().Err(err).Str("channel", ch.uri).Msg("failed to consume a queued message")
		return
	}
	started := wire.Action(&wire.SessionTurnStartedAction{TurnID: h.opts.NewID(), Message: q.Message, QueuedMessageID: wire.Ptr(q.ID)})
	if _, err := h.applyLocked(ch, started, nil, nil); err != nil {
		h.log.Error().Err(err).Str("channel", ch.uri).Msg("failed to start a turn from a queued message")
		return
	}
	h.handoff(ch, started, wire.ActionOrigin{})
}

// refreshTerminalInfo mirrors a terminal's title, claim and exit code into
// the root terminal catalogue. Called with the terminal's mu held (the
// root lock is always taken after a non-root channel's lock).
func (h *Host) refreshTerminalInfo(ch *channel) {
	info := terminalInfo(ch.uri, ch.terminal)
	h.updateTerminals(func(list []wire.TerminalInfo) []wire.TerminalInfo {
		for i := range list {
			if list[i].Resource == ch.uri {
				list[i] = info
			}
		}
		return list
	})
}

func terminalInfo(uri string, st *wire.TerminalState) wire.TerminalInfo {
	return wire.TerminalInfo{Resource: uri, Title: st.Title, Claim: st.Claim, ExitCode: st.ExitCode}
}

// updateTerminals applies root/terminalsChanged with edit(current list).
func (h *Host) updateTerminals(edit func([]wire.TerminalInfo) []wire.TerminalInfo) {
	h.root.mu.Lock()
	defer h.root.mu.Unlock()
	list := append([]wire.TerminalInfo{}, h.root.root.Terminals...)
	list = edit(list)
	sort.Slice(list, func(i, j int) bool { return list[i].Resource < list[j].Resource })
	if _, err := h.applyLocked(h.root, wire.Action(&wire.RootTerminalsChangedAction{Terminals: list}), nil, nil); err != nil {
		h.log.Error().Err(err).Msg("failed to update the terminal catalogue")
	}
}

// updateActiveSessions applies root/activeSessionsChanged with the
// current session count.
func (h *Host) updateActiveSessions() {
	h.root.mu.Lock()
	defer h.root.mu.Unlock()
	h.mu.Lock()
	n := 0
	for _, ch := range h.channels {
		if ch.kind == chanSession {
			n++
		}
	}
	h.mu.Unlock()
	if _, err := h.applyLocked(h.root, wire.Action(&wire.RootActiveSessionsChangedAction{ActiveSessions: n}), nil, nil); err != nil {
		h.log.Error().Err(err).Msg("failed to update the active session count")
	}
}

// ReadSession calls fn with the session's state under the session lock
// and reports whether the session exists. fn must not retain the state or
// call back into the Host.
func (h *Host) ReadSession(channel string, fn func(*wire.SessionState)) bool {
	ch := h.lookup(channel)
	if ch == nil || ch.kind != chanSession {
		return false
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return false
	}
	fn(ch.session)
	return true
}

// ReadRoot calls fn with the root state under the root lock. fn must not
// retain the state or call back into the Host.
func (h *Host) ReadRoot(fn func(*wire.RootState)) {
	h.root.mu.Lock()
	defer h.root.mu.Unlock()
	fn(h.root.root)
}

// CreateTerminal adds a terminal channel with the given initial state and
// announces it in the root terminal catalogue (root/terminalsChanged).
func (h *Host) CreateTerminal(channel string, st wire.TerminalState) error {
	if channel == "" || channel == RootURI || strings.HasPrefix(channel, "ahp-session:") {
		return fmt.Errorf("host: %q is not a valid terminal channel URI", channel)
	}
	ch := newChannel(channel, chanTerminal)
	ch.terminal = &st
	if ch.terminal.Content == nil {
		ch.terminal.Content = []wire.TerminalContentPart{}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errClosed
	}
	if _, exists := h.channels[channel]; exists {
		h.mu.Unlock()
		return fmt.Errorf("host: channel %s already exists", channel)
	}
	h.channels[channel] = ch
	h.mu.Unlock()
	ch.mu.Lock()
	info := terminalInfo(channel, ch.terminal)
	ch.mu.Unlock()
	h.updateTerminals(func(list []wire.TerminalInfo) []wire.TerminalInfo { return append(list, info) })
	return nil
}

// RemoveTerminal removes a terminal channel, drops its subscriptions and
// updates the root terminal catalogue. Unknown channels are ignored.
func (h *Host) RemoveTerminal(channel string) {
	ch := h.lookup(channel)
	if ch == nil || ch.kind != chanTerminal {
		return
	}
	h.removeChannel(ch)
	h.updateTerminals(func(list []wire.TerminalInfo) []wire.TerminalInfo {
		out := list[:0]
		for _, ti := range list {
			if ti.Resource != channel {
				out = append(out, ti)
			}
		}
		return out
	})
}

// removeChannel marks ch removed, forgets it and its subscriptions, and
// stops its worker.
func (h *Host) removeChannel(ch *channel) {
	ch.mu.Lock()
	ch.removed = true
	ch.deferred = nil
	h.mu.Lock()
	delete(h.channels, ch.uri)
	for c := range ch.subs {
		delete(c.subs, ch.uri)
	}
	ch.subs = map[*conn]struct{}{}
	w := ch.worker
	h.mu.Unlock()
	ch.mu.Unlock()
	if w != nil {
		w.close()
	}
}
