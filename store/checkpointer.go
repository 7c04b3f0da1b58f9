package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Checkpoint policy defaults: a streaming turn is written at least this
// often, and sooner once this much new content is waiting.
const (
	DefaultCheckpointInterval = 250 * time.Millisecond
	DefaultCheckpointBytes    = 64 << 10
)

// CheckpointerOptions tunes a Checkpointer. The zero value is the policy the
// issue asks for: every 250 ms or 64 KiB.
type CheckpointerOptions struct {
	// Interval bounds how long a change waits before it is written.
	Interval time.Duration
	// MaxBytes of new content, summed over all chats, trigger a write at
	// once.
	MaxBytes int
	// OnError, if set, is called on the checkpointer's goroutine with each
	// failed write (the host logs it, rate-limited, and shows a warning).
	// Failed checkpoints are kept and retried with the next write.
	OnError func(error)

	// after arms the interval timer; tests replace it with a manual clock.
	after func(time.Duration) <-chan time.Time
	// flushed, if set, is called after each write attempt, for tests.
	flushed func(written int, err error)
}

// Checkpointer writes streaming turns' checkpoints off the caller's
// goroutine, each one carrying only what is new since the previous one of
// the same turn: PutFunc's snapshot names the texts that grow (a streaming
// answer's parts), and the Checkpointer, remembering how much of each it
// wrote, sends the rest (store Checkpoint.Texts) with the turn's small
// remainder (Data). A turn's first checkpoint is written whole, and so is a
// text that does not continue what was written of it.
//
// Put and PutFunc never block on I/O: they record the newest
// state of a chat's active turn and return; a goroutine owned by the
// Checkpointer writes what is pending, all chats in one transaction, within
// Interval of the first unwritten change or as soon as MaxBytes of new
// content are waiting, whichever comes first. Only the latest state of each
// chat is written; intermediate ones are skipped.
//
// What a crash can lose is what was put in the last Interval (plus the
// duration of a write in progress), and never more than MaxBytes of new
// content beyond a write in progress.
type Checkpointer struct {
	st       Store
	interval time.Duration
	maxBytes int
	onError  func(error)
	after    func(time.Duration) <-chan time.Time
	flushed  func(int, error)

	ctx    context.Context // the timed writes'; cancelled by shutdown
	cancel context.CancelFunc

	mu      sync.Mutex
	pending map[string]*pendingCheckpoint // chat → newest unwritten state
	known   map[string]chatGrowth         // chat → what the last Put looked like
	bytes   int                           // new content pending, summed
	closed  bool
	stats   CheckpointerStats

	// forgot lists the chats Forget was called for since the last write;
	// the loop then drops what it remembers of them.
	forgot []string
	// sent is what was committed of each chat's turn: only the loop's
	// goroutine (flush) uses it.
	sent map[string]*sentTurn

	wake     chan struct{}     // Put → loop: something new (capacity 1)
	flushReq chan flushRequest // Flush → loop
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

type pendingCheckpoint struct {
	turnID   string
	data     json.RawMessage
	snapshot SnapshotFunc
	grew     int
	at       time.Time
}

// A SnapshotFunc encodes an active turn for the Checkpointer (PutFunc).
// from says, by pointer, from which byte offset the Checkpointer needs each
// text: a little before the end of what it wrote of it, to check that the
// text continues it. The function may give a text from there (its first
// CheckpointText's Offset) or from earlier; a text not in from, or a nil
// from, is needed whole. A text may be given in several pieces, one after
// the other in Texts, each starting where the previous one ended, cut
// anywhere: the Checkpointer passes them on to the store as they are. So a
// long text that keeps growing is read only for what it gained, and need
// not be copied into one string for it.
type SnapshotFunc func(from map[string]int) (TurnSnapshot, error)

// sentTurn is what the store holds of a chat's active turn, as far as this
// Checkpointer wrote it.
type sentTurn struct {
	turnID string
	texts  map[string]sentText // by pointer
}

// sentText is how much of a text was written, and its last few bytes (a
// copy, so as not to keep the text alive): a later snapshot whose text
// still has them at that place continues it.
type sentText struct {
	n    int
	tail string
}

// sentTail is how many of a text's last written bytes are kept to check
// that the next snapshot continues it. The host's texts only ever grow at
// the end; this catches a text replaced by another all the same.
const sentTail = 32

type chatGrowth struct {
	turnID string
	size   int
}

type flushRequest struct {
	ctx   context.Context
	reply chan error
}

// CheckpointerStats counts what a Checkpointer did.
type CheckpointerStats struct {
	// Puts counts Put and PutFunc calls.
	Puts uint64
	// Flushes counts successful write transactions; Written the
	// checkpoints they carried, and Bytes their size (data and texts).
	Flushes, Written, Bytes uint64
	// Failures counts failed writes and failed snapshots.
	Failures uint64
	// LastError is the most recent failure.
	LastError error
}

// NewCheckpointer starts a Checkpointer writing to st. Close stops it.
func NewCheckpointer(st Store, opt CheckpointerOptions) *Checkpointer {
	if opt.Interval <= 0 {
		opt.Interval = DefaultCheckpointInterval
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultCheckpointBytes
	}
	if opt.after == nil {
		opt.after = time.After
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Checkpointer{
		st: st, interval: opt.Interval, maxBytes: opt.MaxBytes, onError: opt.OnError,
		after: opt.after, flushed: opt.flushed,
		ctx: ctx, cancel: cancel,
		pending:  make(map[string]*pendingCheckpoint),
		known:    make(map[string]chatGrowth),
		sent:     make(map[string]*sentTurn),
		wake:     make(chan struct{}, 1),
		flushReq: make(chan flushRequest),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go c.run()
	return c
}

// Put records data as the newest state of the active turn turnID of chat.
// The Checkpointer keeps data until it is written: the caller must not
// change it afterwards. New content is measured as the growth of data since
// the chat's previous Put (all of it for a new turn).
func (c *Checkpointer) Put(chatURI, turnID string, data json.RawMessage) {
	c.mu.Lock()
	prev, ok := c.known[chatURI]
	grew := len(data)
	if ok && prev.turnID == turnID {
		grew = max(0, len(data)-prev.size)
	}
	c.known[chatURI] = chatGrowth{turnID: turnID, size: len(data)}
	c.enqueueLocked(chatURI, &pendingCheckpoint{turnID: turnID, data: data, grew: grew, at: time.Now()})
}

// PutFunc records that the active turn turnID of chat grew by grew bytes,
// without encoding it: snapshot is called later, on the Checkpointer's
// goroutine and only for the state actually written, to encode the turn as
// it is then, each growing text from where the Checkpointer needs it
// (SnapshotFunc). This keeps a stream of small deltas from encoding a
// growing turn once per delta, and a long text from being read whole at
// every checkpoint. snapshot may take the session's lock; the Checkpointer
// holds none of its own while calling it. The texts it gives are only
// read, and only what they gained since the last write is written: they
// must not change afterwards (a Go string never does).
func (c *Checkpointer) PutFunc(chatURI, turnID string, grew int, snapshot SnapshotFunc) {
	c.mu.Lock()
	c.known[chatURI] = chatGrowth{turnID: turnID}
	c.enqueueLocked(chatURI, &pendingCheckpoint{turnID: turnID, snapshot: snapshot, grew: max(0, grew), at: time.Now()})
}

// enqueueLocked is called with c.mu held and releases it.
func (c *Checkpointer) enqueueLocked(chatURI string, p *pendingCheckpoint) {
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.stats.Puts++
	wasIdle := len(c.pending) == 0
	if old := c.pending[chatURI]; old != nil {
		p.grew += old.grew
		c.bytes -= old.grew
	}
	c.pending[chatURI] = p
	c.bytes += p.grew
	full := c.bytes >= c.maxBytes
	c.mu.Unlock()
	// The loop only needs waking to arm its timer or to write early.
	if wasIdle || full {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// Forget drops whatever is pending for chat: its turn has ended, and the
// completed turn (AppendTurn) supersedes any checkpoint. A checkpoint
// already being written when Forget is called is discarded by the store.
func (c *Checkpointer) Forget(chatURI string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[chatURI]; p != nil {
		c.bytes -= p.grew
		delete(c.pending, chatURI)
	}
	delete(c.known, chatURI)
	c.forgot = append(c.forgot, chatURI)
}

// Flush writes everything pending now and returns the write's error.
func (c *Checkpointer) Flush(ctx context.Context) error {
	req := flushRequest{ctx: ctx, reply: make(chan error, 1)}
	select {
	case c.flushReq <- req:
	case <-c.done:
		return fmt.Errorf("flushing checkpoints: %w", ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("flushing checkpoints: %w", ctx.Err())
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return fmt.Errorf("flushing checkpoints: %w", ctx.Err())
	}
}

// Close writes what is pending, then stops the Checkpointer; later Puts are
// ignored. It returns the last write's error.
func (c *Checkpointer) Close(ctx context.Context) error {
	err := c.Flush(ctx)
	if errors.Is(err, ErrClosed) {
		err = nil
	}
	c.shutdown()
	return err
}

// shutdown stops the loop without writing what is pending: Close after the
// final write, and tests simulating a crash.
func (c *Checkpointer) shutdown() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.stop)
		c.cancel()
	})
	<-c.done
}

// Stats reports what the Checkpointer did so far.
func (c *Checkpointer) Stats() CheckpointerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Checkpointer) run() {
	defer close(c.done)
	var timer <-chan time.Time // armed while something is pending
	// failing stops writing early on size while writes fail: retries then
	// come once per interval, not once per Put.
	failing := false
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
			if !failing && c.over() {
				failing = c.flush(c.ctx) != nil
				timer = nil
			}
		case <-timer:
			timer = nil
			failing = c.flush(c.ctx) != nil
		case req := <-c.flushReq:
			err := c.flush(req.ctx)
			failing = err != nil
			req.reply <- err
			timer = nil
		}
		// Arm on the first unwritten change and never push the deadline
		// back: a steady stream must still be written every interval.
		if timer == nil && c.hasPending() {
			timer = c.after(c.interval)
		}
	}
}

