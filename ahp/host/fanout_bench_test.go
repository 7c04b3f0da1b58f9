package host

import (
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

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// sinkConn is an in-memory transport.Conn: it reads the frames given to it,
// then blocks until closed, and counts what the host writes.
type sinkConn struct {
	in     chan []byte
	done   chan struct{}
	once   sync.Once
	frames atomic.Int64
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

func (c *sinkConn) WriteMessage([]byte) error {
	c.frames.Add(1)
	return nil
}

func (c *sinkConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

// benchSession starts a host with a ready session that has an active turn
// and an open markdown part, subscribed to by n in-memory connections.
func benchSession(b *testing.B, n int) (*Host, string, []*sinkConn) {
	hs := newHarness(b, Options{})
	owner := hs.dial(b, "owner")
	owner.initialize()
	uri := hs.newSession(owner, "bench")
	owner.close()
	var wg sync.WaitGroup
	conns := make([]*sinkConn, n)
	for i := range conns {
		init, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"channel": RootURI, "protocolVersions": []string{ProtocolVersion030}, "clientId": fmt.Sprint("sink-", i),
			"initialSubscriptions": []string{uri}}})
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
	for _, c := range conns {
		require.Eventually(b, func() bool { return c.frames.Load() >= 1 }, testTimeout, time.Millisecond, "initialize answered")
	}
	for _, a := range []any{
		&wire.SessionTurnStartedAction{TurnID: "t1", Message: wire.Message{Text: "go", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}},
		&wire.SessionResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "p1"})},
	} {
		_, err := hs.h.Dispatch(uri, wire.Action(a))
		require.NoError(b, err)
	}
	return hs.h, uri, conns
}

// waitWritten waits until every connection has written want frames.
func waitWritten(b *testing.B, conns []*sinkConn, want int64) {
	deadline := time.Now().Add(testTimeout)
	for _, c := range conns {
		for c.frames.Load() < want {
			if time.Now().After(deadline) {
				b.Fatalf("a connection wrote %d of %d frames", c.frames.Load(), want)
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// BenchmarkDispatchDelta is the host's hot path for one streamed chunk:
// sequence, reduce, encode once, queue to every subscriber and write (to
// in-memory connections), for 1, 10 and 100 subscribers.
func BenchmarkDispatchDelta(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprint("subscribers=", n), func(b *testing.B) {
			h, uri, conns := benchSession(b, n)
			delta := wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
			base := conns[0].frames.Load()
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
					waitWritten(b, conns, base+sent)
				}
			}
			waitWritten(b, conns, base+sent)
			b.StopTimer()
			after := h.Stats()
			if enc := after.EnvelopesEncoded - before.EnvelopesEncoded; enc != sent {
				b.Fatalf("%d envelopes encoded for %d dispatches to %d subscribers", enc, sent, n)
			}
		})
	}
}

// BenchmarkEncodeEnvelope measures building the `action` frame around an
// already encoded 64-byte session/delta.
func BenchmarkEncodeEnvelope(b *testing.B) {
	h := New(Options{})
	defer h.Close()
	action, err := json.Marshal(wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)}))
	require.NoError(b, err)
	// trusted: as in commit, where the action JSON comes from encodeAction.
	e := &envelopeOut{Channel: "ahp-session:/00000000-0000-4000-8000-000000000000", Action: action, ServerSeq: 123456, trusted: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := h.encodeEnvelope(e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshalDelta measures encoding the action itself, which the
// sequencer does once per action.
func BenchmarkMarshalDelta(b *testing.B) {
	a := wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(a); err != nil {
			b.Fatal(err)
		}
	}
}
