package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// sinkConn is an in-memory transport.Conn: it reads the frames given to it,
// then blocks until closed, and counts what the host writes: every frame,
// and the streamed-text deltas among them (chat/delta, or session/delta for
// a 0.3.0 connection), which is what the benchmarks wait for.
type sinkConn struct {
	in     chan []byte
	done   chan struct{}
	once   sync.Once
	frames atomic.Int64
	deltas atomic.Int64
}

func newSinkConn(first ...[]byte) *sinkConn {
	c := &sinkConn{in: make(chan []byte, len(first)), done: make(chan struct{})}
	for _, f := range first {
		c.in <- f
	}
	return c
}

func (c *sinkConn) ReadMessage() ([]byte, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	}
}

var deltaType = []byte(`/delta","turnId"`)

func (c *sinkConn) WriteMessage(m []byte) error {
	c.frames.Add(1)
	if bytes.Contains(m, deltaType) {
		c.deltas.Add(1)
	}
	return nil
}

func (c *sinkConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

// benchSession starts a host with a ready session whose default chat has
// an active turn and an open markdown part, with one in-memory connection
// per entry of versions, speaking that version. A chat dialect subscribes
// to the default chat, 0.3.0 to the session (which means its default chat
// too). Every connection has received one delta when it returns.
func benchSession(b *testing.B, versions []string) (*Host, string, []*sinkConn) {
	hs := newHarness(b, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	owner := hs.dial(b, "owner")
	owner.initialize()
	s := hs.newSession(owner, "bench")
	owner.close()
	var wg sync.WaitGroup
	conns := make([]*sinkConn, len(versions))
	for i, v := range versions {
		sub := s.chat
		if v == codec.V030.String() {
			sub = s.uri
		}
		init, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"channel": RootURI, "protocolVersions": []string{v}, "clientId": fmt.Sprint("sink-", i),
			"initialSubscriptions": []string{sub}}})
		require.NoError(b, err)
		c := newSinkConn(init)
		conns[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = hs.h.ServeConn(context.Background(), c)
		}()
	}
	b.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
		wg.Wait()
	})
	ctx, cancel := waitCtx(b)
	defer cancel()
	for _, c := range conns { // initialize answered: subscribed
		for c.frames.Load() < 1 {
			if ctx.Err() != nil {
				b.Fatal("a connection was not answered its initialize")
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
	hs.dispatch(b, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p1"})},
		&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: "warm"})
	waitDeltas(b, conns, 1)
	return hs.h, s.chat, conns
}

// waitDeltas waits until every connection has written want deltas.
func waitDeltas(b *testing.B, conns []*sinkConn, want int64) {
	b.Helper()
	ctx, cancel := waitCtx(b)
	defer cancel()
	for _, c := range conns {
		for c.deltas.Load() < want {
			if ctx.Err() != nil {
				b.Fatalf("a connection wrote %d of %d deltas", c.deltas.Load(), want)
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// dialects is n connections: each version of mix as often as it says,
// the host's version for the rest.
func dialects(n int, mix map[string]int) []string {
	vs := make([]string, 0, n)
	for _, v := range []string{"0.6.0", "0.3.0"} { // a fixed order
		for range mix[v] {
			vs = append(vs, v)
		}
	}
	for len(vs) < n {
		vs = append(vs, current)
	}
	return vs
}

// BenchmarkDispatchDelta is the host's hot path for one streamed chunk:
// sequence, reduce, encode once per dialect, queue to every subscriber and
// write (to in-memory connections). The subscribers speak the host's
// version (1, 10 and 100 of them), or all 0.6.0 or 0.3.0 (one translation
// more per chunk), or 100 with one or two of them on an older dialect: the
// difference to 100 of the host's version is what each older dialect's
// share of a broadcast costs (its codec translates the delta once, and its
// connection gets its own frame).
func BenchmarkDispatchDelta(b *testing.B) {
	for _, bc := range []struct {
		name string
		n    int
		mix  map[string]int // versions other than the host's, and how many speak each
	}{
		{"subscribers=1/version=0.7.0", 1, nil},
		{"subscribers=1/version=0.6.0", 1, map[string]int{"0.6.0": 1}},
		{"subscribers=1/version=0.3.0", 1, map[string]int{"0.3.0": 1}},
		{"subscribers=10/version=0.7.0", 10, nil},
		{"subscribers=100/version=0.7.0", 100, nil},
		{"subscribers=100/version=0.6.0", 100, map[string]int{"0.6.0": 100}},
		{"subscribers=100/version=0.3.0", 100, map[string]int{"0.3.0": 100}},
		{"subscribers=100/mixed=99x0.7.0+1x0.6.0", 100, map[string]int{"0.6.0": 1}},
		{"subscribers=100/mixed=99x0.7.0+1x0.3.0", 100, map[string]int{"0.3.0": 1}},
		{"subscribers=100/mixed=98x0.7.0+1x0.6.0+1x0.3.0", 100, map[string]int{"0.6.0": 1, "0.3.0": 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h, uri, conns := benchSession(b, dialects(bc.n, bc.mix))
			encodes := int64(1 + len(bc.mix)) // the host's own, and one per older codec
			delta := wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
			before := h.Stats()
			b.ReportAllocs()
			b.ResetTimer()
			sent := int64(0)
			for b.Loop() {
				if _, err := h.Dispatch(uri, delta); err != nil {
					b.Fatal(err)
				}
				sent++
				if sent%512 == 0 { // keep the queues short: include the writes
					waitDeltas(b, conns, 1+sent)
				}
			}
			waitDeltas(b, conns, 1+sent)
			b.StopTimer()
			after := h.Stats()
			if enc := after.EnvelopesEncoded - before.EnvelopesEncoded; enc != encodes*sent {
				b.Fatalf("%d envelopes encoded for %d dispatches to %v", enc, sent, bc.mix)
			}
		})
	}
}

// BenchmarkEncodeEnvelope measures building the `action` frame around an
// already encoded 64-byte session/delta.
func BenchmarkEncodeEnvelope(b *testing.B) {
	h := New(Options{})
	defer h.Close()
	action, err := json.Marshal(wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)}))
	require.NoError(b, err)
	// trusted: as in commit, where the action JSON comes from encodeAction.
	e := &envelopeOut{Channel: "ahp-chat:/00000000-0000-4000-8000-000000000000", Action: action, ServerSeq: 123456, trusted: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := h.encodeEnvelope(e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalDelta measures encoding the action itself, which the
// sequencer does once per action.
func BenchmarkMarshalDelta(b *testing.B) {
	a := wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatInputs measures what the host recomputes after every chat
// action other than streamed text: what the chat waits for, from its active
// turn's parts. The turn holds n completed tool calls and n markdown parts,
// as a flood with a tool call every 50 chunks leaves it after 50·n chunks
// (ahp-bench's bridge-1-tools), and nothing is pending.
func BenchmarkChatInputs(b *testing.B) {
	for _, n := range []int{100, 2000} {
		b.Run(fmt.Sprint("toolCalls=", n), func(b *testing.B) {
			t := &wire.ActiveTurn{ID: "t1"}
			for i := range n {
				t.ResponseParts = append(t.ResponseParts,
					wire.NewResponsePart(&wire.ToolCallResponsePart{ToolCall: wire.NewToolCallState(&wire.ToolCallCompletedState{
						ToolCallID: fmt.Sprint("tool-", i), ToolName: "bench", DisplayName: "Bench"})}),
					wire.NewResponsePart(&wire.MarkdownResponsePart{ID: fmt.Sprint("md-", i), Content: "text"}))
			}
			st := &wire.ChatState{ActiveTurn: t}
			b.ReportAllocs()
			for b.Loop() {
				if in := chatInputs("ahp-chat:/00000000-0000-4000-8000-000000000000", st); len(in) != 0 {
					b.Fatal(in)
				}
			}
		})
	}
}
