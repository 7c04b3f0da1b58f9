package codec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDowngrade feeds arbitrary JSON to every translation of every older
// dialect's codec, seeded with the inputs of testdata/v1x and the 1.0.0
// action examples of ahp/wire. None may panic; Envelope must be a function
// of its input (the host translates a broadcast once and again on replay),
// and must never send an action type its dialect does not know.
func FuzzDowngrade(f *testing.F) {
	for _, kind := range []string{"envelopes", "actions", "notifications", "requests", "results"} {
		files, err := filepath.Glob(filepath.Join("testdata", "v1x", kind, "*.json"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			var gc v1Case
			if json.Unmarshal(b, &gc) == nil {
				f.Add(gc.Channel+gc.Method, []byte(gc.In))
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "wire", "testdata", "actions.json"))
	if err != nil {
		f.Fatal(err)
	}
	var examples []json.RawMessage
	if err := json.Unmarshal(b, &examples); err != nil {
		f.Fatal(err)
	}
	for _, e := range examples {
		f.Add("ahp-chat:/s1/main", []byte(e))
	}
	type dialectCodec struct {
		v     Version
		c     Codec
		known func(string) bool
	}
	var codecs []dialectCodec
	for _, v := range olderDialects() {
		known := func(typ string) bool { return ActionKnownTo(typ, v) }
		if v == V030 {
			known = known030(f)
		}
		if v == (Version{0, 5, 2}) {
			known = func(typ string) bool {
				return typ == "changeset/filesReviewedChanged" || ActionKnownTo(typ, v)
			}
		}
		codecs = append(codecs, dialectCodec{v, For(v, testDirectory()), known})
	}
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		for _, dc := range codecs {
			for _, ch := range []string{name, "ahp-chat:/s1/main", "ahp-session:/s1", "ahp-session:/s1/annotations"} {
				e := Envelope{Channel: ch, Action: body, ServerSeq: 1, Origin: hostOrigin("c", 1)}
				a, b := dc.c.Envelope(e), dc.c.Envelope(e)
				if len(a) != len(b) {
					t.Fatalf("%s: Envelope(%s) is not a function of its input", dc.v, body)
				}
				for i := range a {
					if !bytes.Equal(a[i].Action, b[i].Action) || a[i].Channel != b[i].Channel {
						t.Fatalf("%s: Envelope(%s) is not a function of its input", dc.v, body)
					}
					if typ := actionType(a[i].Action); !dc.known(typ) {
						t.Fatalf("%s: Envelope(%s) gave %s, unknown to %s", dc.v, body, a[i].Action, dc.v)
					}
				}
				dc.c.Action(ch, body)
			}
			dc.c.Notification(name, body)
			dc.c.Request(name, body)
			dc.c.Result(name, body)
			dc.c.Result(InternalFetchTurnsPage, body)
			dc.c.Channels(name)
		}
	})
}
