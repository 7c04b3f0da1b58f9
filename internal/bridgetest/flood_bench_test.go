package bridgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

// BenchmarkBridgeFlood streams b.N 64-byte agent_message_chunks from the
// scripted agent (a real subprocess) through an in-process bridge to one
// AHP 1.0.0 WebSocket reader, so the bridge's hot path can be profiled with
// -cpuprofile. The reader only looks for the last chunk's index.
func BenchmarkBridgeFlood(b *testing.B) {
	for _, coalesce := range []bool{false, true} {
		name := "uncoalesced"
		if coalesce {
			name = "coalesced"
		}
		b.Run(name, func(b *testing.B) { benchFlood(b, coalesce) })
	}
}

func benchFlood(b *testing.B, coalesce bool) {
	p := acp.NewProvider(acp.Config{ID: "flood", Command: []string{ScriptAgent(b)}, CoalesceText: coalesce}, zerolog.Nop())
	env := Start(b, []backend.Provider{p}, Options{})
	c := env.Client(b)
	ch := CreateSession(b, c, "flood", "")
	chat, err := c.DefaultChat(ch)
	require.NoError(b, err)
	ctx := Context(b, 5*time.Minute)
	require.NoError(b, c.Unsubscribe(ctx, ch))

	ws, _, err := websocket.DefaultDialer.DialContext(ctx, env.URL, nil)
	require.NoError(b, err)
	defer ws.Close()
	send := func(v map[string]any) {
		v["jsonrpc"] = "2.0"
		msg, err := json.Marshal(v)
		require.NoError(b, err)
		require.NoError(b, ws.WriteMessage(websocket.TextMessage, msg))
	}
	send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"channel": "ahp-root://",
		"protocolVersions": []string{"1.0.0"}, "clientId": "bench", "initialSubscriptions": []string{chat}}})
	for {
		_, msg, err := ws.ReadMessage()
		require.NoError(b, err)
		if bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","id":1`)) {
			break
		}
	}
	last := []byte(fmt.Sprintf("#%08d", b.N-1))
	b.ResetTimer()
	start := time.Now()
	send(map[string]any{"method": "dispatchAction", "params": map[string]any{"channel": chat, "clientSeq": 1,
		"action": map[string]any{"type": "chat/turnStarted", "turnId": "00000000-0000-4000-8000-000000000001",
			"startedAt": time.Now().UTC().Format(time.RFC3339Nano),
			"message":   map[string]any{"text": fmt.Sprintf("bench %d 64", b.N), "origin": map[string]any{"kind": "user"}}}}})
	for {
		_, msg, err := ws.ReadMessage()
		require.NoError(b, err)
		if bytes.Contains(msg, last) {
			break
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "chunks/s")
}

// floodState runs one flood with tool calls through a bridge whose ACP
// provider coalesces text chunks or not, and returns the client's final
// chat state (normalised: generated ids and times replaced) and the number
// of envelopes the host encoded.
func floodState(t *testing.T, coalesce bool, prompt string) (string, int64) {
	p := acp.NewProvider(acp.Config{ID: "flood", Command: []string{ScriptAgent(t)}, CoalesceText: coalesce}, zerolog.Nop())
	env := Start(t, []backend.Provider{p}, Options{})
	c := env.Client(t)
	ch := CreateSession(t, c, "flood", "")
	before := env.Host.Stats().EnvelopesEncoded
	turn := StartTurn(t, c, ch, prompt)
	WaitTurnEnd(t, c, ch, turn, time.Minute)
	encoded := env.Host.Stats().EnvelopesEncoded - before
	st, err := c.Chat(ch)
	require.NoError(t, err)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	return normalize(string(b), st.Resource, turn), encoded
}

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE  = regexp.MustCompile(`"(\w*At|\w*Time|timestamp)":("[^"]*"|\d+)`)
	durRE   = regexp.MustCompile(`"duration":\d+`)
	stampRE = regexp.MustCompile(scriptagent.BenchStampPrefix + `\d{19}#`)
)

func excerpt(s string, i int) string {
	return s[max(i-80, 0):min(i+80, len(s))]
}

// normalize replaces the chat URI, the turn id, generated UUIDs (in order
// of first appearance), timestamps and durations, which differ between
// runs.
func normalize(s, channel, turn string) string {
	s = strings.ReplaceAll(s, channel, "CHAT")
	s = strings.ReplaceAll(s, turn, "TURN")
	ids := map[string]string{}
	s = uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		if _, ok := ids[u]; !ok {
			ids[u] = fmt.Sprintf("ID%d", len(ids))
		}
		return ids[u]
	})
	s = stampRE.ReplaceAllString(s, "T#") // the agent's write times
	s = durRE.ReplaceAllString(s, `"duration":0`)
	return timeRE.ReplaceAllString(s, `"$1":0`)
}

