package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/stdio"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/ws"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

const testToken = "s3cret-token"

// testTimeout bounds each wait of these tests (every wait has its own
// deadline, derived from the test's context). It is never a measure of
// speed: nothing here asserts how long anything took.
const testTimeout = 10 * time.Second

// current is the version the host speaks natively.
var current = codec.Current.String()

// waitCtx is the deadline of one wait: testTimeout, or the end of the test.
func waitCtx(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), testTimeout)
}

// eventually polls cond until it holds, failing the test at the wait's
// deadline. It is for state the host exposes no event for; prefer waiting
// for a message.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting: %s", what)
		case <-tick.C:
		}
	}
}

// rpcMsg is any message a test client receives.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *Error          `json:"error"`
	raw    []byte
}

func (m rpcMsg) isResponse() bool { return m.Method == "" }

// envelope is a decoded `action` notification.
type envelope struct {
	Channel         string             `json:"channel"`
	Action          wire.StateAction   `json:"action"`
	ServerSeq       int64              `json:"serverSeq"`
	Origin          *wire.ActionOrigin `json:"origin"`
	RejectionReason *string            `json:"rejectionReason"`
	raw             json.RawMessage
}

// isAction matches an envelope by channel (any when "") and action type.
func isAction(channel string, typ wire.ActionType) func(envelope) bool {
	return func(e envelope) bool {
		return (channel == "" || e.Channel == channel) && e.Action.Type() == string(typ)
	}
}

// testClient drives the host as an AHP client would. It is used from one
// goroutine at a time.
type testClient struct {
	t        testing.TB
	conn     transport.Conn
	in       chan rpcMsg
	quit     chan struct{}
	backlog  []rpcMsg
	nextID   int
	clientID string
	seq      int64
	readDone chan struct{}
	once     sync.Once
}

func newTestClient(t testing.TB, c transport.Conn, clientID string) *testClient {
	tc := &testClient{t: t, conn: c, in: make(chan rpcMsg, 1<<12), quit: make(chan struct{}), clientID: clientID, readDone: make(chan struct{})}
	go func() {
		defer close(tc.readDone)
		defer close(tc.in)
		for {
			b, err := c.ReadMessage()
			if err != nil {
				return
			}
			var m rpcMsg
			if err := json.Unmarshal(b, &m); err != nil {
				m = rpcMsg{Method: "<undecodable>"}
			}
			m.raw = b
			select {
			case tc.in <- m:
			case <-tc.quit:
				return
			}
		}
	}()
	t.Cleanup(tc.close)
	return tc
}

// close ends the connection and waits for the reader.
func (tc *testClient) close() {
	tc.once.Do(func() {
		close(tc.quit)
		_ = tc.conn.Close()
	})
	<-tc.readDone
}

// next returns the next message, from the backlog first; ok is false when
// the connection ended or ctx did.
func (tc *testClient) next(ctx context.Context) (rpcMsg, bool) {
	if len(tc.backlog) > 0 {
		m := tc.backlog[0]
		tc.backlog = tc.backlog[1:]
		return m, true
	}
	return tc.nextFresh(ctx)
}

// nextFresh reads from the wire only (not the backlog).
func (tc *testClient) nextFresh(ctx context.Context) (rpcMsg, bool) {
	select {
	case m, ok := <-tc.in:
		return m, ok
	case <-ctx.Done():
		return rpcMsg{}, false
	}
}

// recv returns the next message, failing the test when none arrives.
func (tc *testClient) recv(what string) rpcMsg {
	tc.t.Helper()
	ctx, cancel := waitCtx(tc.t)
	defer cancel()
	m, ok := tc.next(ctx)
	if !ok {
		tc.t.Fatalf("%s: nothing arrived (connection closed: %v)", what, ctx.Err() == nil)
	}
	return m
}

// closed reports whether the server closed the connection, reading (and
// dropping) whatever it sent first.
func (tc *testClient) closed() bool {
	ctx, cancel := waitCtx(tc.t)
	defer cancel()
	for {
		if _, ok := tc.nextFresh(ctx); !ok {
			return ctx.Err() == nil
		}
	}
}

