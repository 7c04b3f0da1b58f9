// Package fakehost is a small scripted AHP 1.0.0 server over WebSocket for
// the tests of AHP clients (package ahp/client, internal/tui and the
// `ahp-bridge client` command), so they run without the real host, bridge
// and agents. Only tests import it.
//
// It speaks just enough AHP: initialize, reconnect (fresh snapshots for a
// client it has seen, an error for one it has not — like a restarted
// host), subscribe, unsubscribe, createSession, disposeSession,
// createChat, disposeChat, listSessions (paged), fetchTurns (there is
// never anything older to load), completions (none), ping and
// dispatchAction. Every session has a default chat; turns run on chat
// channels. It keeps root, session and chat state with package reducer,
// numbers envelopes with one serverSeq counter, echoes accepted client
// actions (rejecting the invalid ones the spec names), keeps the session's
// chat catalogue and inputNeeded in step with its chats, starts queued
// messages when a chat is idle, and runs a Script for every turn. It is
// not a reference implementation: no replay, no backpressure, one JSON-RPC
// message per frame.
package fakehost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Error is a JSON-RPC error a Method handler returns.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Options configure a Host. The zero value serves one agent, "echo" (which
// allows several chats per session), and runs DefaultScript.
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
	// Clock is handed to the reducers and stamps turns; nil means the wall
	// clock.
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
	turns     int // turns the host started from queued messages
	root      wire.RootState
	sessions  map[string]*session
	chats     map[string]*chat
	conns     map[*conn]bool
	known     map[string]bool   // client ids that initialized, for reconnect
	responses []json.RawMessage // answers to Request, in arrival order
	errs      []error           // envelopes that could not be encoded
	changed   chan struct{}
}

type session struct {
	uri       string
	state     *wire.SessionState
	createdAt string
}

