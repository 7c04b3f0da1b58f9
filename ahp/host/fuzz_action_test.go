package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// FuzzClientActions sends a sequence of client actions (one JSON action per
// line) with dispatchAction to a session whose default chat has an active
// turn with a tool call pending confirmation and an open input request,
// interleaved with the agent's streaming. Actions whose type starts with
// "session/" go to the session channel, everything else to the chat.
// Whatever the actions, decoding, validation and the reducers never panic;
// every accepted envelope carries a serverSeq greater than the one before
// (a rejection echo carries the last one assigned); the states stay
// encodable and decode back to themselves; and the session's aggregates
// agree with its chat: the catalogue entry has the chat's status, title and
// activity, and inputNeeded lists exactly what the chat waits for.
func FuzzClientActions(f *testing.F) {
	for _, seed := range []string{
		`{"type":"chat/turnStarted","turnId":"t2","message":{"text":"again","origin":{"kind":"user"}}}`,
		`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":true,"confirmed":"user-action"}` + "\n" +
			`{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":false,"reason":"denied"}`,
		`{"type":"chat/turnCancelled","turnId":"t1"}` + "\n" + `{"type":"chat/turnCancelled","turnId":"t1"}`,
		`{"type":"session/titleChanged","title":"x"}` + "\n" + `{"type":"chat/delta","turnId":"t1","partId":"p1","content":"x"}`,
		`{"type":"chat/pendingMessageSet","kind":"queued","id":"m1","message":{"text":"q","origin":{"kind":"user"}}}` + "\n" +
			`{"type":"chat/turnCancelled","turnId":"t1"}`,
		`{"type":"chat/inputAnswerChanged","requestId":"r1","questionId":"q1","answer":{"state":"submitted","value":{"kind":"text","value":"a"}}}` + "\n" +
			`{"type":"chat/inputCompleted","requestId":"r1","response":"accept"}`,
		`{"type":"session/activeClientSet","activeClient":{"clientId":"fuzz","tools":[]}}` + "\n" + `{"type":"session/activeClientRemoved","clientId":"fuzz"}`,
		`{"type":"bogus"}` + "\n" + `not json` + "\n" + `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := New(Options{Agents: []wire.AgentInfo{fakeAgent}, OutboundQueue: 1 << 14, Clock: func() int64 { return 1 }})
		defer h.Close()
		c := fuzzConn(h, 1<<14)
		const uri, chat = "ahp-session:/f", "ahp-chat://default/YWhwLXNlc3Npb246L2Y" // wire.DefaultChatURI(uri)
		ctx := context.Background()
		h.handleFrame(ctx, c, []byte(`{"jsonrpc":"2.0","id":0,"method":"createSession","params":{"channel":"`+uri+`","provider":"fake"}}`))
		h.handleFrame(ctx, c, []byte(`{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"channel":"`+uri+`"}}`))
		h.handleFrame(ctx, c, []byte(`{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"`+chat+`"}}`))
		setup := func(channel string, a any) {
			if _, err := h.Dispatch(channel, wire.Action(a)); err != nil {
				t.Fatalf("setting up: %v", err)
			}
		}
		setup(uri, &wire.SessionReadyAction{})
		for _, a := range []any{
			&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("hi")},
			&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p1", Content: "a"})},
			&wire.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "c1", ToolName: "edit", DisplayName: "Edit"},
			&wire.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: wire.PlainText("Edit a")},
			&wire.ChatInputRequestedAction{Request: wire.ChatInputRequest{ID: "r1", Questions: []wire.ChatInputQuestion{
				wire.NewChatInputQuestion(&wire.ChatInputTextQuestion{ID: "q1", Message: "?", Required: wire.Ptr(true)})}}},
		} {
			setup(chat, a)
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
				if m.Method != wire.MethodAction {
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
			target := chat
			var typ struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(line, &typ) == nil && strings.HasPrefix(typ.Type, "session/") {
				target = uri
			}
			frame := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":%s}}`, target, i+1, line)
			h.handleFrame(ctx, c, frame)
			// The agent side keeps talking while the client acts.
			_, _ = h.Dispatch(chat, wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: "b"}))
			checkOut()
		}
		if n := h.stats.panics.Load(); n != 0 {
			t.Fatalf("handling %q panicked", data)
		}

		var chatEnc, sessEnc []byte
		var inputs []string
		if !h.ReadChat(chat, func(s *wire.ChatState) {
			chatEnc = roundTrip[wire.ChatState](t, s)
			for _, e := range chatInputs(chat, s) {
				inputs = append(inputs, e.id)
			}
		}) {
			t.Fatal("the chat is gone")
		}
		if !h.ReadSession(uri, func(s *wire.SessionState) { sessEnc = roundTrip[wire.SessionState](t, s) }) {
			t.Fatal("the session is gone")
		}
		var cs wire.ChatState
		var ss wire.SessionState
		_ = json.Unmarshal(chatEnc, &cs)
		_ = json.Unmarshal(sessEnc, &ss)
		if len(ss.Chats) != 1 || ss.Chats[0].Resource != chat {
			t.Fatalf("the catalogue lost the chat: %s", sessEnc)
		}
		entry := ss.Chats[0]
		if entry.Status != cs.Status || entry.Title != cs.Title || deref(entry.Activity) != deref(cs.Activity) {
			t.Fatalf("the catalogue entry %+v does not mirror the chat (status %d, title %q, activity %q)", entry, cs.Status, cs.Title, deref(cs.Activity))
		}
		var needed []string
		for _, r := range ss.InputNeeded {
			needed = append(needed, r.ID())
		}
		slices.Sort(needed)
		slices.Sort(inputs)
		if !slices.Equal(needed, inputs) {
			t.Fatalf("inputNeeded %v, but the chat waits for %v", needed, inputs)
		}
	})
}

// roundTrip encodes v, checks that it decodes into a T that encodes to the
// same bytes, and returns the encoding.
func roundTrip[T any](t *testing.T, v *T) []byte {
	t.Helper()
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("state does not encode: %v", err)
	}
	var back T
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatalf("state does not decode: %v\n%s", err, enc)
	}
	again, err := json.Marshal(&back)
	if err != nil || !bytes.Equal(again, enc) {
		t.Fatalf("state does not round-trip:\n%s\n%s", enc, again)
	}
	return enc
}
