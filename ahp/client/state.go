package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// Channel URI prefixes the client keeps state for.
const (
	RootChannel   = "ahp-root://"
	sessionPrefix = "ahp-session:"
)

// Event is one incoming message that is not a response: an action envelope
// (Method "action"), a protocol notification such as "root/sessionAdded",
// or a JSON-RPC error the server sent without a request id (Err).
type Event struct {
	// Method is the JSON-RPC method ("action" for envelopes); empty for Err.
	Method string
	// Channel is params.channel of the notification.
	Channel string
	// Params holds the notification's params verbatim.
	Params json.RawMessage
	// Envelope is the decoded envelope when Method is "action".
	Envelope *wire.ActionEnvelope
	// Err is a JSON-RPC error not tied to any request.
	Err *RPCError
}

// channelState is the client's confirmed copy of one subscribed channel.
type channelState struct {
	root    *wire.RootState
	session *wire.SessionState
	// other holds the last snapshot of a state-bearing channel the client has
	// no reducer for (terminals, changesets); envelopes for it are not applied.
	other   json.RawMessage
	lastSeq int64
	// subscribing is true while a subscribe is in flight and no snapshot has
	// arrived yet; envelopes that arrive in that window wait in early.
	subscribing bool
	early       []*wire.ActionEnvelope
	// stream reduces streamed text in amortised O(1) instead of copying
	// the whole part per delta (docs/performance.md).
	stream reducer.Streaming
}