type chat struct {
	uri     string
	session *session
	state   *wire.ChatState
	actions []*wire.ActionEnvelope // accepted client actions, for Turn.Await
	inputs  map[string]string      // inputNeeded entries raised → their JSON
	// settling is set while settleLocked runs, so that the actions it
	// sequences on the chat do not start it again.
	settling bool
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
		opts.Agents = []wire.AgentInfo{{Provider: "echo", DisplayName: "Echo", Description: "repeats the prompt",
			Models: []wire.SessionModelInfo{}, Capabilities: &wire.AgentCapabilities{MultipleChats: &wire.MultipleChatsCapability{}}}}
	}
	if opts.Script == nil {
		opts.Script = DefaultScript
	}
	if opts.Clock == nil {
		opts.Clock = reducer.SystemClock
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{
		opts:     opts,
		ctx:      ctx,
		cancel:   cancel,
		root:     wire.RootState{Agents: opts.Agents},
		sessions: map[string]*session{},
		chats:    map[string]*chat{},
		conns:    map[*conn]bool{},
		known:    map[string]bool{},
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
	return copyOf(s.state)
}

// Chat returns a copy of a chat's state.
func (h *Host) Chat(channel string) (*wire.ChatState, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.chats[channel]
	if ch == nil {
		return nil, false
	}
	return copyOf(ch.state)
}

func copyOf[T any](v *T) (*T, bool) {
	var out T
	b, err := json.Marshal(v)
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
	if rpcErr == nil {
		h.afterReplyLocked(m)
	}
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
	case wire.MethodInitialize:
		var p wire.InitializeParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		if !slices.Contains(p.ProtocolVersions, wire.ProtocolVersion) {
			return nil, &Error{Code: wire.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version",
				Data: json.RawMessage(`{"supportedVersions":["` + wire.ProtocolVersion + `"]}`)}
		}
		c.clientID = p.ClientID
		h.known[p.ClientID] = true
		return wire.InitializeResult{ProtocolVersion: wire.ProtocolVersion, ServerSeq: h.seq, Snapshots: h.subscribeAllLocked(c, p.InitialSubscriptions)}, nil
	case wire.MethodReconnect:
		var p wire.ReconnectParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		if !h.known[p.ClientID] {
			return nil, &Error{Code: wire.CodeInvalidRequest, Message: fmt.Sprintf("client %s is not known to this server (it may have restarted): send initialize", p.ClientID)}
		}
		c.clientID = p.ClientID
		return wire.ReconnectSnapshotResult{Type: wire.ReconnectResultTypeSnapshot, Snapshots: h.subscribeAllLocked(c, p.Subscriptions)}, nil
	case wire.MethodPing:
		return nil, nil
	case wire.MethodSubscribe:
		var p wire.SubscribeParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		snap, ok := h.snapshotLocked(p.Channel)
		if !ok {
			return nil, &Error{Code: wire.CodeNotFound, Message: "no such channel: " + p.Channel}
		}
		c.subs[p.Channel] = true
		return wire.SubscribeResult{Snapshot: &snap}, nil
	case wire.MethodCreateSession:
		var p wire.CreateSessionParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		return nil, h.createSessionLocked(c, p)
	case wire.MethodDisposeSession:
		var p wire.DisposeSessionParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		s := h.sessions[p.Channel]
		if s == nil {
			return nil, &Error{Code: wire.CodeSessionNotFound, Message: "no such session: " + p.Channel}
		}
		for _, cs := range s.state.Chats {
			delete(h.chats, cs.Resource)
		}
		delete(h.sessions, p.Channel)
		h.notifyRootLocked(wire.MethodRootSessionRemoved, wire.SessionRemovedParams{Channel: wire.RootChannel, Session: p.Channel})
		return nil, nil
	case wire.MethodCreateChat:
		var p wire.CreateChatParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		return nil, h.createChatLocked(p)
	case wire.MethodDisposeChat:
		var p wire.DisposeChatParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		ch := h.chats[p.Channel]
		if ch == nil {
			return nil, &Error{Code: wire.CodeNotFound, Message: "no such chat: " + p.Channel}
		}
		if d := ch.session.state.DefaultChat; d != nil && *d == p.Channel {
			return nil, &Error{Code: wire.CodeInvalidParams, Message: "a session's default chat goes with its session"}
		}
		delete(h.chats, p.Channel)
		h.emitLocked(ch.session.uri, wire.Action(&wire.SessionChatRemovedAction{Chat: p.Channel}), nil, "")
		return nil, nil
	case wire.MethodListSessions:
		var p wire.ListSessionsParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		return h.listSessionsLocked(p)
	case wire.MethodFetchTurns:
		var p wire.FetchTurnsParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return nil, invalid(err)
		}
		if h.chats[p.Channel] == nil {
			return nil, &Error{Code: wire.CodeNotFound, Message: "no such chat: " + p.Channel}
		}
		if p.Cursor != nil {
			return nil, &Error{Code: wire.CodeInvalidParams, Message: "this server gave out no turns cursor"}
		}
		return wire.FetchTurnsResult{}, nil
	case wire.MethodCompletions:
		return wire.CompletionsResult{Items: []wire.CompletionItem{}}, nil
	}
	return nil, &Error{Code: wire.CodeMethodNotFound, Message: "method not found: " + m.Method}
}

// subscribeAllLocked subscribes c to every known channel of uris and
// returns their snapshots (initialize, reconnect).
func (h *Host) subscribeAllLocked(c *conn, uris []string) []wire.Snapshot {
	snaps := []wire.Snapshot{}
	for _, ch := range uris {
		if snap, ok := h.snapshotLocked(ch); ok {
			c.subs[ch] = true
			snaps = append(snaps, snap)
		}
	}
	return snaps
}

func (h *Host) createSessionLocked(c *conn, p wire.CreateSessionParams) *Error {
	if !strings.Contains(p.Channel, ":/") || wire.IsChatURI(p.Channel) || wire.IsRootChannel(p.Channel) {
		return &Error{Code: wire.CodeInvalidParams, Message: "channel must be a session URI, got " + p.Channel}
	}
	if h.sessions[p.Channel] != nil {
		return &Error{Code: wire.CodeSessionAlreadyExists, Message: "session exists: " + p.Channel}
	}
	provider := h.opts.Agents[0].Provider
	if p.Provider != nil {
		provider = *p.Provider
	}
	if h.agent(provider) == nil {
		return &Error{Code: wire.CodeProviderNotFound, Message: "no such provider: " + provider}
	}
	if p.ActiveClient != nil && p.ActiveClient.ClientID != c.clientID {
		return &Error{Code: wire.CodeInvalidParams, Message: "activeClient.clientId must be this connection's clientId"}
	}
	now := reducer.FormatTime(h.opts.Clock())
	// The default chat takes VS Code's derived name, as ahp-bridge's host
	// names it.
	chatURI := wire.DefaultChatURI(p.Channel)
	s := &session{uri: p.Channel, createdAt: now, state: &wire.SessionState{
		Provider:           provider,
		Title:              "",
		Status:             wire.SessionStatusIdle,
		WorkingDirectories: p.WorkingDirectories,
		Lifecycle:          wire.SessionLifecycleCreating,
		ActiveClients:      []wire.SessionActiveClient{},
		DefaultChat:        &chatURI,
	}}
	if p.ActiveClient != nil {
		s.state.ActiveClients = append(s.state.ActiveClients, *p.ActiveClient)
	}
	ch := h.newChatLocked(s, chatURI, nil)
	s.state.Chats = []wire.ChatSummary{summaryOf(ch.state)}
	h.sessions[p.Channel] = s
	h.notifyRootLocked(wire.MethodRootSessionAdded, wire.SessionAddedParams{Channel: wire.RootChannel, Summary: h.sessionSummaryLocked(s)})
	return nil
}

