package bridgetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// RawTimeout bounds each wait of a RawClient: one request's answer, one
// condition. It is generous because the tests run under -race on a loaded
// machine; a passing test never waits for it.
const RawTimeout = 60 * time.Second

// RawClient is an AHP client that knows no dialect: JSON-RPC over a
// WebSocket, one message per text frame. The tests of the dialects our
// client (ahp/client, 1.0.0 only) does not speak build their messages in
// the shapes of their version and read what arrives as JSON, decoding it
// with that version's types where they exist.
//
// It records every frame and every notification it receives, in order, so
// that a test can check all of them (no action unknown to the version, no
// member the version cannot name) as well as wait for one.
type RawClient struct {
	t        testing.TB
	conn     *websocket.Conn
	clientID string

	wmu sync.Mutex // serialises writes

	mu        sync.Mutex
	nextID    int64
	nextSeq   int64
	responses map[string]RawResponse // by the request id's JSON
	notes     []Notification
	envs      []Envelope // the notes that are action envelopes, decoded
	frames    [][]byte
	readErr   error         // why the reader stopped
	changed   chan struct{} // closed and replaced whenever something arrives
	done      chan struct{} // closed when the reader has stopped
}

// Notification is one JSON-RPC notification the server sent.
type Notification struct {
	Method string
	Params json.RawMessage
}

// RawResponse is the answer to one request.
type RawResponse struct {
	Result json.RawMessage
	Error  *RPCError
}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Envelope is an action envelope of any dialect, its action left encoded.
type Envelope struct {
	Channel         string          `json:"channel"`
	Action          json.RawMessage `json:"action"`
	ServerSeq       int64           `json:"serverSeq"`
	Origin          *EnvelopeOrigin `json:"origin,omitempty"`
	RejectionReason *string         `json:"rejectionReason,omitempty"`
}

// EnvelopeOrigin is the client that dispatched an action.
type EnvelopeOrigin struct {
	ClientID  string `json:"clientId"`
	ClientSeq int64  `json:"clientSeq"`
}

// Type returns the action's type.
func (e Envelope) Type() string {
	var a struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(e.Action, &a)
	return a.Type
}

// DialRaw connects a RawClient to url as clientID. It sends nothing: the
// test chooses between initialize and reconnect. The connection closes
// when the test ends.
func DialRaw(t testing.TB, url, clientID string) *RawClient {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.DialContext(Context(t, RawTimeout), url, nil)
	require.NoError(t, err)
	c := &RawClient{
		t: t, conn: conn, clientID: clientID,
		responses: map[string]RawResponse{},
		changed:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	go c.read()
	t.Cleanup(c.Close)
	return c
}

// ClientID returns the client's id.
func (c *RawClient) ClientID() string { return c.clientID }

func (c *RawClient) read() {
	defer close(c.done)
	for {
		_, frame, err := c.conn.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.signalLocked()
			c.mu.Unlock()
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *RPCError       `json:"error"`
		}
		perr := json.Unmarshal(frame, &m)
		c.mu.Lock()
		c.frames = append(c.frames, frame)
		switch {
		case perr != nil:
			c.readErr = fmt.Errorf("the server sent a frame that is not JSON-RPC: %v: %s", perr, frame)
		case m.Method != "":
			c.notes = append(c.notes, Notification{Method: m.Method, Params: m.Params})
			if m.Method == "action" {
				var e Envelope
				if err := json.Unmarshal(m.Params, &e); err != nil {
					c.readErr = fmt.Errorf("the server sent an action envelope that does not decode: %v: %s", err, frame)
				}
				c.envs = append(c.envs, e)
			}
		default:
			c.responses[string(m.ID)] = RawResponse{Result: m.Result, Error: m.Error}
		}
		c.signalLocked()
		c.mu.Unlock()
	}
}

func (c *RawClient) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Close closes the connection and waits for the reader to stop.
func (c *RawClient) Close() {
	_ = c.conn.Close()
	<-c.done
}

