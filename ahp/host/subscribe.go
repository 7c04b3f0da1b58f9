package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// snapshotOut is the wire Snapshot with the state already encoded in the
// connection's dialect.
type snapshotOut struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

// channelsFor returns the host channels a subscription to uri means on c.
func (h *Host) channelsFor(c *conn, uri string) []string {
	uri = canonicalChannel(uri)
	if c.codec == nil {
		return []string{uri}
	}
	return c.codec.Channels(uri)
}

// view is how much of a chat's history a subscriber asked for.
type view struct {
	turns int // 0: everything retained
}

// snapshotAndSubscribe takes a snapshot of uri in c's dialect and
// subscribes c to every host channel behind it in one step with respect to
// the sequencer: every action on them sequenced after the snapshot has
// serverSeq > FromSeq and reaches c.
func (h *Host) snapshotAndSubscribe(c *conn, uri string, v view) (*snapshotOut, *Error) {
	names := h.channelsFor(c, uri)
	if len(names) == 0 {
		return nil, h.notFoundOrHeld(uri) // holders.go
	}
	if err := h.mayWatch(c, names); err != nil {
		return nil, err
	}
	chans := make([]*channel, len(names))
	for i, n := range names {
		if chans[i] = h.lookup(n); chans[i] == nil {
			return nil, h.notFoundOrHeld(uri)
		}
	}
	// The channels behind one URI are one channel, or a session and its
	// chats, which share their group's mutex.
	mu := chans[0].mu
	for _, ch := range chans[1:] {
		if ch.mu != mu {
			return nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("the channels behind %s cannot be read at once", uri)}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if g := chans[0].group; g != nil {
		// A snapshot with an action still held for a store write would be
		// followed by that action: wait until they are broadcast.
		h.awaitHeldLocked(g)
	}
	states := make([]any, len(chans))
	for i, ch := range chans {
		if ch.removed {
			return nil, notFoundError(uri)
		}
		if ch.kind == chanRoot {
			h.rootMetaLocked() // the state store's warning (persist.go)
		}
		states[i] = ch.state()
		if ch.kind == chanChat && v.turns > 0 {
			states[i] = tail(ch.uri, ch.chat.synced(), v.turns)
		}
	}
	if chans[0].kind == chanSession {
		sum := summaryOf(chans[0].group)
		states = append(states, &sum)
	}
	var st []byte
	var err error
	if c.codec == nil {
		st, err = json.Marshal(states[0])
	} else {
		st, err = c.codec.Snapshot(uri, states)
	}
	if err != nil {
		return nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("encoding the state of %s: %v", uri, err)}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	added := 0
	for _, ch := range chans {
		if _, already := c.subs[ch.uri]; !already {
			added++
		}
	}
	if added > 0 && len(c.subs)+added > h.opts.MaxSubscriptionsPerConn {
		return nil, Errorf(CodeInvalidRequest, "subscription limit reached: a connection may hold at most %d subscriptions", h.opts.MaxSubscriptionsPerConn)
	}
	for _, ch := range chans {
		ch.addSub(c)
		c.subs[ch.uri] = ch
	}
	if len(chans) == 1 && chans[0].kind == chanChat {
		if v.turns > 0 {
			if c.tails == nil {
				c.tails = map[string]bool{}
			}
			c.tails[uri] = true
		} else {
			delete(c.tails, uri)
		}
	}
	return &snapshotOut{Resource: uri, State: st, FromSeq: h.seq}, nil
}

// tail returns a copy of a chat's state that holds only its last n
// completed turns, with a cursor to page in the older ones (subscribe's
// view.turns). The copy shares everything with the live state, so it may
// only be encoded, under the chat's lock.
func tail(chat string, st *wire.ChatState, n int) *wire.ChatState {
	if n >= len(st.Turns) {
		return st
	}
	cp := *st
	cp.Turns = st.Turns[len(st.Turns)-n:]
	cp.TurnsNextCursor = wire.Ptr(turnsCursor(chat, cp.Turns[0].ID))
	return &cp
}

// awaitHeld waits until no action of the sessions behind uris is held for
// a store write (pipeline.go), before a connection parks its frames for a
// snapshot reply (conn.hold): the snapshot waits for them anyway, and a
// connection parked through a slow write could overflow. Best effort: the
// snapshot itself waits again if more were held meanwhile.
func (h *Host) awaitHeld(uris ...string) {
	if h.ds == nil {
		return
	}
	for _, uri := range uris {
		if ch := h.lookup(uri); ch != nil && ch.group != nil {
			ch.mu.Lock()
			h.awaitHeldLocked(ch.group)
			ch.mu.Unlock()
		}
	}
}

// subscribeAll snapshots and subscribes to every known channel in uris;
// unknown ones are skipped (and logged).
func (h *Host) subscribeAll(c *conn, uris []string) []snapshotOut {
	h.restoreAll(uris)
	snaps := []snapshotOut{}
	seen := map[string]bool{}
	for _, uri := range uris {
		if seen[uri] {
			continue
		}
		seen[uri] = true
		s, err := h.snapshotAndSubscribe(c, uri, view{})
		if err != nil {
			c.log.Debug().Str("channel", uri).Str("error", err.Message).Msg("skipping a subscription")
			continue
		}
		snaps = append(snaps, *s)
	}
	return snaps
}

func (h *Host) subscribe(_ context.Context, r *request, uri string) {
	var p wire.SubscribeParams
	if err := decodeParams("subscribe", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	var v view
	if p.View != nil && p.View.Turns != nil {
		if *p.View.Turns < 0 {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for subscribe: view.turns must not be negative"))
			return
		}
		v.turns = int(min(*p.View.Turns, int64(MaxFetchTurnsLimit)))
	}
	c := r.c
	h.awaitHeld(uri)
	c.hold()
	snap, err := h.snapshotAndSubscribe(c, uri, v)
	var frame []byte
	if err != nil {
		frame = encodeError(r.id, err)
	} else {
		frame = h.resultFrame(r, struct {
			Snapshot *snapshotOut `json:"snapshot"`
		}{snap})
	}
	h.stats.queued.Add(1)
	c.release(frame)
	if err == nil {
		h.noteClient(c) // clients.go
	}
}

// unsubscribe ends c's subscription to uri (and the host channels behind
// it). A client that stops watching a session is no longer one of its
// active clients (spec: session/activeClientRemoved).
func (h *Host) unsubscribe(c *conn, uri string) {
	h.mu.Lock()
	var left []*channel
	for _, n := range h.channelsFor(c, uri) {
		if ch, ok := c.subs[n]; ok {
			ch.dropSub(c)
			delete(c.subs, n)
			left = append(left, ch)
		}
	}
	delete(c.tails, uri)
	clientID := c.clientID
	groups := groupsOf(left)
	h.mu.Unlock()
	h.unloadReleased(groups) // archive.go
	h.releaseActiveClient(clientID, func(session string) bool { return session == uri })
	h.filesUnsubscribed(c, uri)
	h.noteClient(c) // clients.go
}
