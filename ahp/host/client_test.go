package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/stdio"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/ws"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

const testToken = "s3cret-token"

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

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

// testClient drives the host as an AHP client would. It is used from one
// goroutine at a time.
type testClient struct {
	t        testing.TB
	conn     transport.Conn
	in       chan rpcMsg
	backlog  []rpcMsg
	nextID   int
	clientID string
	seq      int64
	readDone chan struct{}
}

func newTestClient(t testing.TB, c transport.Conn, clientID string) *testClient {
	tc := &testClient{t: t, conn: c, in: make(chan rpcMsg, 1<<16), clientID: clientID, readDone: make(chan struct{})}
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
			tc.in <- m
		}
	}()
	t.Cleanup(tc.close)
	return tc
}

func (tc *testClient) close() {
	_ = tc.conn.Close()
	<-tc.readDone
}

// recv returns the next message, from the backlog first.
func (tc *testClient) recv(timeout time.Duration) (rpcMsg, bool) {
	if len(tc.backlog) > 0 {
		m := tc.backlog[0]
		tc.backlog = tc.backlog[1:]
		return m, true
	}
	select {
	case m, ok := <-tc.in:
		return m, ok
	case <-time.After(timeout):
		return rpcMsg{}, false
	}
}

func (tc *testClient) send(v any) {
	b, err := json.Marshal(v)
	require.NoError(tc.t, err)
	tc.sendRaw(b)
}