func (c *Checkpointer) over() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes >= c.maxBytes
}

func (c *Checkpointer) hasPending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending) > 0
}

// flush writes the pending checkpoints in one transaction. On failure they
// go back to pending, unless a newer state or a Forget came meanwhile, so
// that the next write carries them.
func (c *Checkpointer) flush(ctx context.Context) error {
	c.mu.Lock()
	batch := c.pending
	forgot := c.forgot
	c.forgot = nil
	if len(batch) > 0 {
		c.pending = make(map[string]*pendingCheckpoint, len(batch))
		c.bytes = 0
	}
	c.mu.Unlock()
	for _, chat := range forgot {
		delete(c.sent, chat)
	}
	if len(batch) == 0 {
		return nil
	}

	chats := make([]string, 0, len(batch))
	for chat := range batch {
		chats = append(chats, chat)
	}
	sort.Strings(chats) // a stable order makes failures reproducible
	cps := make([]Checkpoint, 0, len(batch))
	sents := make([]*sentTurn, 0, len(batch))
	var snapErrs []error
	var size uint64
	for _, chat := range chats {
		p := batch[chat]
		cp := Checkpoint{ChatURI: chat, TurnID: p.turnID, Data: p.data, Replace: true, Updated: p.at}
		sent := &sentTurn{turnID: p.turnID}
		if p.snapshot != nil {
			var err error
			cp, sent, err = c.snapshotIncrement(cp, p.snapshot)
			if err != nil {
				snapErrs = append(snapErrs, fmt.Errorf("encoding the active turn %s of chat %s: %w", p.turnID, chat, err))
				continue
			}
		}
		size += uint64(len(cp.Data))
		for _, t := range cp.Texts {
			size += uint64(len(t.Text))
		}
		cps = append(cps, cp)
		sents = append(sents, sent)
	}
	var err error
	if len(cps) > 0 {
		err = c.st.PutCheckpoints(ctx, cps)
	}

	c.mu.Lock()
	if err == nil && len(cps) > 0 {
		c.stats.Flushes++
		c.stats.Written += uint64(len(cps))
		c.stats.Bytes += size
		for i, cp := range cps {
			c.sent[cp.ChatURI] = sents[i]
		}
	} else if err != nil {
		c.stats.Failures++
		c.stats.LastError = err
		for chat, p := range batch {
			if _, newer := c.pending[chat]; newer {
				continue
			}
			if k, ok := c.known[chat]; !ok || k.turnID != p.turnID {
				continue // forgotten, or a new turn started
			}
			c.pending[chat] = p
			c.bytes += p.grew
		}
	}
	for _, e := range snapErrs {
		c.stats.Failures++
		c.stats.LastError = e
	}
	c.mu.Unlock()

	err = errors.Join(append([]error{err}, snapErrs...)...)
	if err != nil && c.onError != nil {
		c.onError(err)
	}
	if c.flushed != nil {
		c.flushed(len(cps), err)
	}
	return err
}

