package bridge

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// This file turns the conversation an agent replays, when a chat opens
// one of the agent's own sessions (external.go, SessionOptions.Import),
// into the chat's turns: each user message starts a turn, dispatched by
// the bridge, the agent's answer that follows fills it through the same
// mapping as a live turn, and the next user message (or the end of the
// replay) completes it.

// replayState is a chat's replay in progress; guarded by the chat's mu.
type replayState struct {
	active bool
	user   string        // the user's message whose turn has not started
	turn   *mapping.Turn // the replayed turn being filled
}

// replayed takes the events of a replay. It reports false for an event
// that is not part of one, which the chat handles as usual.
func (c *chat) replayed(ev backend.Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := &c.replay
	switch e := ev.(type) {
	case backend.Replay:
		if !e.Done {
			*r = replayState{active: true}
			return true
		}
		if r.user != "" {
			c.replayTurnLocked()
		}
		c.replayEndLocked()
		*r = replayState{}
		return true
	case backend.UserMessage:
		if !r.active {
			return true // a user message outside a replay says nothing new
		}
		if r.turn != nil {
			c.replayEndLocked()
		}
		r.user += e.Text
		return true
	case backend.TextChunk, backend.ThoughtChunk, backend.ContentBlock, backend.ToolCall:
		if !r.active {
			return false
		}
		if r.turn == nil {
			c.replayTurnLocked()
		}
		c.dispatchActs(r.turn.Apply(ev))
		return true
	}
	return false
}

// replayTurnLocked starts a replayed turn with the user's message.
func (c *chat) replayTurnLocked() {
	r := &c.replay
	now := c.b.opts.Clock()
	id := c.b.opts.NewID()
	c.dispatchTo(c.uri, &wire.ChatTurnStartedAction{
		TurnID:    id,
		StartedAt: reducer.FormatTime(now),
		Message:   wire.Message{Text: r.user, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}},
	})
	r.user = ""
	r.turn = mapping.NewTurn(id, now, c.b.opts.NewID, c.b.opts.Clock)
}

// replayEndLocked completes the replayed turn, if one is open.
func (c *chat) replayEndLocked() {
	r := &c.replay
	if r.turn == nil {
		return
	}
	c.dispatchActs(r.turn.End(backend.TurnResult{StopReason: backend.StopEndTurn}, nil))
	r.turn = nil
}