func (tc *testClient) sendRaw(b []byte) {
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

// await waits for the response with the given id.
func (tc *testClient) await(id string) (json.RawMessage, *Error) {
	tc.t.Helper()
	var kept []rpcMsg
	defer func() { tc.backlog = append(kept, tc.backlog...) }()
	deadline := time.Now().Add(testTimeout)
	for {
		m, ok := tc.recvFresh(time.Until(deadline))
		if !ok {
			tc.t.Fatalf("no response to request %s", id)
		}
		if m.isResponse() && string(m.ID) == id {
			return m.Result, m.Error
		}
		kept = append(kept, m)
	}
}

// recvFresh reads from the wire only (not the backlog).
func (tc *testClient) recvFresh(timeout time.Duration) (rpcMsg, bool) {
	select {
	case m, ok := <-tc.in:
		return m, ok
	case <-time.After(timeout):
		return rpcMsg{}, false
	}
}

func (tc *testClient) mustCall(method string, params any, out any) {
	tc.t.Helper()
	res, err := tc.call(method, params)
	require.Nil(tc.t, err, "%s failed", method)
	if out != nil {
		require.NoError(tc.t, json.Unmarshal(res, out))
	}
}

func (tc *testClient) initialize(subs ...string) initResult {
	tc.t.Helper()
	var r initResult
	tc.mustCall("initialize", map[string]any{
		"channel": RootURI, "protocolVersions": []string{"0.3.0"}, "clientId": tc.clientID,
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

// dispatch sends a client action and returns its clientSeq.
func (tc *testClient) dispatch(ch string, a any) int64 {
	tc.t.Helper()
	tc.seq++
	tc.send(map[string]any{"jsonrpc": "2.0", "method": "dispatchAction", "params": map[string]any{
		"channel": ch, "clientSeq": tc.seq, "action": wire.Action(a),
	}})
	return tc.seq
}

// nextEnvelope returns the next `action` notification matching pred,
// skipping everything else.
func (tc *testClient) nextEnvelope(pred func(envelope) bool) envelope {
	tc.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		m, ok := tc.recv(time.Until(deadline))
		if !ok {
			tc.t.Fatalf("no matching action envelope arrived")
		}
		if m.Method != "action" {
			continue
		}
		var e envelope
		require.NoError(tc.t, json.Unmarshal(m.Params, &e), "envelope %s", m.Params)
		e.raw = m.Params
		if pred == nil || pred(e) {
			return e
		}
	}
}

// ownEcho waits for the echo of this client's action clientSeq.
func (tc *testClient) ownEcho(clientSeq int64) envelope {
	tc.t.Helper()
	return tc.nextEnvelope(func(e envelope) bool {
		return e.Origin != nil && e.Origin.ClientID == tc.clientID && e.Origin.ClientSeq == clientSeq
	})
}

func (tc *testClient) nextNotification(method string) rpcMsg {
	tc.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		m, ok := tc.recv(time.Until(deadline))
		if !ok {
			tc.t.Fatalf("no %s notification arrived", method)
		}
		if m.Method == method {
			return m
		}
	}
}

// harness is a host served over a real WebSocket server and over stdio.
type harness struct {
	t       testing.TB
	h       *Host
	backend *fakeBackend
	srv     *httptest.Server
	wsh     *ws.Handler
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	ctx     context.Context
}

func newHarness(t testing.TB, opts Options) *harness { return newHarnessSendBuffer(t, opts, 0) }

// newHarnessSendBuffer is newHarness whose WebSocket server gives every
// connection it accepts a kernel send buffer (SO_SNDBUF) of sendBuffer
// bytes, when positive. Tests about a client that stops reading use a
// small one with a small receive buffer on the client's side, so that the
// kernel holds little and the host's own queue overflows after a few
// frames, not after megabytes.
func newHarnessSendBuffer(t testing.TB, opts Options, sendBuffer int) *harness {
	if opts.Agents == nil {
		opts.Agents = []wire.AgentInfo{{Provider: "fake", DisplayName: "Fake", Description: "test agent", Models: []wire.SessionModelInfo{}}}
	}
	h := New(opts)
	fb := newFakeBackend(h)
	h.SetBackend(fb)
	hs := &harness{t: t, h: h, backend: fb}
	hs.ctx, hs.cancel = context.WithCancel(context.Background())
	hs.wsh = ws.NewHandler(h, ws.Options{Token: testToken, AllowedOrigins: []string{"https://allowed.example"}, PingInterval: -1})
	hs.srv = httptest.NewUnstartedServer(hs.wsh)
	if sendBuffer > 0 {
		hs.srv.Listener = sendBufferListener{Listener: hs.srv.Listener, size: sendBuffer}
	}
	hs.srv.Start()
	t.Cleanup(func() {
		hs.cancel()
		h.Close()
		hs.wsh.Close()
		hs.srv.Close()
		hs.wg.Wait()
		fb.wait()
	})
	return hs
}

func (hs *harness) wsURL() string {
	return "ws" + strings.TrimPrefix(hs.srv.URL, "http") + "/?tkn=" + testToken
}

func (hs *harness) dialRaw(t testing.TB) *websocket.Conn {
	return hs.dialRawWith(t, websocket.DefaultDialer)
}

func (hs *harness) dialRawWith(t testing.TB, d *websocket.Dialer) *websocket.Conn {
	wsc, resp, err := d.Dial(hs.wsURL(), nil)
	require.NoError(t, err)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return wsc
}

// smallReceiveDialer dials with a 4 KiB kernel receive buffer, set before
// connecting so that the TCP window stays small too.
var smallReceiveDialer = &websocket.Dialer{
	HandshakeTimeout: testTimeout,
	NetDialContext: (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}).DialContext,
}

// sendBufferListener sets the send buffer of each accepted connection.
type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetWriteBuffer(l.size); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("setting the send buffer of an accepted connection: %w", err)
		}
	}
	return c, nil
}

// dial connects a WebSocket client.
func (hs *harness) dial(t testing.TB, clientID string) *testClient {
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

// newSession creates a ready session through client tc and subscribes.
func (hs *harness) newSession(tc *testClient, id string) string {
	hs.t.Helper()
	uri := "ahp-session:/" + id
	tc.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake"}, nil)
	tc.subscribe(uri)
	// The fake backend dispatches session/ready right away.
	require.Eventually(hs.t, func() bool {
		ready := false
		hs.h.ReadSession(uri, func(s *wire.SessionState) { ready = s.Lifecycle == wire.SessionLifecycleReady })
		return ready
	}, testTimeout, time.Millisecond)
	return uri
}