func (c *RawClient) write(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(c.t, err)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	require.NoError(c.t, c.conn.SetWriteDeadline(time.Now().Add(RawTimeout)))
	require.NoError(c.t, c.conn.WriteMessage(websocket.TextMessage, b))
}

// Until waits, up to its own deadline, until cond holds; cond is
// evaluated again whenever something arrives. It fails the test when the
// connection ends first.
func (c *RawClient) Until(what string, cond func() bool) {
	c.t.Helper()
	ctx := Context(c.t, RawTimeout)
	for {
		c.mu.Lock()
		changed, readErr := c.changed, c.readErr
		c.mu.Unlock()
		if cond() {
			return
		}
		if readErr != nil {
			require.Failf(c.t, "connection ended", "waiting for %s: %v", what, readErr)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			require.Failf(c.t, "timed out", "waiting for %s", what)
		}
	}
}

// Send sends a request and returns its id, without waiting for the answer.
func (c *RawClient) Send(method string, params any) string {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	c.write(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return strconv.FormatInt(id, 10)
}

// Response waits for the answer to request id.
func (c *RawClient) Response(id string) RawResponse {
	c.t.Helper()
	var r RawResponse
	c.Until("the answer to request "+id, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		var ok bool
		r, ok = c.responses[id]
		return ok
	})
	return r
}

// Call sends a request and waits for its answer: the result, or the
// server's error as an *RPCError.
func (c *RawClient) Call(method string, params any) (json.RawMessage, error) {
	c.t.Helper()
	r := c.Response(c.Send(method, params))
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}

// MustCall is Call for requests that must succeed.
func (c *RawClient) MustCall(method string, params any) json.RawMessage {
	c.t.Helper()
	res, err := c.Call(method, params)
	require.NoError(c.t, err, "%s", method)
	return res
}

// CallError is Call for requests that must fail; it returns the error.
func (c *RawClient) CallError(method string, params any) *RPCError {
	c.t.Helper()
	_, err := c.Call(method, params)
	var rpcErr *RPCError
	require.ErrorAs(c.t, err, &rpcErr, "%s must fail", method)
	return rpcErr
}

// Notify sends a notification.
func (c *RawClient) Notify(method string, params any) {
	c.t.Helper()
	c.write(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Dispatch sends dispatchAction with the client's next clientSeq and
// returns that clientSeq; Echo waits for the server's answer to it.
func (c *RawClient) Dispatch(channel string, action any) int64 {
	c.t.Helper()
	c.mu.Lock()
	c.nextSeq++
	seq := c.nextSeq
	c.mu.Unlock()
	c.Notify("dispatchAction", map[string]any{"channel": channel, "clientSeq": seq, "action": action})
	return seq
}

// Echo waits for the envelope that answers the client's action clientSeq:
// its echo when the server accepted it, or its rejection.
func (c *RawClient) Echo(clientSeq int64) Envelope {
	c.t.Helper()
	var found Envelope
	c.Until(fmt.Sprintf("the echo of action %d", clientSeq), func() bool {
		for _, e := range c.Envelopes() {
			if e.Origin != nil && e.Origin.ClientID == c.clientID && e.Origin.ClientSeq == clientSeq {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// Ping sends ping and waits for its answer. The host answers a request
// after everything it queued for the connection before it, so once Ping
// returns the client has received every envelope sequenced before.
func (c *RawClient) Ping() {
	c.t.Helper()
	c.MustCall("ping", map[string]any{})
}

// Notifications returns what the server notified so far, in order.
func (c *RawClient) Notifications() []Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Notification(nil), c.notes...)
}

// Envelopes returns the action envelopes received so far, in order.
func (c *RawClient) Envelopes() []Envelope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Envelope(nil), c.envs...)
}

// Frames returns every frame received so far, in order: answers and
// notifications.
func (c *RawClient) Frames() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.frames...)
}

// WaitClosed waits until the server has closed the connection and returns
// how the read ended.
func (c *RawClient) WaitClosed() error {
	c.t.Helper()
	select {
	case <-c.done:
	case <-Context(c.t, RawTimeout).Done():
		require.Fail(c.t, "the server did not close the connection")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr
}
