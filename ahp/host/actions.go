package host

import (
	"encoding/json"

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
	origin := &wire.ActionOrigin{ClientID: c.clientIDLocked(), ClientSeq: p.ClientSeq}
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
		return // spec: actions for unknown channels are silently ignored
	}
	var a wire.StateAction
	if err := json.Unmarshal(raw, &a); err != nil {
		h.reject(c, p.Channel, p.Action, origin, "malformed action: "+err.Error())
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
	h.stamp(ch, a)
	if reason := validateClient(ch, a, raw, origin.ClientID); reason != "" {
		h.reject(c, p.Channel, p.Action, origin, reason)
		return
	}
	if _, err := h.applyLocked(ch, a, origin, c); err != nil {
		h.reject(c, p.Channel, p.Action, origin, err.Error())
		return
	}
	h.handoff(ch, a, *origin)
	h.settleLocked(ch)
}

// stamp fills in what the host's dialect requires of a client action but
// older dialects do not send, with the host's clock (clients' clocks are
// not trusted for timing): a turn's startedAt, a cancelled turn's
// duration. Called with ch.mu held.
func (h *Host) stamp(ch *channel, a wire.StateAction) {
	if ch.kind != chanChat {
		return
	}
	now := h.opts.Clock()
	switch x := a.Value.(type) {
	case *wire.ChatTurnStartedAction:
		if x.StartedAt == "" {
			x.StartedAt = reducer.FormatTime(now)
		}
	case *wire.ChatTurnCancelledAction:
		if t := ch.chat.st.ActiveTurn; t != nil && t.ID == x.TurnID {
			if started, ok := reducer.ParseTime(t.StartedAt); ok {
				x.Duration = max(0, now-started)
			}
		}
	}
}
