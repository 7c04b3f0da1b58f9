package bridgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
	"github.com/ahp-bridge/ahp-bridge/ops"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// BenchmarkBridgeFlood streams b.N 64-byte agent_message_chunks from the
// scripted agent (a real subprocess) through an in-process bridge to AHP
// WebSocket readers, so the bridge's hot path can be profiled with
// -cpuprofile: one 1.0.0 reader (the host's own dialect), uncoalesced and coalesced (as `serve`
// runs), and, coalesced, one or 100 readers speaking 1.0.0 or 0.3.0 (whose
// turns arrive through the 0.3.0 codec as session/delta on the session
// channel), and one 1.0.0 reader of a flood with a tool call after every
// 50 chunks. The readers only look for the last chunk's index.
//
//	go test -run - -bench 'BridgeFlood/coalesced/clients=1/ahp=0.3.0' -benchtime 100000x -cpuprofile cpu.out ./internal/bridgetest
func BenchmarkBridgeFlood(b *testing.B) {
	b.Run("uncoalesced", func(b *testing.B) { benchFlood(b, false, "1.0.0", 1, 0) })
	b.Run("coalesced", func(b *testing.B) { benchFlood(b, true, "1.0.0", 1, 0) })
	for _, clients := range []int{1, 100} {
		for _, v := range []string{"1.0.0", "0.3.0"} {
			b.Run(fmt.Sprintf("coalesced/clients=%d/ahp=%s", clients, v), func(b *testing.B) { benchFlood(b, true, v, clients, 0) })
		}
	}
	b.Run("coalesced/tools=50", func(b *testing.B) { benchFlood(b, true, "1.0.0", 1, 50) })
}

// BenchmarkBridgeFloodMetrics is the coalesced flood (what `serve` runs)
// without and with the Prometheus metrics of package ops: the collectors,
// the write-latency sample, and a scrape at the end. docs/performance.md
// records the difference (issue 18 allows at most 2 %).
func BenchmarkBridgeFloodMetrics(b *testing.B) {
	b.Run("without", func(b *testing.B) { benchFloodWith(b, true, "1.0.0", 1, 0, false, nil) })
	b.Run("with", func(b *testing.B) { benchFloodWith(b, true, "1.0.0", 1, 0, true, nil) })
}

func benchFlood(b *testing.B, coalesce bool, version string, clients, toolEvery int) {
	benchFloodWith(b, coalesce, version, clients, toolEvery, false, nil)
}

// benchFloodWith is the flood; st, when not nil, is the host's state store.
func benchFloodWith(b *testing.B, coalesce bool, version string, clients, toolEvery int, metrics bool, st store.Store) {
	runFlood(b, floodOpts{coalesce: coalesce, version: version, clients: clients, toolEvery: toolEvery, metrics: metrics, store: st})
}

// floodOpts says what runFlood streams and how it is read.
type floodOpts struct {
	coalesce  bool
	version   string
	clients   int
	toolEvery int
	metrics   bool
	store     store.Store // the host's state store, or nil
	size      int         // bytes per chunk (default 64)
	rate      int         // chunks per second (0: as fast as the bridge reads)
	// onFrame, when set, is called by each reader with every frame it
	// reads (from its own goroutine), after the frame was checked for the
	// last chunk.
	onFrame func(reader int, msg []byte)
	// before and after run around the stream (after the set-up, after
	// the last reader has the last chunk).
	before, after func()
	// readers says how the readers read (1.0.0 only): "" each reads
	// every frame whole and looks for the last chunk; readersFull each
	// also decodes every action frame as a client does and checks the
	// exact text at the end; readersLight reader 0 does that, and the
	// others only count action frames in a reused buffer until the last
	// chunk (see BenchmarkFanout).
	readers string
}

const (
	readersFull  = "full"
	readersLight = "light"
)

