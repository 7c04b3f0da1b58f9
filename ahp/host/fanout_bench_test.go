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

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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

// benchSession starts a host with a ready session whose default chat has
// an active turn and an open markdown part, subscribed to by n in-memory
// connections speaking version.
func benchSession(b *testing.B, n int, version string) (*Host, string, []*sinkConn) {
	hs := newHarness(b, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	owner := hs.dial(b, "owner")
	owner.initialize()
	s := hs.newSession(owner, "bench")
	owner.close()
	var wg sync.WaitGroup
	conns := make([]*sinkConn, n)
	for i := range conns {
		init, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"channel": RootURI, "protocolVersions": []string{version}, "clientId": fmt.Sprint("sink-", i),
			"initialSubscriptions": []string{s.chat}}})
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
	waitWritten(b, conns, 1) // initialize answered
	hs.dispatch(b, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p1"})})
	waitWritten(b, conns, 3)
	return hs.h, s.chat, conns
}

// waitWritten waits until every connection has written want frames.
func waitWritten(b *testing.B, conns []*sinkConn, want int64) {
	b.Helper()
	ctx, cancel := waitCtx(b)
	defer cancel()
	for _, c := range conns {
		for c.frames.Load() < want {
			if ctx.Err() != nil {
				b.Fatalf("a connection wrote %d of %d frames", c.frames.Load(), want)
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// BenchmarkDispatchDelta is the host's hot path for one streamed chunk:
// sequence, reduce, encode once, queue to every subscriber and write (to
// in-memory connections), for 1, 10 and 100 subscribers speaking the
// host's version, and for 100 speaking 0.6.0 (one translation more).
func BenchmarkDispatchDelta(b *testing.B) {
	for _, bc := range []struct {
		n       int
		version string
		encodes int64 // envelopes encoded per dispatch
	}{{1, current, 1}, {10, current, 1}, {100, current, 1}, {100, "0.6.0", 2}} {
		b.Run(fmt.Sprintf("subscribers=%d/version=%s", bc.n, bc.version), func(b *testing.B) {
			h, uri, conns := benchSession(b, bc.n, bc.version)
			delta := wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
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
			if enc := after.EnvelopesEncoded - before.EnvelopesEncoded; enc != bc.encodes*sent {
				b.Fatalf("%d envelopes encoded for %d dispatches to %d subscribers of %s", enc, sent, bc.n, bc.version)
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