func (tc *testClient) send(v any) {
	tc.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(tc.t, err)
	tc.sendRaw(b)
}

func (tc *testClient) sendRaw(b []byte) {
	tc.t.Helper()
	require.NoError(tc.t, tc.conn.WriteMessage(b))
}

// call sends a request and waits for its response; notifications that
// arrive meanwhile are kept for later.
func (tc *testClient) call(method string, params any) (json.RawMessage, *Error) {
	tc.t.Helper()
	tc.nextID++
	id := tc.nextID
	tc.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return tc.await(strconv.Itoa(id))
}

// await waits for the response with the given (encoded) id.
func (tc *testClient) await(id string) (json.RawMessage, *Error) {
	tc.t.Helper()
	m := tc.find("the response to request "+id, func(m rpcMsg) bool { return m.isResponse() && string(m.ID) == id })
	return m.Result, m.Error
}

// find returns the first message matching pred; the others that arrive
// before it are kept, in order, for later.
func (tc *testClient) find(what string, pred func(rpcMsg) bool) rpcMsg {
	tc.t.Helper()
	ctx, cancel := waitCtx(tc.t)
	defer cancel()
	var kept []rpcMsg
	defer func() { tc.backlog = append(kept, tc.backlog...) }()
	for {
		m, ok := tc.next(ctx)
		if !ok {
			tc.t.Fatalf("waiting for %s: it never arrived", what)
		}
		if pred(m) {
			return m
		}
		kept = append(kept, m)
	}
}

// until returns every message before the first one matching pred, and
// that one; it drops them all from the backlog.
func (tc *testClient) until(what string, pred func(rpcMsg) bool) (before []rpcMsg, match rpcMsg) {
	tc.t.Helper()
	ctx, cancel := waitCtx(tc.t)
	defer cancel()
	for {
		m, ok := tc.next(ctx)
		if !ok {
			tc.t.Fatalf("waiting for %s: it never arrived", what)
		}
		if pred(m) {
			return before, m
		}
		before = append(before, m)
	}
}

func (tc *testClient) mustCall(method string, params any, out any) {
	tc.t.Helper()
	res, err := tc.call(method, params)
	require.Nil(tc.t, err, "%s failed", method)
	if out != nil {
		require.NoError(tc.t, json.Unmarshal(res, out), "%s answered %s", method, res)
	}
}

// ping round-trips a ping: every frame the client sent before it has been
// handled, and everything queued for the client before its answer is in
// the backlog.
func (tc *testClient) ping() {
	tc.t.Helper()
	res, err := tc.call("ping", nil)
	require.Nil(tc.t, err)
	require.Equal(tc.t, "null", string(res))
}

// initialize negotiates the host's own version.
func (tc *testClient) initialize(subs ...string) initResult {
	tc.t.Helper()
	return tc.initializeAs([]string{current}, subs...)
}

// initializeAs offers the given versions, which must succeed.
func (tc *testClient) initializeAs(versions []string, subs ...string) initResult {
	tc.t.Helper()
	var r initResult
	tc.mustCall("initialize", map[string]any{
		"channel": RootURI, "protocolVersions": versions, "clientId": tc.clientID,
		"initialSubscriptions": subs,
	}, &r)
	return r
}

type initResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	ServerSeq       int64          `json:"serverSeq"`
	Snapshots       []snapshotWire `json:"snapshots"`
}

type snapshotWire struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

func (tc *testClient) subscribe(ch string) snapshotWire {
	tc.t.Helper()
	var r struct {
		Snapshot snapshotWire `json:"snapshot"`
	}
	tc.mustCall("subscribe", map[string]any{"channel": ch}, &r)
	return r.Snapshot
}

// subscribeView subscribes with view.turns.
func (tc *testClient) subscribeView(ch string, turns int) snapshotWire {
	tc.t.Helper()
	var r struct {
		Snapshot snapshotWire `json:"snapshot"`
	}
	tc.mustCall("subscribe", map[string]any{"channel": ch, "view": map[string]any{"turns": turns}}, &r)
	return r.Snapshot
}

// dispatch sends a client action and returns its clientSeq.
func (tc *testClient) dispatch(ch string, a any) int64 {
	tc.t.Helper()
	tc.seq++
	tc.send(dispatchFrame(ch, tc.seq, a))
	return tc.seq
}

