// Package fakehost is a small scripted AHP 0.3.0 server over WebSocket for
// testing AHP clients (package client and the `ahp-bridge client` command)
// without the real host, bridge and agents.
//
// It speaks just enough AHP: initialize, subscribe, unsubscribe,
// createSession, disposeSession, listSessions, ping and dispatchAction. It
// keeps session and root state with package reducer, numbers envelopes with
// one serverSeq counter, echoes accepted client actions (rejecting the
// obviously invalid ones the spec names) and runs a Script for every turn.
// It is not a reference implementation: no replay, no backpressure, one
// JSON-RPC message per frame.
package fakehost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// Error is a JSON-RPC error a Method handler returns.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Options configure a Host. The zero value serves one agent, "echo", and
// runs DefaultScript.
type Options struct {
	// Agents are the root state's agents; nil means one "echo" agent.
	Agents []wire.AgentInfo
	// Script runs each turn on its own goroutine; nil means DefaultScript.
	Script func(ctx context.Context, t *Turn)
	// CreationError, when set, makes every created session fail with it.
	CreationError string
	// HoldCreation keeps created sessions in the "creating" lifecycle.
	HoldCreation bool
	// IgnoreActions drops every dispatched client action without an echo,
	// like a server that is slow to answer.
	IgnoreActions bool
	// Methods override or add request handlers by method name.
	Methods map[string]func(params json.RawMessage) (any, *Error)
	// Clock is handed to the reducers; nil means the wall clock.
	Clock reducer.Clock
}

// Host is a running fake AHP server.
type Host struct {
	opts Options
	srv  *httptest.Server

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // connection handlers and turn scripts

	mu        sync.Mutex
	seq       int64
	root      wire.RootState
	sessions  map[string]*session
	conns     map[*conn]bool
	responses []json.RawMessage // answers to Request, in arrival order
	errs      []error           // envelopes that could not be encoded
	changed   chan struct{}
}

type session struct {
	state   *wire.SessionState
	subs    map[*conn]bool
	actions []*wire.ActionEnvelope // accepted client actions, for Turn.Await
}

type conn struct {
	ws       *websocket.Conn
	wmu      sync.Mutex
	clientID string
	subs     map[string]bool
}

// New starts a Host on a loopback port. Close it when done.
func New(opts Options) *Host {
	if opts.Agents == nil {
		opts.Agents = []wire.AgentInfo{{Provider: "echo", DisplayName: "Echo", Description: "repeats the prompt", Models: []wire.SessionModelInfo{}}}
	}
	if opts.Script == nil {
		opts.Script = DefaultScript
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{
		opts:     opts,
		ctx:      ctx,
		cancel:   cancel,
		root:     wire.RootState{Agents: opts.Agents},
		sessions: map[string]*session{},
		conns:    map[*conn]bool{},
		changed:  make(chan struct{}),
	}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serveWS))
	return h
}

// URL is the ws:// URL of the host, with a dummy token.
func (h *Host) URL() string {
	return "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/?tkn=secret"
}

// Close disconnects every client, stops the scripts and the server.
func (h *Host) Close() {
	h.cancel()
	h.mu.Lock()
	for c := range h.conns {
		_ = c.ws.Close()
	}
	h.mu.Unlock()
	h.srv.Close()
	h.wg.Wait()
}

// Err reports actions a script emitted that could not be encoded.
func (h *Host) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return errors.Join(h.errs...)
}

// DropConnections closes every client connection abruptly.
func (h *Host) DropConnections() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		_ = c.ws.Close()
	}
}

