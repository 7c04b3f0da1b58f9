package acp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// FuzzUpdateMapping feeds a sequence of ACP session/update payloads (one
// per line) through the decoder, the mapping of a turn and the session
// reducer, as the bridge does with a real agent's output: whatever an agent
// sends, nothing panics, every action encodes and decodes, and the session
// state stays encodable after every step.
func FuzzUpdateMapping(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "decode", "*.json"))
	var all [][]byte
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		if b, err := os.ReadFile(in); err == nil {
			var compact bytes.Buffer
			if json.Compact(&compact, b) == nil {
				f.Add(compact.Bytes())
				all = append(all, compact.Bytes())
			}
		}
	}
	f.Add(bytes.Join(all, []byte("\n"))) // a whole turn of every kind
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		turn := mapping.NewTurn("t1", func() string { n++; return fmt.Sprintf("id-%d", n) })
		s := &wire.SessionState{Lifecycle: wire.SessionLifecycleReady, Turns: []wire.Turn{}}
		clock := func() int64 { return 1 }
		reducer.Session(s, wire.Action(&wire.SessionTurnStartedAction{TurnID: "t1"}), clock)
		for _, line := range bytes.Split(data, []byte("\n")) {
			evs, err := acp.DecodeUpdate(line)
			if err != nil {
				continue // reported and dropped by the provider
			}
			for _, ev := range evs {
				if pr, ok := ev.(backend.PermissionRequest); ok && pr.Respond == nil {
					pr.Respond = func(backend.PermissionOutcome) {}
					ev = pr
				}
				for _, a := range turn.Apply(ev) {
					applyChecked(t, s, a, clock)
				}
			}
		}
		for _, a := range turn.End(backend.TurnResult{StopReason: backend.StopEndTurn}, nil) {
			applyChecked(t, s, a, clock)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("state does not encode: %v", err)
		}
		var back wire.SessionState
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("state does not decode: %v\n%s", err, b)
		}
	})
}

func applyChecked(t *testing.T, s *wire.SessionState, a wire.StateAction, clock reducer.Clock) {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("action %T does not encode: %v", a.Value, err)
	}
	var back wire.StateAction
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("action does not decode: %v\n%s", err, b)
	}
	reducer.Session(s, back, clock)
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("state does not encode after %s: %v", b, err)
	}
}
