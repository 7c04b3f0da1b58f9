package reducer070

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// BenchmarkChatDelta streams n 64-byte chat/delta actions into one markdown
// part per iteration and reports the cost per delta. With Streaming that
// cost stays flat from 1 000 to 100 000 deltas (6.4 MB of text): amortised
// O(1) per delta. Plain Chat concatenates strings, so its cost per delta
// grows with the part; it is only run at the smaller sizes.
func BenchmarkChatDelta(b *testing.B) {
	delta := wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
	type reducer func(*wire.ChatState, wire.StateAction, Clock)
	for _, tc := range []struct {
		name  string
		sizes []int
		make  func() reducer
	}{
		{"streaming", []int{1_000, 10_000, 100_000}, func() reducer { return new(Streaming).Chat }},
		{"plain", []int{1_000, 10_000}, func() reducer { return Chat }},
	} {
		for _, n := range tc.sizes {
			b.Run(fmt.Sprintf("%s/%d", tc.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					reduce := tc.make()
					s := newStreamChat()
					for _, a := range chatStreamStart()[:2] {
						reduce(s, a, chatStreamClock)
					}
					for range n {
						reduce(s, delta, chatStreamClock)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delta")
			})
		}
	}
}
