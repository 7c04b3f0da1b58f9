package codec

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestActionType(t *testing.T) {
	cases := map[string]string{
		`{"type":"chat/delta","content":"x"}`:                                         "chat/delta",
		` { "turnId" : "t", "_meta": {"type": "no"}, "type" : "chat/toolCallDelta" }`: "chat/toolCallDelta",
		`{"a":[1,{"type":"x"}],"b":"\"type\"","c":-1.5e3,"d":null,"type":"t"}`:        "t",
		`{"t\u0079pe":"chat/\u0064elta"}`:                                             "chat/delta",
		`{"type":1}`:                                                                  "",
		`{"type":"unterminated`:                                                       "",
		`{"other":"x"}`:                                                               "",
		`["type","x"]`:                                                                "",
		``:                                                                            "",
		`{"a":}`:                                                                      "",
	}
	for in, want := range cases {
		if got := actionType([]byte(in)); got != want {
			t.Errorf("actionType(%s) = %q, want %q", in, got, want)
		}
	}
}

// FuzzActionType checks the hand-rolled scan against encoding/json: on any
// valid JSON object they agree on the first top-level "type".
func FuzzActionType(f *testing.F) {
	for _, s := range []string{`{"type":"chat/delta"}`, `{"a":{"type":"b"},"type":"c"}`, `{"x":[1,"]"],"type":"\u0074"}`, `{}`, `[]`, `"type"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := actionType(b)
		if !json.Valid(b) {
			return
		}
		if want := firstType(b); got != want {
			t.Errorf("actionType(%s) = %q, want %q", b, got, want)
		}
	})
}

// firstType is actionType done with encoding/json's tokenizer.
func firstType(b []byte) string {
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return ""
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return ""
		}
		if key == "type" {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return ""
			}
			return s
		}
	}
	return ""
}

func TestHasKey(t *testing.T) {
	require.True(t, hasKey([]byte(`{"a":1,"content" : ""}`), "content"))
	require.True(t, hasKey([]byte(`{"content":"content","x":{"content":1}}`), "content"))
	require.False(t, hasKey([]byte(`{"a":"content","b":["content"]}`), "content"))
	require.False(t, hasKey([]byte(`{"a":"\"content\": x"}`), "content"))
}
