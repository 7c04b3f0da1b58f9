package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultSeqBlock is how far ahead of the values handed out SeqReserve keeps
// the stored high-water mark: one small write per 32 768 actions on average,
// and a restart skips at most 65 536 values of an int64.
const DefaultSeqBlock = 1 << 16

// seqRetryAfter spaces the attempts to store the high-water mark while
// writes fail, so that a full disk costs one failed write a second, not one
// per action.
const seqRetryAfter = time.Second

// SeqBlocks is implemented by a store that reserves serverSeq values in
// blocks, each one transaction that reads and raises the stored high-water
// mark, so that bridges sharing the store never reserve the same value.
// *SQLite implements it; SeqReserve uses it when its store does.
type SeqBlocks interface {
	// ReserveSeqBlock raises the stored high-water mark by n and returns
	// the new mark: the block (mark-n, mark] is the caller's alone.
	ReserveSeqBlock(ctx context.Context, n int64) (mark int64, err error)
}

// seqBlock is a block of serverSeq values reserved by this reserve alone;
// hi is 0 for none.
type seqBlock struct{ lo, hi int64 }

// SeqReserve keeps the stored serverSeq high-water mark ahead of the values
// the host hands out, so that after a restart, crash included, serverSeq
// continues above every value a client can have seen, without a write per
// action.
//
// The rule:
//
//   - Stored is H, and every serverSeq ever broadcast is ≤ H.
//   - At start the host sets its counter to Start() = H+1 and hands out
//     Start()+1, Start()+2, …: above everything seen, and every client's
//     lastSeenServerSeq is below the counter, so a reconnect from before the
//     restart can never look current; with an empty replay buffer it gets a
//     snapshot.
//   - Before broadcasting a value v the host calls Cover(v). Cover returns at
//     once while v ≤ H. When v comes within block/2 of H, Cover starts raising
//     H to v+block in the background; it only waits when v passes H before
//     that write finished (block/2 actions during one small transaction).
//
// Cover is meant to be called under the host's sequencer lock.
//
// Several bridges share a store: over a store that implements SeqBlocks,
// each reservation is a block of values no other bridge gets (read and
// raised in one transaction), and Next hands out the values of this
// reserve's blocks only, jumping to its next block when one runs out. So
// two bridges never hand out the same serverSeq, and every value handed
// out is still at most the stored mark: a bridge started later, or
// restarted, begins above all of them.
type SeqReserve struct {
	st         Store
	blocks     SeqBlocks // nil: the store reserves no blocks; Next is Cover(prev+1)
	cur, next  seqBlock  // the block Next hands out from, and the one reserved after it
	block      int64
	start      int64
	retryAfter time.Duration // seqRetryAfter; tests shorten it

	ctx    context.Context // the background writes'; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	covered  int64         // H as last stored
	highest  int64         // the highest v given to Cover
	inflight chan struct{} // closed when the running write ends; nil if none
	lastErr  error         // the last write's failure, nil once one succeeds
	retryAt  time.Time
	closed   bool
	writes   uint64
}

