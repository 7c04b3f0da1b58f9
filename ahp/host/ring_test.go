package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ring is bounded by bytes as well as by count: large envelopes evict
// the oldest ones (a reconnect from before them gets a snapshot), the
// newest is always kept, and an evicted entry no longer references its
// frame.
func TestReplayRingBytes(t *testing.T) {
	r := newReplayRing(100, 10)
	env := func(n int) []byte { return make([]byte, n) }
	r.push(ringEntry{seq: 1, env: env(4)})
	r.push(ringEntry{seq: 2, env: env(4)})
	assert.Equal(t, 2, r.len())
	r.push(ringEntry{seq: 3, env: env(4)}) // 12 > 10: seq 1 goes
	oldest, ok := r.oldest()
	require.True(t, ok)
	assert.Equal(t, int64(2), oldest)
	assert.Equal(t, 8, r.bytes)
	assert.True(t, r.canReplayFrom(1, 3))
	assert.False(t, r.canReplayFrom(0, 3), "evicted by bytes: a snapshot")

	r.push(ringEntry{seq: 4, env: env(50)}) // larger than the bound: kept alone
	assert.Equal(t, 1, r.len())
	assert.Equal(t, 50, r.bytes)
	assert.True(t, r.canReplayFrom(3, 4))
	assert.False(t, r.canReplayFrom(2, 4))
	for i, e := range r.buf {
		if e.seq != 4 {
			assert.Nil(t, e.env, "slot %d still holds an evicted frame", i)
		}
	}

	r.push(ringEntry{seq: 5, env: env(1)})
	assert.Equal(t, 1, r.len(), "the 50-byte entry goes")
	assert.Equal(t, 1, r.bytes)
}