// Coalescing text chunks must not change what a client reduces to: the
// same flood (text chunks and tool calls), coalesced and not, ends in
// byte-identical session states — with fewer envelopes when coalesced.
func TestCoalescedFloodSameState(t *testing.T) {
	const prompt = "bench 3000 40 0 100"
	plain, plainEnvelopes := floodState(t, false, prompt)
	merged, mergedEnvelopes := floodState(t, true, prompt)
	if plain != merged {
		i := 0
		for i < len(plain) && i < len(merged) && plain[i] == merged[i] {
			i++
		}
		require.Fail(t, "the coalesced flood ends in another state",
			"first difference at byte %d:\nuncoalesced …%s…\ncoalesced   …%s…", i, excerpt(plain, i), excerpt(merged, i))
	}
	require.Contains(t, plain, "bench-tool-3000", "the flood ran to its end")
	assert.Less(t, mergedEnvelopes, plainEnvelopes, "coalescing merged no chunks")
	t.Logf("envelopes: %d uncoalesced, %d coalesced", plainEnvelopes, mergedEnvelopes)
}

// rawReader is a WebSocket AHP 1.0.0 client (the host's own dialect, so
// that no codec re-encodes what it reads) that only counts the action
// frames of one channel and watches for a marker.
type rawReader struct {
	ws      *websocket.Conn
	actions int
	done    chan struct{}
	err     error
}

func dialRaw(t *testing.T, url, channel, marker string) *rawReader {
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"channel": "ahp-root://", "protocolVersions": []string{"1.0.0"}, "clientId": "raw", "initialSubscriptions": []string{channel}}})
	require.NoError(t, err)
	require.NoError(t, ws.WriteMessage(websocket.TextMessage, msg))
	for {
		_, msg, err := ws.ReadMessage()
		require.NoError(t, err)
		if bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","id":1`)) {
			break
		}
	}
	r := &rawReader{ws: ws, done: make(chan struct{})}
	prefix := []byte(`{"jsonrpc":"2.0","method":"action","params":{"channel":"` + channel + `"`)
	go func() {
		defer close(r.done)
		for {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				r.err = err
				return
			}
			if bytes.HasPrefix(msg, prefix) {
				r.actions++
				if bytes.Contains(msg, []byte(marker)) {
					return
				}
			}
		}
	}()
	return r
}

// With 100 clients on one session, every envelope of a flood is encoded
// once and the same bytes are queued to all 100 connections.
func TestFloodTo100ClientsEncodesOnce(t *testing.T) {
	const clients, chunks = 100, 500
	p := acp.NewProvider(acp.Config{ID: "flood", Command: []string{ScriptAgent(t)}}, zerolog.Nop())
	env := Start(t, []backend.Provider{p}, Options{})
	c := env.Client(t)
	ch := CreateSession(t, c, "flood", "")
	chat, err := c.DefaultChat(ch)
	require.NoError(t, err)
	require.NoError(t, c.Unsubscribe(Context(t, time.Minute), ch))
	readers := make([]*rawReader, clients)
	for i := range readers {
		readers[i] = dialRaw(t, env.URL, chat, "chat/turnComplete")
	}
	before := env.Host.Stats()
	// c no longer watches the session, so the turn is dispatched without
	// waiting for its echo.
	_, err = c.DispatchAction(Context(t, 10*time.Second), chat, c.TurnStarted(client.NewUUID(), client.UserMessage(fmt.Sprintf("bench %d 64", chunks))))
	require.NoError(t, err)
	ctx := Context(t, time.Minute)
	for i, r := range readers {
		select {
		case <-r.done:
			require.NoError(t, r.err, "reader %d", i)
		case <-ctx.Done():
			t.Fatalf("reader %d saw %d actions and no turn end", i, r.actions)
		}
	}
	after := env.Host.Stats()
	envelopes := readers[0].actions
	assert.Greater(t, envelopes, chunks, "one envelope per chunk, plus the turn's own")
	for i, r := range readers {
		assert.Equal(t, envelopes, r.actions, "reader %d", i)
	}
	sequenced := after.ServerSeq - before.ServerSeq
	encoded := after.EnvelopesEncoded - before.EnvelopesEncoded
	assert.Equal(t, sequenced, encoded, "each sequenced envelope is encoded exactly once")
	assert.GreaterOrEqual(t, encoded, int64(envelopes))
	assert.Less(t, encoded, int64(2*envelopes), "not once per client")
	assert.GreaterOrEqual(t, after.FramesQueued-before.FramesQueued, int64(clients*envelopes), "the encoded frame went to every client")
}
