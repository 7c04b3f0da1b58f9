package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// ProtocolVersion is the AHP version this client speaks, and the only one
// it offers in initialize: its state model is that version's.
const ProtocolVersion = wire.ProtocolVersion

// defaultClientInfo names this client in initialize unless Options say
// otherwise.
var defaultClientInfo = wire.Implementation{Name: "ahp-bridge client"}

// Initialize performs the AHP handshake, offering protocol 1.0.0, and
// subscribes to subscriptions in the same round trip (none means just
// ahp-root://). The snapshots in the result are installed as client state
// before Initialize returns; for every session among them the client then
// also subscribes to the session's default chat, as Subscribe does.
func (c *Client) Initialize(ctx context.Context, subscriptions ...string) (*wire.InitializeResult, error) {
	if len(subscriptions) == 0 {
		subscriptions = []string{RootChannel}
	}
	res, err := c.initialize(ctx, subscriptions)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	for _, s := range res.Snapshots {
		if kindOf(s.Resource) == kindSession {
			if err := c.follow(ctx, s.Resource, nil); err != nil {
				return res, fmt.Errorf("initialize: %w", err)
			}
		}
	}
	return res, nil
}

// initialize sends initialize and installs its snapshots.
func (c *Client) initialize(ctx context.Context, subscriptions []string) (*wire.InitializeResult, error) {
	for _, ch := range subscriptions {
		c.markSubscribing(ch)
	}
	info := defaultClientInfo
	if c.opts.ClientInfo != nil {
		info = *c.opts.ClientInfo
	}
	params := wire.InitializeParams{
		Channel:              RootChannel,
		ProtocolVersions:     []string{ProtocolVersion},
		ClientID:             c.clientID,
		ClientInfo:           &info,
		InitialSubscriptions: subscriptions,
	}
	var res wire.InitializeResult
	_, err := c.call(ctx, wire.MethodInitialize, params, func(raw json.RawMessage) error {
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("decoding the initialize result: %w", err)
		}
		if res.ProtocolVersion != ProtocolVersion {
			return fmt.Errorf("the server chose protocol version %q, but this client only speaks %s", res.ProtocolVersion, ProtocolVersion)
		}
		c.mu.Lock()
		if res.ServerSeq > c.lastSeq {
			c.lastSeq = res.ServerSeq
		}
		c.mu.Unlock()
		for _, s := range res.Snapshots {
			if err := c.applySnapshot(s); err != nil {
				return err
			}
		}
		return nil
	})
	// Channels the server returned no snapshot for (stateless, unknown or
	// refused) must not hold envelopes back forever.
	for _, ch := range subscriptions {
		c.dropPendingSubscription(ch)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// SubscribeOption adjusts a subscribe request.
type SubscribeOption func(*wire.SubscribeParams)

// LastTurns asks for only the last n completed turns of a chat (subscribe's
// view.turns); the chat state then carries a turnsNextCursor and
// FetchTurns pages in the older ones. On a session it applies to the
// default chat subscribed with it.
func LastTurns(n int) SubscribeOption {
	return func(p *wire.SubscribeParams) {
		p.View = &wire.SubscribeView{Turns: wire.Ptr(int64(n))}
	}
}

// Subscribe subscribes to a channel and returns its snapshot (nil for a
// stateless channel). From then on the client keeps the channel's confirmed
// state (root, session and chat channels) and queues its envelopes for
// Next. Subscribing to a session also subscribes to its default chat (the
// snapshot returned is the session's); Unsubscribe releases both. A session
// URI keeps standing for whatever chat the session names as its default,
// but the client subscribes only to the one named at subscription: should
// a server move it (session/defaultChatChanged; ahp-bridge's host never
// does), subscribe to the new chat to follow its turns.
func (c *Client) Subscribe(ctx context.Context, channel string, opts ...SubscribeOption) (*wire.Snapshot, error) {
	params := wire.SubscribeParams{Channel: channel}
	for _, o := range opts {
		o(&params)
	}
	snap, err := c.subscribe(ctx, params)
	if err != nil {
		return nil, err
	}
	if snap != nil && kindOf(channel) == kindSession {
		if err := c.follow(ctx, channel, params.View); err != nil {
			_ = c.Unsubscribe(ctx, channel)
			return nil, err
		}
	}
	return snap, nil
}

func (c *Client) subscribe(ctx context.Context, params wire.SubscribeParams) (*wire.Snapshot, error) {
	channel := params.Channel
	c.markSubscribing(channel)
	var res wire.SubscribeResult
	_, err := c.call(ctx, wire.MethodSubscribe, params, func(raw json.RawMessage) error {
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("decoding the subscribe result: %w", err)
		}
		if res.Snapshot == nil {
			return nil
		}
		if res.Snapshot.Resource != channel {
			return fmt.Errorf("the server answered subscribe(%s) with a snapshot of %s", channel, res.Snapshot.Resource)
		}
		return c.applySnapshot(*res.Snapshot)
	})
	c.dropPendingSubscription(channel)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", channel, err)
	}
	return res.Snapshot, nil
}