func (h *Host) newChatLocked(s *session, uri string, dirs []string) *chat {
	ch := &chat{uri: uri, session: s, state: &wire.ChatState{
		Resource:           uri,
		Title:              "",
		Status:             wire.SessionStatusIdle,
		ModifiedAt:         reducer.FormatTime(h.opts.Clock()),
		Origin:             &wire.ChatOrigin{Value: &wire.ChatOriginUser{Kind: wire.ChatOriginKindUser}},
		WorkingDirectories: dirs,
		Turns:              []wire.Turn{},
	}}
	h.chats[uri] = ch
	return ch
}

func (h *Host) createChatLocked(p wire.CreateChatParams) *Error {
	s := h.sessions[p.Channel]
	if s == nil {
		return &Error{Code: wire.CodeSessionNotFound, Message: "no such session: " + p.Channel}
	}
	if a := h.agent(s.state.Provider); a == nil || a.Capabilities == nil || a.Capabilities.MultipleChats == nil {
		return &Error{Code: wire.CodeMethodNotFound, Message: "the agent runs one chat per session"}
	}
	if !wire.ValidChatURI(p.Chat) {
		return &Error{Code: wire.CodeInvalidParams, Message: "chat must be an ahp-chat: URI, got " + p.Chat}
	}
	if h.chats[p.Chat] != nil {
		return &Error{Code: wire.CodeAlreadyExists, Message: "chat exists: " + p.Chat}
	}
	if p.Source != nil {
		return &Error{Code: wire.CodeInvalidParams, Message: "this server neither forks chats nor starts side chats"}
	}
	ch := h.newChatLocked(s, p.Chat, p.WorkingDirectories)
	h.emitLocked(s.uri, wire.Action(&wire.SessionChatAddedAction{Summary: summaryOf(ch.state)}), nil, "")
	if p.InitialMessage != nil {
		h.startTurnLocked(ch, h.nextTurnID(), *p.InitialMessage, nil)
	}
	return nil
}

func (h *Host) listSessionsLocked(p wire.ListSessionsParams) (any, *Error) {
	uris := make([]string, 0, len(h.sessions))
	for uri := range h.sessions {
		uris = append(uris, uri)
	}
	sort.Strings(uris)
	if p.Cursor != nil {
		i := slices.Index(uris, *p.Cursor)
		if i < 0 {
			return nil, &Error{Code: wire.CodeInvalidParams, Message: "unknown cursor"}
		}
		uris = uris[i+1:]
	}
	res := wire.ListSessionsResult{Items: []wire.SessionSummary{}}
	if p.Limit != nil && int64(len(uris)) > *p.Limit {
		uris = uris[:*p.Limit]
		res.NextCursor = wire.Ptr(uris[len(uris)-1])
	}
	for _, uri := range uris {
		res.Items = append(res.Items, h.sessionSummaryLocked(h.sessions[uri]))
	}
	return res, nil
}

// afterReplyLocked does what follows a reply on the wire: a created
// session becomes ready (or fails) right after createSession is answered.
func (h *Host) afterReplyLocked(m message) {
	if m.Method != wire.MethodCreateSession || h.opts.Methods[m.Method] != nil {
		return
	}
	var p wire.CreateSessionParams
	if json.Unmarshal(m.Params, &p) != nil || h.sessions[p.Channel] == nil || h.opts.HoldCreation {
		return
	}
	if h.opts.CreationError != "" {
		h.emitLocked(p.Channel, wire.Action(&wire.SessionCreationFailedAction{
			Error: wire.ErrorInfo{ErrorType: "agentError", Message: h.opts.CreationError}}), nil, "")
		return
	}
	h.emitLocked(p.Channel, wire.Action(&wire.SessionReadyAction{}), nil, "")
}

