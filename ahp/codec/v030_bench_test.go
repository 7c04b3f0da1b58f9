package codec

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkV030EnvelopeDelta measures what streamed text costs a 0.3.0
// connection's codec: a default chat's chat/delta becomes session/delta on
// the session channel. The host translates each broadcast once per codec,
// so with one 0.3.0 client this is paid for every chunk it gets.
func BenchmarkV030EnvelopeDelta(b *testing.B) {
	c := For(V030, testDirectory())
	e := Envelope{
		Channel:   "ahp-chat:/s1/main",
		Action:    json.RawMessage(`{"type":"chat/delta","turnId":"turn-1","partId":"part-1","content":"` + strings.Repeat("x", 64) + `"}`),
		ServerSeq: 1,
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := c.Envelope(e); len(out) != 1 {
			b.Fatal("chat/delta withheld")
		}
	}
}