// follow subscribes to a subscribed session's default chat, unless the
// client already watches it, and remembers to release it with the
// session.
func (c *Client) follow(ctx context.Context, session string, view *wire.SubscribeView) error {
	c.mu.Lock()
	cs := c.channels[session]
	if cs == nil || cs.session == nil || cs.session.DefaultChat == nil {
		c.mu.Unlock()
		return nil // a session without chats has nothing to follow
	}
	chat := *cs.session.DefaultChat
	_, watched := c.channels[chat]
	c.mu.Unlock()
	if watched {
		return nil
	}
	if _, err := c.subscribe(ctx, wire.SubscribeParams{Channel: chat, View: view}); err != nil {
		return fmt.Errorf("subscribing to %s, the default chat of %s: %w", chat, session, err)
	}
	c.mu.Lock()
	if cs := c.channels[session]; cs != nil {
		cs.follows = append(cs.follows, chat)
	}
	c.mu.Unlock()
	return nil
}

// Unsubscribe stops updates for a channel and forgets its state; for a
// session, also for the default chat Subscribe added. Actions dispatched
// on those channels and not echoed yet are forgotten too: the server
// echoes only to subscribers.
func (c *Client) Unsubscribe(ctx context.Context, channel string) error {
	c.mu.Lock()
	uris := []string{channel}
	if cs := c.channels[channel]; cs != nil {
		uris = append(uris, cs.follows...)
	}
	for _, u := range uris {
		c.forgetLocked(u)
	}
	c.broadcastLocked()
	c.mu.Unlock()
	for _, u := range uris {
		if err := c.Notify(ctx, wire.MethodUnsubscribe, wire.UnsubscribeParams{Channel: u}); err != nil {
			return fmt.Errorf("unsubscribe %s: %w", u, err)
		}
	}
	return nil
}

// forgetLocked drops what the client keeps about a channel.
func (c *Client) forgetLocked(uri string) {
	delete(c.channels, uri)
	delete(c.pending, uri)
	delete(c.owners, uri)
	if kindOf(uri) == kindSession {
		for chat, session := range c.owners {
			if session == uri {
				delete(c.owners, chat)
			}
		}
	}
}

// CreateSession asks the server to create the session params.Channel (see
// NewSessionURI), with its default chat. It does not subscribe; call
// Subscribe next, then wait for the lifecycle to leave "creating".
func (c *Client) CreateSession(ctx context.Context, params wire.CreateSessionParams) error {
	if err := c.Call(ctx, wire.MethodCreateSession, params, nil); err != nil {
		return fmt.Errorf("createSession %s: %w", params.Channel, err)
	}
	return nil
}

// DisposeSession asks the server to dispose of a session and its chats.
func (c *Client) DisposeSession(ctx context.Context, channel string) error {
	if err := c.Call(ctx, wire.MethodDisposeSession, wire.DisposeSessionParams{Channel: channel}, nil); err != nil {
		return fmt.Errorf("disposeSession %s: %w", channel, err)
	}
	return nil
}

