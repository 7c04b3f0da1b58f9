package host

import (
	"errors"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file is a session group's commit pipeline: what must be durable
// before it is broadcast is written without holding the group's mutex, and
// the group's actions are broadcast in the order they were applied.
//
// An action is reduced under the group's mutex as always. When it makes a
// write due (persistLocked), or when an earlier action of the group is
// still waiting for its write, it is not broadcast at once but held: its
// encoded envelope data goes to the back of the group's queue, without a
// serverSeq. A drainer then, in a loop: takes under the mutex one batch
// covering everything the queue holds (the session's and its chats' rows
// as the state is now, and every completed turn not stored yet: encoding,
// not I/O), releases the mutex, writes the batch, takes the mutex again,
// notes what was stored, and commits the held actions the batch covers,
// in order. serverSeq is assigned there, at the broadcast (commit), so
// every connection sees it strictly increasing.
//
// Everything that snapshots a session or chat for a client waits for its
// group's queue to be empty first (awaitHeldLocked): a snapshot that
// included a held action would be followed by that action's broadcast,
// and the client would apply it twice.

// pipeline is a session group's queue of held actions. Guarded by the
// group's mutex. It is drained by a goroutine of the host rather than by
// the caller that queued the write, because every caller holds the mutex
// across its follow-ups (applyLocked's callers rely on the state not moving
// under them), so none of them may let it go for a write.
type pipeline struct {
	// items are the held actions, in the order they were applied.
	items []heldAction
	// write is set when an action made a write due that no batch covers
	// yet; catalogue when that write must rewrite the session's and its
	// chats' rows (completed turns are found from chatData.unstored).
	write, catalogue bool
	// summaryDirty is set when the root catalogue's summary may have
	// changed while actions were held (or while its write is under way):
	// the drainer announces it once the queue is empty, so that
	// root/sessionSummaryChanged never overtakes what it summarises.
	summaryDirty bool
	// summaryTried is set from the summary's own write being held until
	// the summary is announced (refreshSummaryLocked).
	summaryTried bool
	// draining is set while a drainer owns the queue.
	draining bool
	// drained, when not nil, is closed when the queue next empties; made
	// by the first waiter (awaitHeldLocked).
	drained chan struct{}
}

// heldAction is an action reduced but not yet broadcast, a client action's
// rejection (reason set: echoed to sender alone, on channel as it named
// it), or (neither) a mark that a caller waits on through done.
type heldAction struct {
	ch         *channel
	channel    string
	actionJSON []byte
	origin     *wire.ActionOrigin
	sender     *conn
	reason     string
	done       chan struct{}
}

// held reports whether actions of the group wait for a write.
func (p *pipeline) held() bool { return len(p.items) > 0 }

// sequenceLocked broadcasts an action just reduced into ch (commit), or
// holds it when a write must come first (write) or an earlier action of
// its group waits for one. It returns the action's serverSeq, or 0 when it
// was held. Called with ch.mu held.
func (h *Host) sequenceLocked(ch *channel, actionJSON []byte, origin *wire.ActionOrigin, sender *conn, write, catalogue bool) int64 {
	g := ch.group
	if g == nil || (!write && !g.pipe.held()) {
		return h.commit(ch, actionJSON, origin, sender)
	}
	h.holdLocked(g, heldAction{ch: ch, actionJSON: actionJSON, origin: origin, sender: sender}, write, catalogue)
	return 0
}

// rejectLocked is reject for a client action on ch, in order with the
// actions of ch's group held before it: the sender sees its earlier
// accepted actions' echoes first. Called with ch.mu held.
func (h *Host) rejectLocked(ch *channel, c *conn, channel string, actionJSON []byte, origin *wire.ActionOrigin, reason string) {
	if g := ch.group; g != nil && g.pipe.held() {
		h.holdLocked(g, heldAction{channel: channel, actionJSON: actionJSON, origin: origin, sender: c, reason: reason}, false, false)
		return
	}
	h.reject(c, channel, actionJSON, origin, reason)
}

// holdLocked queues an item on the group's pipeline, notes the write it
// makes due, and makes sure a drainer runs. Called with the group's mutex
// held.
func (h *Host) holdLocked(g *sessionGroup, it heldAction, write, catalogue bool) {
	p := &g.pipe
	p.items = append(p.items, it)
	p.write = p.write || write
	p.catalogue = p.catalogue || catalogue
	if !p.draining {
		h.startDrainerLocked(g)
	}
}

// storeNowLocked writes what the group's state makes due (its rows when
// catalogue is set, and its completed turns not stored yet) and returns
// once that write is done and the group's held actions before it are
// broadcast. It releases the group's mutex while it waits: callers must
// expect the group to have changed (and to be removed) on return. Called
// with the group's mutex held; a no-op without a store.
func (h *Host) storeNowLocked(g *sessionGroup, catalogue bool) {
	if h.ds == nil {
		return
	}
	done := make(chan struct{})
	h.holdLocked(g, heldAction{done: done}, true, catalogue)
	g.mu.Unlock()
	<-done
	g.mu.Lock()
}

// awaitHeldLocked returns once no action of the group is held, releasing
// the group's mutex while it waits (each write is bounded by
// persist.WriteTimeout). A group whose writes keep coming faster than the
// disk takes them could keep a waiter waiting; writes come a few per turn,
// so in practice it waits for one or two. Called with the group's mutex
// held; callers must check that what they hold was not removed meanwhile.
func (h *Host) awaitHeldLocked(g *sessionGroup) {
	for g.pipe.held() {
		if g.pipe.drained == nil {
			g.pipe.drained = make(chan struct{})
		}
		d := g.pipe.drained
		g.mu.Unlock()
		<-d
		g.mu.Lock()
	}
}

// startDrainerLocked makes the group's queue drained. The drainer is a
// goroutine of the host (h.wg): it takes the group's mutex, releases it
// only around each write, and exits once the queue is empty, so there is
// at most one per group and none for an idle one. Once the host is
// closed no goroutine may start, and the queue is drained here, writing
// under the mutex as the host did before this pipeline (shutdown only).
// Called with the group's mutex held.
func (h *Host) startDrainerLocked(g *sessionGroup) {
	g.pipe.draining = true
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.wg.Add(1)
	}
	h.mu.Unlock()
	if closed {
		h.drainLocked(g, false)
		return
	}
	go func() {
		defer h.wg.Done()
		g.mu.Lock()
		defer g.mu.Unlock()
		h.drainLocked(g, true)
	}()
}

