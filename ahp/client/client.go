// Package client is a small AHP 1.0.0 client over WebSocket.
//
// It is used by the `ahp-bridge client` terminal UI, the demo, the soak
// tool and the bridge's end-to-end tests, so it favours a simple, blocking
// API:
//
//	c, err := client.Dial(ctx, "ws://127.0.0.1:8081/?tkn=TOKEN", client.Options{})
//	defer c.Close()
//	_, err = c.Initialize(ctx) // subscribes to ahp-root://
//	uri := client.NewSessionURI()
//	err = c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri, Provider: wire.Ptr("echo")})
//	_, err = c.Subscribe(ctx, uri) // the session and its default chat
//	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Lifecycle != wire.SessionLifecycleCreating })
//	_, err = c.StartTurn(ctx, uri, "t1", client.UserMessage("hello")) // on the default chat
//	turn, err := c.WaitForTurn(ctx, uri, "t1")
//	ev, err := c.Next(ctx) // every envelope and notification, in arrival order
//
// (error handling elided).
//
// AHP (since 0.7.0) splits a session in two kinds of channel: the session channel
// (ahp-session:/…) holds what concerns the whole session — lifecycle,
// title, the catalogue of its chats, what it waits for (inputNeeded) — and
// each chat channel (ahp-chat:/…) holds a conversation: turns, tool calls,
// input requests, pending messages. Subscribing to a session also
// subscribes to its default chat, and wherever a method takes a chat, a
// session URI stands for that session's default chat.
//
// A Client owns exactly one goroutine, the reader, which is started by Dial
// and stopped by Close (or by the connection failing). The reader matches
// JSON-RPC responses to requests, answers server-initiated requests with
// "method not found", keeps the client-side state of every subscribed
// channel up to date, and queues every incoming notification for Next.
//
// Session, Chat and the WaitFor family give the confirmed state: the
// client applies the server's action envelopes (its own echoed actions
// included) with package reducer, in serverSeq order. Optimistic and
// OptimisticChat add write-ahead reconciliation on top: the client's own
// dispatched actions that the server has not echoed yet, replayed on a
// copy of the confirmed state; an echo confirms the head of that list and
// a rejection drops it. A Client ends with its connection; Reconnect
// resumes its state on a new connection with the `reconnect` command
// (replay or fresh snapshots), falling back to a fresh `initialize` when
// the host no longer knows the client.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// ErrClosed is returned by calls made after Close, and by Next once the
// queue is drained after Close.
var ErrClosed = errors.New("ahp client: connection closed")

// ErrEventQueueFull is the connection error after more than
// Options.MaxQueuedEvents events were waiting to be read with Next.
var ErrEventQueueFull = errors.New("ahp client: too many unread events (nobody is calling Next)")

// Options configures Dial. The zero value is usable.
type Options struct {
	// ClientID identifies this client in initialize and in the origin of its
	// actions. Empty means a random "ahp-client-<hex>" id.
	ClientID string
	// Header is sent with the WebSocket upgrade request (for example an
	// Authorization header when the token is not in the URL).
	Header http.Header
	// Dialer overrides websocket.DefaultDialer.
	Dialer *websocket.Dialer
	// WriteTimeout bounds every write whose context has no deadline.
	// Zero means 10 seconds.
	WriteTimeout time.Duration
	// MaxQueuedEvents bounds the events waiting for Next. When it is
	// exceeded the connection is closed with ErrEventQueueFull rather than
	// dropping events silently. Zero means no limit.
	MaxQueuedEvents int
	// Now is the clock handed to the reducers and used for the startedAt
	// of turns this client starts; nil means time.Now.
	Now func() time.Time
	// ClientInfo names this client in initialize; nil means
	// {"name": "ahp-bridge client"}.
	ClientInfo *wire.Implementation
}

// RPCError is a JSON-RPC error object returned by the server.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *RPCError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("AHP error %d: %s (data: %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("AHP error %d: %s", e.Code, e.Message)
}

// rpcMessage is any JSON-RPC 2.0 message; which fields are set tells what it is.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// pendingCall is a request waiting for its response.
type pendingCall struct {
	method string
	// onResult, when set, runs on the reader goroutine before the caller is
	// woken, so that state carried by a result (snapshots) is applied in
	// wire order relative to the envelopes that follow it.
	onResult func(result json.RawMessage) error
	done     chan callResult
}

type callResult struct {
	result json.RawMessage
	err    error
}