// handleNotification runs on the reader goroutine.
func (c *Client) handleNotification(method string, params json.RawMessage) error {
	var head struct {
		Channel string `json:"channel"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &head); err != nil {
			return fmt.Errorf("the AHP server sent %s with params that are not an object: %w", method, err)
		}
	}
	ev := Event{Method: method, Channel: head.Channel, Params: params}
	if method != "action" {
		c.pushEvent(ev)
		return nil
	}
	var env wire.ActionEnvelope
	if err := json.Unmarshal(params, &env); err != nil {
		return fmt.Errorf("the AHP server sent an action envelope the client cannot decode: %w (%s)", err, truncate(params, 200))
	}
	ev.Envelope = &env
	c.mu.Lock()
	defer c.mu.Unlock()
	if env.ServerSeq > c.lastSeq {
		c.lastSeq = env.ServerSeq
	}
	c.applyLocked(&env)
	if env.Origin != nil && env.Origin.ClientID == c.clientID {
		c.dropPendingLocked(env.Channel, env.Origin.ClientSeq)
		if w, ok := c.echoes[env.Origin.ClientSeq]; ok {
			delete(c.echoes, env.Origin.ClientSeq)
			w <- ev
		}
	}
	c.pushEventLocked(ev)
	c.broadcastLocked()
	return nil
}

// applyLocked applies one envelope to the channel's confirmed state.
// Rejected envelopes were not applied by the server and are skipped, as are
// envelopes already contained in the snapshot (serverSeq ≤ fromSeq).
func (c *Client) applyLocked(env *wire.ActionEnvelope) {
	cs := c.channels[env.Channel]
	if cs == nil {
		return // not subscribed (or not yet): nothing to keep
	}
	if cs.subscribing {
		cs.early = append(cs.early, env)
		return
	}
	c.applyToStateLocked(cs, env)
}

func (c *Client) applyToStateLocked(cs *channelState, env *wire.ActionEnvelope) {
	if env.RejectionReason != nil || env.ServerSeq <= cs.lastSeq {
		return
	}
	c.reduce(cs, env.Action)
	cs.lastSeq = env.ServerSeq
}

// applySnapshot installs a snapshot (from initialize, subscribe or the
// caller) and replays the envelopes that arrived while it was in flight.
func (c *Client) applySnapshot(s wire.Snapshot) error {
	cs := &channelState{lastSeq: s.FromSeq}
	raw, err := json.Marshal(s.State)
	if err != nil {
		return fmt.Errorf("re-encoding the snapshot of %s: %w", s.Resource, err)
	}
	switch {
	case s.Resource == RootChannel:
		var st wire.RootState
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("decoding the snapshot of %s: %w", s.Resource, err)
		}
		cs.root = &st
	case strings.HasPrefix(s.Resource, sessionPrefix):
		var st wire.SessionState
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("decoding the snapshot of %s: %w", s.Resource, err)
		}
		cs.session = &st
	default:
		cs.other = raw
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var early []*wire.ActionEnvelope
	if old := c.channels[s.Resource]; old != nil {
		early = old.early
	}
	c.channels[s.Resource] = cs
	for _, env := range early {
		c.applyToStateLocked(cs, env)
	}
	if s.FromSeq > c.lastSeq {
		c.lastSeq = s.FromSeq
	}
	c.broadcastLocked()
	return nil
}

// markSubscribing notes that a snapshot for channel is on its way.
func (c *Client) markSubscribing(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.channels[channel] == nil {
		c.channels[channel] = &channelState{subscribing: true}
	}
}

// dropChannel forgets a channel (unsubscribe, failed subscribe).
func (c *Client) dropChannel(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.channels, channel)
	c.broadcastLocked()
}

// ErrNoState is returned by Session and Root for a channel the client has
// no state for (not subscribed, or not a session/root channel).
var ErrNoState = errors.New("ahp client: no state for this channel (not subscribed?)")

// Session returns a copy of the confirmed state of a subscribed session.
func (c *Client) Session(channel string) (*wire.SessionState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.channels[channel]
	if cs == nil || cs.session == nil {
		return nil, fmt.Errorf("%s: %w", channel, ErrNoState)
	}
	return cloneSession(cs.session)
}

// Root returns a copy of the confirmed root state, if the client is
// subscribed to ahp-root:// (Initialize subscribes by default).
func (c *Client) Root() (*wire.RootState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.channels[RootChannel]
	if cs == nil || cs.root == nil {
		return nil, fmt.Errorf("%s: %w", RootChannel, ErrNoState)
	}
	return cloneRoot(cs.root)
}

// pendingAction is a dispatched action not yet echoed by the server.
type pendingAction struct {
	clientSeq int64
	action    wire.StateAction
}

// dropPendingLocked forgets a pending action once it is echoed (accepted or
// rejected) or could not be sent.
func (c *Client) dropPendingLocked(channel string, clientSeq int64) {
	list := c.pending[channel]
	for i, p := range list {
		if p.clientSeq == clientSeq {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(c.pending, channel)
		return
	}
	c.pending[channel] = list
}

// Pending is the number of actions this client dispatched on channel that
// the server has not echoed yet.
func (c *Client) Pending(channel string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending[channel])
}

// Optimistic returns the session state as this client expects it to be:
// a copy of the confirmed state with the client's own not-yet-echoed
// actions applied in dispatch order (write-ahead reconciliation). Once the
// server echoes or rejects them it equals Session again.
func (c *Client) Optimistic(channel string) (*wire.SessionState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.channels[channel]
	if cs == nil || cs.session == nil {
		return nil, fmt.Errorf("%s: %w", channel, ErrNoState)
	}
	st, err := cloneSession(cs.session)
	if err != nil {
		return nil, err
	}
	opt := &channelState{session: st}
	for _, p := range c.pending[channel] {
		c.reduce(opt, p.action)
	}
	return st, nil
}

// LastServerSeq is the highest serverSeq the client has seen in an
// envelope or snapshot; it is what a reconnect would send.
func (c *Client) LastServerSeq() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSeq
}

// WaitFor blocks until the confirmed state of the subscribed session
// channel satisfies pred, and returns a copy of that state. pred is called
// with the client's lock held on the live state: it must be quick, must not
// call the Client and must not keep or modify the pointer. WaitFor fails
// when ctx ends or the connection does.
func (c *Client) WaitFor(ctx context.Context, channel string, pred func(*wire.SessionState) bool) (*wire.SessionState, error) {
	for {
		c.mu.Lock()
		if cs := c.channels[channel]; cs != nil && cs.session != nil && pred(cs.session) {
			st, err := cloneSession(cs.session)
			c.mu.Unlock()
			return st, err
		}
		if c.closed {
			err := c.err
			c.mu.Unlock()
			return nil, fmt.Errorf("waiting for %s: %w", channel, err)
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", channel, ctx.Err())
		}
	}
}

// WaitForRoot is WaitFor for the root channel.
func (c *Client) WaitForRoot(ctx context.Context, pred func(*wire.RootState) bool) (*wire.RootState, error) {
	for {
		c.mu.Lock()
		if cs := c.channels[RootChannel]; cs != nil && cs.root != nil && pred(cs.root) {
			st, err := cloneRoot(cs.root)
			c.mu.Unlock()
			return st, err
		}
		if c.closed {
			err := c.err
			c.mu.Unlock()
			return nil, fmt.Errorf("waiting for %s: %w", RootChannel, err)
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", RootChannel, ctx.Err())
		}
	}
}

// cloneSession deep-copies through JSON: the wire types round-trip exactly,
// and the copies are small enough for a CLI and tests.
func cloneSession(s *wire.SessionState) (*wire.SessionState, error) {
	var out wire.SessionState
	if err := roundTrip(s, &out); err != nil {
		return nil, fmt.Errorf("copying the state of %s: %w", s.Summary.Resource, err)
	}
	return &out, nil
}

func cloneRoot(s *wire.RootState) (*wire.RootState, error) {
	var out wire.RootState
	if err := roundTrip(s, &out); err != nil {
		return nil, fmt.Errorf("copying the root state: %w", err)
	}
	return &out, nil
}

func roundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// actionType is the "type" of an action, for messages.
func actionType(a wire.StateAction) string {
	if t := a.Type(); t != "" {
		return t
	}
	return fmt.Sprintf("(action %T)", a.Value)
}

// PendingConfirmations returns the ids of the active turn's tool calls that
// wait for a client's confirmation, in response-part order.
func PendingConfirmations(s *wire.SessionState) []string {
	if s == nil || s.ActiveTurn == nil {
		return nil
	}
	var ids []string
	for _, p := range s.ActiveTurn.ResponseParts {
		if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			if pc, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok {
				ids = append(ids, pc.ToolCallID)
			}
		}
	}
	return ids
}
