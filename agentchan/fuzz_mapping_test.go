package agentchan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// FuzzFrameMapping feeds a sequence of agent-channel frames (one per line)
// through DecodeFrame, the turn translation, the AHP mapping and the
// session reducer, as a session does with a real backend: nothing panics,
// every action round-trips through JSON, and the state stays encodable.
func FuzzFrameMapping(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "translate", "*.input.json"))
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			continue
		}
		var sc struct {
			Frames []json.RawMessage `json:"frames"`
		}
		if json.Unmarshal(b, &sc) != nil {
			continue
		}
		var lines [][]byte
		for _, fr := range sc.Frames {
			var c bytes.Buffer
			if json.Compact(&c, fr) == nil {
				lines = append(lines, c.Bytes())
			}
		}
		f.Add(bytes.Join(lines, []byte("\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's fuzzer has no per-input time limit: a hang would only show
		// as a stalled exec count. Fail loudly with every stack instead.
		stop := time.AfterFunc(10*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("input %q still running after 10s:\n%s", data, buf[:runtime.Stack(buf, true)]))
		})
		defer stop.Stop()
		n := 0
		turn := mapping.NewTurn("t1", func() string { n++; return fmt.Sprintf("id-%d", n) })
		ts := newTurnState("turn-1")
		s := &wire.SessionState{Lifecycle: wire.SessionLifecycleReady, Turns: []wire.Turn{}}
		clock := func() int64 { return 1 }
		reducer.Session(s, wire.Action(&wire.SessionTurnStartedAction{TurnID: "t1"}), clock)
		for _, line := range bytes.Split(data, []byte("\n")) {
			fr, err := DecodeFrame(line)
			if err != nil || fr.Channel != ChannelAgent {
				continue
			}
			st := ts.translate(fr)
			for _, ev := range st.Events {
				switch e := ev.(type) {
				case backend.PermissionRequest:
					e.Respond = func(backend.PermissionOutcome) {}
					ev = e
				case backend.Question:
					e.Respond = func([]string, bool) {}
					ev = e
				}
				for _, a := range turn.Apply(ev) {
					mustApply(t, s, a, clock)
				}
			}
		}
		for _, a := range turn.End(backend.TurnResult{StopReason: backend.StopEndTurn}, nil) {
			mustApply(t, s, a, clock)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("state does not encode: %v", err)
		}
		if err := json.Unmarshal(b, new(wire.SessionState)); err != nil {
			t.Fatalf("state does not decode: %v\n%s", err, b)
		}
	})
}

func mustApply(t *testing.T, s *wire.SessionState, a wire.StateAction, clock reducer.Clock) {
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
}
