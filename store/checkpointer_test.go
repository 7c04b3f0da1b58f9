package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpRig is a store with two chats and a Checkpointer on a manual timer.
type cpRig struct {
	s       *SQLite
	cp      *Checkpointer
	timer   *manualTimer
	flushes chan flushResult
	errs    chan error
	chat1   Chat
	chat2   Chat
}

type flushResult struct {
	written int
	err     error
}

func newCPRig(t *testing.T) *cpRig {
	t.Helper()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	r := &cpRig{s: s, timer: newManualTimer(), flushes: make(chan flushResult, 64), errs: make(chan error, 64),
		chat1: testChat(sess.URI, 1), chat2: testChat(sess.URI, 2)}
	require.NoError(t, s.PutSession(context.Background(), sess, r.chat1, r.chat2))
	r.cp = NewCheckpointer(s, CheckpointerOptions{
		after:   r.timer.after,
		flushed: func(n int, err error) { r.flushes <- flushResult{n, err} },
		OnError: func(err error) { r.errs <- err },
	})
	t.Cleanup(func() { r.cp.shutdown() })
	return r
}

func (r *cpRig) waitArmed(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-r.timer.armed:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("the checkpointer never armed its timer")
		return 0
	}
}

func (r *cpRig) fire(t *testing.T) {
	t.Helper()
	select {
	case r.timer.fire <- time.Now():
	case <-time.After(10 * time.Second):
		t.Fatal("the checkpointer was not waiting on its timer")
	}
}

func (r *cpRig) waitFlush(t *testing.T) flushResult {
	t.Helper()
	select {
	case f := <-r.flushes:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint write")
		return flushResult{}
	}
}

// stored is the chat's stored checkpoint data, or nil.
func (r *cpRig) stored(t *testing.T, chat Chat) json.RawMessage {
	t.Helper()
	cp, err := r.s.Checkpoint(context.Background(), chat.URI)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	require.NoError(t, err)
	return cp.Data
}

// Nothing is written before the interval passes; when it does, the newest
// state of every chat is written, in one transaction.
func TestCheckpointerWritesLatestOnInterval(t *testing.T) {
	r := newCPRig(t)
	r.cp.Put(r.chat1.URI, "a", activeState(1, 100))
	assert.Equal(t, DefaultCheckpointInterval, r.waitArmed(t), "armed on the first unwritten change")
	r.cp.Put(r.chat1.URI, "a", activeState(2, 200))
	r.cp.Put(r.chat2.URI, "b", activeState(3, 100))
	r.cp.Put(r.chat1.URI, "a", activeState(4, 300))
	assert.Nil(t, r.stored(t, r.chat1), "nothing is written before the interval")

	r.fire(t)
	f := r.waitFlush(t)
	require.NoError(t, f.err)
	assert.Equal(t, 2, f.written, "one checkpoint per chat: only the latest")
	assert.True(t, bytes.Equal(activeState(4, 300), r.stored(t, r.chat1)))
	assert.True(t, bytes.Equal(activeState(3, 100), r.stored(t, r.chat2)))
	st := r.cp.Stats()
	assert.Equal(t, uint64(4), st.Puts)
	assert.Equal(t, uint64(1), st.Flushes)
	assert.Equal(t, uint64(2), st.Written)

	// A later change arms the timer again.
	r.cp.Put(r.chat2.URI, "b", activeState(5, 150))
	r.waitArmed(t)
	r.fire(t)
	require.NoError(t, r.waitFlush(t).err)
	assert.True(t, bytes.Equal(activeState(5, 150), r.stored(t, r.chat2)))
}