// Client is a connection to an AHP server. All methods are safe for
// concurrent use.
type Client struct {
	conn     *websocket.Conn
	clientID string
	opts     Options

	nextID    atomic.Int64
	clientSeq atomic.Int64

	wmu sync.Mutex // serialises writes: gorilla allows one writer at a time

	mu        sync.Mutex
	calls     map[int64]*pendingCall
	events    []Event
	changed   chan struct{} // closed and replaced whenever state or events change
	closed    bool          // no more input will be processed
	err       error         // why the connection ended
	closing   bool          // Close was called
	channels  map[string]*channelState
	echoes    map[int64]chan Event // clientSeq → waiter for its echo
	pending   map[string][]pendingAction
	owners    map[string]string // chat URI → its session, as far as known
	lastSeq   int64             // highest serverSeq seen on any channel
	readerEnd chan struct{}
	// refused is the host's answer to `reconnect` when Reconnect fell back
	// to initialize; written before the Client is handed out.
	refused error
}

// Dial opens a WebSocket connection to an AHP server and starts the
// reader. The token, if any, is part of url (`?tkn=…`) or opts.Header.
// Call Initialize next.
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	dialer := opts.Dialer
	if dialer == nil {
		dialer = websocket.DefaultDialer
	}
	conn, resp, err := dialer.DialContext(ctx, url, opts.Header)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("connecting to AHP server %s: %w (HTTP %s)", redactURL(url), err, resp.Status)
		}
		return nil, fmt.Errorf("connecting to AHP server %s: %w", redactURL(url), err)
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	id := opts.ClientID
	if id == "" {
		id = "ahp-client-" + randomHex(8)
	}
	c := &Client{
		conn:      conn,
		clientID:  id,
		opts:      opts,
		calls:     make(map[int64]*pendingCall),
		changed:   make(chan struct{}),
		channels:  make(map[string]*channelState),
		echoes:    make(map[int64]chan Event),
		pending:   make(map[string][]pendingAction),
		owners:    make(map[string]string),
		readerEnd: make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

// ClientID is the id this client sends in initialize and in action origins.
func (c *Client) ClientID() string { return c.clientID }

// Close closes the connection and waits for the reader goroutine to stop.
// Pending calls fail with ErrClosed; events already queued can still be read
// with Next. Close is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	already := c.closing
	c.closing = true
	c.mu.Unlock()
	if !already {
		c.wmu.Lock()
		_ = c.conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		c.wmu.Unlock()
		_ = c.conn.Close()
	}
	<-c.readerEnd
	return nil
}

// Done is closed when the connection has ended (Close, server close or a
// protocol error); Err then says why.
func (c *Client) Done() <-chan struct{} { return c.readerEnd }

// Err is nil while the connection is up, ErrClosed after Close, and the
// failure otherwise.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends a JSON-RPC request and waits for its response. params is
// marshalled as is; result, when non-nil, receives the decoded result. A
// JSON-RPC error is returned as *RPCError.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	raw, err := c.call(ctx, method, params, nil)
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("decoding the result of %s: %w", method, err)
	}
	return nil
}

// Notify sends a JSON-RPC notification (no response is expected).
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
	if err != nil {
		return fmt.Errorf("encoding %s notification: %w", method, err)
	}
	return c.write(ctx, b)
}

func (c *Client) call(ctx context.Context, method string, params any, onResult func(json.RawMessage) error) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
	if err != nil {
		return nil, fmt.Errorf("encoding %s request: %w", method, err)
	}
	pc := &pendingCall{method: method, onResult: onResult, done: make(chan callResult, 1)}
	c.mu.Lock()
	if c.closed {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.calls[id] = pc
	c.mu.Unlock()
	if err := c.write(ctx, b); err != nil {
		c.forget(id)
		return nil, err
	}
	select {
	case r := <-pc.done:
		if r.err != nil {
			return nil, r.err
		}
		return r.result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, fmt.Errorf("waiting for the response to %s: %w", method, ctx.Err())
	}
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// write sends one text frame. A failed write leaves a WebSocket unusable, so
// it ends the connection.
func (c *Client) write(ctx context.Context, b []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(c.opts.WriteTimeout)
	}
	c.wmu.Lock()
	_ = c.conn.SetWriteDeadline(deadline)
	err := c.conn.WriteMessage(websocket.TextMessage, b)
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return ErrClosed
		}
		err = fmt.Errorf("writing to the AHP server: %w", err)
		c.failLocked(err)
		c.mu.Unlock()
		_ = c.conn.Close() // unblocks the reader
		return err
	}
	return nil
}