// Session returns a copy of a session's state.
func (h *Host) Session(channel string) (*wire.SessionState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[channel]
	if s == nil {
		return nil, false
	}
	var out wire.SessionState
	b, err := json.Marshal(s.state)
	if err != nil || json.Unmarshal(b, &out) != nil {
		return nil, false
	}
	return &out, true
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (h *Host) serveWS(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("tkn") != "secret" {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, subs: map[string]bool{}}
	h.mu.Lock()
	if h.ctx.Err() != nil {
		h.mu.Unlock()
		_ = ws.Close()
		return
	}
	h.conns[c] = true
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()
	defer func() {
		h.mu.Lock()
		delete(h.conns, c)
		for _, s := range h.sessions {
			delete(s.subs, c)
		}
		h.mu.Unlock()
		_ = ws.Close()
	}()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		h.handle(c, data)
	}
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

func (h *Host) handle(c *conn, data []byte) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		c.send(message{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &Error{Code: wire.CodeParseError, Message: err.Error()}})
		return
	}
	if m.Method == "" { // a response to one of our requests
		h.mu.Lock()
		h.responses = append(h.responses, json.RawMessage(data))
		h.broadcastLocked()
		h.mu.Unlock()
		return
	}
	if len(m.ID) == 0 {
		h.notification(c, m)
		return
	}
	result, rpcErr := h.request(c, m)
	reply := message{JSONRPC: "2.0", ID: m.ID, Error: rpcErr}
	if rpcErr == nil {
		b, err := json.Marshal(result)
		if err != nil {
			reply.Error = &Error{Code: wire.CodeInternalError, Message: err.Error()}
		} else {
			reply.Result = b
		}
	}
	h.mu.Lock()
	c.send(reply)
	h.afterReplyLocked(c, m)
	h.mu.Unlock()
}

func invalid(err error) *Error {
	return &Error{Code: wire.CodeInvalidParams, Message: err.Error()}
}

func (h *Host) request(c *conn, m message) (any, *Error) {
	if f := h.opts.Methods[m.Method]; f != nil {
		return f(m.Params)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch m.Method {
	case "initialize":
		var p wire.InitializeParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		if !contains(p.ProtocolVersions, wire.ProtocolVersion) {
			return nil, &Error{Code: wire.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version",
				Data: json.RawMessage(`{"supportedVersions":["0.3.0"]}`)}
		}
		c.clientID = p.ClientID
		res := wire.InitializeResult{ProtocolVersion: wire.ProtocolVersion, ServerSeq: h.seq, Snapshots: []wire.Snapshot{}}
		for _, ch := range p.InitialSubscriptions {
			if snap, ok := h.snapshotLocked(ch); ok {
				c.subs[ch] = true
				if s := h.sessions[ch]; s != nil {
					s.subs[c] = true
				}
				res.Snapshots = append(res.Snapshots, snap)
			}
		}
		return res, nil
	case "ping":
		return struct{}{}, nil
	case "subscribe":
		var p wire.SubscribeParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		snap, ok := h.snapshotLocked(p.Channel)
		if !ok {
			return nil, &Error{Code: wire.CodeNotFound, Message: "no such channel: " + p.Channel}
		}
		c.subs[p.Channel] = true
		if s := h.sessions[p.Channel]; s != nil {
			s.subs[c] = true
		}
		return wire.SubscribeResult{Snapshot: &snap}, nil
	case "createSession":
		var p wire.CreateSessionParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		if h.sessions[p.Channel] != nil {
			return nil, &Error{Code: wire.CodeSessionAlreadyExists, Message: "session exists: " + p.Channel}
		}
		provider := h.opts.Agents[0].Provider
		if p.Provider != nil {
			provider = *p.Provider
		}
		if !h.hasAgent(provider) {
			return nil, &Error{Code: wire.CodeProviderNotFound, Message: "no such provider: " + provider}
		}
		h.sessions[p.Channel] = &session{
			state: &wire.SessionState{
				Summary: wire.SessionSummary{Resource: p.Channel, Provider: provider, Title: "New Session",
					Status: wire.SessionStatusIdle, WorkingDirectory: p.WorkingDirectory},
				Lifecycle: wire.SessionLifecycleCreating,
				Turns:     []wire.Turn{},
			},
			subs: map[*conn]bool{},
		}
		return struct{}{}, nil
	case "disposeSession":
		var p wire.DisposeSessionParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		if h.sessions[p.Channel] == nil {
			return nil, &Error{Code: wire.CodeSessionNotFound, Message: "no such session"}
		}
		delete(h.sessions, p.Channel)
		return struct{}{}, nil
	case "listSessions":
		res := wire.ListSessionsResult{Items: []wire.SessionSummary{}}
		for _, s := range h.sessions {
			res.Items = append(res.Items, s.state.Summary)
		}
		return res, nil
	}
	return nil, &Error{Code: wire.CodeMethodNotFound, Message: "method not found: " + m.Method}
}

// afterReplyLocked does what follows a reply on the wire: a created
// session becomes ready (or fails) right after createSession is answered.
func (h *Host) afterReplyLocked(c *conn, m message) {
	if m.Method != "createSession" || h.opts.Methods[m.Method] != nil {
		return
	}
	var p wire.CreateSessionParams
	if json.Unmarshal(m.Params, &p) != nil || h.sessions[p.Channel] == nil {
		return
	}
	if h.opts.HoldCreation {
		return
	}
	if h.opts.CreationError != "" {
		h.emitLocked(p.Channel, wire.Action(&wire.SessionCreationFailedAction{
			Error: wire.ErrorInfo{ErrorType: "agentError", Message: h.opts.CreationError}}), nil, "")
		return
	}
	h.emitLocked(p.Channel, wire.Action(&wire.SessionReadyAction{}), nil, "")
}

func (h *Host) hasAgent(provider string) bool {
	for _, a := range h.opts.Agents {
		if a.Provider == provider {
			return true
		}
	}
	return false
}

func (h *Host) snapshotLocked(channel string) (wire.Snapshot, bool) {
	if channel == "ahp-root://" {
		return wire.Snapshot{Resource: channel, State: wire.NewSnapshotState(&h.root), FromSeq: h.seq}, true
	}
	s := h.sessions[channel]
	if s == nil {
		return wire.Snapshot{}, false
	}
	return wire.Snapshot{Resource: channel, State: wire.NewSnapshotState(s.state), FromSeq: h.seq}, true
}

func (h *Host) notification(c *conn, m message) {
	switch m.Method {
	case "unsubscribe":
		var p wire.UnsubscribeParams
		if json.Unmarshal(m.Params, &p) == nil {
			h.mu.Lock()
			delete(c.subs, p.Channel)
			if s := h.sessions[p.Channel]; s != nil {
				delete(s.subs, c)
			}
			h.mu.Unlock()
		}
	case "dispatchAction":
		if h.opts.IgnoreActions {
			return
		}
		var p wire.DispatchActionParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			c.send(message{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: invalid(err)})
			return
		}
		h.clientAction(c, p)
	}
}

