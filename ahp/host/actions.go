package host

import (
	"encoding/json"
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// dispatchAction handles a client's write-ahead action: translated into the
// host's dialect, validated against the channel's state, then applied,
// sequenced and echoed to every subscriber (with origin), or echoed back to
// the sender alone, as sent, with a rejection reason.
func (h *Host) dispatchAction(c *conn, params []byte) {
	var p struct {
		Channel   string          `json:"channel"`
		ClientSeq int64           `json:"clientSeq"`
		Action    json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Channel == "" {
		// Without a channel and clientSeq there is nobody to echo to.
		c.log.Debug().Msg("dropping a malformed dispatchAction (no channel or clientSeq)")
		return
	}
	p.Channel = canonicalChannel(p.Channel)
	origin := &wire.ActionOrigin{ClientID: c.clientIDLocked(), ClientSeq: p.ClientSeq}
	h.restore(p.Channel)
	channel, raw := p.Channel, []byte(p.Action)
	if cd := c.codec; cd != nil {
		hc, ha, err := cd.Action(p.Channel, p.Action)
		if err != nil {
			if h.lookup(p.Channel) != nil || h.lookup(hc) != nil {
				h.reject(c, p.Channel, p.Action, origin, err.Error())
			}
			return
		}
		channel, raw = hc, ha
	}
	ch := h.lookup(channel)
	if ch == nil {
		if reason := h.heldElsewhere(channel); reason != "" { // holders.go
			h.reject(c, p.Channel, p.Action, origin, reason)
			return
		}
	}
	if ch == nil && !wire.IsChatURI(channel) {
		return // spec: actions for unknown channels are silently ignored
	}
	var a wire.StateAction
	if err := json.Unmarshal(raw, &a); err != nil {
		if ch != nil {
			h.reject(c, p.Channel, p.Action, origin, "malformed action: "+err.Error())
		}
		return
	}
	if ch = h.retarget(ch, channel, a); ch == nil {
		return
	}
	if reason := h.mayChangeChannel(ch); reason != "" { // mirror.go: a session another bridge drives
		h.reject(c, p.Channel, p.Action, origin, reason)
		return
	}
	if a.Value == nil {
		h.reject(c, p.Channel, p.Action, origin, "the action is missing")
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return
	}
	if reason := h.complete(c, ch, a); reason != "" {
		h.rejectLocked(ch, c, p.Channel, p.Action, origin, reason)
		return
	}
	if reason := validateClient(ch, a, raw, origin.ClientID); reason != "" {
		h.rejectLocked(ch, c, p.Channel, p.Action, origin, reason)
		return
	}
	if _, err := h.applyLocked(ch, a, origin, c); err != nil {
		h.rejectLocked(ch, c, p.Channel, p.Action, origin, err.Error())
		return
	}
	h.handoff(ch, a, *origin)
	h.settleLocked(ch)
}

// retarget returns the channel a client action on channel (ch, or nil
// when no such channel is live) applies to. A rename dispatched on a chat
// channel renames the chat's session: VS Code's editor window sends
// session/titleChanged on the chat it shows, or on the default chat's
// derived name (wire.DefaultChatURI) when it knows no other, which a
// session made before those names does not have. Anything else stays on
// its channel.
func (h *Host) retarget(ch *channel, channel string, a wire.StateAction) *channel {
	if _, rename := a.Value.(*wire.SessionTitleChangedAction); !rename || (ch != nil && ch.kind != chanChat) {
		return ch
	}
	if ch != nil {
		return ch.group.session
	}
	name, ok := wire.ParseChatURI(channel)
	if !ok || name.ChatID != wire.DefaultChatID {
		return nil
	}
	h.restore(name.Session)
	if s := h.lookup(name.Session); s != nil && s.kind == chanSession {
		return s
	}
	return nil
}

// complete fills in what the host's dialect requires of a client action
// but the client's dialect could not say, and returns why it cannot when it
// cannot. Called with ch.mu held.
//
//   - Timing, with the host's clock (clients' clocks are not trusted for
//     it): a turn's startedAt, a cancelled turn's duration.
//   - What a codec marked for the host to know: the sender's clientId
//     (codec.SenderClientID), the selection a 0.3.0 client keeps per
//     session (codec.SelectionMeta drafts, and the model and agent of its
//     turns, codec.V030Selection).
func (h *Host) complete(c *conn, ch *channel, a wire.StateAction) string {
	switch ch.kind {
	case chanSession:
		return completeSession(c, ch.session, a)
	case chanChat:
	default:
		return ""
	}
	now := h.opts.Clock()
	st := ch.chat.st
	switch x := a.Value.(type) {
	case *wire.ChatTurnStartedAction:
		if x.StartedAt == "" {
			x.StartedAt = reducer.FormatTime(now)
		}
		if c.version == codec.V030 && x.Message.Model == nil && x.Message.Agent == nil {
			model, agent := codec.V030Selection(st)
			x.Message.Model, x.Message.Agent = clone(model), clone(agent)
		}
	case *wire.ChatTurnCancelledAction:
		if t := st.ActiveTurn; t != nil && t.ID == x.TurnID {
			if started, ok := reducer.ParseTime(t.StartedAt); ok {
				x.Duration = max(0, now-started)
			}
		}
	case *wire.ChatDraftChangedAction:
		// A 0.3.0 model or agent change names only what changed; 0.3.0
		// keeps the other one, a 0.7.0 draft replaces both.
		if d := x.Draft; d != nil && st.Draft != nil {
			switch mark, _ := d.Meta[codec.SelectionMeta].(string); mark {
			case "model":
				d.Agent = clone(st.Draft.Agent)
			case "agent":
				d.Model = clone(st.Draft.Model)
			}
		}
	}
	return ""
}

// completeSession puts the sender's clientId where a codec could only mark
// it, and completes an active-client entry that carries only new tools
// (0.3.0's activeClientToolsChanged) from the sender's current one.
func completeSession(c *conn, st *wire.SessionState, a wire.StateAction) string {
	sender := c.clientIDLocked()
	switch x := a.Value.(type) {
	case *wire.SessionActiveClientRemovedAction:
		if x.ClientID == codec.SenderClientID {
			x.ClientID = sender
		}
	case *wire.SessionActiveClientSetAction:
		if x.ActiveClient.ClientID != codec.SenderClientID {
			return ""
		}
		i := slices.IndexFunc(st.ActiveClients, func(e wire.SessionActiveClient) bool { return e.ClientID == sender })
		if i < 0 {
			return "this client is not an active client of the session, so it has no tools to change"
		}
		cur := st.ActiveClients[i]
		x.ActiveClient.ClientID = sender
		x.ActiveClient.DisplayName = cur.DisplayName
		x.ActiveClient.Customizations = slices.Clone(cur.Customizations)
	}
	return ""
}

// clone returns a copy of *p, or nil.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