// readLoop is the reader goroutine; it ends when the connection does.
func (c *Client) readLoop() {
	defer close(c.readerEnd)
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			c.mu.Lock()
			closing := c.closing
			c.mu.Unlock()
			switch {
			case closing:
				c.fail(ErrClosed)
			case websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway):
				c.fail(fmt.Errorf("the AHP server closed the connection: %w", err))
			default:
				c.fail(fmt.Errorf("reading from the AHP server: %w", err))
			}
			_ = c.conn.Close()
			return
		}
		if err := c.handleFrame(data); err != nil {
			c.fail(err)
			_ = c.conn.Close()
			return
		}
	}
}

// handleFrame processes one WebSocket text frame: a JSON-RPC message or,
// tolerated although AHP does not use them, a batch.
func (c *Client) handleFrame(data []byte) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil {
			return fmt.Errorf("the AHP server sent a malformed JSON-RPC batch: %w", err)
		}
		for _, m := range batch {
			if err := c.handleMessage(m); err != nil {
				return err
			}
		}
		return nil
	}
	return c.handleMessage(trimmed)
}

func (c *Client) handleMessage(data []byte) error {
	var m rpcMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("the AHP server sent a message that is not JSON-RPC: %w (%s)", err, truncate(data, 200))
	}
	if m.JSONRPC != "2.0" {
		return fmt.Errorf("the AHP server sent a message without jsonrpc \"2.0\": %s", truncate(data, 200))
	}
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	switch {
	case m.Method != "" && hasID:
		return c.answerServerRequest(m)
	case m.Method != "":
		return c.handleNotification(m.Method, m.Params)
	case hasID:
		c.handleResponse(m)
		return nil
	case m.Error != nil:
		// An error not tied to a request (the server could not parse or
		// identify something we sent). Surface it rather than drop it.
		c.pushEvent(Event{Err: m.Error})
		return nil
	default:
		return fmt.Errorf("the AHP server sent a JSON-RPC message with neither method nor id: %s", truncate(data, 200))
	}
}

func (c *Client) handleResponse(m rpcMessage) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return // not one of ours (we only send integer ids)
	}
	c.mu.Lock()
	pc := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if pc == nil {
		return // the caller gave up (context cancelled)
	}
	if m.Error != nil {
		pc.done <- callResult{err: m.Error}
		return
	}
	if m.Result == nil {
		pc.done <- callResult{err: fmt.Errorf("the AHP server answered %s with neither result nor error", pc.method)}
		return
	}
	if pc.onResult != nil {
		if err := pc.onResult(m.Result); err != nil {
			pc.done <- callResult{err: fmt.Errorf("applying the result of %s: %w", pc.method, err)}
			return
		}
	}
	pc.done <- callResult{result: m.Result}
}

// answerServerRequest refuses server-initiated requests (the resource*
// family): this client serves no resources.
func (c *Client) answerServerRequest(m rpcMessage) error {
	b, err := json.Marshal(rpcMessage{
		JSONRPC: "2.0",
		ID:      m.ID,
		Error:   &RPCError{Code: -32601, Message: "method not found: this client does not serve " + m.Method},
	})
	if err != nil {
		return fmt.Errorf("encoding the refusal of %s: %w", m.Method, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.WriteTimeout)
	defer cancel()
	if err := c.write(ctx, b); err != nil {
		return err
	}
	return nil
}

// pushEvent queues an event for Next.
func (c *Client) pushEvent(ev Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushEventLocked(ev)
}

func (c *Client) pushEventLocked(ev Event) {
	if c.closed {
		return
	}
	if c.opts.MaxQueuedEvents > 0 && len(c.events) >= c.opts.MaxQueuedEvents {
		c.failLocked(ErrEventQueueFull)
		_ = c.conn.Close()
		return
	}
	c.events = append(c.events, ev)
	c.broadcastLocked()
}

// broadcastLocked wakes everyone waiting in Next or WaitFor.
func (c *Client) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
}

// failLocked records why the connection ended and fails everything waiting.
func (c *Client) failLocked(err error) {
	if c.closed {
		return
	}
	c.closed = true
	c.err = err
	for id, pc := range c.calls {
		pc.done <- callResult{err: err}
		delete(c.calls, id)
	}
	c.broadcastLocked()
}

// Next returns the next incoming event (action envelope, protocol
// notification or stray error) in arrival order. It blocks until one
// arrives, ctx ends, or the connection has ended and the queue is empty (then
// it returns Err()).
func (c *Client) Next(ctx context.Context) (Event, error) {
	for {
		c.mu.Lock()
		if len(c.events) > 0 {
			ev := c.events[0]
			c.events[0] = Event{}
			c.events = c.events[1:]
			c.mu.Unlock()
			return ev, nil
		}
		if c.closed {
			err := c.err
			c.mu.Unlock()
			return Event{}, err
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