// clientAction validates, sequences and echoes a client action and starts
// the turn script for session/turnStarted.
func (h *Host) clientAction(c *conn, p wire.DispatchActionParams) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[p.Channel]
	if s == nil {
		return // the spec: silently ignore actions on unknown sessions
	}
	origin := &wire.ActionOrigin{ClientID: c.clientID, ClientSeq: p.ClientSeq}
	reason := validate(s.state, p.Action)
	env := h.emitLocked(p.Channel, p.Action, origin, reason)
	if reason != "" {
		return
	}
	s.actions = append(s.actions, env)
	if ts, ok := p.Action.Value.(*wire.SessionTurnStartedAction); ok {
		t := &Turn{h: h, Channel: p.Channel, ID: ts.TurnID, Text: ts.Message.Text, seen: len(s.actions)}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.opts.Script(h.ctx, t)
		}()
	}
}

// validate applies the few server-side checks the spec requires.
func validate(st *wire.SessionState, a wire.StateAction) string {
	switch v := a.Value.(type) {
	case *wire.SessionTurnStartedAction:
		if st.Lifecycle != wire.SessionLifecycleReady {
			return "session is not ready"
		}
		if st.ActiveTurn != nil {
			return "a turn is already active"
		}
	case *wire.SessionTurnCancelledAction:
		if st.ActiveTurn == nil || st.ActiveTurn.ID != v.TurnID {
			return "no active turn " + v.TurnID
		}
	case *wire.SessionToolCallApprovedAction:
		if !pendingConfirmation(st, v.ToolCallID) {
			return "tool call " + v.ToolCallID + " is not pending confirmation"
		}
	case *wire.SessionToolCallDeniedAction:
		if !pendingConfirmation(st, v.ToolCallID) {
			return "tool call " + v.ToolCallID + " is not pending confirmation"
		}
	case *wire.SessionInputCompletedAction:
		for _, r := range st.InputRequests {
			if r.ID == v.RequestID {
				return ""
			}
		}
		return "no input request " + v.RequestID
	}
	return ""
}

func pendingConfirmation(st *wire.SessionState, toolCallID string) bool {
	if st.ActiveTurn == nil {
		return false
	}
	for _, p := range st.ActiveTurn.ResponseParts {
		if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			if pc, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok && pc.ToolCallID == toolCallID {
				return true
			}
		}
	}
	return false
}

