package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// ProtocolVersion is the AHP version this client speaks.
const ProtocolVersion = "0.3.0"

// Initialize performs the AHP handshake, offering protocol 0.3.0, and
// subscribes to subscriptions in the same round trip (none means just
// ahp-root://). The snapshots in the result are installed as client state
// before Initialize returns.
func (c *Client) Initialize(ctx context.Context, subscriptions ...string) (*wire.InitializeResult, error) {
	if len(subscriptions) == 0 {
		subscriptions = []string{RootChannel}
	}
	for _, ch := range subscriptions {
		c.markSubscribing(ch)
	}
	params := wire.InitializeParams{
		Channel:              RootChannel,
		ProtocolVersions:     []string{ProtocolVersion},
		ClientID:             c.clientID,
		InitialSubscriptions: subscriptions,
	}
	var res wire.InitializeResult
	_, err := c.call(ctx, "initialize", params, func(raw json.RawMessage) error {
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
	if err != nil {
		for _, ch := range subscriptions {
			c.dropPendingSubscription(ch)
		}
		return nil, fmt.Errorf("initialize: %w", err)
	}
	// Channels the server returned no snapshot for (stateless, or refused)
	// must not hold envelopes back forever.
	for _, ch := range subscriptions {
		c.dropPendingSubscription(ch)
	}
	return &res, nil
}

// dropPendingSubscription forgets a channel whose subscribe produced no
// snapshot.
func (c *Client) dropPendingSubscription(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs := c.channels[channel]; cs != nil && cs.subscribing {
		delete(c.channels, channel)
	}
}

// Subscribe subscribes to a channel and returns its snapshot (nil for a
// stateless channel). From then on the client keeps the channel's confirmed
// state (root and session channels) and queues its envelopes for Next.
func (c *Client) Subscribe(ctx context.Context, channel string) (*wire.Snapshot, error) {
	c.markSubscribing(channel)
	var res wire.SubscribeResult
	_, err := c.call(ctx, "subscribe", wire.SubscribeParams{Channel: channel}, func(raw json.RawMessage) error {
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

// Unsubscribe stops updates for a channel and forgets its state.
func (c *Client) Unsubscribe(ctx context.Context, channel string) error {
	c.dropChannel(channel)
	if err := c.Notify(ctx, "unsubscribe", wire.UnsubscribeParams{Channel: channel}); err != nil {
		return fmt.Errorf("unsubscribe %s: %w", channel, err)
	}
	return nil
}

// CreateSession asks the server to create the session params.Channel (see
// NewSessionURI). It does not subscribe; call Subscribe next, then wait for
// the lifecycle to leave "creating".
func (c *Client) CreateSession(ctx context.Context, params wire.CreateSessionParams) error {
	if err := c.Call(ctx, "createSession", params, nil); err != nil {
		return fmt.Errorf("createSession %s: %w", params.Channel, err)
	}
	return nil
}

// DisposeSession asks the server to dispose of a session.
func (c *Client) DisposeSession(ctx context.Context, channel string) error {
	if err := c.Call(ctx, "disposeSession", wire.DisposeSessionParams{Channel: channel}, nil); err != nil {
		return fmt.Errorf("disposeSession %s: %w", channel, err)
	}
	return nil
}

// DispatchAction sends a client action on a channel (fire and forget) and
// returns the clientSeq it was given; the server's echo carries the same
// origin. The action is not applied locally until the echo arrives.
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
	if err := c.Notify(ctx, "dispatchAction", params); err != nil {
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

// ListSessions returns the server's session summaries.
func (c *Client) ListSessions(ctx context.Context) ([]wire.SessionSummary, error) {
	var res wire.ListSessionsResult
	if err := c.Call(ctx, "listSessions", wire.ListSessionsParams{Channel: RootChannel}, &res); err != nil {
		return nil, fmt.Errorf("listSessions: %w", err)
	}
	return res.Items, nil
}

// Ping checks that the connection is alive.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.Call(ctx, "ping", wire.PingParams{Channel: RootChannel}, nil); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}
