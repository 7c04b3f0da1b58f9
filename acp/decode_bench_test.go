package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// BenchmarkDecodeUpdate measures the per-chunk decoding of an ACP
// agent_message_chunk, the commonest update on the streaming hot path.
func BenchmarkDecodeUpdate(b *testing.B) {
	raw := json.RawMessage(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` +
		strings.Repeat("x", 64) + `"}}`)
	b.ReportAllocs()
	for b.Loop() {
		evs, err := DecodeUpdate(raw)
		if err != nil || len(evs) != 1 {
			b.Fatalf("DecodeUpdate = %v, %v", evs, err)
		}
	}
}

// The one-pass text-chunk path must decode exactly what the general path
// does, and leave everything else to it.
func TestDecodeTextChunkMatchesGeneral(t *testing.T) {
	cases := []struct {
		raw  string
		fast bool
	}{
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`, true},
		{`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}`, true},
		{`{"content":{"text":"a\u00e9\n","type":"text","annotations":{"priority":1},"_meta":{"x":1}},"sessionUpdate":"agent_message_chunk"}`, true},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}`, true},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":null}}`, true},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AAAA","mimeType":"image/png"}}`, false},
		{`{"sessionUpdate":"agent_message_chunk","content":null}`, false},
		{`{"sessionUpdate":"agent_message_chunk"}`, false},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}`, false},
		{`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"me"}}`, false},
		{`{"sessionUpdate":"plan","entries":[]}`, false},
		{`not json`, false},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			kind, ev, ok := decodeTextChunk(json.RawMessage(c.raw))
			require.Equal(t, c.fast, ok, "fast path taken")
			if !ok {
				return
			}
			// The general path, bypassing the fast one.
			var head struct {
				SessionUpdate string `json:"sessionUpdate"`
			}
			require.NoError(t, json.Unmarshal([]byte(c.raw), &head))
			want, err := decodeKind(head.SessionUpdate, json.RawMessage(c.raw))
			require.NoError(t, err, "general path")
			assert.Equal(t, head.SessionUpdate, kind)
			assert.Equal(t, want, []backend.Event{ev})
		})
	}
}