// snapshotIncrement takes the turn's snapshot, asking for each text only
// from a little before what was written of it, and makes it the checkpoint
// that carries what is new (increment). A text given from an offset that
// does not continue what was written (it was replaced meanwhile) can only
// be written whole: the snapshot is then taken again, of whole texts.
func (c *Checkpointer) snapshotIncrement(cp Checkpoint, snapshot SnapshotFunc) (Checkpoint, *sentTurn, error) {
	snap, err := snapshot(c.needFrom(cp))
	if err != nil {
		return cp, nil, err
	}
	if next, sent, ok := c.increment(cp, snap); ok {
		return next, sent, nil
	}
	if snap, err = snapshot(nil); err != nil {
		return cp, nil, err
	}
	next, sent, ok := c.increment(cp, snap)
	if !ok {
		return cp, nil, errors.New("the snapshot's texts are not whole strings in pieces that follow each other")
	}
	return next, sent, nil
}

// needFrom is, by pointer, where the Checkpointer needs the texts of cp's
// turn from: the start of the tail it kept of each (nil for a turn it has
// not written yet).
func (c *Checkpointer) needFrom(cp Checkpoint) map[string]int {
	prev := c.sent[cp.ChatURI]
	if prev == nil || prev.turnID != cp.TurnID {
		return nil
	}
	from := make(map[string]int, len(prev.texts))
	for ptr, m := range prev.texts {
		from[ptr] = m.n - len(m.tail)
	}
	return from
}

