package host

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// BenchmarkStoreTurn measures what the state store adds to a short turn
// (start, a text part, 10 deltas, complete) on a session with one
// subscriber: the turn's start and its end are written to a SQLite file
// synchronously, under the session's lock, before they are broadcast. It
// reports the writes' own latency (median and 99th percentile), which is
// how long they hold the session's lock.
//
//	go test -run - -bench StoreTurn ./ahp/host
func BenchmarkStoreTurn(b *testing.B) {
	for _, withStore := range []bool{false, true} {
		name := "none"
		if withStore {
			name = "sqlite"
		}
		b.Run(name, func(b *testing.B) {
			var mu sync.Mutex
			var lat []time.Duration
			opts := Options{OnStoreWrite: func(d time.Duration, err error) {
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}}
			var hs *harness
			if withStore {
				var st *store.SQLite
				hs, st = storedHarness(b, stateFile(b), opts)
				_ = st
			} else {
				hs = newHarness(b, opts)
			}
			hs.handler.set(func(h *fakeHandler) { h.runTurns = false })
			c := hs.dial(b, "c")
			c.initialize()
			s := hs.newSession(c, "bench")
			mu.Lock()
			lat = lat[:0]
			mu.Unlock()
			b.ResetTimer()
			for i := range b.N {
				id := "t" + strconv.Itoa(i)
				_, err := hs.h.Dispatch(s.chat, wire.Action(&wire.ChatTurnStartedAction{TurnID: id, Message: userMsg("a question")}))
				require.NoError(b, err)
				_, err = hs.h.Dispatch(s.chat, wire.Action(&wire.ChatResponsePartAction{TurnID: id, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})}))
				require.NoError(b, err)
				for range 10 {
					_, err = hs.h.Dispatch(s.chat, wire.Action(&wire.ChatDeltaAction{TurnID: id, PartID: "m", Content: "some words of an answer "}))
					require.NoError(b, err)
				}
				_, err = hs.h.Dispatch(s.chat, wire.Action(&wire.ChatTurnCompleteAction{TurnID: id, Duration: 100}))
				require.NoError(b, err)
			}
			b.StopTimer()
			mu.Lock()
			defer mu.Unlock()
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "write-p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "write-p99-µs")
				b.ReportMetric(float64(len(lat))/float64(b.N), "writes/turn")
			}
		})
	}
}