// drainLocked writes and broadcasts the group's held actions until its
// queue is empty, then announces the summary changes deferred meanwhile.
// With unlock, the mutex is released around each write. Called with the
// group's mutex held, by the group's one drainer.
func (h *Host) drainLocked(g *sessionGroup, unlock bool) {
	p := &g.pipe
	for {
		if len(p.items) == 0 {
			if !p.summaryDirty {
				break
			}
			p.summaryDirty = false
			h.refreshSummaryLocked(g) // may hold a write again
			continue
		}
		n := len(p.items) // what the batch below covers
		if p.write {
			b := h.encodeBatchLocked(g, p.catalogue)
			p.write, p.catalogue = false, false
			if b != nil {
				if unlock {
					g.mu.Unlock()
				}
				res := h.ds.st.WriteBatch(&b.Batch)
				if unlock {
					g.mu.Lock()
				}
				h.applyBatchLocked(g, b, res)
			}
		}
		for i := range p.items[:n] {
			it := &p.items[i]
			switch {
			case it.reason != "":
				h.reject(it.sender, it.channel, it.actionJSON, it.origin, it.reason)
			case it.ch != nil:
				h.commit(it.ch, it.actionJSON, it.origin, it.sender)
			}
			if it.done != nil {
				close(it.done)
			}
		}
		rest := p.items[n:]
		clear(p.items[:n]) // drop the references for the collector
		p.items = rest
		if len(rest) == 0 {
			p.items = nil
		}
	}
	h.handOverDeferredLocked(g)
	p.draining = false
	if p.drained != nil {
		close(p.drained)
		p.drained = nil
	}
}

// handOverDeferredLocked hands the checkpointer the streaming turns of the
// group's chats whose checkpoints waited for their chat's row (persistLocked),
// now that it is written. Called with the group's mutex held.
func (h *Host) handOverDeferredLocked(g *sessionGroup) {
	for _, c := range g.chats {
		cd := c.chat
		if cd.deferred == 0 || !cd.rowStored {
			continue
		}
		if t := cd.st.ActiveTurn; t != nil && cd.snapshot != nil && !c.removed {
			h.ds.cp.PutFunc(c.uri, t.ID, cd.deferred, cd.snapshot)
		}
		cd.deferred = 0
	}
}

// storeBatch is one write of a group (persist.Batch), with what the host
// notes once it is written: the channels of its chats, the session's
// Summary blob (for sessionGroup.storedSummary), and per chat's turns the
// channel and the first turn's index in its st.Turns.
type storeBatch struct {
	persist.Batch
	blob  []byte
	chans []*channel
	turns []turnsFrom
}

// turnsFrom says whose turns persist.Batch.Turns[i] are: ch's from
// st.Turns[from] on.
type turnsFrom struct {
	ch   *channel
	from int
}