// increment turns a snapshot into the checkpoint that carries what is new
// since the last write of the same turn, and returns it with what the store
// will hold once it is written. It runs on the loop's goroutine. It reports
// false if a text given from an offset other than 0 does not continue what
// was written (the store could not place it), or if a text's pieces do not
// follow each other.
func (c *Checkpointer) increment(cp Checkpoint, snap TurnSnapshot) (Checkpoint, *sentTurn, bool) {
	cp.Data = snap.Data
	prev := c.sent[cp.ChatURI]
	cp.Replace = prev == nil || prev.turnID != cp.TurnID
	texts, ok := groupTexts(snap.Texts)
	if !ok {
		return cp, nil, false
	}
	next := &sentTurn{turnID: cp.TurnID, texts: make(map[string]sentText, len(texts))}
	cp.Texts = make([]CheckpointText, 0, len(snap.Texts))
	for _, t := range texts {
		next.texts[t.pointer] = sentText{n: t.end, tail: t.slice(max(t.at, t.end-sentTail), t.end)}
		from := 0
		if !cp.Replace {
			if m, ok := prev.texts[t.pointer]; ok && t.at <= m.n-len(m.tail) && m.n <= t.end && t.slice(m.n-len(m.tail), m.n) == m.tail {
				if m.n == t.end {
					continue // nothing new
				}
				from = m.n
			}
		}
		if from < t.at {
			return cp, nil, false // not a continuation, and not whole
		}
		cp.Texts = t.appendFrom(cp.Texts, from)
	}
	return cp, next, true
}

// snapText is one string of a snapshot: the consecutive pieces given for
// its pointer, from at to end.
type snapText struct {
	pointer string
	at, end int
	pieces  []CheckpointText
}

// groupTexts gathers a snapshot's pieces by string; false unless each
// string's pieces are consecutive in the list and follow each other.
func groupTexts(ts []CheckpointText) ([]snapText, bool) {
	var out []snapText
	for i, t := range ts {
		if i > 0 && ts[i-1].Pointer == t.Pointer {
			g := &out[len(out)-1]
			if t.Offset != g.end {
				return nil, false
			}
			g.pieces = append(g.pieces, t)
			g.end += len(t.Text)
			continue
		}
		out = append(out, snapText{pointer: t.Pointer, at: t.Offset, end: t.Offset + len(t.Text), pieces: ts[i : i+1 : i+1]})
	}
	seen := make(map[string]bool, len(out))
	for _, g := range out {
		if seen[g.pointer] {
			return nil, false
		}
		seen[g.pointer] = true
	}
	return out, true
}

// slice returns a copy of the string's bytes from, to (at ≤ from ≤ to ≤
// end): a copy, so as not to keep the pieces alive.
func (t snapText) slice(from, to int) string {
	b := make([]byte, 0, to-from)
	for _, p := range t.pieces {
		lo, hi := max(from, p.Offset), min(to, p.Offset+len(p.Text))
		if lo < hi {
			b = append(b, p.Text[lo-p.Offset:hi-p.Offset]...)
		}
	}
	return string(b)
}

// appendFrom appends to dst the string's pieces from offset from on (at
// least one, empty when nothing is left, so that the store still cuts
// what it held beyond from).
func (t snapText) appendFrom(dst []CheckpointText, from int) []CheckpointText {
	n := len(dst)
	for _, p := range t.pieces {
		end := p.Offset + len(p.Text)
		if end <= from {
			continue
		}
		k := max(0, from-p.Offset)
		dst = append(dst, CheckpointText{Pointer: p.Pointer, Offset: p.Offset + k, Text: p.Text[k:]})
	}
	if len(dst) == n {
		dst = append(dst, CheckpointText{Pointer: t.pointer, Offset: from})
	}
	return dst
}
