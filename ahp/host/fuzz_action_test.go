package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// FuzzClientActions sends a sequence of client actions (one JSON action per
// line) with dispatchAction to a session that has an active turn with a
// tool call pending confirmation, interleaved with server actions. Whatever
// the actions, decoding, validation and the reducers never panic, every
// accepted envelope carries a serverSeq greater than the one before (a
// rejection echo carries the last one assigned), and the
// session's state stays encodable and decodes back to itself.
func FuzzClientActions(f *testing.F) {
	for _, seed := range []string{
		`{"type":"session/turnStarted","turnId":"t2","message":{"text":"again","origin":{"kind":"user"}}}`,
		`{"type":"session/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":true,"confirmed":"user-action"}` + "\n" +
			`{"type":"session/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":false,"reason":"denied"}`,
		`{"type":"session/turnCancelled","turnId":"t1"}` + "\n" + `{"type":"session/turnCancelled","turnId":"t1"}`,
		`{"type":"session/titleChanged","title":"x"}` + "\n" + `{"type":"session/delta","turnId":"t1","partId":"p1","content":"x"}`,
		`{"type":"session/pendingMessageSet","kind":"queued","id":"m1","message":{"text":"q","origin":{"kind":"user"}}}`,
		`{"type":"session/modelChanged","model":{"id":"m"}}` + "\n" + `{"type":"session/turnComplete","turnId":"t1"}`,
		`{"type":"bogus"}` + "\n" + `not json` + "\n" + `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := New(Options{Agents: []wire.AgentInfo{{Provider: "fake", Models: []wire.SessionModelInfo{}}}, OutboundQueue: 1 << 14,
			Clock: func() int64 { return 1 }})
		defer h.Close()
		c := &conn{h: h, id: 1, tc: nopConn{}, wake: make(chan struct{}, 1), qcap: 1 << 14, kill: make(chan struct{}),
			subs: map[string]*channel{}, initialized: true, clientID: "fuzz", version: ProtocolVersion030}
		h.conns[c] = struct{}{}
		const uri = "ahp-session:/f"
		ctx := context.Background()
		h.handleFrame(ctx, c, []byte(`{"jsonrpc":"2.0","id":0,"method":"createSession","params":{"channel":"`+uri+`","provider":"fake"}}`))
		h.handleFrame(ctx, c, []byte(`{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"channel":"`+uri+`"}}`))
		for _, a := range []any{
			&wire.SessionReadyAction{},
			&wire.SessionTurnStartedAction{TurnID: "t1", Message: wire.Message{Text: "hi", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}},
			&wire.SessionResponsePartAction{TurnID: "t1", Part: wire.ResponsePart{Value: &wire.MarkdownResponsePart{ID: "p1", Content: "a"}}},
			&wire.SessionToolCallStartAction{TurnID: "t1", ToolCallID: "c1", ToolName: "edit", DisplayName: "Edit"},
			&wire.SessionToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: wire.StringOrMarkdown{Text: "Edit a"}},
		} {
			if _, err := h.Dispatch(uri, wire.Action(a)); err != nil {
				t.Fatalf("setting up: %v", err)
			}
		}

		last := int64(0)
		checkOut := func() {
			for _, fr := range c.takeQueued(nil) {
				if !json.Valid(fr.b) {
					t.Fatalf("queued invalid JSON %q", fr.b)
				}
				var m struct {
					Method string `json:"method"`
					Params struct {
						ServerSeq       int64   `json:"serverSeq"`
						RejectionReason *string `json:"rejectionReason"`
					} `json:"params"`
				}
				_ = json.Unmarshal(fr.b, &m)
				if m.Method != "action" {
					continue
				}
				// A rejection consumes no serverSeq: its echo carries the
				// last one assigned. Everything accepted gets a new one.
				if m.Params.RejectionReason != nil {
					if m.Params.ServerSeq != last {
						t.Fatalf("rejection echo with serverSeq %d, last assigned %d: %s", m.Params.ServerSeq, last, fr.b)
					}
					continue
				}
				if m.Params.ServerSeq <= last {
					t.Fatalf("serverSeq %d after %d: %s", m.Params.ServerSeq, last, fr.b)
				}
				last = m.Params.ServerSeq
			}
		}
		checkOut()
		for i, line := range bytes.Split(data, []byte("\n")) {
			if i >= 16 {
				break
			}
			frame := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":%s}}`, uri, i+1, line)
			h.handleFrame(ctx, c, frame)
			// The agent side keeps talking while the client acts.
			_, _ = h.Dispatch(uri, wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p1", Content: "b"}))
			checkOut()
		}
		if n := h.stats.panics.Load(); n != 0 {
			t.Fatalf("handling %q panicked", data)
		}
		var enc []byte
		var err error
		if !h.ReadSession(uri, func(s *wire.SessionState) { enc, err = json.Marshal(s) }) {
			t.Fatal("the session is gone")
		}
		if err != nil {
			t.Fatalf("state does not encode: %v", err)
		}
		var back wire.SessionState
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("state does not decode: %v\n%s", err, enc)
		}
		again, err := json.Marshal(&back)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("state does not round-trip:\n%s\n%s", enc, again)
		}
	})
}
