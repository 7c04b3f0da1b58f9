package host

import (
	"fmt"
	"sort"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

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
	return wire.TerminalInfo{Resource: uri, Title: st.Title, Claim: st.Claim, Lifecycle: st.Lifecycle}
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
	if _, err := h.applyLocked(h.root, wire.Action(&wire.RootActiveSessionsChangedAction{ActiveSessions: int64(n)}), nil, nil); err != nil {
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

// ReadChat calls fn with the chat's state under its session's lock and
// reports whether the chat exists. fn must not retain the state or call
// back into the Host.
func (h *Host) ReadChat(channel string, fn func(*wire.ChatState)) bool {
	ch := h.lookup(channel)
	if ch == nil || ch.kind != chanChat {
		return false
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return false
	}
	fn(ch.chat.synced())
	return true
}

// ReadRoot calls fn with the root state under the root lock. fn must not
// retain the state or call back into the Host.
func (h *Host) ReadRoot(fn func(*wire.RootState)) {
	h.root.mu.Lock()
	defer h.root.mu.Unlock()
	h.rootMetaLocked()
	fn(h.root.root)
}

// CreateTerminal adds a terminal channel with the given initial state and
// announces it in the root terminal catalogue (root/terminalsChanged).
func (h *Host) CreateTerminal(channel string, st wire.TerminalState) error {
	if !wire.IsTerminalURI(channel) {
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
	ch.mu.Lock()
	h.removeChannelLocked(ch)
	ch.mu.Unlock()
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
