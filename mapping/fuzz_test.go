package mapping

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// FuzzTurn feeds arbitrary scenarios (the testdata/turn format) to a Turn
// and the resulting actions to the session and chat reducers: whatever a
// backend sends, mapping must neither panic nor produce actions that do not
// encode, and the reducers must accept what it produces. No error it
// reports is ever resumable.
func FuzzTurn(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "turn", "*.in.json"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var steps []step
		if err := json.Unmarshal(data, &steps); err != nil {
			return
		}
		turn := newTestTurn()
		r := newReplay(t)
		for _, st := range steps {
			got, client, ok := applyStep(turn, st)
			if !ok {
				continue
			}
			if client != nil {
				got = append([]wire.StateAction{*client}, got...)
			}
			for _, a := range got {
				b, err := json.Marshal(a)
				if err != nil {
					t.Fatalf("action does not encode: %v", err)
				}
				var back wire.StateAction
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatalf("action does not decode: %v\n%s", err, b)
				}
				if e, ok := back.Value.(*wire.ChatErrorAction); ok && e.Part.Resumable != nil {
					t.Fatalf("a chat/error the bridge cannot resume says resumable: %s", b)
				}
				r.apply(back)
			}
		}
		if _, err := json.Marshal(r.session); err != nil {
			t.Fatalf("session state does not encode: %v", err)
		}
		if _, err := json.Marshal(r.chat); err != nil {
			t.Fatalf("chat state does not encode: %v", err)
		}
	})
}