func runFlood(b *testing.B, o floodOpts) {
	coalesce, version, clients, toolEvery, metrics := o.coalesce, o.version, o.clients, o.toolEvery, o.metrics
	if o.size == 0 {
		o.size = 64
	}
	p := acp.NewProvider(acp.Config{ID: "flood", Command: []string{ScriptAgent(b)}, CoalesceText: coalesce}, zerolog.Nop())
	env := Start(b, []backend.Provider{p}, Options{Host: host.Options{Store: o.store}})
	var reg *prometheus.Registry
	if metrics {
		reg = prometheus.NewRegistry()
		_, err := ops.NewMetrics(reg, env.Host, env.Bridge, "bench")
		require.NoError(b, err)
	}
	c := env.Client(b)
	ch := CreateSession(b, c, "flood", "")
	chat, err := c.DefaultChat(ch)
	require.NoError(b, err)
	ctx := Context(b, 5*time.Minute)
	require.NoError(b, c.Unsubscribe(ctx, ch))

	// Where the turns stream, and how a turn starts, in the readers' dialect.
	subs, turns := []string{chat}, chat
	turnStarted := map[string]any{"type": "chat/turnStarted", "startedAt": time.Now().UTC().Format(time.RFC3339Nano)}
	if version == "0.3.0" {
		subs, turns = []string{ch}, ch // the session means its default chat too
		turnStarted = map[string]any{"type": "session/turnStarted"}
	}
	send := func(ws *websocket.Conn, v map[string]any) {
		v["jsonrpc"] = "2.0"
		msg, err := json.Marshal(v)
		require.NoError(b, err)
		require.NoError(b, ws.WriteMessage(websocket.TextMessage, msg))
	}
	readers := make([]*websocket.Conn, clients)
	for i := range readers {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, env.URL, nil)
		require.NoError(b, err)
		defer ws.Close()
		readers[i] = ws
		send(ws, map[string]any{"id": 1, "method": "initialize", "params": map[string]any{"channel": "ahp-root://",
			"protocolVersions": []string{version}, "clientId": fmt.Sprint("bench-", i), "initialSubscriptions": subs}})
		for {
			_, msg, err := ws.ReadMessage()
			require.NoError(b, err)
			if bytes.HasPrefix(msg, []byte(`{"jsonrpc":"2.0","id":1`)) {
				require.Contains(b, string(msg), `"protocolVersion":"`+version+`"`)
				break
			}
		}
	}
	last := []byte(fmt.Sprintf("#%08d", b.N-1))
	errs := make(chan error, clients)
	texts := make([]*strings.Builder, clients) // what each decoding reader read, when readers says so
	if o.before != nil {
		o.before()
	}
	b.ResetTimer()
	cpu := cpuTime(b)
	start := time.Now()
	for i, ws := range readers {
		switch {
		case o.readers == readersFull || o.readers == readersLight && i == 0:
			texts[i] = &strings.Builder{}
			go func() { errs <- decodingReader(ws, last, texts[i]) }()
			continue
		case o.readers == readersLight:
			go func() { errs <- lightReader(ws, last, o.size+512) }()
			continue
		}
		go func() {
			for {
				_, msg, err := ws.ReadMessage()
				if err != nil {
					errs <- err
					return
				}
				if o.onFrame != nil {
					o.onFrame(i, msg)
				}
				if bytes.Contains(msg, last) {
					errs <- nil
					return
				}
			}
		}()
	}
	turnStarted["turnId"] = "00000000-0000-4000-8000-000000000001"
	turnStarted["message"] = map[string]any{"text": fmt.Sprintf("bench %d %d %d %d", b.N, o.size, o.rate, toolEvery), "origin": map[string]any{"kind": "user"}}
	send(readers[0], map[string]any{"method": "dispatchAction", "params": map[string]any{"channel": turns, "clientSeq": 1,
		"action": turnStarted}})
	for range readers {
		require.NoError(b, <-errs)
	}
	elapsed := time.Since(start)
	if o.after != nil {
		o.after()
	}
	if metrics {
		// The scrape is part of what metrics cost (a Prometheus server
		// scrapes every 15 s or so; here once per flood).
		fams, err := reg.Gather()
		require.NoError(b, err)
		require.NotEmpty(b, fams)
		elapsed = time.Since(start)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "chunks/s")
	// The process's CPU time per chunk (the bridge and the reader; the
	// agent is a process of its own): steadier than throughput on a
	// machine that other work shares.
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/chunk")
	// Checked after the figures are taken, so that the check's own CPU is
	// not counted.
	for i, t := range texts {
		if t != nil {
			require.NoError(b, checkBenchText(t.String(), b.N, o.size), "reader %d", i)
		}
	}
}

