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

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// FuzzFrameMapping feeds a sequence of agent-channel frames (one per line)
// through DecodeFrame, the turn translation, the AHP mapping and the
// 0.7.0 session and chat reducers, as a session does with a real backend: nothing panics,
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
		clock := func() int64 { return 1 }
		turn := mapping.NewTurn("t1", 0, func() string { n++; return fmt.Sprintf("id-%d", n) }, clock)
		ts := newTurnState("turn-1")
		s := &states{
			session: &wire.SessionState{Lifecycle: wire.SessionLifecycleReady, ActiveClients: []wire.SessionActiveClient{}, Chats: []wire.ChatSummary{}},
			chat:    &wire.ChatState{Turns: []wire.Turn{}},
		}
		reducer.Chat(s.chat, wire.Action(&wire.ChatTurnStartedAction{TurnID: "t1", StartedAt: reducer.FormatTime(0)}), clock)
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
		b, err := json.Marshal(s.chat)
		if err != nil {
			t.Fatalf("chat state does not encode: %v", err)
		}
		if err := json.Unmarshal(b, new(wire.ChatState)); err != nil {
			t.Fatalf("chat state does not decode: %v\n%s", err, b)
		}
		if _, err := json.Marshal(s.session); err != nil {
			t.Fatalf("session state does not encode: %v", err)
		}
	})
}

// states are a session and the chat whose turn the mapping follows.
type states struct {
	session *wire.SessionState
	chat    *wire.ChatState
}

// mustApply round-trips a through JSON and reduces it into the state of
// its channel: session/* into the session, chat/* into the chat.
func mustApply(t *testing.T, s *states, a wire.StateAction, clock reducer.Clock) {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("action %T does not encode: %v", a.Value, err)
	}
	var back wire.StateAction
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("action does not decode: %v\n%s", err, b)
	}
	if mapping.OnSession(back) {
		reducer.Session(s.session, back, clock)
	} else {
		reducer.Chat(s.chat, back, clock)
	}
}