func dispatchFrame(ch string, clientSeq int64, a any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "method": "dispatchAction", "params": map[string]any{
		"channel": ch, "clientSeq": clientSeq, "action": wire.Action(a),
	}}
}

// decodeEnvelope decodes an `action` notification. An action that does
// not decode into its type (a rejected malformed one, echoed as sent) is
// kept as raw JSON.
func decodeEnvelope(t testing.TB, m rpcMsg) envelope {
	t.Helper()
	var e struct {
		envelope
		Action json.RawMessage `json:"action"`
	}
	require.NoError(t, json.Unmarshal(m.Params, &e), "envelope %s", m.Params)
	if err := json.Unmarshal(e.Action, &e.envelope.Action); err != nil {
		e.envelope.Action = wire.StateAction{Value: e.Action}
	}
	e.raw = m.Params
	return e.envelope
}

// nextEnvelope returns the next `action` notification matching pred (any
// when nil), dropping everything before it.
func (tc *testClient) nextEnvelope(pred func(envelope) bool) envelope {
	tc.t.Helper()
	var e envelope
	tc.until("a matching action envelope", func(m rpcMsg) bool {
		if m.Method != wire.MethodAction {
			return false
		}
		e = decodeEnvelope(tc.t, m)
		return pred == nil || pred(e)
	})
	return e
}

// ownEcho waits for the echo of this client's action clientSeq.
func (tc *testClient) ownEcho(clientSeq int64) envelope {
	tc.t.Helper()
	return tc.nextEnvelope(func(e envelope) bool {
		return e.Origin != nil && e.Origin.ClientID == tc.clientID && e.Origin.ClientSeq == clientSeq
	})
}

// accepted dispatches a client action and requires it accepted.
func (tc *testClient) accepted(ch string, a any) envelope {
	tc.t.Helper()
	e := tc.ownEcho(tc.dispatch(ch, a))
	require.Nil(tc.t, e.RejectionReason, "%s was rejected", e.Action.Type())
	return e
}

// rejected dispatches a client action and returns its rejection reason.
func (tc *testClient) rejected(ch string, a any) string {
	tc.t.Helper()
	e := tc.ownEcho(tc.dispatch(ch, a))
	require.NotNil(tc.t, e.RejectionReason, "%s was accepted", e.Action.Type())
	return *e.RejectionReason
}

// nextNotification returns the next notification of method, dropping
// everything before it.
func (tc *testClient) nextNotification(method string) rpcMsg {
	tc.t.Helper()
	_, m := tc.until("a "+method+" notification", func(m rpcMsg) bool { return m.Method == method })
	return m
}

// userMsg is a user message with the given text.
func userMsg(text string) wire.Message {
	return wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
}

// fakeAgent is the root entry of the fake handler's provider.
var fakeAgent = wire.AgentInfo{Provider: "fake", DisplayName: "Fake", Description: "test agent", Models: []wire.SessionModelInfo{}}

// multiChatAgent is fakeAgent advertising multipleChats.
func multiChatAgent() wire.AgentInfo {
	a := fakeAgent
	a.Capabilities = &wire.AgentCapabilities{MultipleChats: &wire.MultipleChatsCapability{}}
	return a
}

// harness is a host served over a real WebSocket server and over stdio.
type harness struct {
	t       testing.TB
	h       *Host
	handler *fakeHandler
	srv     *httptest.Server
	wsh     *ws.Handler
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	ctx     context.Context
}

func newHarness(t testing.TB, opts Options) *harness {
	if opts.Agents == nil {
		opts.Agents = []wire.AgentInfo{fakeAgent}
	}
	h := New(opts)
	fh := newFakeHandler(t, h)
	h.SetHandler(fh)
	hs := &harness{t: t, h: h, handler: fh}
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	hs.wsh = ws.NewHandler(h, ws.Options{Token: testToken, AllowedOrigins: []string{"https://allowed.example"}, PingInterval: -1})
	hs.srv = httptest.NewServer(hs.wsh)
	t.Cleanup(func() {
		hs.cancel()
		h.Close()
		hs.wsh.Close()
		hs.srv.Close()
		hs.wg.Wait()
		fh.wait()
	})
	return hs
}

