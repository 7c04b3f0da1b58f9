package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Reconnect resumes the session of prev, whose connection has ended, on a
// new connection: it dials url with prev's client id and sends `reconnect`
// with prev's last seen serverSeq and subscriptions (sessions and their
// chats alike).
//
// The new Client starts from a copy of prev's confirmed state. When the
// server replays, the missed envelopes are applied to it and also queued
// for Next, in order, ahead of anything live; channels the server reports
// missing are forgotten. When the gap was too large, the server's fresh
// snapshots replace the state instead and subscriptions without one are
// forgotten. Either way prev's unacknowledged actions are dropped (as the
// reconciliation rules say) and clientSeq numbering continues after prev's.
//
// When the server answers `reconnect` with an error — it does not know the
// client, typically because it restarted — the client starts afresh on the
// same connection: `initialize` with prev's subscriptions, whose snapshots
// replace the state (channels the server no longer has are forgotten). The
// result is then a snapshot result holding those snapshots, and
// ReconnectRefused says why the server refused. opts.ClientID is ignored.
func Reconnect(ctx context.Context, url string, prev *Client, opts Options) (*Client, *wire.ReconnectResult, error) {
	opts.ClientID = prev.clientID
	c, err := Dial(ctx, url, opts)
	if err != nil {
		return nil, nil, err
	}
	c.clientSeq.Store(prev.clientSeq.Load())

	subs, err := c.copyState(prev)
	if err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("reconnect: %w", err)
	}
	params := wire.ReconnectParams{Channel: RootChannel, ClientID: c.clientID, LastSeenServerSeq: c.lastSeq, Subscriptions: subs}
	var res wire.ReconnectResult
	_, err = c.call(ctx, wire.MethodReconnect, params, func(raw json.RawMessage) error {
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("decoding the reconnect result: %w", err)
		}
		switch r := res.Value.(type) {
		case *wire.ReconnectReplayResult:
			return c.applyReplay(r)
		case *wire.ReconnectSnapshotResult:
			return c.applySnapshots(subs, r)
		}
		return fmt.Errorf("the server answered reconnect with an unknown result type %q", res.Type())
	})
	var refusal *RPCError
	if errors.As(err, &refusal) {
		snaps, ierr := c.reinitialize(ctx, subs)
		if ierr != nil {
			_ = c.Close()
			return nil, nil, fmt.Errorf("reconnect: the server refused (%v), and starting afresh failed: %w", refusal, ierr)
		}
		c.refused = fmt.Errorf("reconnect: %w", err)
		return c, &wire.ReconnectResult{Value: &wire.ReconnectSnapshotResult{Type: wire.ReconnectResultTypeSnapshot, Snapshots: snaps}}, nil
	}
	if err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("reconnect: %w", err)
	}
	return c, &res, nil
}

// ReconnectRefused is the server's refusal of `reconnect` when Reconnect
// fell back to a fresh initialize, nil otherwise (and for a Client that
// Dial made).
func (c *Client) ReconnectRefused() error { return c.refused }

// copyState gives c, not yet shared, a copy of prev's confirmed state and
// returns prev's subscriptions, sorted.
func (c *Client) copyState(prev *Client) ([]string, error) {
	prev.mu.Lock()
	defer prev.mu.Unlock()
	c.mu.Lock() // the reader runs already, though nothing has been asked yet
	defer c.mu.Unlock()
	subs := []string{}
	for uri, cs := range prev.channels {
		if cs.subscribing {
			continue
		}
		subs = append(subs, uri)
		cp := &channelState{kind: cs.kind, lastSeq: cs.lastSeq, other: cs.other, follows: slices.Clone(cs.follows)}
		var err error
		switch {
		case cs.root != nil:
			cp.root, err = cloneState(cs.root, uri)
		case cs.session != nil:
			cp.session, err = cloneState(cs.session, uri)
		case cs.chat != nil:
			cp.chat, err = cloneState(cs.chat, uri)
		}
		if err != nil {
			return nil, err
		}
		c.channels[uri] = cp
	}
	for chat, session := range prev.owners {
		c.owners[chat] = session
	}
	c.lastSeq = prev.lastSeq
	sort.Strings(subs)
	return subs, nil
}

// reinitialize starts afresh on this connection after the server refused
// `reconnect`: every channel waits for a new snapshot from initialize (the
// server's serverSeq may have started over), and those it returns none
// for are forgotten.
func (c *Client) reinitialize(ctx context.Context, subs []string) ([]wire.Snapshot, error) {
	c.mu.Lock()
	for uri, cs := range c.channels {
		c.channels[uri] = &channelState{kind: cs.kind, subscribing: true, follows: cs.follows}
	}
	c.lastSeq = 0
	c.mu.Unlock()
	res, err := c.Initialize(ctx, subs...)
	if err != nil {
		return nil, err
	}
	return res.Snapshots, nil
}

// applyReplay applies and queues the envelopes missed while disconnected.
func (c *Client) applyReplay(r *wire.ReconnectReplayResult) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, uri := range r.Missing {
		delete(c.channels, uri)
	}
	for i := range r.Actions {
		env := &r.Actions[i]
		if env.ServerSeq > c.lastSeq {
			c.lastSeq = env.ServerSeq
		}
		c.applyLocked(env)
		params, err := json.Marshal(env)
		if err != nil {
			return fmt.Errorf("re-encoding replayed envelope %d: %w", env.ServerSeq, err)
		}
		c.pushEventLocked(Event{Method: wire.MethodAction, Channel: env.Channel, Session: c.sessionOfLocked(env.Channel), Params: params, Envelope: env})
	}
	c.broadcastLocked()
	return nil
}

// applySnapshots replaces the state with the server's fresh snapshots.
func (c *Client) applySnapshots(subs []string, r *wire.ReconnectSnapshotResult) error {
	got := map[string]bool{}
	for _, s := range r.Snapshots {
		got[s.Resource] = true
		if err := c.applySnapshot(s); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, uri := range subs {
		if !got[uri] {
			delete(c.channels, uri)
		}
	}
	c.broadcastLocked()
	return nil
}