// CreateChat asks the server to add the chat params.Chat (see NewChatURI)
// to the session params.Channel; the agent must advertise multipleChats.
// The session's catalogue gains it (session/chatAdded) before the server
// answers. It does not subscribe; call Subscribe on the chat next.
func (c *Client) CreateChat(ctx context.Context, params wire.CreateChatParams) error {
	if err := c.Call(ctx, wire.MethodCreateChat, params, nil); err != nil {
		return fmt.Errorf("createChat %s in %s: %w", params.Chat, params.Channel, err)
	}
	return nil
}

// DisposeChat asks the server to remove a chat that is not its session's
// default one. The client forgets its state of the chat.
func (c *Client) DisposeChat(ctx context.Context, chat string) error {
	if err := c.Call(ctx, wire.MethodDisposeChat, wire.DisposeChatParams{Channel: chat}, nil); err != nil {
		return fmt.Errorf("disposeChat %s: %w", chat, err)
	}
	c.mu.Lock()
	c.forgetLocked(chat)
	c.broadcastLocked()
	c.mu.Unlock()
	return nil
}

// FetchTurns loads the page of a subscribed chat's history just older than
// the turns the client holds (a session URI stands for its default chat).
// The server delivers the page as chat/turnsLoaded, which the client has
// applied by the time FetchTurns returns. It reports whether still older
// turns remain; without a turnsNextCursor (the chat was subscribed with
// its whole history, or everything is loaded) it asks nothing and reports
// false.
func (c *Client) FetchTurns(ctx context.Context, chat string) (more bool, err error) {
	c.mu.Lock()
	uri, err := c.resolveChatLocked(chat)
	var cursor *string
	if err == nil {
		if cs := c.channels[uri]; cs != nil && cs.chat != nil {
			cursor = cs.chat.TurnsNextCursor
		} else {
			err = fmt.Errorf("%s: %w", uri, ErrNoState)
		}
	}
	c.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("fetchTurns: %w", err)
	}
	if cursor == nil {
		return false, nil
	}
	if err := c.Call(ctx, wire.MethodFetchTurns, wire.FetchTurnsParams{Channel: uri, Cursor: cursor}, nil); err != nil {
		return false, fmt.Errorf("fetchTurns %s: %w", uri, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.channels[uri]
	return cs != nil && cs.chat != nil && cs.chat.TurnsNextCursor != nil, nil
}

// ListSessions returns every session summary the server has, most
// recently modified first, following the server's pages if it pages
// unasked.
func (c *Client) ListSessions(ctx context.Context) ([]wire.SessionSummary, error) {
	params := wire.ListSessionsParams{Channel: RootChannel}
	var all []wire.SessionSummary
	for {
		var res wire.ListSessionsResult
		if err := c.Call(ctx, wire.MethodListSessions, params, &res); err != nil {
			return nil, fmt.Errorf("listSessions: %w", err)
		}
		all = append(all, res.Items...)
		if res.NextCursor == nil || len(res.Items) == 0 {
			if all == nil {
				all = []wire.SessionSummary{}
			}
			return all, nil
		}
		params.Cursor = res.NextCursor
	}
}

// ListSessionsPage returns up to limit session summaries after cursor ("" for
// the first page) and the cursor of the next page, "" after the last.
func (c *Client) ListSessionsPage(ctx context.Context, limit int, cursor string) (items []wire.SessionSummary, next string, err error) {
	params := wire.ListSessionsParams{Channel: RootChannel, Limit: wire.Ptr(int64(limit))}
	if cursor != "" {
		params.Cursor = &cursor
	}
	var res wire.ListSessionsResult
	if err := c.Call(ctx, wire.MethodListSessions, params, &res); err != nil {
		return nil, "", fmt.Errorf("listSessions: %w", err)
	}
	if res.NextCursor != nil {
		next = *res.NextCursor
	}
	return res.Items, next, nil
}

// Completions asks for completions of the text being typed in a chat (a
// session URI in params.Channel stands for its default chat).
func (c *Client) Completions(ctx context.Context, params wire.CompletionsParams) ([]wire.CompletionItem, error) {
	c.mu.Lock()
	uri, err := c.resolveChatLocked(params.Channel)
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("completions: %w", err)
	}
	params.Channel = uri
	var res wire.CompletionsResult
	if err := c.Call(ctx, wire.MethodCompletions, params, &res); err != nil {
		return nil, fmt.Errorf("completions in %s: %w", uri, err)
	}
	return res.Items, nil
}

