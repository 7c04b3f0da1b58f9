package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// nopConn is a transport that is never read from by these tests.
type nopConn struct{}

func (nopConn) ReadMessage() ([]byte, error) { select {} }
func (nopConn) WriteMessage([]byte) error    { return nil }
func (nopConn) Close() error                 { return nil }

// FuzzFrame feeds arbitrary frames to the JSON-RPC reader and dispatcher
// of an initialized connection. Nothing may panic, every frame the host
// queues must be valid JSON, and a request always gets an answer.
func FuzzFrame(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		h := New(Options{Agents: []wire.AgentInfo{{Provider: "fake", Models: []wire.SessionModelInfo{}}}, OutboundQueue: 4096})
		defer h.Close()
		c := &conn{h: h, id: 1, tc: nopConn{}, wake: make(chan struct{}, 1), qcap: 4096, kill: make(chan struct{}),
			subs: map[string]*channel{}, initialized: true, clientID: "fuzz", version: ProtocolVersion030}
		h.conns[c] = struct{}{}
		// A session with an active turn gives dispatchAction something to chew on.
		h.handleFrame(context.Background(), c, []byte(`{"jsonrpc":"2.0","id":0,"method":"createSession","params":{"channel":"ahp-session:/f","provider":"fake"}}`))
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
		if msg, _, perr := parseFrame(frame); perr == nil && msg.kind == kindRequest && !answered {
			t.Fatalf("request %q got no response", frame)
		}
	})
}