func (h *Host) agent(provider string) *wire.AgentInfo {
	for i, a := range h.opts.Agents {
		if a.Provider == provider {
			return &h.opts.Agents[i]
		}
	}
	return nil
}

func (h *Host) sessionSummaryLocked(s *session) wire.SessionSummary {
	return wire.SessionSummary{Resource: s.uri, Provider: s.state.Provider, Title: s.state.Title, Status: s.state.Status,
		WorkingDirectories: s.state.WorkingDirectories, CreatedAt: s.createdAt, ModifiedAt: s.createdAt}
}

func (h *Host) snapshotLocked(channel string) (wire.Snapshot, bool) {
	var state any
	switch {
	case channel == wire.RootChannel:
		state = &h.root
	case h.sessions[channel] != nil:
		state = h.sessions[channel].state
	case h.chats[channel] != nil:
		state = h.chats[channel].state
	default:
		return wire.Snapshot{}, false
	}
	return wire.Snapshot{Resource: channel, State: wire.NewSnapshotState(state), FromSeq: h.seq}, true
}

func (h *Host) notification(c *conn, m message) {
	switch m.Method {
	case wire.MethodUnsubscribe:
		var p wire.UnsubscribeParams
		if json.Unmarshal(m.Params, &p) == nil {
			h.mu.Lock()
			delete(c.subs, p.Channel)
			h.mu.Unlock()
		}
	case wire.MethodDispatchAction:
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
// the turn script for chat/turnStarted.
func (h *Host) clientAction(c *conn, p wire.DispatchActionParams) {
	h.mu.Lock()
	defer h.mu.Unlock()
	origin := &wire.ActionOrigin{ClientID: c.clientID, ClientSeq: p.ClientSeq}
	s, ch := h.sessions[p.Channel], h.chats[p.Channel]
	if s == nil && ch == nil {
		return // the spec: silently ignore actions on unknown channels
	}
	reason := ""
	switch _, unknown := p.Action.Value.(json.RawMessage); {
	case unknown || p.Action.Type() == "":
		reason = "unknown action type"
	case !wire.ClientDispatchable(p.Action.Type()):
		reason = p.Action.Type() + " is a server-only action"
	case s != nil:
		reason = validateSession(s.state, p.Action, c.clientID)
	default:
		reason = validateChat(ch, p.Action)
	}
	if reason != "" {
		h.emitLocked(p.Channel, p.Action, origin, reason)
		return
	}
	if ch == nil {
		h.emitLocked(p.Channel, p.Action, origin, "")
		return
	}
	h.stampLocked(ch, p.Action)
	if ts, ok := p.Action.Value.(*wire.ChatTurnStartedAction); ok {
		h.startTurnLocked(ch, ts.TurnID, ts.Message, origin, p.Action)
		return
	}
	env := h.emitLocked(p.Channel, p.Action, origin, "")
	ch.actions = append(ch.actions, env)
	h.broadcastLocked()
}

// stampLocked fills in what the client may leave to the server: a turn's
// startedAt, a cancelled turn's duration.
func (h *Host) stampLocked(ch *chat, a wire.StateAction) {
	switch x := a.Value.(type) {
	case *wire.ChatTurnStartedAction:
		if x.StartedAt == "" {
			x.StartedAt = reducer.FormatTime(h.opts.Clock())
		}
	case *wire.ChatTurnCancelledAction:
		x.Duration = h.durationLocked(ch)
	}
}

// durationLocked is how long the chat's active turn has run, in ms.
func (h *Host) durationLocked(ch *chat) int64 {
	if t := ch.state.ActiveTurn; t != nil {
		if started, ok := reducer.ParseTime(t.StartedAt); ok {
			return max(0, h.opts.Clock()-started)
		}
	}
	return 0
}

func (h *Host) nextTurnID() string {
	h.turns++
	return fmt.Sprintf("host-turn-%d", h.turns)
}

// startTurnLocked sequences chat/turnStarted and runs the script for the
// turn. action, when given, is the client's own (echoed as sent).
func (h *Host) startTurnLocked(ch *chat, turnID string, msg wire.Message, origin *wire.ActionOrigin, action ...wire.StateAction) {
	a := wire.Action(&wire.ChatTurnStartedAction{TurnID: turnID, StartedAt: reducer.FormatTime(h.opts.Clock()), Message: msg})
	if len(action) > 0 {
		a = action[0]
	}
	env := h.emitLocked(ch.uri, a, origin, "")
	if origin != nil {
		ch.actions = append(ch.actions, env)
	}
	t := &Turn{h: h, Session: ch.session.uri, Chat: ch.uri, ID: turnID, Text: msg.Text, seen: len(ch.actions)}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.opts.Script(h.ctx, t)
	}()
}

// validateSession applies the checks the spec names for client actions on
// a session channel.
func validateSession(st *wire.SessionState, a wire.StateAction, clientID string) string {
	switch x := a.Value.(type) {
	case *wire.SessionActiveClientSetAction:
		if x.ActiveClient.ClientID != clientID {
			return "a client can only make itself an active client"
		}
	case *wire.SessionActiveClientRemovedAction:
		if x.ClientID != clientID {
			return "a client can only remove itself from the active clients"
		}
	}
	return ""
}

// validateChat applies the checks the spec names for client actions on a
// chat channel.
func validateChat(ch *chat, a wire.StateAction) string {
	st := ch.state
	switch x := a.Value.(type) {
	case *wire.ChatTurnStartedAction:
		if ch.session.state.Lifecycle != wire.SessionLifecycleReady {
			return "session is not ready"
		}
		if st.ActiveTurn != nil {
			return "a turn is already active"
		}
		if x.TurnID == "" {
			return "turnId must not be empty"
		}
		if x.Message.Origin.Kind != wire.MessageKindUser {
			return "clients may only send user messages"
		}
	case *wire.ChatTurnCancelledAction:
		if st.ActiveTurn == nil || st.ActiveTurn.ID != x.TurnID {
			return "no active turn " + x.TurnID
		}
	case *wire.ChatToolCallApprovedAction:
		return requireStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusPendingConfirmation)
	case *wire.ChatToolCallDeniedAction:
		return requireStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusPendingConfirmation)
	case *wire.ChatToolCallResultConfirmedAction:
		return requireStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusPendingResultConfirmation)
	case *wire.ChatInputCompletedAction:
		if p, ok := reducer.FindInputRequest(st, x.RequestID); !ok || p.Response != nil {
			return "no open input request " + x.RequestID
		}
	case *wire.ChatInputAnswerChangedAction:
		if p, ok := reducer.FindInputRequest(st, x.RequestID); !ok || p.Response != nil {
			return "no open input request " + x.RequestID
		}
	case *wire.ChatPendingMessageSetAction:
		if x.ID == "" {
			return "a pending message needs an id"
		}
		if x.Kind != wire.PendingMessageKindQueued && x.Kind != wire.PendingMessageKindSteering {
			return "unknown pending message kind " + string(x.Kind)
		}
	case *wire.ChatPendingMessageRemovedAction:
		if !hasPending(st, x.Kind, x.ID) {
			return fmt.Sprintf("no %s pending message %s", x.Kind, x.ID)
		}
	}
	return ""
}