// lightReader reads frames into one reused buffer and looks for nothing but
// the frame that holds the last chunk's index: the cheapest subscriber, so
// that a fan-out in this process measures the bridge rather than its
// readers. The last chunk of a frame's text ends the text, and the text
// ends its frame but for the envelope's last few members, so only the
// frame's tail (tail bytes) is searched: a coalesced frame holds up to
// 32 KiB, and searching all of it was an eighth of the process's CPU at
// 100 readers.
func lightReader(ws *websocket.Conn, last []byte, tail int) error {
	var buf bytes.Buffer
	for {
		_, r, err := ws.NextReader()
		if err != nil {
			return err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return err
		}
		f := buf.Bytes()
		if bytes.HasPrefix(f, actionFramePrefix) && bytes.Contains(f[max(len(f)-tail, 0):], last) {
			return nil
		}
	}
}

var actionFramePrefix = []byte(`{"jsonrpc":"2.0","method":"action"`)

// decodingReader reads as a client does: every action frame decoded whole
// into the wire types, the text of every chat/delta appended to text,
// until the delta that holds the last chunk's index.
func decodingReader(ws *websocket.Conn, last []byte, text *strings.Builder) error {
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(msg, actionFramePrefix) {
			continue
		}
		var m struct {
			Params wire.ActionEnvelope `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			return fmt.Errorf("decoding %.200s: %w", msg, err)
		}
		if d, ok := m.Params.Action.Value.(*wire.ChatDeltaAction); ok {
			text.WriteString(d.Content)
			if strings.Contains(d.Content, string(last)) {
				return nil
			}
		}
	}
}

// checkBenchText reports whether text is exactly the n chunks of size bytes
// the bench agent writes, in order ("T<stamp>#<index>" padded with 'x').
func checkBenchText(text string, n, size int) error {
	stamp := len(scriptagent.BenchStampPrefix) + scriptagent.BenchStampDigits
	if len(text) != n*size {
		return fmt.Errorf("read %d bytes of text, want %d chunks of %d", len(text), n, size)
	}
	pad := strings.Repeat("x", size-stamp-9)
	for i := range n {
		c := text[i*size : (i+1)*size]
		if want := fmt.Sprintf("#%08d", i) + pad; !strings.HasPrefix(c, scriptagent.BenchStampPrefix) || c[stamp:] != want {
			return fmt.Errorf("chunk %d is %q", i, c)
		}
	}
	return nil
}

// cpuTime is the CPU time this process has used, user and system, in
// nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
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

// rawReader is a WebSocket AHP 1.0.0 client that only counts the action
// frames of one channel and watches for a marker.
type rawReader struct {
	ws      *websocket.Conn
	actions int
	done    chan struct{}
	err     error
}

func dialRaw(t *testing.T, url, clientID, channel, marker string) *rawReader {
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"channel": "ahp-root://", "protocolVersions": []string{"1.0.0"}, "clientId": clientID, "initialSubscriptions": []string{channel}}})
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
		// Each reader has its own clientId: a second connection with an id in
		// use takes it over and closes the first.
		readers[i] = dialRaw(t, env.URL, fmt.Sprint("raw-", i), chat, "chat/turnComplete")
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
