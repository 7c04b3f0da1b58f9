package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// RootChannel is the root channel's URI.
const RootChannel = wire.RootChannel

// URI prefixes of the channel kinds the client keeps typed state for.
const (
	sessionPrefix = "ahp-session:"
	chatPrefix    = "ahp-chat:"
)

// channelKind says which state a channel carries.
type channelKind int

const (
	kindOther   channelKind = iota // terminals, changesets, …: snapshot only
	kindRoot                       // ahp-root://
	kindSession                    // a session's coordination channel
	kindChat                       // one conversation of a session
)

// kindOf tells a channel's kind from its URI. Sessions may take any
// "scheme:/path" URI the other kinds do not claim (ahpx names them
// <provider>:/<uuid>), so an unknown non-ahp scheme is a session; an
// unknown ahp-* scheme is some channel this client keeps no state for.
func kindOf(uri string) channelKind {
	switch {
	case wire.IsRootChannel(uri): // ahp-root:// or ahp-root:
		return kindRoot
	case strings.HasPrefix(uri, chatPrefix):
		return kindChat
	case strings.HasPrefix(uri, sessionPrefix):
		return kindSession
	case strings.HasPrefix(uri, "ahp-"), wire.IsTerminalURI(uri): // VS Code's agenthost-terminal:/<uuid> too
		return kindOther
	case strings.Contains(uri, ":/"):
		return kindSession
	}
	return kindOther
}

// Event is one incoming message that is not a response: an action envelope
// (Method "action"), a protocol notification such as "root/sessionAdded",
// or a JSON-RPC error the server sent without a request id (Err).
type Event struct {
	// Method is the JSON-RPC method ("action" for envelopes); empty for Err.
	Method string
	// Channel is params.channel of the notification.
	Channel string
	// Session is the session Channel belongs to: Channel itself for a
	// session channel, the owning session for a chat the client knows the
	// session of (one it subscribed to through its session, listed in a
	// subscribed session's catalogue, or named in the derived form
	// ahp-chat://<chatId>/<base64url(session)>), else empty. It lets a caller that
	// shows one session pick its events from both of its channels.
	Session string
	// Params holds the notification's params verbatim.
	Params json.RawMessage
	// Envelope is the decoded envelope when Method is "action".
	Envelope *wire.ActionEnvelope
	// Err is a JSON-RPC error not tied to any request.
	Err *RPCError
}