func requireStatus(st *wire.ChatState, turnID, toolCallID string, want wire.ToolCallStatus) string {
	if st.ActiveTurn == nil || st.ActiveTurn.ID != turnID {
		return "turn " + turnID + " is not the active turn"
	}
	_, status, ok := reducer.FindToolCall(st, turnID, toolCallID)
	if !ok {
		return "no tool call " + toolCallID
	}
	if status != want {
		return fmt.Sprintf("tool call %s is %s, not %s", toolCallID, status, want)
	}
	return ""
}

func hasPending(st *wire.ChatState, kind wire.PendingMessageKind, id string) bool {
	if kind == wire.PendingMessageKindSteering {
		return st.SteeringMessage != nil && st.SteeringMessage.ID == id
	}
	return slices.ContainsFunc(st.QueuedMessages, func(q wire.PendingMessage) bool { return q.ID == id })
}

// emitLocked sequences one action on a channel: applies it (unless
// rejected), sends the envelope to the channel's subscribers (a rejection
// to its sender only) and, for a chat, brings its session up to date.
func (h *Host) emitLocked(channel string, a wire.StateAction, origin *wire.ActionOrigin, rejection string) *wire.ActionEnvelope {
	env := &wire.ActionEnvelope{Channel: channel, Action: a, ServerSeq: h.seq, Origin: origin}
	if rejection != "" {
		env.RejectionReason = &rejection
	} else {
		h.seq++
		env.ServerSeq = h.seq
	}
	var ch *chat
	if rejection == "" {
		switch {
		case channel == wire.RootChannel:
			reducer.Root(&h.root, a, h.opts.Clock)
		case h.sessions[channel] != nil:
			reducer.Session(h.sessions[channel].state, a, h.opts.Clock)
		case h.chats[channel] != nil:
			ch = h.chats[channel]
			reducer.Chat(ch.state, a, h.opts.Clock)
		}
	}
	params, err := wire.Marshal(env)
	if err != nil {
		h.errs = append(h.errs, fmt.Errorf("encoding envelope %d: %w", env.ServerSeq, err))
		return env
	}
	frame := message{JSONRPC: "2.0", Method: wire.MethodAction, Params: params}
	for c := range h.conns {
		if rejection != "" && origin != nil && c.clientID == origin.ClientID || rejection == "" && c.subs[channel] {
			c.send(frame)
		}
	}
	if ch != nil {
		h.settleLocked(ch)
	}
	h.broadcastLocked()
	return env
}

