package codec

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkEnvelopePassThrough measures the common case: streamed text to a
// 0.6.0 connection, which must cost a type scan and nothing else.
func BenchmarkEnvelopePassThrough(b *testing.B) {
	c := For(Version{0, 6, 0}, testDirectory())
	e := Envelope{
		Channel:   "ahp-chat:/s1/main",
		Action:    json.RawMessage(`{"type":"chat/delta","turnId":"turn-1","partId":"part-1","content":"` + strings.Repeat("streamed text ", 20) + `"}`),
		ServerSeq: 1,
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := c.Envelope(e); len(out) != 1 {
			b.Fatal("chat/delta withheld")
		}
	}
}

// BenchmarkEnvelopeRewrite measures a rewritten action for comparison: a
// tool result whose terminal outcome 0.6.0 gets as a separate block.
func BenchmarkEnvelopeRewrite(b *testing.B) {
	c := For(Version{0, 6, 0}, testDirectory())
	e := Envelope{
		Channel: "ahp-chat:/s1/main",
		Action: json.RawMessage(`{"turnId":"turn-1","toolCallId":"tc-1","type":"chat/toolCallComplete","result":{"success":true,"pastTenseMessage":"Ran make",` +
			`"content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"make","result":{"exitCode":0,"preview":"ok"}}]}}`),
		ServerSeq: 1,
	}
	b.ReportAllocs()
	for b.Loop() {
		if out := c.Envelope(e); len(out) != 1 {
			b.Fatal("chat/toolCallComplete withheld")
		}
	}
}

// TestEnvelopePassThroughAllocations keeps the benchmark's promise in the
// test suite: the pass-through allocates the returned slice and nothing else.
func TestEnvelopePassThroughAllocations(t *testing.T) {
	c := For(Version{0, 6, 0}, testDirectory())
	e := Envelope{Channel: "ahp-chat:/s1/main", Action: json.RawMessage(`{"type":"chat/delta","turnId":"t","partId":"p","content":"x"}`)}
	if n := testing.AllocsPerRun(100, func() { c.Envelope(e) }); n > 1 {
		t.Errorf("chat/delta through 0.6.0 allocates %v times, want 1", n)
	}
}
