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
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// FuzzUpdateMapping feeds a sequence of ACP session/update payloads (one
// per line) through the decoder, the mapping of a turn and the 0.7.0
// reducers, as the bridge does with a real agent's output: whatever an agent
// sends, nothing panics, every action encodes and decodes, and the chat
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
		clock := func() int64 { return 1 }
		turn := mapping.NewTurn("t1", 0, func() string { n++; return fmt.Sprintf("id-%d", n) }, clock)
		s := &states{
			session: &wire.SessionState{Lifecycle: wire.SessionLifecycleReady, ActiveClients: []wire.SessionActiveClient{}, Chats: []wire.ChatSummary{}},
			chat:    &wire.ChatState{Turns: []wire.Turn{}},
		}
		reducer.Chat(s.chat, wire.Action(&wire.ChatTurnStartedAction{TurnID: "t1", StartedAt: reducer.FormatTime(0)}), clock)
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
		b, err := json.Marshal(s.chat)
		if err != nil {
			t.Fatalf("chat state does not encode: %v", err)
		}
		var back wire.ChatState
		if err := json.Unmarshal(b, &back); err != nil {
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

// applyChecked round-trips a through JSON and reduces it into the state of
// its channel: session/* into the session, chat/* into the chat.
func applyChecked(t *testing.T, s *states, a wire.StateAction, clock reducer.Clock) {
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
	if _, err := json.Marshal(s.chat); err != nil {
		t.Fatalf("chat state does not encode after %s: %v", b, err)
	}
}
