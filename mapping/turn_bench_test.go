package mapping

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// BenchmarkApplyTextChunk measures mapping one streamed text chunk to its
// chat/delta action.
func BenchmarkApplyTextChunk(b *testing.B) {
	n := 0
	t := NewTurn("turn-1", 0, func() string { n++; return "part-" + strconv.Itoa(n) }, func() int64 { return 0 })
	ev := backend.TextChunk{Text: strings.Repeat("x", 64)}
	b.ReportAllocs()
	for b.Loop() {
		if acts := t.Apply(ev); len(acts) == 0 {
			b.Fatal("no action for a text chunk")
		}
	}
}