// 64 KiB of new content are written without waiting for the interval,
// counted as the growth of each chat's state, summed over chats.
func TestCheckpointerWritesEarlyOnSize(t *testing.T) {
	r := newCPRig(t)
	r.cp.Put(r.chat1.URI, "a", activeState(1, 40<<10))
	r.waitArmed(t)
	r.cp.Put(r.chat1.URI, "a", activeState(2, 50<<10)) // grew 10 KiB: 50 KiB pending
	assert.Nil(t, r.stored(t, r.chat1))
	r.cp.Put(r.chat2.URI, "b", activeState(3, 20<<10)) // a new chat counts whole: 70 KiB
	f := r.waitFlush(t)
	require.NoError(t, f.err)
	assert.Equal(t, 2, f.written)
	assert.True(t, bytes.Equal(activeState(2, 50<<10), r.stored(t, r.chat1)))
	assert.True(t, bytes.Equal(activeState(3, 20<<10), r.stored(t, r.chat2)))

	// Growth is measured since the last Put of the same turn, so a state
	// rewritten at the same size adds nothing: 64 such Puts of 60 KiB
	// are not 64 × 60 KiB of new content.
	for i := range 64 {
		r.cp.Put(r.chat1.URI, "a", activeState(100+i, 50<<10))
	}
	// A new turn of the same chat counts whole, and with the rest is over.
	r.cp.Put(r.chat1.URI, "a2", activeState(200, 64<<10))
	f = r.waitFlush(t)
	require.NoError(t, f.err)
	assert.True(t, bytes.Equal(activeState(200, 64<<10), r.stored(t, r.chat1)))
	assert.Equal(t, uint64(2), r.cp.Stats().Flushes, "the same-size rewrites did not cause writes of their own")
}

// PutFunc encodes lazily: once per write, on the checkpointer's goroutine,
// and the grew hints add up.
func TestCheckpointerPutFuncEncodesOncePerWrite(t *testing.T) {
	r := newCPRig(t)
	var calls atomic.Int32
	var version atomic.Int32
	snapshot := func(map[string]int) (TurnSnapshot, error) {
		calls.Add(1)
		return TurnSnapshot{Data: activeState(int(version.Load()), 100)}, nil
	}
	for i := range 100 {
		version.Store(int32(i))
		r.cp.PutFunc(r.chat1.URI, "a", 10, snapshot)
	}
	r.waitArmed(t)
	assert.Zero(t, calls.Load(), "nothing encoded before a write")
	r.fire(t)
	require.NoError(t, r.waitFlush(t).err)
	assert.Equal(t, int32(1), calls.Load())
	assert.True(t, bytes.Equal(activeState(99, 100), r.stored(t, r.chat1)), "encoded as the turn is at write time")

	// 7000 deltas of 10 bytes are 70 000 bytes of new content: early write.
	for range 7000 {
		r.cp.PutFunc(r.chat2.URI, "b", 10, snapshot)
	}
	require.NoError(t, r.waitFlush(t).err)
	assert.Equal(t, int32(2), calls.Load())

	// A failed encoding is reported and skipped; the other chats are written.
	r.cp.PutFunc(r.chat1.URI, "a", 10, func(map[string]int) (TurnSnapshot, error) { return TurnSnapshot{}, errors.New("session gone") })
	r.cp.Put(r.chat2.URI, "b", activeState(7, 100))
	require.ErrorContains(t, r.cp.Flush(context.Background()), "session gone")
	assert.True(t, bytes.Equal(activeState(7, 100), r.stored(t, r.chat2)))
	assert.ErrorContains(t, <-r.errs, "encoding the active turn a of chat "+r.chat1.URI)
}