// ResolveSessionConfig asks for the settings schema and values a session
// would get with params (an empty params.Channel means the root channel,
// where the command belongs).
func (c *Client) ResolveSessionConfig(ctx context.Context, params wire.ResolveSessionConfigParams) (*wire.ResolveSessionConfigResult, error) {
	if params.Channel == "" {
		params.Channel = RootChannel
	}
	var res wire.ResolveSessionConfigResult
	if err := c.Call(ctx, wire.MethodResolveSessionConfig, params, &res); err != nil {
		return nil, fmt.Errorf("resolveSessionConfig: %w", err)
	}
	return &res, nil
}

// Ping checks that the connection is alive.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.Call(ctx, wire.MethodPing, wire.PingParams{Channel: RootChannel}, nil); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// DispatchAction sends a client action on a channel (fire and forget) and
// returns the clientSeq it was given; the server's echo carries the same
// origin. Until the echo arrives the action shows in Optimistic and
// OptimisticChat only; the confirmed state changes with the echo. Chat
// actions (turns, confirmations, pending messages, the draft) go to a chat
// URI.
func (c *Client) DispatchAction(ctx context.Context, channel string, action wire.StateAction) (int64, error) {
	seq := c.clientSeq.Add(1)
	if err := c.dispatch(ctx, channel, seq, action); err != nil {
		return 0, err
	}
	return seq, nil
}

func (c *Client) dispatch(ctx context.Context, channel string, seq int64, action wire.StateAction) error {
	c.mu.Lock()
	c.pending[channel] = append(c.pending[channel], pendingAction{clientSeq: seq, action: action})
	c.mu.Unlock()
	params := wire.DispatchActionParams{Channel: channel, ClientSeq: seq, Action: action}
	if err := c.Notify(ctx, wire.MethodDispatchAction, params); err != nil {
		c.mu.Lock()
		c.dropPendingLocked(channel, seq)
		c.mu.Unlock()
		return fmt.Errorf("dispatchAction %s on %s: %w", actionType(action), channel, err)
	}
	return nil
}

// RejectedError is returned by Confirm when the server echoed the action
// with a rejectionReason.
type RejectedError struct {
	// Envelope is the rejected echo.
	Envelope *wire.ActionEnvelope
}

// Error implements error.
func (e *RejectedError) Error() string {
	reason := ""
	if e.Envelope.RejectionReason != nil {
		reason = *e.Envelope.RejectionReason
	}
	return fmt.Sprintf("the server rejected %s on %s: %s", actionType(e.Envelope.Action), e.Envelope.Channel, reason)
}

// Confirm dispatches an action and waits for the server's echo. It
// returns the echoed envelope, or a *RejectedError when the server rejected
// the action. (Per the spec, actions on a channel the server does not know
// are ignored without an echo; Confirm then waits until ctx ends.) The
// echo is also delivered through Next as usual.
func (c *Client) Confirm(ctx context.Context, channel string, action wire.StateAction) (*wire.ActionEnvelope, error) {
	seq := c.clientSeq.Add(1)
	w := make(chan Event, 1)
	c.mu.Lock()
	c.echoes[seq] = w
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.echoes, seq)
		c.mu.Unlock()
	}()
	if err := c.dispatch(ctx, channel, seq, action); err != nil {
		return nil, err
	}
	select {
	case ev := <-w:
		if ev.Envelope.RejectionReason != nil {
			return ev.Envelope, &RejectedError{Envelope: ev.Envelope}
		}
		return ev.Envelope, nil
	case <-c.readerEnd:
		return nil, fmt.Errorf("waiting for the echo of %s: %w", actionType(action), c.Err())
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the echo of %s: %w", actionType(action), ctx.Err())
	}
}