// encodeBatchLocked encodes what the group must write now: its rows, and
// every completed turn of its chats not stored yet. nil when there is
// nothing to write (no store, a removed session, or an encoding error,
// which is logged). Called with the group's mutex held.
func (h *Host) encodeBatchLocked(g *sessionGroup, catalogue bool) *storeBatch {
	if h.ds == nil || g.session == nil || g.session.removed {
		return nil
	}
	row, blob, err := h.sessionRowLocked(g)
	if err != nil {
		h.log.Error().Err(err).Msg("a session could not be encoded for the state store")
		return nil
	}
	b := &storeBatch{Batch: persist.Batch{PutCatalogue: catalogue || !g.stored, Session: row, Chats: make([]store.Chat, 0, len(g.chats))}, blob: blob}
	for i, c := range g.chats {
		cr, err := h.chatRowLocked(g, c)
		if err != nil {
			h.log.Error().Err(err).Msg("a chat could not be encoded for the state store")
			return nil
		}
		b.Chats = append(b.Chats, cr)
		b.chans = append(b.chans, c)
		if ct := h.encodeTurnsLocked(c, i); ct != nil {
			b.Turns = append(b.Turns, *ct)
			b.turns = append(b.turns, turnsFrom{ch: c, from: c.chat.unstored})
		}
	}
	if !b.PutCatalogue && len(b.Turns) == 0 {
		return nil
	}
	return b
}

// encodeTurnsLocked encodes a chat's completed turns not stored yet; nil
// when there are none. Called with the group's mutex held.
func (h *Host) encodeTurnsLocked(ch *channel, row int) *persist.ChatTurns {
	cd := ch.chat
	if ch.removed || cd.unstored >= len(cd.st.Turns) {
		return nil
	}
	ct := &persist.ChatTurns{Row: row}
	for i := cd.unstored; i < len(cd.st.Turns); i++ {
		t := &cd.st.Turns[i]
		data, err := persist.EncodeTurn(t)
		if err != nil {
			h.log.Error().Err(err).Str("chat", ch.uri).Str("turn", t.ID).Msg("a turn could not be encoded for the state store")
			ct.Commits = append(ct.Commits, nil)
			continue
		}
		ct.Commits = append(ct.Commits, &store.TurnCommit{ChatURI: ch.uri, Turn: store.Turn{ID: t.ID, Encode: data.Encode, EndedAt: persist.TurnEnd(t, h.opts.Clock())}})
	}
	return ct
}

// applyBatchLocked notes what a batch stored: the session's rows are there
// (stored, storedSummary), and which turns of each chat. Turns a failed
// write left are still unstored, so the next batch writes them. Called
// with the group's mutex held, by the drainer that wrote the batch (the
// only one that writes the group, so unstored did not move meanwhile).
func (h *Host) applyBatchLocked(g *sessionGroup, b *storeBatch, res persist.BatchResult) {
	if res.Catalogue {
		g.stored = true
		for _, c := range b.chans {
			c.chat.rowStored = true
		}
	}
	for _, i := range res.Rows {
		b.chans[i].chat.rowStored = true
	}
	if res.Catalogue || len(res.Rows) > 0 {
		g.storedSummary = persist.SummaryJSON(b.blob)
	}
	for i, ct := range b.turns {
		if cd := ct.ch.chat; cd.unstored == ct.from {
			cd.unstored = ct.from + res.Stored[i]
		}
	}
}

// deleteStored deletes a disposed session's rows, before its removal is
// announced. Called without any lock.
func (h *Host) deleteStored(uri string) {
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	if err := h.ds.st.DeleteSession(ctx, uri); err != nil && !errors.Is(err, store.ErrNotFound) {
		h.log.Warn().Err(err).Str("session", uri).Msg("the disposed session's rows could not be deleted; it may come back after a restart")
	}
}

// holdLoad keeps the session uri from being loaded from the store until
// release is called: a disposed session whose rows are being deleted must
// not come back meanwhile (loadSession waits for it, then finds nothing).
// A load under way for uri is waited for first; it finds the session live
// and does nothing.
func (h *Host) holdLoad(uri string) (release func()) {
	d := h.ds
	done := make(chan struct{})
	for {
		d.mu.Lock()
		wait, busy := d.loading[uri]
		if !busy {
			d.loading[uri] = done
			d.mu.Unlock()
			break
		}
		d.mu.Unlock()
		<-wait
	}
	return func() {
		d.mu.Lock()
		delete(d.loading, uri)
		d.mu.Unlock()
		close(done)
	}
}
