package bridgetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/store"
)

// BenchmarkBridgeFloodStore is the coalesced 1-client flood (what `serve`
// runs) with sessions in memory (--state none) and kept in a SQLite state
// file (serve's default): the turn's start and end are written before they
// are broadcast, and the streaming turn is checkpointed every 250 ms or
// 64 KiB off the hot path. docs/performance.md records the difference
// (issue 14 wants the store at 85 % of none or better).
//
//	go test -run - -bench BridgeFloodStore -benchtime 200000x ./internal/bridgetest
func BenchmarkBridgeFloodStore(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchFloodWith(b, true, "1.0.0", 1, 0, false, nil) })
	b.Run("sqlite", func(b *testing.B) { benchFloodWith(b, true, "1.0.0", 1, 0, false, benchStore(b)) })
}

// benchStore opens a fresh SQLite state file for one benchmark, closed
// when it ends.
func benchStore(b *testing.B) store.Store {
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "state.db"), store.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, st.Close()) })
	return st
}