// channelState is the client's confirmed copy of one subscribed channel.
type channelState struct {
	kind    channelKind
	root    *wire.RootState
	session *wire.SessionState
	chat    *wire.ChatState
	// other holds the last snapshot of a state-bearing channel the client
	// keeps no reduced state for (terminals, changesets); envelopes for it
	// are queued for Next but not applied.
	other   json.RawMessage
	lastSeq int64
	// subscribing is true while a subscribe is in flight and no snapshot has
	// arrived yet; envelopes that arrive in that window wait in early.
	subscribing bool
	early       []*wire.ActionEnvelope
	// stream reduces a chat's streamed text in amortised O(1) instead of
	// copying the whole part per delta (docs/performance.md).
	stream reducer.Streaming
	// follows are the chats the client subscribed to on this session's
	// behalf (its default chat), which Unsubscribe releases with it.
	follows []string
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
	if method != wire.MethodAction {
		c.mu.Lock()
		ev.Session = c.sessionOfLocked(head.Channel)
		c.pushEventLocked(ev)
		c.mu.Unlock()
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
	ev.Session = c.sessionOfLocked(env.Channel)
	c.pushEventLocked(ev)
	c.broadcastLocked()
	return nil
}

// sessionOfLocked returns the session a channel belongs to, if known: a
// chat's from its session's catalogue, or else from its name when it has
// the derived form that names its session (wire.ParseChatURI).
func (c *Client) sessionOfLocked(channel string) string {
	switch kindOf(channel) {
	case kindSession:
		return channel
	case kindChat:
		if s, ok := c.owners[channel]; ok {
			return s
		}
		if name, ok := wire.ParseChatURI(channel); ok {
			return name.Session
		}
	}
	return ""
}

// applyLocked applies one envelope to the channel's confirmed state.
func (c *Client) applyLocked(env *wire.ActionEnvelope) {
	cs := c.channels[env.Channel]
	if cs == nil {
		return // not subscribed (or not yet): nothing to keep
	}
	if cs.subscribing {
		cs.early = append(cs.early, env)
		return
	}
	c.applyToStateLocked(env.Channel, cs, env)
}

// applyToStateLocked applies an envelope unless it was rejected (the server
// did not apply it) or is already contained in the snapshot (serverSeq ≤
// fromSeq).
func (c *Client) applyToStateLocked(uri string, cs *channelState, env *wire.ActionEnvelope) {
	if env.RejectionReason != nil {
		return
	}
	if env.ServerSeq <= cs.lastSeq {
		return
	}
	c.reduce(cs, env.Action)
	cs.lastSeq = max(cs.lastSeq, env.ServerSeq)
	if cs.kind == kindSession {
		c.noteOwnersLocked(uri, cs.session)
	}
}

// noteOwnersLocked records which session the chats of a session state
// belong to.
func (c *Client) noteOwnersLocked(session string, st *wire.SessionState) {
	for _, ch := range st.Chats {
		c.owners[ch.Resource] = session
	}
	if st.DefaultChat != nil {
		c.owners[*st.DefaultChat] = session
	}
}

// applySnapshot installs a snapshot (from initialize, subscribe, reconnect
// or the caller) and replays the envelopes that arrived while it was in
// flight.
func (c *Client) applySnapshot(s wire.Snapshot) error {
	cs := &channelState{kind: kindOf(s.Resource), lastSeq: s.FromSeq}
	var err error
	switch cs.kind {
	case kindRoot:
		cs.root = new(wire.RootState)
		err = s.State.As(cs.root)
	case kindSession:
		cs.session = new(wire.SessionState)
		err = s.State.As(cs.session)
	case kindChat:
		cs.chat = new(wire.ChatState)
		err = s.State.As(cs.chat)
	default:
		cs.other, err = json.Marshal(s.State)
	}
	if err != nil {
		return fmt.Errorf("reading the snapshot of %s: %w", s.Resource, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var early []*wire.ActionEnvelope
	if old := c.channels[s.Resource]; old != nil {
		early = old.early
		cs.follows = old.follows
	}
	c.channels[s.Resource] = cs
	if cs.session != nil {
		c.noteOwnersLocked(s.Resource, cs.session)
	}
	for _, env := range early {
		c.applyToStateLocked(s.Resource, cs, env)
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
		c.channels[channel] = &channelState{kind: kindOf(channel), subscribing: true}
	}
}

// dropPendingSubscription forgets a channel whose subscribe produced no
// snapshot, so that its envelopes are not held back forever.
func (c *Client) dropPendingSubscription(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs := c.channels[channel]; cs != nil && cs.subscribing {
		delete(c.channels, channel)
	}
}

// ErrNoState is returned for a channel the client has no state for (not
// subscribed, or not a channel of the kind asked for).
var ErrNoState = errors.New("ahp client: no state for this channel (not subscribed?)")

// ErrNoDefaultChat is returned when a session URI stands for its default
// chat but the session names none.
var ErrNoDefaultChat = errors.New("ahp client: the session has no default chat")

// resolveChatLocked returns the chat a URI stands for: a subscribed
// session's default chat, or the URI itself.
func (c *Client) resolveChatLocked(uri string) (string, error) {
	if kindOf(uri) != kindSession {
		return uri, nil
	}
	cs := c.channels[uri]
	if cs == nil || cs.session == nil {
		return "", fmt.Errorf("%s: %w", uri, ErrNoState)
	}
	if cs.session.DefaultChat == nil {
		return "", fmt.Errorf("%s: %w", uri, ErrNoDefaultChat)
	}
	return *cs.session.DefaultChat, nil
}

// DefaultChat returns the URI of a subscribed session's default chat.
func (c *Client) DefaultChat(session string) (string, error) {
	if kindOf(session) != kindSession {
		return "", fmt.Errorf("%s is not a session URI: %w", session, ErrNoState)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resolveChatLocked(session)
}

// Session returns a copy of the confirmed state of a subscribed session.
func (c *Client) Session(channel string) (*wire.SessionState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.channels[channel]
	if cs == nil || cs.session == nil {
		return nil, fmt.Errorf("%s: %w", channel, ErrNoState)
	}
	return cloneState(cs.session, channel)
}

// Chat returns a copy of the confirmed state of a subscribed chat; a
// session URI stands for the session's default chat.
func (c *Client) Chat(chat string) (*wire.ChatState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uri, err := c.resolveChatLocked(chat)
	if err != nil {
		return nil, err
	}
	cs := c.channels[uri]
	if cs == nil || cs.chat == nil {
		return nil, fmt.Errorf("%s: %w", uri, ErrNoState)
	}
	return cloneState(cs.chat, uri)
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
	return cloneState(cs.root, RootChannel)
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

// Pending is the number of actions this client dispatched on channel (as
// dispatched: a chat URI for chat actions) that the server has not echoed
// yet.
func (c *Client) Pending(channel string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending[channel])
}

// Optimistic returns the session state as this client expects it to be:
// a copy of the confirmed state with the client's own not-yet-echoed
// actions on the session channel applied in dispatch order (write-ahead
// reconciliation). Once the server echoes or rejects them it equals
// Session again.
func (c *Client) Optimistic(channel string) (*wire.SessionState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.channels[channel]
	if cs == nil || cs.session == nil {
		return nil, fmt.Errorf("%s: %w", channel, ErrNoState)
	}
	st, err := cloneState(cs.session, channel)
	if err != nil {
		return nil, err
	}
	for _, p := range c.pending[channel] {
		reducer.Session(st, p.action, c.clock)
	}
	return st, nil
}

// OptimisticChat is Optimistic for a chat (a session URI stands for its
// default chat): the confirmed chat state with this client's unechoed
// chat actions (a started turn, a confirmation, a queued message, …)
// applied.
func (c *Client) OptimisticChat(chat string) (*wire.ChatState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uri, err := c.resolveChatLocked(chat)
	if err != nil {
		return nil, err
	}
	cs := c.channels[uri]
	if cs == nil || cs.chat == nil {
		return nil, fmt.Errorf("%s: %w", uri, ErrNoState)
	}
	st, err := cloneState(cs.chat, uri)
	if err != nil {
		return nil, err
	}
	for _, p := range c.pending[uri] {
		reducer.Chat(st, p.action, c.clock)
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

// wait blocks until check, called with the client's lock held
// whenever the state changes, reports done. It fails when ctx ends or the
// connection does; what names the awaited thing in those errors.
func (c *Client) wait(ctx context.Context, what string, check func() (bool, error)) error {
	for {
		c.mu.Lock()
		done, err := check()
		if done || err != nil {
			c.mu.Unlock()
			return err
		}
		if c.closed {
			err := c.err
			c.mu.Unlock()
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// WaitFor blocks until the confirmed state of the subscribed session
// channel satisfies pred, and returns a copy of that state. pred is called
// with the client's lock held on the live state: it must be quick, must not
// call the Client and must not keep or modify the pointer. WaitFor fails
// when ctx ends or the connection does.
func (c *Client) WaitFor(ctx context.Context, channel string, pred func(*wire.SessionState) bool) (*wire.SessionState, error) {
	var out *wire.SessionState
	err := c.wait(ctx, channel, func() (bool, error) {
		cs := c.channels[channel]
		if cs == nil || cs.session == nil || !pred(cs.session) {
			return false, nil
		}
		var err error
		out, err = cloneState(cs.session, channel)
		return true, err
	})
	return out, err
}

// WaitForChat is WaitFor for a chat (a session URI stands for its default
// chat, looked up anew on every change).
func (c *Client) WaitForChat(ctx context.Context, chat string, pred func(*wire.ChatState) bool) (*wire.ChatState, error) {
	var out *wire.ChatState
	err := c.wait(ctx, chat, func() (bool, error) {
		uri, err := c.resolveChatLocked(chat)
		if err != nil {
			return false, nil // not subscribed yet: keep waiting
		}
		cs := c.channels[uri]
		if cs == nil || cs.chat == nil || !pred(cs.chat) {
			return false, nil
		}
		out, err = cloneState(cs.chat, uri)
		return true, err
	})
	return out, err
}

// WaitForRoot is WaitFor for the root channel.
func (c *Client) WaitForRoot(ctx context.Context, pred func(*wire.RootState) bool) (*wire.RootState, error) {
	var out *wire.RootState
	err := c.wait(ctx, RootChannel, func() (bool, error) {
		cs := c.channels[RootChannel]
		if cs == nil || cs.root == nil || !pred(cs.root) {
			return false, nil
		}
		var err error
		out, err = cloneState(cs.root, RootChannel)
		return true, err
	})
	return out, err
}

// cloneState deep-copies a state through JSON: the wire types round-trip
// exactly, and the copies are small enough for a CLI and tests.
func cloneState[T any](s *T, uri string) (*T, error) {
	var out T
	if err := roundTrip(s, &out); err != nil {
		return nil, fmt.Errorf("copying the state of %s: %w", uri, err)
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