// A write that fails keeps the checkpoints pending, reports the error, and
// retries on the next interval rather than on every Put; the first write
// that succeeds stores the newest state.
func TestCheckpointerFailedWriteRetries(t *testing.T) {
	r := newCPRig(t)
	restore := fillDisk(t, r.s)
	r.cp.Put(r.chat1.URI, "a", activeState(1, 80<<10)) // over the size: written at once
	f := r.waitFlush(t)
	require.Error(t, f.err)
	assert.ErrorIs(t, f.err, ErrFull)
	assert.ErrorIs(t, <-r.errs, ErrFull)
	assert.Equal(t, uint64(1), r.cp.Stats().Failures)
	assert.True(t, r.s.Health().Failing)

	// Still failing: more content does not trigger a write per Put…
	r.cp.Put(r.chat1.URI, "a", activeState(2, 160<<10))
	r.cp.Put(r.chat2.URI, "b", activeState(3, 80<<10))
	// …only the interval does (the timer is re-armed after the failure).
	r.waitArmed(t)
	select {
	case f := <-r.flushes:
		t.Fatalf("wrote again before the interval while failing: %+v", f)
	default:
	}
	restore()
	r.fire(t)
	f = r.waitFlush(t)
	require.NoError(t, f.err)
	assert.Equal(t, 2, f.written)
	assert.True(t, bytes.Equal(activeState(2, 160<<10), r.stored(t, r.chat1)))
	assert.True(t, bytes.Equal(activeState(3, 80<<10), r.stored(t, r.chat2)))
	assert.False(t, r.s.Health().Failing, "the next successful write recovers")
}

// A chat forgotten (its turn completed) is not written, and neither is a
// checkpoint that reaches the store after its turn was committed.
func TestCheckpointerForgetAndCompletedTurns(t *testing.T) {
	ctx := context.Background()
	r := newCPRig(t)
	r.cp.Put(r.chat1.URI, "a", activeState(1, 100))
	r.cp.Forget(r.chat1.URI)
	require.NoError(t, r.cp.Flush(ctx))
	assert.Nil(t, r.stored(t, r.chat1))

	r.cp.Put(r.chat2.URI, "b", activeState(2, 100))
	require.NoError(t, r.s.AppendTurn(ctx, TurnCommit{ChatURI: r.chat2.URI, Turn: Turn{ID: "b", Data: json.RawMessage(`{}`), EndedAt: at(1)}}))
	require.NoError(t, r.cp.Flush(ctx))
	assert.Nil(t, r.stored(t, r.chat2), "the completed turn supersedes its late checkpoint")
}

func TestCheckpointerCloseWritesPending(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	cp := NewCheckpointer(s, CheckpointerOptions{Interval: time.Hour})
	cp.Put(chat.URI, "a", activeState(1, 100))
	require.NoError(t, cp.Close(ctx))
	got, err := s.Checkpoint(ctx, chat.URI)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(activeState(1, 100), got.Data))

	cp.Put(chat.URI, "a", activeState(2, 100)) // ignored, not a panic
	assert.ErrorIs(t, cp.Flush(ctx), ErrClosed)
	require.NoError(t, cp.Close(ctx), "Close twice is harmless")
}

// With the real clock, a Put is written without anyone asking. (When is the
// manual-timer tests' business; this one checks the wiring to time.After.)
func TestCheckpointerRealClock(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	flushed := make(chan error, 1)
	cp := NewCheckpointer(s, CheckpointerOptions{Interval: 5 * time.Millisecond, flushed: func(_ int, err error) {
		select {
		case flushed <- err:
		default:
		}
	}})
	defer cp.shutdown()
	cp.Put(chat.URI, "a", activeState(1, 100))
	select {
	case err := <-flushed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("never written")
	}
	got, err := s.Checkpoint(ctx, chat.URI)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(activeState(1, 100), got.Data))
}

func TestCheckpointerFlushHonoursContext(t *testing.T) {
	r := newCPRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.cp.Put(r.chat1.URI, "a", activeState(1, 100))
	err := r.cp.Flush(ctx)
	require.Error(t, err)
	// Either refused before the write or the write saw the cancelled
	// context; both are the context's error, and the state stays pending.
	assert.True(t, errors.Is(err, context.Canceled), fmt.Sprint(err))
	require.NoError(t, r.cp.Flush(context.Background()))
	assert.True(t, bytes.Equal(activeState(1, 100), r.stored(t, r.chat1)))
}