func (hs *harness) wsURL() string {
	return "ws" + strings.TrimPrefix(hs.srv.URL, "http") + "/?tkn=" + testToken
}

func (hs *harness) dialRaw(t testing.TB) *websocket.Conn {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	wsc, resp, err := websocket.DefaultDialer.DialContext(ctx, hs.wsURL(), nil)
	require.NoError(t, err)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return wsc
}

// readRaw reads one message from a raw WebSocket; a wait's deadline fails
// the test.
func readRaw(t testing.TB, wsc *websocket.Conn) ([]byte, error) {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = wsc.SetReadDeadline(time.Now()) })
	defer stop()
	_, b, err := wsc.ReadMessage()
	if ctx.Err() != nil {
		t.Fatalf("reading a raw WebSocket: nothing arrived (%v)", err)
	}
	return b, err
}

// dial connects a WebSocket client.
func (hs *harness) dial(t testing.TB, clientID string) *testClient {
	t.Helper()
	return newTestClient(t, ws.NewConn(hs.dialRaw(t), ws.Options{PingInterval: -1}), clientID)
}

// stdio connects a client over a pair of pipes served by ServeConn.
func (hs *harness) stdio(t testing.TB, clientID string) *testClient {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	server := stdio.New(sr, sw, stdio.Options{})
	hs.wg.Add(1)
	go func() {
		defer hs.wg.Done()
		_ = hs.h.ServeConn(hs.ctx, server)
	}()
	return newTestClient(t, stdio.New(cr, cw, stdio.Options{}), clientID)
}

// testSession names a session and its default chat.
type testSession struct {
	uri  string // ahp-session:/…
	chat string // its default chat
}

// newSession creates a session through client tc, subscribes to it and to
// its default chat, and waits until it is ready.
func (hs *harness) newSession(tc *testClient, id string) testSession {
	tc.t.Helper()
	return hs.createSession(tc, "ahp-session:/"+id)
}

// createSession is newSession for any session URI.
func (hs *harness) createSession(tc *testClient, uri string) testSession {
	tc.t.Helper()
	tc.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake"}, nil)
	var st wire.SessionState
	require.NoError(tc.t, json.Unmarshal(tc.subscribe(uri).State, &st))
	require.NotNil(tc.t, st.DefaultChat, "every session has a default chat")
	if st.Lifecycle != wire.SessionLifecycleReady {
		// The handler readies it after the subscription was taken.
		tc.find("session/ready", func(m rpcMsg) bool {
			return m.Method == wire.MethodAction && isAction(uri, wire.ActionTypeSessionReady)(decodeEnvelope(tc.t, m))
		})
	}
	s := testSession{uri: uri, chat: *st.DefaultChat}
	tc.subscribe(s.chat)
	return s
}

// readChat returns a deep copy of a chat's state.
func (hs *harness) readChat(t testing.TB, chat string) *wire.ChatState {
	t.Helper()
	var b []byte
	require.True(t, hs.h.ReadChat(chat, func(s *wire.ChatState) {
		var err error
		b, err = json.Marshal(s)
		require.NoError(t, err)
	}), "chat %s does not exist", chat)
	st := new(wire.ChatState)
	require.NoError(t, json.Unmarshal(b, st))
	return st
}

// readSession returns a deep copy of a session's state.
func (hs *harness) readSession(t testing.TB, uri string) *wire.SessionState {
	t.Helper()
	var b []byte
	require.True(t, hs.h.ReadSession(uri, func(s *wire.SessionState) {
		var err error
		b, err = json.Marshal(s)
		require.NoError(t, err)
	}), "session %s does not exist", uri)
	st := new(wire.SessionState)
	require.NoError(t, json.Unmarshal(b, st))
	return st
}

// dispatch submits server-originated actions, which must succeed.
func (hs *harness) dispatch(t testing.TB, channel string, actions ...any) int64 {
	t.Helper()
	var seq int64
	for _, a := range actions {
		var err error
		seq, err = hs.h.Dispatch(channel, wire.Action(a))
		require.NoError(t, err)
	}
	return seq
}
