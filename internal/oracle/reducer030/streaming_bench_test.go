package reducer030

import (
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// BenchmarkReduceDelta reduces 64-byte session/delta actions into one
// growing markdown part: "plain" is Session (a string concatenation per
// delta, O(n²) over a part), "streaming" is Streaming (amortised O(1)).
// Each iteration streams a part of 4096 deltas (256 KiB).
func BenchmarkReduceDelta(b *testing.B) {
	const deltas = 4096
	delta := wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
	for _, tc := range []struct {
		name   string
		reduce func() func(*wire.SessionState, wire.StateAction, Clock)
	}{
		{"plain", func() func(*wire.SessionState, wire.StateAction, Clock) { return Session }},
		{"streaming", func() func(*wire.SessionState, wire.StateAction, Clock) { return new(Streaming).Session }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				reduce := tc.reduce()
				s := newSessionState()
				for _, a := range streamActions(0)[:2] {
					reduce(s, a, streamClock)
				}
				for range deltas {
					reduce(s, delta, streamClock)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/deltas, "ns/delta")
		})
	}
}
