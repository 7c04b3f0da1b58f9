package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeqReserveContinuesAfterRestart(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	r, err := NewSeqReserve(ctx, s, 8)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Start(), "a fresh store starts above 0")
	last := r.Start()
	for range 100 {
		last++
		require.NoError(t, r.Cover(last))
	}
	hw, err := s.SeqHighWater(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, hw, last, "everything handed out is covered by the stored mark")
	// A write per half block, not per action.
	assert.LessOrEqual(t, r.Stats().Writes, uint64(100/4+2))
	require.NoError(t, r.Close())
	require.NoError(t, s.Close())

	s = openTest(t, path, Options{})
	r, err = NewSeqReserve(ctx, s, 8)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	assert.Greater(t, r.Start(), last)
	require.NoError(t, r.Cover(r.Start()+1))
}

// With the default block, a thousand actions cost the one reservation made
// at start.
func TestSeqReserveWritesOncePerBlock(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	r, err := NewSeqReserve(ctx, s, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	for v := r.Start() + 1; v <= r.Start()+1000; v++ {
		require.NoError(t, r.Cover(v))
	}
	st := r.Stats()
	assert.Equal(t, uint64(1), st.Writes)
	assert.Equal(t, r.Start()+DefaultSeqBlock, st.Covered)
}

func TestSeqReserveConcurrentCovers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	r, err := NewSeqReserve(ctx, s, 4)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	var next atomic.Int64
	next.Store(r.Start())
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if err := r.Cover(next.Add(1)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	hw, err := s.SeqHighWater(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, hw, next.Load())
}

// flakyStore fails RaiseSeqHighWater on demand, as a full disk would.
type flakyStore struct {
	*SQLite
	fail atomic.Bool
}

func (f *flakyStore) RaiseSeqHighWater(ctx context.Context, v int64) error {
	if f.fail.Load() {
		return errors.New("no space left on device (injected)")
	}
	return f.SQLite.RaiseSeqHighWater(ctx, v)
}

func (f *flakyStore) ReserveSeqBlock(ctx context.Context, n int64) (int64, error) {
	if f.fail.Load() {
		return 0, errors.New("no space left on device (injected)")
	}
	return f.SQLite.ReserveSeqBlock(ctx, n)
}

// While the mark cannot be stored, Cover says so and lets the host serve
// from memory, without a write attempt per action; once writes succeed
// again, values are covered again.
func TestSeqReserveWhileWritesFail(t *testing.T) {
	ctx := context.Background()
	fs := &flakyStore{SQLite: openTest(t, testPath(t), Options{})}
	r, err := NewSeqReserve(ctx, fs, 8)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	start := r.Start()
	require.NoError(t, r.Cover(start+1)) // waits for the first reservation
	r.mu.Lock()
	r.retryAfter = time.Hour
	covered := r.covered
	r.mu.Unlock()
	require.Equal(t, start+8, covered)

	fs.fail.Store(true)
	require.NoError(t, r.Cover(start+5), "still covered; starts a reservation, which fails")
	err = r.Cover(covered + 1)
	require.Error(t, err)
	assert.ErrorContains(t, err, "injected")
	assert.ErrorContains(t, err, "above the stored high-water mark")
	writes := r.Stats().Writes
	for v := covered + 2; v < covered+100; v++ {
		assert.Error(t, r.Cover(v))
	}
	assert.Equal(t, writes, r.Stats().Writes, "no write per action while failing")
	assert.NotNil(t, r.Stats().LastError)

	fs.fail.Store(false)
	r.mu.Lock()
	r.retryAt = time.Time{} // the hour has passed
	r.mu.Unlock()
	require.NoError(t, r.Cover(covered+100))
	hw, err := fs.SeqHighWater(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, hw, covered+100)
	assert.Nil(t, r.Stats().LastError)
}

func TestSeqReserveClosed(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	r, err := NewSeqReserve(ctx, s, 8)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.ErrorIs(t, r.Cover(r.Start()+1), ErrClosed)
	require.NoError(t, r.Close())
}

// Two bridges on one file hand out serverSeq values from blocks of their
// own: never the same value, each strictly increasing, all at most the
// stored mark; a bridge started afterwards begins above all of them.
func TestSeqReserveBridgesNeverClash(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	const each = 300
	got := make([][]int64, 2)
	var wg sync.WaitGroup
	for i := range got {
		s := openTest(t, path, Options{})
		r, err := NewSeqReserve(ctx, s, 8)
		require.NoError(t, err)
		wg.Go(func() {
			defer r.Close()
			v := r.Start()
			for range each {
				var err error
				if v, err = r.Next(v); err != nil {
					t.Error(err)
					return
				}
				got[i] = append(got[i], v)
			}
		})
	}
	wg.Wait()
	seen := map[int64]int{}
	var highest int64
	for i, vs := range got {
		require.Len(t, vs, each)
		for k, v := range vs {
			if k > 0 {
				require.Greater(t, v, vs[k-1], "bridge %d: strictly increasing", i)
			}
			if j, dup := seen[v]; dup {
				t.Fatalf("serverSeq %d handed out by bridges %d and %d", v, j, i)
			}
			seen[v] = i
			highest = max(highest, v)
		}
	}
	s := openTest(t, path, Options{})
	hw, err := s.SeqHighWater(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, hw, highest, "every value handed out is covered")
	r, err := NewSeqReserve(ctx, s, 8)
	require.NoError(t, err)
	defer r.Close()
	assert.Greater(t, r.Start(), highest)
}

// Next waits for nothing within a block and jumps to the next block,
// reserved ahead, when one runs out.
func TestSeqReserveNextJumpsBlocks(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s := openTest(t, path, Options{})
	other := openTest(t, path, Options{})
	r, err := NewSeqReserve(ctx, s, 8)
	require.NoError(t, err)
	defer r.Close()
	v := r.Start()
	for range 8 {
		v, err = r.Next(v)
		require.NoError(t, err)
	}
	require.Equal(t, r.Start()+8, v, "the first block, in order")
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.next.hi != 0
	}, 5*time.Second, time.Millisecond, "the next block is reserved ahead, in the background")
	// Another bridge reserves meanwhile; this one's next block was
	// reserved ahead, half a block before the end, so it is below.
	theirs, err := other.ReserveSeqBlock(ctx, 100)
	require.NoError(t, err)
	v, err = r.Next(v)
	require.NoError(t, err)
	assert.Equal(t, r.Start()+9, v, "the block reserved ahead follows on")
	for range 8 {
		v, err = r.Next(v)
		require.NoError(t, err)
	}
	assert.Greater(t, v, theirs, "past the other bridge's block, not into it")
}