// settleLocked does what a chat's new state calls for: mirror what it
// waits for into the session's inputNeeded, its summary into the session's
// catalogue, and start the first queued message once it is idle.
func (h *Host) settleLocked(ch *chat) {
	if ch.settling || h.chats[ch.uri] != ch { // busy, or disposed
		return
	}
	ch.settling = true
	defer func() { ch.settling = false }()
	for {
		h.mirrorLocked(ch)
		s := ch.session
		if ch.state.ActiveTurn != nil || len(ch.state.QueuedMessages) == 0 || s.state.Lifecycle != wire.SessionLifecycleReady {
			return
		}
		next := ch.state.QueuedMessages[0]
		h.emitLocked(ch.uri, wire.Action(&wire.ChatPendingMessageRemovedAction{Kind: wire.PendingMessageKindQueued, ID: next.ID}), nil, "")
		id := h.nextTurnID()
		h.startTurnLocked(ch, id, next.Message, nil, wire.Action(&wire.ChatTurnStartedAction{
			TurnID: id, StartedAt: reducer.FormatTime(h.opts.Clock()), Message: next.Message, QueuedMessageID: wire.Ptr(next.ID)}))
	}
}

// mirrorLocked brings the session's inputNeeded and chat catalogue in
// step with a chat.
func (h *Host) mirrorLocked(ch *chat) {
	s := ch.session
	cur := chatInputs(ch.uri, ch.state)
	for _, e := range cur {
		if ch.inputs[e.id] == e.enc {
			continue
		}
		if ch.inputs == nil {
			ch.inputs = map[string]string{}
		}
		ch.inputs[e.id] = e.enc
		h.emitLocked(s.uri, wire.Action(&wire.SessionInputNeededSetAction{Request: e.req}), nil, "")
	}
	var gone []string
	for id := range ch.inputs {
		if !slices.ContainsFunc(cur, func(e inputEntry) bool { return e.id == id }) {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		delete(ch.inputs, id)
		h.emitLocked(s.uri, wire.Action(&wire.SessionInputNeededRemovedAction{ID: id}), nil, "")
	}
	i := slices.IndexFunc(s.state.Chats, func(c wire.ChatSummary) bool { return c.Resource == ch.uri })
	if i < 0 {
		return
	}
	old, now := s.state.Chats[i], summaryOf(ch.state)
	var changes wire.PartialChatSummary
	changed := false
	if old.Title != now.Title {
		changes.Title, changed = &now.Title, true
	}
	if old.Status != now.Status {
		changes.Status, changed = &now.Status, true
	}
	if deref(old.Activity) != deref(now.Activity) {
		changes.Activity, changed = wire.Ptr(deref(now.Activity)), true
	}
	if changed {
		h.emitLocked(s.uri, wire.Action(&wire.SessionChatUpdatedAction{Chat: ch.uri, Changes: changes}), nil, "")
	}
}

// inputEntry is one inputNeeded entry a chat raises.
type inputEntry struct {
	id  string
	req wire.SessionInputRequest
	enc string
}

// chatInputs lists what a chat waits for: tool calls awaiting a
// confirmation and unanswered input requests of its active turn.
func chatInputs(chat string, st *wire.ChatState) []inputEntry {
	t := st.ActiveTurn
	if t == nil {
		return nil
	}
	var out []inputEntry
	add := func(id string, v any) {
		req := wire.NewSessionInputRequest(v)
		b, err := json.Marshal(req)
		if err == nil {
			out = append(out, inputEntry{id: id, req: req, enc: string(b)})
		}
	}
	for _, p := range t.ResponseParts {
		switch part := p.Value.(type) {
		case *wire.ToolCallResponsePart:
			tc := part.ToolCall
			id := chat + "#tool/" + tc.ToolCallID()
			switch v := tc.Value.(type) {
			case *wire.ToolCallPendingConfirmationState:
				add(id, &wire.SessionToolConfirmationRequest{ID: id, Chat: chat, TurnID: t.ID, ToolCall: wire.NewToolCallConfirmationState(v)})
			case *wire.ToolCallPendingResultConfirmationState:
				add(id, &wire.SessionToolConfirmationRequest{ID: id, Chat: chat, TurnID: t.ID, ToolCall: wire.NewToolCallConfirmationState(v)})
			}
		case *wire.InputRequestResponsePart:
			if part.Response == nil {
				id := chat + "#input/" + part.Request.ID
				add(id, &wire.SessionChatInputRequest{ID: id, Chat: chat, Request: part.Request})
			}
		}
	}
	return out
}

func summaryOf(st *wire.ChatState) wire.ChatSummary {
	return wire.ChatSummary{Resource: st.Resource, Title: st.Title, Status: st.Status, Activity: st.Activity,
		ModifiedAt: st.ModifiedAt, Origin: st.Origin, Interactivity: st.Interactivity, WorkingDirectories: st.WorkingDirectories}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Emit sequences a server-originated action on a channel.
func (h *Host) Emit(channel string, action any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.emitLocked(channel, wire.Action(action), nil, "")
}

// notifyRootLocked sends a root notification to the root's subscribers.
func (h *Host) notifyRootLocked(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		h.errs = append(h.errs, fmt.Errorf("encoding %s: %w", method, err))
		return
	}
	for c := range h.conns {
		if c.subs[wire.RootChannel] {
			c.send(message{JSONRPC: "2.0", Method: method, Params: b})
		}
	}
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

// ErrTurnOver is returned by Turn.Await once the turn is no longer active
// (cancelled by a client, or ended).
var ErrTurnOver = errors.New("fakehost: the turn is over")

// Turn is one running turn, handed to the Script.
type Turn struct {
	h *Host
	// Session is the session the turn runs in.
	Session string
	// Chat is the chat channel the turn runs on.
	Chat string
	// ID is the turn's id.
	ID string
	// Text is the user's message.
	Text string
	seen int // client actions already looked at by Await
	said int // parts added by Say
}

// Emit sequences a server action in the turn's chat.
func (t *Turn) Emit(action any) { t.h.Emit(t.Chat, action) }

// Duration is how long the turn has run so far, in milliseconds (for the
// duration the actions that end it carry).
func (t *Turn) Duration() int64 {
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	if ch := t.h.chats[t.Chat]; ch != nil {
		return t.h.durationLocked(ch)
	}
	return 0
}

// Complete ends the turn (chat/turnComplete).
func (t *Turn) Complete() {
	t.Emit(&wire.ChatTurnCompleteAction{TurnID: t.ID, Duration: t.Duration()})
}

// Await waits for the next accepted client action on the turn's chat
// matching match. It fails with ErrTurnOver when the turn stops being the
// active one.
func (t *Turn) Await(ctx context.Context, match func(wire.StateAction) bool) (wire.StateAction, error) {
	for {
		t.h.mu.Lock()
		ch := t.h.chats[t.Chat]
		if ch == nil {
			t.h.mu.Unlock()
			return wire.StateAction{}, ErrTurnOver
		}
		for t.seen < len(ch.actions) {
			a := ch.actions[t.seen].Action
			t.seen++
			if match(a) {
				t.h.mu.Unlock()
				return a, nil
			}
		}
		if ch.state.ActiveTurn == nil || ch.state.ActiveTurn.ID != t.ID {
			t.h.mu.Unlock()
			return wire.StateAction{}, ErrTurnOver
		}
		wake := t.h.changed
		t.h.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return wire.StateAction{}, ctx.Err()
		}
	}
}
