package bridgetest

import (
	"os"
	"testing"

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
	b.Run("sqlite", func(b *testing.B) { benchLongResponse(b, benchStore(b)) })
}

func benchLongResponse(b *testing.B, st store.Store) {
	const size = 1024
	var base int64
	runFlood(b, floodOpts{coalesce: true, version: "1.0.0", clients: 1, size: size, store: st,
		before: func() {
			// Writing 5 to clear_refs resets the peak RSS (VmHWM) to the
			// current RSS (Linux ≥ 4.0).
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
