package bridgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// BenchmarkScale is ahp-bench's scale scenario in process (issue 28): N
// sessions of one scripted agent process on one bridge with a state file,
// each read by one WebSocket client, each streaming 50 chunks a second of
// 20 to 200 bytes with a tool call every 100 chunks (2 s), every fifth of
// which asks for a confirmation the client answers. b.N is the chunks per
// session: -benchtime 100x is two seconds of stream. It reports this
// process's CPU per chunk (bridge and readers; the agent is a process of
// its own) and in percent of one core, and the latency from the agent's
// write to the reader's read over every chunk.
//
//	go test -run - -bench Scale -benchtime 100x -cpuprofile cpu.out ./internal/bridgetest
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) { benchScale(b, n) })
	}
}

func benchScale(b *testing.B, sessions int) {
	const rate, minSize, maxSize, toolEvery, permEvery = 50, 20, 200, 100, 5
	p := acp.NewProvider(acp.Config{ID: "flood", Command: []string{ScriptAgent(b)}, CoalesceText: true}, zerolog.Nop())
	env := Start(b, []backend.Provider{p}, Options{Host: host.Options{Store: benchStore(b)}})
	c := env.Client(b)
	ctx := Context(b, 5*time.Minute)
	type reader struct {
		ws    *websocket.Conn
		chat  string
		wmu   sync.Mutex
		seq   int
		lat   []time.Duration
		asked int
	}
	send := func(r *reader, v map[string]any) error {
		r.wmu.Lock()
		defer r.wmu.Unlock()
		r.seq++
		v["jsonrpc"] = "2.0"
		if params, ok := v["params"].(map[string]any); ok && v["method"] == "dispatchAction" {
			params["clientSeq"] = r.seq
		}
		msg, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return r.ws.WriteMessage(websocket.TextMessage, msg)
	}
	readers := make([]*reader, sessions)
	for i := range readers {
		ch := CreateSession(b, c, "flood", "")
		chat, err := c.DefaultChat(ch)
		require.NoError(b, err)
		require.NoError(b, c.Unsubscribe(ctx, ch))
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, env.URL, nil)
		require.NoError(b, err)
		defer ws.Close()
		r := &reader{ws: ws, chat: chat}
		readers[i] = r
		require.NoError(b, send(r, map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"channel": "ahp-root://",
			"protocolVersions": []string{"1.0.0"}, "clientId": fmt.Sprint("scale-", i), "initialSubscriptions": []string{chat}}}))
		for {
			_, msg, err := ws.ReadMessage()
			require.NoError(b, err)
			if bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","id":1`)) {
				break
			}
		}
	}
	last := []byte(fmt.Sprintf("#%08d", b.N-1))
	errs := make(chan error, sessions)
	prompt := fmt.Sprintf("bench %d %d %d %d %d %d", b.N, minSize, rate, toolEvery, permEvery, maxSize)
	b.ResetTimer()
	cpu := cpuTime(b)
	start := time.Now()
	for i, r := range readers {
		go func() {
			var buf bytes.Buffer
			for {
				_, rd, err := r.ws.NextReader()
				if err == nil {
					buf.Reset()
					_, err = buf.ReadFrom(rd)
				}
				if err != nil {
					errs <- err
					return
				}
				msg := buf.Bytes()
				if !bytes.HasPrefix(msg, actionFramePrefix) {
					continue
				}
				r.lat = appendStamps(r.lat, msg, time.Now().UnixNano())
				if bytes.Contains(msg, []byte(`toolCallReady"`)) && !bytes.Contains(msg, []byte(`"confirmed"`)) {
					var env struct {
						Params struct {
							Action struct{ TurnID, ToolCallID string } `json:"action"`
						} `json:"params"`
					}
					if err := json.Unmarshal(msg, &env); err != nil {
						errs <- err
						return
					}
					a := env.Params.Action
					if err := send(r, map[string]any{"method": "dispatchAction", "params": map[string]any{"channel": r.chat,
						"action": map[string]any{"type": "chat/toolCallConfirmed", "turnId": a.TurnID, "toolCallId": a.ToolCallID,
							"approved": true, "confirmed": "user-action"}}}); err != nil {
						errs <- err
						return
					}
					r.asked++
				}
				if bytes.Contains(msg, last) {
					errs <- nil
					return
				}
			}
		}()
		// The turns start spread over one chunk interval.
		time.Sleep(time.Until(start.Add(time.Second / rate * time.Duration(i) / time.Duration(sessions))))
		require.NoError(b, send(r, map[string]any{"method": "dispatchAction", "params": map[string]any{"channel": r.chat,
			"action": map[string]any{"type": "chat/turnStarted", "turnId": fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
				"startedAt": time.Now().UTC().Format(time.RFC3339Nano), "message": map[string]any{"text": prompt, "origin": map[string]any{"kind": "user"}}}}}))
	}
	for range readers {
		require.NoError(b, <-errs)
	}
	elapsed := time.Since(start)
	used := cpuTime(b) - cpu
	b.StopTimer()
	var all []time.Duration
	asked := 0
	for _, r := range readers {
		require.Len(b, r.lat, b.N, "every chunk read once")
		all = append(all, r.lat...)
		asked += r.asked
	}
	require.Equal(b, sessions*((b.N-1)/toolEvery/permEvery), asked, "every confirmation answered")
	slices.Sort(all)
	b.ReportMetric(float64(used)/float64(sessions*b.N), "cpu-ns/chunk")
	b.ReportMetric(100*float64(used)/float64(elapsed), "cpu-%")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}