// NewSeqReserve reads the stored high-water mark and starts keeping it
// ahead; block ≤ 1 means DefaultSeqBlock. The first reservation starts at
// once in the background, so that the first Cover does not wait for it.
// Close stops it.
func NewSeqReserve(ctx context.Context, st Store, block int64) (*SeqReserve, error) {
	if block <= 1 {
		block = DefaultSeqBlock
	}
	if sb, ok := st.(SeqBlocks); ok {
		// The first block is reserved now, since Start is in it; it is
		// one value larger, Start itself, which is never handed out.
		mark, err := sb.ReserveSeqBlock(ctx, block+1)
		if err != nil {
			return nil, fmt.Errorf("starting the serverSeq reserve: %w", err)
		}
		bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
		lo := mark - block
		return &SeqReserve{st: st, blocks: sb, cur: seqBlock{lo: lo, hi: mark}, block: block, start: lo,
			retryAfter: seqRetryAfter, covered: mark, highest: lo, ctx: bg, cancel: cancel, writes: 1}, nil
	}
	h, err := st.SeqHighWater(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting the serverSeq reserve: %w", err)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &SeqReserve{st: st, block: block, start: h + 1, retryAfter: seqRetryAfter, covered: h, highest: h + 1, ctx: bg, cancel: cancel}
	r.mu.Lock()
	r.startLocked()
	r.mu.Unlock()
	return r, nil
}

// Next returns the serverSeq to hand out after prev, once it is covered:
// prev+1 while that is in this reserve's current block, else the first
// value of its next block (reserved in the background half a block
// ahead, so Next waits only when a whole half block went out during one
// small transaction). Over a store without SeqBlocks it is prev+1 after
// Cover(prev+1). While writes fail it returns prev+1 with Cover's error,
// once a second at most, and the host keeps serving from memory.
func (r *SeqReserve) Next(prev int64) (int64, error) {
	if r.blocks == nil {
		v := prev + 1
		return v, r.Cover(v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := prev + 1
	for {
		if r.closed {
			return v, fmt.Errorf("covering serverSeq %d: %w", v, ErrClosed)
		}
		if v < r.cur.lo {
			v = r.cur.lo
		}
		if v <= r.cur.hi {
			r.highest = max(r.highest, v)
			if r.cur.hi-v <= r.block/2 && r.next.hi == 0 && r.inflight == nil && r.retryDueLocked() {
				r.startLocked()
			}
			return v, nil
		}
		if r.next.hi != 0 {
			r.cur, r.next = r.next, seqBlock{}
			continue
		}
		if r.inflight == nil {
			if !r.retryDueLocked() {
				return v, r.uncoveredLocked(v)
			}
			r.startLocked()
		}
		ch := r.inflight
		r.mu.Unlock()
		<-ch
		r.mu.Lock()
		if r.next.hi == 0 && r.lastErr != nil && !r.closed {
			return v, r.uncoveredLocked(v)
		}
	}
}

// Start is the value to set the serverSeq counter to at start: above every
// value handed out before. The first value handed out is Start()+1.
func (r *SeqReserve) Start() int64 { return r.start }

// Cover returns once v is at most the stored high-water mark, so that v may
// be broadcast. While writes fail it does not wait more than once per
// second: it returns an error saying v is above the stored mark, and the
// host keeps serving from memory (a restart may then hand out v again,
// which is why the caller should count and report these errors).
func (r *SeqReserve) Cover(v int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("covering serverSeq %d: %w", v, ErrClosed)
	}
	r.highest = max(r.highest, v)
	if r.covered-v <= r.block/2 && r.inflight == nil && r.retryDueLocked() {
		r.startLocked()
	}
	for v > r.covered {
		if r.inflight == nil {
			if !r.retryDueLocked() {
				return r.uncoveredLocked(v)
			}
			r.startLocked()
		}
		ch := r.inflight
		r.mu.Unlock()
		<-ch
		r.mu.Lock()
		if r.closed {
			return fmt.Errorf("covering serverSeq %d: %w", v, ErrClosed)
		}
		if v > r.covered && r.lastErr != nil {
			return r.uncoveredLocked(v)
		}
	}
	return nil
}

func (r *SeqReserve) uncoveredLocked(v int64) error {
	return fmt.Errorf("serverSeq %d is above the stored high-water mark %d, so a restart could hand it out again: %w",
		v, r.covered, r.lastErr)
}

func (r *SeqReserve) retryDueLocked() bool {
	return r.lastErr == nil || !time.Now().Before(r.retryAt)
}

// startLocked raises the stored mark to a block above the highest value seen,
// off the caller's goroutine.
func (r *SeqReserve) startLocked() {
	target := max(r.highest, r.covered) + r.block
	done := make(chan struct{})
	r.inflight = done
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		var err error
		if r.blocks != nil {
			// A block of its own, wherever the mark is now: other
			// bridges may have raised it.
			var mark int64
			if mark, err = r.blocks.ReserveSeqBlock(r.ctx, r.block); err == nil {
				target = mark
			}
		} else {
			err = r.st.RaiseSeqHighWater(r.ctx, target)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.writes++
		if err == nil {
			r.covered = max(r.covered, target)
			if r.blocks != nil {
				r.next = seqBlock{lo: target - r.block + 1, hi: target}
			}
			r.lastErr = nil
		} else {
			r.lastErr = err
			r.retryAt = time.Now().Add(r.retryAfter)
		}
		r.inflight = nil
		close(done)
	}()
}

// SeqStats says how the reserve is doing.
type SeqStats struct {
	// Covered is the stored high-water mark as last written.
	Covered int64
	// Writes counts the attempts to raise it.
	Writes uint64
	// LastError is the last attempt's failure; nil once one succeeds.
	LastError error
}

// Stats reports the reserve's state.
func (r *SeqReserve) Stats() SeqStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return SeqStats{Covered: r.covered, Writes: r.writes, LastError: r.lastErr}
}

// Close stops the background write, waiting for it to end. Values already
// covered stay covered.
func (r *SeqReserve) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return nil
}
