package bridgetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// BenchmarkIdleMemory is ahp-bench's memory scenario in process (issue 17:
// an idle session and an idle client together ≤ 64 KiB): b.N ready
// sessions over the scripted agent, unsubscribed, kept in a SQLite state
// file as `serve` does by default, then b.N WebSocket clients initialized
// and subscribed to the root. It reports the live heap and goroutine
// stacks after a collection, per session and per client, and the stacks
// alone (what the goroutines of a connection keep of their deepest call,
// until collections shrink them). The client figure counts the in-process
// reader's side of each connection too (gorilla's buffers), which
// ahp-bench, the bridge being a process of its own, does not. With IDLE_HEAP_PROFILE=dir it writes the
// heap profile after the sessions (sessions.pprof) and after the clients
// (clients.pprof), for `go tool pprof -sample_index=inuse_space`.
//
//	go test -run - -bench IdleMemory -benchtime 1000x ./internal/bridgetest
func BenchmarkIdleMemory(b *testing.B) {
	profDir := os.Getenv("IDLE_HEAP_PROFILE")
	if profDir != "" {
		// Sample every 512 bytes rather than every 512 KiB: a session is
		// a few dozen small objects.
		runtime.MemProfileRate = 512
	}
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "state.db"), store.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, st.Close()) })
	p := acp.NewProvider(acp.Config{ID: "idle", Command: []string{ScriptAgent(b)}, CoalesceText: true}, zerolog.Nop())
	env := Start(b, []backend.Provider{p}, Options{Host: host.Options{Store: st, MaxSessions: b.N + 1}})
	c := env.Client(b)
	// The agent process and the first session's one-time costs are not
	// counted.
	first := CreateSession(b, c, "idle", "")
	require.NoError(b, c.Unsubscribe(ctx, first))
	writeHeapProfile(b, profDir, "base.pprof")

	b.ResetTimer()
	base, baseG, baseStack := liveBytes(), runtime.NumGoroutine(), stackBytes()
	for range b.N {
		ch := CreateSession(b, c, "idle", "")
		require.NoError(b, c.Unsubscribe(ctx, ch))
	}
	// A session's event drainer outlives its last event by a second
	// (acp's queueLinger); idle means after that.
	time.Sleep(1500 * time.Millisecond)
	withSessions, sessionsG, sessionsStack := liveBytes(), runtime.NumGoroutine(), stackBytes()
	writeHeapProfile(b, profDir, "sessions.pprof")

	conns := make([]*websocket.Conn, 0, b.N)
	defer func() {
		for _, ws := range conns {
			_ = ws.Close()
		}
	}()
	for i := range b.N {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, env.URL, nil)
		require.NoError(b, err)
		conns = append(conns, ws)
		require.NoError(b, ws.WriteJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"channel": "ahp-root://", "protocolVersions": []string{"1.0.0"}, "clientId": fmt.Sprint("idle-", i),
			"initialSubscriptions": []string{"ahp-root://"}}}))
		_, _, err = ws.ReadMessage()
		require.NoError(b, err)
	}
	withClients, clientsStack := liveBytes(), stackBytes()
	writeHeapProfile(b, profDir, "clients.pprof")
	b.StopTimer()
	b.ReportMetric(float64(withSessions-base)/1024/float64(b.N), "KiB/session")
	b.ReportMetric(float64(withClients-withSessions)/1024/float64(b.N), "KiB/client")
	b.ReportMetric(float64(sessionsG-baseG)/float64(b.N), "goroutines/session")
	b.ReportMetric(float64(sessionsStack-baseStack)/1024/float64(b.N), "stack-KiB/session")
	b.ReportMetric(float64(clientsStack-sessionsStack)/1024/float64(b.N), "stack-KiB/client")
	b.ReportMetric(float64(runtime.NumGoroutine()-sessionsG)/float64(b.N), "goroutines/client")
}

// liveBytes collects and returns the bytes of live heap objects and
// goroutine stacks: what an idle object costs once garbage is gone.
func liveBytes() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

// stackBytes is the bytes of goroutine stacks in use.
func stackBytes() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.StackInuse)
}

// writeHeapProfile writes the heap profile to dir/name when dir is set.
func writeHeapProfile(b *testing.B, dir, name string) {
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(b, err)
	defer f.Close()
	require.NoError(b, pprof.WriteHeapProfile(f))
}
