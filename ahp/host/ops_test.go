package host

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// TestOpsViewsOfClientsAndSessions: what operators see of the host — each
// connection's version, address and queue, each session's title, state,
// clients and turns, and the frames written — without any content.
func TestOpsViewsOfClientsAndSessions(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	old := hs.stdio(t, "old")
	old.initializeAs([]string{"0.3.0"})
	s := hs.newSession(c, "ops")
	hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "Ops title"})
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("the prompt")})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))

	clients := hs.h.Clients()
	require.Len(t, clients, 2)
	assert.Equal(t, current, clients[0].ProtocolVersion)
	assert.Contains(t, clients[0].RemoteAddr, "127.0.0.1:", "a WebSocket client's address")
	assert.Equal(t, 3, clients[0].Subscriptions, "the root, the session and its chat")
	assert.Equal(t, "0.3.0", clients[1].ProtocolVersion)
	assert.Empty(t, clients[1].RemoteAddr, "stdio has no address")
	assert.Less(t, clients[0].Conn, clients[1].Conn, "in the order accepted")

	sessions := hs.h.Sessions()
	require.Len(t, sessions, 1)
	si := sessions[0]
	assert.Equal(t, s.uri, si.URI)
	assert.Equal(t, "Ops title", si.Title)
	assert.Equal(t, "fake", si.Provider)
	assert.Equal(t, SessionInputNeeded, si.State, "the turn waits for a tool call's confirmation")
	assert.Equal(t, 1, si.Clients)
	assert.Equal(t, 1, si.Turns, "the running turn")
	assert.False(t, si.LastActivity.IsZero())

	c.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	si = hs.h.Sessions()[0]
	assert.Equal(t, SessionIdle, si.State)
	assert.Equal(t, 1, si.Turns)

	c.ping() // every frame before the answer has been written and counted
	oc := hs.h.OpsCounters()
	assert.Positive(t, oc.FramesWritten)
	assert.Greater(t, oc.BytesWritten, oc.FramesWritten*50, "an action frame is at least some tens of bytes")
}

// TestOpsCountsReconnects: a reconnect answered by replay and one answered
// with snapshots are counted apart.
func TestOpsCountsReconnects(t *testing.T) {
	hs := newHarness(t, Options{ReplayBuffer: 4})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "re")
	last := hs.h.Stats().ServerSeq
	hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "a"})

	r := hs.stdio(t, "c")
	var res struct {
		Type string `json:"type"`
	}
	r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "c", "lastSeenServerSeq": last, "subscriptions": []string{s.uri}}, &res)
	require.Equal(t, "replay", res.Type)
	for i := range 10 {
		hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: string(rune('b' + i))})
	}
	r2 := hs.stdio(t, "c")
	r2.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "c", "lastSeenServerSeq": last, "subscriptions": []string{s.uri}}, &res)
	require.Equal(t, "snapshot", res.Type)

	oc := hs.h.OpsCounters()
	assert.Equal(t, int64(1), oc.ReplayReconnects)
	assert.Equal(t, int64(1), oc.SnapshotReconnects)
}

// TestOpsSamplesWriteLatency: with an observer installed, a sample of the
// server-originated envelopes — not every one — has its sequenced →
// written latency observed, per receiving connection.
func TestOpsSamplesWriteLatency(t *testing.T) {
	hs := newHarness(t, Options{})
	var mu sync.Mutex
	var seen []float64
	hs.h.ObserveWriteLatency(func(s float64) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "lat")
	const n = 64
	for i := range n {
		hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg(string(rune('a' + i%26))))})
	}
	c.ping() // every envelope before the answer has been written

	mu.Lock()
	defer mu.Unlock()
	assert.NotEmpty(t, seen, "some envelopes were measured")
	assert.Less(t, len(seen), n/2, "only a sample of them")
	for _, v := range seen {
		assert.GreaterOrEqual(t, v, 0.0)
	}
}

// BenchmarkDispatchDeltaSampled is BenchmarkDispatchDelta's one subscriber
// with the write-latency sample on (as `serve` runs it: package ops installs
// a histogram's Observe), so that the two together show what measuring
// costs the hot path (docs/performance.md).
func BenchmarkDispatchDeltaSampled(b *testing.B) {
	h, uri, conns := benchSession(b, []string{current})
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bench_seconds", Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10)})
	var observed atomic.Int64
	h.ObserveWriteLatency(func(s float64) {
		observed.Add(1)
		hist.Observe(s)
	})
	delta := wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
	base := conns[0].deltas.Load()
	b.ReportAllocs()
	b.ResetTimer()
	sent := int64(0)
	for b.Loop() {
		if _, err := h.Dispatch(uri, delta); err != nil {
			b.Fatal(err)
		}
		sent++
		if sent%512 == 0 {
			waitDeltas(b, conns, base+sent)
		}
	}
	waitDeltas(b, conns, base+sent)
	b.StopTimer()
	if sent >= 64 && observed.Load() == 0 {
		b.Fatal("no latency was observed")
	}
}

// BenchmarkOpsWriteHooks is what the ops counters add to each frame a
// connection writes: the sample decision made when an envelope is
// sequenced and the count (and, for a sampled envelope, the latency
// observation) after the write — the whole per-frame cost of metrics on
// the hot path, measured alone because it is too small to see in a flood.
func BenchmarkOpsWriteHooks(b *testing.B) {
	for _, bc := range []struct {
		name  string
		probe bool
	}{{"counters", false}, {"counters+latency", true}} {
		b.Run(bc.name, func(b *testing.B) {
			h := New(Options{})
			defer h.Close()
			if bc.probe {
				hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bench_seconds", Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10)})
				h.ObserveWriteLatency(hist.Observe)
			}
			frame := make([]byte, 160)
			seq := int64(0)
			for b.Loop() {
				seq++
				h.written(outFrame{b: frame, at: h.sampleAt(seq, nil)})
			}
			if got := h.OpsCounters().FramesWritten; got != seq {
				b.Fatalf("%d frames counted, %d written", got, seq)
			}
		})
	}
}
