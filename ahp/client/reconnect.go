package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// Reconnect resumes the session of prev, whose connection has ended, on a
// new connection: it dials url with prev's client id and sends `reconnect`
// with prev's last seen serverSeq and subscriptions.
//
// The new Client starts from a copy of prev's confirmed state. When the
// server replays, the missed envelopes are applied to it and also queued
// for Next, in order, ahead of anything live; channels the server reports
// missing are forgotten. When the gap was too large, the server's fresh
// snapshots replace the state instead and subscriptions without one are
// forgotten. Either way prev's unacknowledged actions are dropped (as the
// reconciliation rules say) and clientSeq numbering continues after prev's.
// opts.ClientID is ignored.
func Reconnect(ctx context.Context, url string, prev *Client, opts Options) (*Client, *wire.ReconnectResult, error) {
	opts.ClientID = prev.clientID
	c, err := Dial(ctx, url, opts)
	if err != nil {
		return nil, nil, err
	}
	c.clientSeq.Store(prev.clientSeq.Load())

	prev.mu.Lock()
	var subs []string
	for uri, cs := range prev.channels {
		if cs.subscribing {
			continue
		}
		subs = append(subs, uri)
		copied := &channelState{lastSeq: cs.lastSeq, other: cs.other}
		var cerr error
		if cs.session != nil {
			copied.session, cerr = cloneSession(cs.session)
		}
		if cs.root != nil && cerr == nil {
			copied.root, cerr = cloneRoot(cs.root)
		}
		if cerr != nil {
			prev.mu.Unlock()
			_ = c.Close()
			return nil, nil, fmt.Errorf("reconnect: %w", cerr)
		}
		c.channels[uri] = copied
	}
	lastSeq := prev.lastSeq
	prev.mu.Unlock()
	sort.Strings(subs)
	c.lastSeq = lastSeq

	params := wire.ReconnectParams{Channel: RootChannel, ClientID: c.clientID, LastSeenServerSeq: lastSeq, Subscriptions: subs}
	if params.Subscriptions == nil {
		params.Subscriptions = []string{}
	}
	var res wire.ReconnectResult
	_, err = c.call(ctx, "reconnect", params, func(raw json.RawMessage) error {
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
	if err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("reconnect: %w", err)
	}
	return c, &res, nil
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
		c.pushEventLocked(Event{Method: "action", Channel: env.Channel, Params: params, Envelope: env})
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
