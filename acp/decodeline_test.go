package acp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// generalTextUpdate reads a line the way the general path does (route,
// routeUpdate, decodeTextChunk): ok when it is a session/update notification
// whose update decodes as a text chunk.
func generalTextUpdate(line []byte) (lineUpdate, bool) {
	var env envelope
	if json.Unmarshal(line, &env) != nil || len(env.ID) != 0 || env.Method != "session/update" {
		return lineUpdate{}, false
	}
	var n struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if json.Unmarshal(env.Params, &n) != nil || isNull(n.Update) {
		return lineUpdate{}, false
	}
	kind, ev, ok := decodeTextChunk(cloneRaw(n.Update))
	if !ok {
		return lineUpdate{}, false
	}
	u := lineUpdate{sessionID: []byte(n.SessionID), kind: kind}
	switch e := ev.(type) {
	case backend.TextChunk:
		u.text = e.Text
	case backend.ThoughtChunk:
		u.text = e.Text
	}
	return u, true
}

var scanSeeds = []string{
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}`,
	`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}}}` + "\n",
	` { "params" : { "update" : { "content" : { "text" : "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x\udc00" , "type" : "text" , "annotations" : { "priority" : 1.5e-3 } , "_meta" : { "k" : [ 1 , -0 , 2E+2 , true , false , null , "s" ] } } , "sessionUpdate" : "agent_message_chunk" } , "sessionId" : "s\u0031" } , "method" : "session/update" , "jsonrpc" : "2.0" } ` + "\r\n",
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":null}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}}`,
	"{\"method\":\"session/update\",\"params\":{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"bad \xff\xfe utf8 \xe2\x82 end \xed\xa0\x80\"}}}}",
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"\u00e9":{"a":[[[]]]},"k\"":{}}}}}`,
	// Declined: the general path decides.
	`{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`,
	`{"jsonrpc":"2.0","id":null,"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`,
	`{"method":"session/update","Method":"x","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","TEXT":"y"}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","text":"y"}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA"}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"x"}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x"}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}} x`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"n":01}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"n":[1,]}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\x01"}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\q"}}}}`,
	`{"method":"session/update","params":{"sessionId":5,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":null}}`,
	`{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}},"jsonrpc":"2.0","extra":[` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `]}`,
	`{"method":"session/cancel","params":{}}`,
	`{"jsonrpc":"2.0","id":"ahp-bridge-1","result":{"sessionId":"s1"}}`,
	`[]`, `null`, ``, `{`, `{"method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x`,
}

// Every line scanTextUpdate accepts reads exactly as the general path reads
// it; and it accepts what it is meant to.
func TestScanTextUpdateMatchesGeneral(t *testing.T) {
	accepted := 0
	for i, s := range scanSeeds {
		got, ok := scanTextUpdate([]byte(s))
		want, wok := generalTextUpdate([]byte(s))
		if ok {
			accepted++
			require.True(t, wok, "seed %d: accepted a line the general path does not read as a text chunk: %s", i, s)
			assert.True(t, sameUpdate(want, got), "seed %d: want %+v, got %+v", i, want, got)
		}
		if i < 7 {
			assert.True(t, ok, "seed %d is meant for the fast path: %s", i, s)
		}
	}
	assert.Equal(t, 7, accepted)
}

// sameUpdate compares two reads of a line.
func sameUpdate(a, b lineUpdate) bool {
	return bytes.Equal(a.sessionID, b.sessionID) && a.kind == b.kind && a.text == b.text
}

func FuzzScanTextUpdate(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := scanTextUpdate(line)
		if !ok {
			return
		}
		want, wok := generalTextUpdate(line)
		if !wok || !sameUpdate(want, got) {
			t.Fatalf("scanTextUpdate(%q) = %+v; the general path reads %+v (%v)", line, got, want, wok)
		}
	})
}

// BenchmarkRouteLine is the decoding of one flood line on the agent's
// stdout up to the event the mapping takes: the general path (the
// JSON-RPC envelope, its params and the update, each validated and decoded
// by encoding/json, and the update copied for the queue) and the one-pass
// scan that replaces it for text chunks.
func BenchmarkRouteLine(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"0f0e8b5c-7d3e-4d7e-9a55-3b0a8a4f3c11",` +
		`"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"T1763912345678901234#00001234` +
		strings.Repeat("x", 64-29) + `"}}}}` + "\n")
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := generalTextUpdate(line); !ok {
				b.Fatal("not a text chunk")
			}
		}
	})
	b.Run("onedecode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := oneDecodeTextUpdate(line); !ok {
				b.Fatal("not a text chunk")
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := scanTextUpdate(line); !ok {
				b.Fatal("not a text chunk")
			}
		}
	})
}

// oneDecodeTextUpdate is the option the scan was measured against:
// encoding/json once, straight into the fields the mapping needs (still
// checkValid, then the decode, over the whole line).
func oneDecodeTextUpdate(line []byte) (lineUpdate, bool) {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &env) != nil || len(env.ID) != 0 || env.Method != "session/update" || env.Params.Update.Content.Type != "text" {
		return lineUpdate{}, false
	}
	return lineUpdate{sessionID: []byte(env.Params.SessionID), kind: env.Params.Update.SessionUpdate, text: env.Params.Update.Content.Text}, true
}
