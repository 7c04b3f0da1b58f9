package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// nopConn is a transport that is never read from by these tests.
type nopConn struct{}

func (nopConn) ReadMessage() ([]byte, error) { select {} }
func (nopConn) WriteMessage([]byte) error    { return nil }
func (nopConn) Close() error                 { return nil }

// fuzzConn is an initialized connection of the host's own version that
// nothing drains: the fuzz targets read what is queued with takeQueued.
func fuzzConn(h *Host, qcap int) *conn {
	c := &conn{h: h, id: 1, tc: nopConn{}, wake: make(chan struct{}, 1), qcap: qcap, kill: make(chan struct{}),
		subs: map[string]*channel{}, initialized: true, clientID: "fuzz", version: codec.Current}
	h.mu.Lock()
	h.conns[c] = struct{}{}
	h.mu.Unlock()
	return c
}

// fuzzChat is the default chat of FuzzFrame's session ahp-session:/f
// (wire.DefaultChatURI), as the corpus in testdata names it.
const fuzzChat = "ahp-chat://default/YWhwLXNlc3Npb246L2Y"

// FuzzFrame feeds arbitrary frames to the JSON-RPC reader and dispatcher
// of an initialized connection. Nothing may panic, every frame the host
// queues must be valid JSON, and a request always gets an answer.
func FuzzFrame(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"createChat","params":{"channel":"ahp-session:/f","chat":"ahp-chat:/g"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":"` + fuzzChat + `","view":{"turns":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + fuzzChat + `","clientSeq":1,"action":{"type":"session/titleChanged","title":"x"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"method":"subscribe","params":{"channel":"ahp-root:"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":4,"method":"listSessions","params":{"channel":"ahp-root://","limit":1,"cursor":"eyJtIjoiIiwiciI6IngifQ"}}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		h := New(Options{Agents: []wire.AgentInfo{multiChatAgent()}, OutboundQueue: 4096})
		defer h.Close()
		c := fuzzConn(h, 4096)
		// A ready session with a completed and an active turn gives every
		// command and dispatchAction something to chew on.
		h.handleFrame(context.Background(), c, []byte(`{"jsonrpc":"2.0","id":0,"method":"createSession","params":{"channel":"ahp-session:/f","provider":"fake"}}`))
		for _, a := range []any{
			&wire.ChatTurnStartedAction{TurnID: "t0", Message: userMsg("hi")},
			&wire.ChatTurnCompleteAction{TurnID: "t0"},
			&wire.ChatTurnStartedAction{TurnID: "t", Message: userMsg("again")},
			&wire.ChatToolCallStartAction{TurnID: "t", ToolCallID: "x", ToolName: "x", DisplayName: "X"},
			&wire.ChatToolCallReadyAction{TurnID: "t", ToolCallID: "x", InvocationMessage: wire.PlainText("x")},
		} {
			if _, err := h.Dispatch(fuzzChat, wire.Action(a)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := h.Dispatch("ahp-session:/f", wire.Action(&wire.SessionReadyAction{})); err != nil {
			t.Fatal(err)
		}
		c.takeQueued(nil)

		h.handleFrame(context.Background(), c, frame)
		if n := h.stats.panics.Load(); n != 0 {
			t.Fatalf("handling %q panicked", frame)
		}
		answered := false
		for _, f := range c.takeQueued(nil) {
			if !json.Valid(f.b) {
				t.Fatalf("queued invalid JSON %q for input %q", f.b, frame)
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(f.b, &m)
			if m.ID != nil {
				answered = true
			}
		}
		// Requests answered asynchronously (completions, resourceRead) have
		// no handler here and are answered at once too.
		if msg, _, perr := parseFrame(frame); perr == nil && msg.kind == kindRequest && !answered {
			t.Fatalf("request %q got no response", frame)
		}
	})
}
