package mapping

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// FuzzTurn feeds arbitrary scenarios (the testdata/turn format) to a Turn
// and the resulting actions to the session reducer: whatever a backend
// sends, mapping must neither panic nor produce actions that do not encode,
// and the reducer must accept what it produces.
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
		turn := NewTurn("t1", seqIDs())
		s := &wire.SessionState{Lifecycle: wire.SessionLifecycleReady, Turns: []wire.Turn{}}
		reducer.Session(s, wire.Action(&wire.SessionTurnStartedAction{TurnID: "t1"}), pinnedClock)
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
				reducer.Session(s, a, pinnedClock)
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("state does not encode: %v", err)
		}
	})
}