// emitLocked sequences one action on a channel: applies it (unless
// rejected) and sends the envelope to the channel's subscribers.
func (h *Host) emitLocked(channel string, a wire.StateAction, origin *wire.ActionOrigin, rejection string) *wire.ActionEnvelope {
	h.seq++
	env := &wire.ActionEnvelope{Channel: channel, Action: a, ServerSeq: h.seq, Origin: origin}
	if rejection != "" {
		env.RejectionReason = &rejection
	}
	var subs map[*conn]bool
	if channel == "ahp-root://" {
		if rejection == "" {
			reducer.Root(&h.root, a, h.opts.Clock)
		}
		subs = map[*conn]bool{}
		for c := range h.conns {
			if c.subs[channel] {
				subs[c] = true
			}
		}
	} else if s := h.sessions[channel]; s != nil {
		if rejection == "" {
			reducer.Session(s.state, a, h.opts.Clock)
		}
		subs = s.subs
	}
	params, err := json.Marshal(env)
	if err != nil {
		h.errs = append(h.errs, fmt.Errorf("encoding envelope %d: %w", h.seq, err))
		return env
	}
	frame := message{JSONRPC: "2.0", Method: "action", Params: params}
	for c := range subs {
		c.send(frame)
	}
	h.broadcastLocked()
	return env
}

// Emit sequences a server-originated action on a channel.
func (h *Host) Emit(channel string, action any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.emitLocked(channel, wire.Action(action), nil, "")
}

// Notify sends a protocol notification to every connection.
func (h *Host) Notify(method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("fakehost: encoding %s params: %w", method, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		c.send(message{JSONRPC: "2.0", Method: method, Params: b})
	}
	return nil
}

// SendRaw writes a frame verbatim to every connection (for malformed input).
func (h *Host) SendRaw(frame string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		c.wmu.Lock()
		_ = c.ws.WriteMessage(websocket.TextMessage, []byte(frame))
		c.wmu.Unlock()
	}
}

// Request sends a server-initiated request with the given id to every
// connection; WaitResponse collects the answers.
func (h *Host) Request(id int, method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("fakehost: encoding %s params: %w", method, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		c.send(message{JSONRPC: "2.0", ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: b})
	}
	return nil
}

// WaitResponse waits for the n-th (0-based) response to a Request.
func (h *Host) WaitResponse(ctx context.Context, n int) (json.RawMessage, error) {
	for {
		h.mu.Lock()
		if len(h.responses) > n {
			r := h.responses[n]
			h.mu.Unlock()
			return r, nil
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (h *Host) broadcastLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// send writes one message; write errors mean the client went away, which
// its reader notices. Every part of m is already-encoded JSON or plain
// data, so encoding cannot fail.
func (c *conn) send(m message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.WriteMessage(websocket.TextMessage, b)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ErrTurnOver is returned by Turn.Await once the turn is no longer active
// (cancelled by a client, or ended).
var ErrTurnOver = errors.New("fakehost: the turn is over")

// Turn is one running turn, handed to the Script.
type Turn struct {
	h       *Host
	Channel string
	ID      string
	Text    string
	seen    int // client actions already looked at by Await
	said    int // parts added by Say
}

// Emit sequences a server action in the turn's session.
func (t *Turn) Emit(action any) { t.h.Emit(t.Channel, action) }

// Await waits for the next accepted client action matching match. It fails
// with ErrTurnOver when the turn stops being the active one.
func (t *Turn) Await(ctx context.Context, match func(wire.StateAction) bool) (wire.StateAction, error) {
	for {
		t.h.mu.Lock()
		s := t.h.sessions[t.Channel]
		if s == nil {
			t.h.mu.Unlock()
			return wire.StateAction{}, ErrTurnOver
		}
		for t.seen < len(s.actions) {
			a := s.actions[t.seen].Action
			t.seen++
			if match(a) {
				t.h.mu.Unlock()
				return a, nil
			}
		}
		if s.state.ActiveTurn == nil || s.state.ActiveTurn.ID != t.ID {
			t.h.mu.Unlock()
			return wire.StateAction{}, ErrTurnOver
		}
		ch := t.h.changed
		t.h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return wire.StateAction{}, ctx.Err()
		}
	}
}
