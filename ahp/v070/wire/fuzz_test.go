package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzStateActionRoundTrip checks that whatever decodes as a StateAction
// encodes, and that encoding is stable: decode(encode(x)) encodes to the
// same bytes and keeps the action type. Unknown variants, kept verbatim, are
// covered by the same rule. The seeds are the examples of every action type.
func FuzzStateActionRoundTrip(f *testing.F) {
	f.Add([]byte(`{"type":"session/ready"}`))
	f.Add([]byte(`{"type":"chat/fromTheFuture","x":[1,{"y":null}]}`))
	f.Add([]byte(`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":null}`))
	if b, err := os.ReadFile(filepath.Join("testdata", "actions.json")); err == nil {
		var samples []json.RawMessage
		if json.Unmarshal(b, &samples) == nil {
			for _, s := range samples {
				f.Add([]byte(s))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a StateAction
		if json.Unmarshal(data, &a) != nil {
			return
		}
		first, err := Marshal(a)
		if err != nil {
			t.Fatalf("decoded action does not encode: %v", err)
		}
		var b StateAction
		if err := json.Unmarshal(first, &b); err != nil {
			t.Fatalf("encoded action does not decode: %v\n%s", err, first)
		}
		if a.Type() != b.Type() {
			t.Fatalf("type changed: %q → %q", a.Type(), b.Type())
		}
		second, err := Marshal(b)
		if err != nil {
			t.Fatalf("second encode: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("encoding is not stable:\n%s\n%s", first, second)
		}
	})
}
