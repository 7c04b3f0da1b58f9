package bridgetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/store"
)

// BenchmarkLongResponseStore is BenchmarkLongResponse with sessions in
// memory (--state none) and in a SQLite state file (serve's default), one
// after the other in the same process: the growth of the peak RSS over one
// long response, × its text. Compare the two within one run.
//
//	go test -run - -bench LongResponseStore -benchtime 50000x -count 3 ./internal/bridgetest
func BenchmarkLongResponseStore(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchLongResponse(b, nil) })
	b.Run("sqlite", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		defer cancel()
		st, err := store.Open(ctx, filepath.Join(b.TempDir(), "state.db"), store.Options{})
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, st.Close()) })
		benchLongResponse(b, st)
	})
}

func benchLongResponse(b *testing.B, st store.Store) {
	const size = 1024
	var base int64
	runFlood(b, floodOpts{coalesce: true, version: "1.0.0", clients: 1, size: size, store: st,
		before: func() {
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
				b.Skipf("cannot reset the peak RSS: %v", err)
			}
			base = procStatusKiB(b, "VmRSS")
		},
		after: func() {
			peak := procStatusKiB(b, "VmHWM")
			b.ReportMetric(float64(peak-base)*1024/float64(b.N*size), "peak-RSS-growth-x")
		}})
}
