// Package vscodeclient is a test client that speaks AHP the way VS Code's
// Agents window and editor-window chat do: the same requests and
// notifications, with the same parameters, in the same order, as VS Code's
// newest AgentHostProtocolClient (src/vs/platform/agentHost/common and
// browser/agentHostProtocolClient.ts) and its session handler send them.
// It is raw JSON-RPC over a WebSocket with the token in the tkn query
// parameter, as VS Code's WebSocket transport connects.
//
// It keeps the state of what it subscribed from snapshots and actions with
// the host's own reducers (ahp/reducer): VS Code offers 0.9.0 first, and
// the 0.9 dialect is the 1.0.0 state model without 1.0.0's additions. It
// also records what VS Code would trip over: error frames that answer no
// request (a notification answered with an error), rejected actions, and
// markdown that did not only grow.
//
// The end-to-end test of this package runs it against the real bridge.
package vscodeclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// OfferedVersions is what VS Code's newest client offers in initialize,
// most preferred first: its SUPPORTED_PROTOCOL_VERSIONS without 0.8.0
// (AHP 0.9 changed the automation catalogue's wire shape, so VS Code does
// not negotiate 0.8).
var OfferedVersions = []string{"0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}

// AHP error codes VS Code reacts to.
const (
	CodeNotFound       = -32008 // reconnect: the host forgot this client
	CodeMethodNotFound = -32601
)

// Implementation is the clientInfo VS Code sends.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// EditorWindow is the clientInfo of VS Code's editor-window chat, the
// client whose handler renames on the chat channel.
var EditorWindow = Implementation{Name: "vscode-editor-window", Title: "Visual Studio Code"}

// AgentsWindow is the clientInfo of VS Code's Agents window.
var AgentsWindow = Implementation{Name: "vscode-agents-window", Title: "Visual Studio Code Agents Window"}

// Options configure a Client.
type Options struct {
	// Address is what the user pastes into "Agents: Add Remote Agent
	// Host…": ws://host:port[/path][?tkn=TOKEN]. A tkn parameter in it is
	// taken as the token, as VS Code's address parser does.
	Address string
	// Token is the connection token, when not in Address.
	Token string
	// ClientID is the client's identity, kept across reconnects (a new
	// UUID when empty).
	ClientID string
	// ClientInfo is sent in initialize (EditorWindow when empty).
	ClientInfo Implementation
	// Versions are offered in initialize (OfferedVersions when nil).
	Versions []string
	// SessionURIs chooses how created sessions are named.
	SessionURIs SessionURIs
	// Now is the clock of startedAt and of the reducers (time.Now if nil).
	Now func() time.Time
}

// RPCError is a JSON-RPC error the host answered.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// ErrorCode returns the JSON-RPC code of err, or 0 when err is not an
// answer of the host.
func ErrorCode(err error) int {
	var e *RPCError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// ErrConnectionLost is returned for requests whose connection closed
// before their answer.
var ErrConnectionLost = errors.New("the connection to the agent host closed")

// Snapshot is one channel's state as the host sent it.
type Snapshot struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

// InitializeResult is what VS Code reads of the initialize answer.
type InitializeResult struct {
	ProtocolVersion  string          `json:"protocolVersion"`
	ServerSeq        int64           `json:"serverSeq"`
	Snapshots        []Snapshot      `json:"snapshots"`
	DefaultDirectory json.RawMessage `json:"defaultDirectory,omitempty"`
	Meta             map[string]any  `json:"_meta,omitempty"`
}

// Notification is a JSON-RPC notification the host sent.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Client is one VS Code window's connection to an agent host.
type Client struct {
	opts     Options
	url      string
	clientID string

	wmu sync.Mutex // serialises writes on conn

	mu         sync.Mutex
	conn       *websocket.Conn
	connDone   chan struct{} // closed when conn's reader stops
	nextID     int64
	nextSeq    int64
	pending    map[int64]pendingCall
	changed    chan struct{} // closed and replaced whenever something arrives
	init       *InitializeResult
	serverSeq  int64
	root       *wire.RootState
	sessions   map[string]*wire.SessionState
	chats      map[string]*wire.ChatState
	subs       []string // subscribed channels, in order; the root first
	sent       []json.RawMessage
	notes      []Notification
	stray      []string // error frames that answer no request of ours
	rejected   []string // rejected actions of ours
	regressed  []string // markdown that did not only grow
	text       map[string]string
	seenActive map[string]bool // chat + " " + turn id: seen as activeTurn
	readErr    error
}

// Dial opens the WebSocket VS Code would open for opts.Address. It sends
// nothing: call Connect (or Reconnect).
func Dial(ctx context.Context, opts Options) (*Client, error) {
	u, err := connectURL(opts.Address, opts.Token)
	if err != nil {
		return nil, err
	}
	if opts.ClientID == "" {
		opts.ClientID = client.NewUUID()
	}
	if opts.ClientInfo.Name == "" {
		opts.ClientInfo = EditorWindow
	}
	if opts.Versions == nil {
		opts.Versions = OfferedVersions
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Client{
		opts: opts, url: u, clientID: opts.ClientID,
		pending:    map[int64]pendingCall{},
		changed:    make(chan struct{}),
		sessions:   map[string]*wire.SessionState{},
		chats:      map[string]*wire.ChatState{},
		text:       map[string]string{},
		seenActive: map[string]bool{},
	}
	if err := c.dial(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// connectURL is VS Code's URL for an address: the tkn parameter taken out
// of what was pasted (parseRemoteAgentHostInput) and put back on as the
// transport does.
func connectURL(address, token string) (string, error) {
	if !strings.HasPrefix(address, "ws://") && !strings.HasPrefix(address, "wss://") {
		address = "ws://" + address
	}
	u, err := url.Parse(address)
	if err != nil {
		return "", fmt.Errorf("agent host address %q: %w", address, err)
	}
	q := u.Query()
	if t := q.Get("tkn"); t != "" && token == "" {
		token = t
	}
	q.Del("tkn")
	if token != "" {
		q.Set("tkn", token)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (c *Client) dial(ctx context.Context) error {
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, c.url, nil)
	if err != nil {
		return fmt.Errorf("connecting to the agent host at %s: %w", c.url, err)
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.conn, c.connDone, c.readErr = conn, done, nil
	c.mu.Unlock()
	go c.read(conn, done)
	return nil
}

// ClientID returns the client's identity.
func (c *Client) ClientID() string { return c.clientID }

// Close closes the connection and waits for its reader.
func (c *Client) Close() error {
	c.mu.Lock()
	conn, done := c.conn, c.connDone
	c.mu.Unlock()
	if conn == nil {
		return nil
	}
	err := conn.Close()
	<-done
	return err
}

type answer struct {
	result json.RawMessage
	err    error
}

// pendingCall is a request waiting for its answer. onResult, when set,
// runs on the reader with a successful result before the reader takes the
// next frame: a subscribe's snapshot must be in place before the actions
// that follow it on the wire are applied, or they are lost.
type pendingCall struct {
	ch       chan answer
	onResult func(json.RawMessage) error
}

// read owns conn's reading until it fails.
func (c *Client) read(conn *websocket.Conn, done chan struct{}) {
	defer close(done)
	for {
		typ, frame, err := conn.ReadMessage()
		if err == nil && typ != websocket.TextMessage {
			err = fmt.Errorf("the host sent a binary frame; VS Code counts it as malformed")
		}
		if err != nil {
			c.mu.Lock()
			if c.conn == conn {
				c.readErr = err
				for id, p := range c.pending {
					p.ch <- answer{err: fmt.Errorf("%w: %v", ErrConnectionLost, err)}
					delete(c.pending, id)
				}
			}
			c.signalLocked()
			c.mu.Unlock()
			return
		}
		c.receive(conn, frame)
	}
}

func (c *Client) receive(conn *websocket.Conn, frame []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(frame, &m); err != nil {
		c.mu.Lock()
		c.stray = append(c.stray, "a frame that is not JSON: "+string(frame))
		c.signalLocked()
		c.mu.Unlock()
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		// A request of the host: VS Code serves resource* on the user's
		// machine; this client serves none.
		c.write(conn, map[string]any{"jsonrpc": "2.0", "id": m.ID,
			"error": map[string]any{"code": CodeMethodNotFound, "message": "not served by the test client: " + m.Method}})
	case m.Method != "":
		c.mu.Lock()
		c.notes = append(c.notes, Notification{Method: m.Method, Params: m.Params})
		if m.Method == "action" {
			c.applyEnvelopeLocked(m.Params)
		}
		c.signalLocked()
		c.mu.Unlock()
	default:
		var id int64
		var p pendingCall
		ok := false
		c.mu.Lock()
		if hasID && json.Unmarshal(m.ID, &id) == nil {
			p, ok = c.pending[id]
		}
		if ok {
			delete(c.pending, id)
		} else {
			c.stray = append(c.stray, string(frame))
		}
		c.signalLocked()
		c.mu.Unlock()
		if !ok {
			return
		}
		a := answer{result: m.Result}
		if m.Error != nil {
			a = answer{err: m.Error}
		} else if p.onResult != nil {
			if err := p.onResult(m.Result); err != nil {
				a = answer{err: err}
			}
		}
		p.ch <- a
	}
}

func (c *Client) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Client) write(conn *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	c.mu.Lock()
	c.sent = append(c.sent, b)
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
		return fmt.Errorf("%w: %v", ErrConnectionLost, err)
	}
	return nil
}

// call sends a request and waits for its answer.
func (c *Client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.callThen(ctx, method, params, nil)
}

// callThen is call with onResult run on the reader (pendingCall).
func (c *Client) callThen(ctx context.Context, method string, params any, onResult func(json.RawMessage) error) (json.RawMessage, error) {
	ch := make(chan answer, 1)
	c.mu.Lock()
	conn := c.conn
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w: %v", method, ErrConnectionLost, err)
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = pendingCall{ch: ch, onResult: onResult}
	c.mu.Unlock()
	if err := c.write(conn, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, fmt.Errorf("%s: %w", method, a.err)
		}
		return a.result, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}

// notify sends a notification.
func (c *Client) notify(method string, params any) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	return c.write(conn, map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Call sends any request, for the requests VS Code sends that have no
// method here (extension and diagnostics requests).
func (c *Client) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.call(ctx, method, params)
}

// meta is the _meta VS Code's window sends in initialize and reconnect
// (toAgentHostClientMeta): telemetry on, so the identity keys go too.
func (c *Client) meta() map[string]any {
	return map[string]any{
		"vscode.telemetryLevel":       "all",
		"vscode.clientConnectionKind": "direct_websocket",
		"vscode.clientMachineId":      "vscodeclient-machine-" + c.clientID[:8],
		"vscode.clientDevDeviceId":    "vscodeclient-device-" + c.clientID[:8],
	}
}

func (c *Client) initializeParams(subscriptions []string) map[string]any {
	return map[string]any{
		"channel":              RootChannel,
		"protocolVersions":     c.opts.Versions,
		"clientId":             c.clientID,
		"clientInfo":           c.opts.ClientInfo,
		"_meta":                c.meta(),
		"initialSubscriptions": subscriptions,
	}
}

// Connect is VS Code's connect: initialize on the root channel with every
// version it offers and the root as initial subscription, then at once the
// root/configChanged dispatches of the window's settings (keys the host
// does not know among them) and the setClientManagedSettingsPermissions
// notification.
func (c *Client) Connect(ctx context.Context) (*InitializeResult, error) {
	res, err := c.initialize(ctx, []string{RootChannel})
	if err != nil {
		return nil, err
	}
	if err := c.forwardClientConfig(true); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *Client) initialize(ctx context.Context, subscriptions []string) (*InitializeResult, error) {
	var res InitializeResult
	_, err := c.callThen(ctx, "initialize", c.initializeParams(subscriptions), func(raw json.RawMessage) error {
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("initialize: the answer does not decode: %w: %s", err, raw)
		}
		c.mu.Lock()
		c.init = &res
		c.serverSeq = res.ServerSeq
		c.mu.Unlock()
		for _, s := range res.Snapshots {
			if err := c.install(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// forwardClientConfig sends what the window pushes after a handshake
// (_forwardClientConfig): one root/configChanged per group of settings,
// all with clientSeq 0, then, unless this is a reconnect, the managed
// settings permissions. The keys are VS Code's; the host knows few or
// none of them.
func (c *Client) forwardClientConfig(managedSettings bool) error {
	patches := []map[string]any{
		{"chat.agentHost.syncedSettingExample": true},
		{"telemetryLevel": "all"},
		{"terminalAutoApproveEnabled": true},
		{"terminalAutoApproveRules": map[string]any{"rm": false, "ls": true}},
		{"autoApprovePolicyRestricted": false},
		{"workspaceTrust": map[string]any{"enabled": true, "trustedUris": []string{}}},
		{"disableRepoInfoTelemetry": false},
	}
	for _, p := range patches {
		if err := c.notify("dispatchAction", map[string]any{"channel": RootChannel, "clientSeq": 0,
			"action": map[string]any{"type": "root/configChanged", "config": p}}); err != nil {
			return err
		}
	}
	if managedSettings {
		return c.ManagedSettingsPermissions()
	}
	return nil
}

// ManagedSettingsPermissions sends VS Code's extension notification
// setClientManagedSettingsPermissions (a remote host gets no permissions).
func (c *Client) ManagedSettingsPermissions() error {
	return c.notify("setClientManagedSettingsPermissions", map[string]any{"permissions": map[string]any{}})
}

// Negotiated returns the protocol version the host chose ("" before
// initialize).
func (c *Client) Negotiated() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.init == nil {
		return ""
	}
	return c.init.ProtocolVersion
}

// Ping is VS Code's liveness request.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.call(ctx, "ping", map[string]any{"channel": RootChannel})
	return err
}

// CreateSession is VS Code's createSession: the client names the session
// (Options.SessionURIs) and sends it with the provider, the working
// directories as file URIs and a progress token. It returns the session's
// URI, as VS Code does whatever the answer holds.
func (c *Client) CreateSession(ctx context.Context, provider string, workingDirectories []string) (string, error) {
	c.mu.Lock()
	session := newSessionURI(c.opts.SessionURIs, provider, client.NewUUID(), c.init)
	c.mu.Unlock()
	dirs := make([]string, len(workingDirectories))
	for i, d := range workingDirectories {
		dirs[i] = fileURI(d)
	}
	_, err := c.call(ctx, "createSession", map[string]any{
		"channel":            session,
		"provider":           provider,
		"workingDirectories": dirs,
		"progressToken":      client.NewUUID(),
	})
	if err != nil {
		return "", err
	}
	return session, nil
}

func fileURI(path string) string {
	if strings.Contains(path, "://") {
		return path
	}
	return (&url.URL{Scheme: "file", Path: path}).String()
}

// Subscribe is VS Code's subscribe; the answer must carry a snapshot
// ("subscribe … returned no snapshot" otherwise).
func (c *Client) Subscribe(ctx context.Context, channel string) (Snapshot, error) {
	var snap Snapshot
	_, err := c.callThen(ctx, "subscribe", map[string]any{"channel": channel}, func(raw json.RawMessage) error {
		var res struct {
			Snapshot *Snapshot `json:"snapshot"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("subscribe %s: the answer does not decode: %w: %s", channel, err, raw)
		}
		if res.Snapshot == nil {
			return fmt.Errorf("subscribe to %s returned no snapshot", channel)
		}
		if err := c.install(*res.Snapshot); err != nil {
			return err
		}
		c.mu.Lock()
		c.addSubLocked(channel)
		if res.Snapshot.Resource != channel {
			c.addSubLocked(res.Snapshot.Resource)
		}
		c.mu.Unlock()
		snap = *res.Snapshot
		return nil
	})
	if err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

func (c *Client) addSubLocked(channel string) {
	for _, s := range c.subs {
		if s == channel {
			return
		}
	}
	c.subs = append(c.subs, channel)
}

// Unsubscribe is VS Code's unsubscribe notification.
func (c *Client) Unsubscribe(channel string) error {
	c.mu.Lock()
	for i, s := range c.subs {
		if s == channel {
			c.subs = append(c.subs[:i], c.subs[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	return c.notify("unsubscribe", map[string]any{"channel": channel})
}

// OpenSession is the editor-window handler's way into a session: subscribe
// the session, read its defaultChat (an error when there is none, as VS
// Code throws), subscribe that chat. It returns the chat.
func (c *Client) OpenSession(ctx context.Context, session string) (string, error) {
	if _, err := c.Subscribe(ctx, session); err != nil {
		return "", err
	}
	s, ok := c.Session(session)
	if !ok || s.DefaultChat == nil || *s.DefaultChat == "" {
		return "", fmt.Errorf("session %s has no default chat", session)
	}
	if _, err := c.Subscribe(ctx, *s.DefaultChat); err != nil {
		return "", err
	}
	return *s.DefaultChat, nil
}

// dispatch sends dispatchAction with the client's next clientSeq (VS
// Code's start at 1; 0 is the root config's) and returns that clientSeq.
func (c *Client) dispatch(channel string, action map[string]any) (int64, error) {
	c.mu.Lock()
	c.nextSeq++
	seq := c.nextSeq
	c.mu.Unlock()
	return seq, c.notify("dispatchAction", map[string]any{"channel": channel, "clientSeq": seq, "action": action})
}

// StartTurn dispatches chat/turnStarted on the chat as VS Code does: a
// client-minted turnId (VS Code's request id), startedAt, the message with
// the model selection on it. It returns the turnId.
func (c *Client) StartTurn(chat, text, model string) (string, error) {
	turnID := client.NewUUID()
	message := map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}
	if model != "" {
		message["model"] = map[string]any{"id": model}
	}
	_, err := c.dispatch(chat, map[string]any{
		"type":      "chat/turnStarted",
		"turnId":    turnID,
		"startedAt": c.opts.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"message":   message,
	})
	return turnID, err
}

// Approve is VS Code's approval of a pending tool call: chat/toolCallConfirmed
// with approved, confirmed user-action and the option the user clicked.
func (c *Client) Approve(chat, turnID, toolCallID, optionID string) error {
	a := map[string]any{"type": "chat/toolCallConfirmed", "turnId": turnID, "toolCallId": toolCallID,
		"approved": true, "confirmed": "user-action"}
	if optionID != "" {
		a["selectedOptionId"] = optionID
	}
	_, err := c.dispatch(chat, a)
	return err
}

// Deny is VS Code's denial: chat/toolCallConfirmed, not approved, reason
// denied, with the option the user clicked.
func (c *Client) Deny(chat, turnID, toolCallID, optionID string) error {
	a := map[string]any{"type": "chat/toolCallConfirmed", "turnId": turnID, "toolCallId": toolCallID,
		"approved": false, "reason": "denied"}
	if optionID != "" {
		a["selectedOptionId"] = optionID
	}
	_, err := c.dispatch(chat, a)
	return err
}

// Cancel is VS Code's stop button: chat/turnCancelled with the turn's
// duration so far.
func (c *Client) Cancel(chat, turnID string, duration time.Duration) error {
	_, err := c.dispatch(chat, map[string]any{"type": "chat/turnCancelled", "turnId": turnID,
		"duration": duration.Milliseconds()})
	return err
}

// Rename is the editor window's rename: session/titleChanged dispatched
// on the chat channel (_getRenameChatURI), not on the session's.
func (c *Client) Rename(chat, title string) error {
	_, err := c.dispatch(chat, map[string]any{"type": "session/titleChanged", "title": title})
	return err
}

// ListSessions is VS Code's listSessions on the root channel; it returns
// the items as sent.
func (c *Client) ListSessions(ctx context.Context) ([]map[string]any, error) {
	raw, err := c.call(ctx, "listSessions", map[string]any{"channel": RootChannel})
	if err != nil {
		return nil, err
	}
	var res struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("listSessions: the answer does not decode: %w: %s", err, raw)
	}
	return res.Items, nil
}

// DisposeSession is VS Code's disposeSession, sent for abandoned new
// sessions, on connection drops and for an explicit delete alike.
func (c *Client) DisposeSession(ctx context.Context, session string) error {
	_, err := c.call(ctx, "disposeSession", map[string]any{"channel": session})
	return err
}

// ReconnectOutcome says how a Reconnect went.
type ReconnectOutcome struct {
	// Kind is "replay" or "snapshot" (the reconnect's answer), or
	// "initialize" when the host answered -32008 and the client fell back
	// to a fresh initialize.
	Kind string
	// ReconnectErr is the host's error to reconnect, if any.
	ReconnectErr error
	// Missing are the channels the host could not resume.
	Missing []string
	// Restored are the channels re-subscribed after a fresh initialize, in
	// the order they were asked for.
	Restored []string
}

// Reconnect is VS Code's reconnect on a new WebSocket after the old one
// closed: reconnect {clientId, lastSeenServerSeq, subscriptions (the root
// first), _meta} with no channel. On -32008 only (the host forgot the
// client), it initializes again with the same clientId and every
// subscription as initialSubscriptions, sends the managed settings
// permissions, re-subscribes what the initialize did not snapshot —
// sessions first, then chats and the rest — and pushes the window's
// config again. Any other error is returned: VS Code would retry
// reconnect with backoff.
func (c *Client) Reconnect(ctx context.Context) (ReconnectOutcome, error) {
	_ = c.Close()
	if err := c.dial(ctx); err != nil {
		return ReconnectOutcome{}, err
	}
	c.mu.Lock()
	subs := []string{RootChannel}
	for _, s := range c.subs {
		if !IsRootChannel(s) {
			subs = append(subs, s)
		}
	}
	lastSeen := c.serverSeq
	c.mu.Unlock()
	var out ReconnectOutcome
	// The replay or the snapshots are applied on the reader, before the
	// live actions that follow the answer on the wire (pendingCall).
	_, err := c.callThen(ctx, "reconnect", map[string]any{
		"clientId": c.clientID, "lastSeenServerSeq": lastSeen, "subscriptions": subs, "_meta": c.meta()},
		func(raw json.RawMessage) error {
			var res struct {
				Type      string            `json:"type"`
				Actions   []json.RawMessage `json:"actions"`
				Missing   []string          `json:"missing"`
				Snapshots []Snapshot        `json:"snapshots"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("reconnect: the answer does not decode: %w: %s", err, raw)
			}
			out.Kind, out.Missing = res.Type, res.Missing
			c.mu.Lock()
			for _, a := range res.Actions {
				c.applyEnvelopeLocked(a)
			}
			c.mu.Unlock()
			for _, s := range res.Snapshots {
				if err := c.install(s); err != nil {
					return err
				}
			}
			return nil
		})
	if err == nil {
		if err := c.ManagedSettingsPermissions(); err != nil {
			return out, err
		}
		return out, c.forwardClientConfig(false)
	}
	out.ReconnectErr = err
	if ErrorCode(err) != CodeNotFound {
		return out, err
	}
	out.Kind = "initialize"
	res, err := c.initialize(ctx, subs)
	if err != nil {
		return out, err
	}
	if err := c.ManagedSettingsPermissions(); err != nil {
		return out, err
	}
	snapshotted := map[string]bool{}
	for _, s := range res.Snapshots {
		snapshotted[s.Resource] = true
	}
	var sessions, others []string
	for _, s := range subs[1:] {
		switch {
		case snapshotted[s]:
		case strings.HasPrefix(s, "ahp-chat:"):
			others = append(others, s)
		default:
			sessions = append(sessions, s)
		}
	}
	for _, group := range [][]string{sessions, others} {
		for _, s := range group {
			out.Restored = append(out.Restored, s)
			if _, err := c.Subscribe(ctx, s); err != nil && ErrorCode(err) == 0 {
				return out, err
			} else if err != nil {
				out.Missing = append(out.Missing, s)
			}
		}
	}
	return out, c.forwardClientConfig(false)
}

// install replaces a channel's state with a snapshot.
func (c *Client) install(s Snapshot) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.FromSeq > c.serverSeq {
		c.serverSeq = s.FromSeq
	}
	switch {
	case IsRootChannel(s.Resource):
		var st wire.RootState
		if err := json.Unmarshal(s.State, &st); err != nil {
			return fmt.Errorf("the root snapshot does not decode: %w", err)
		}
		c.root = &st
	case strings.HasPrefix(s.Resource, "ahp-chat:"):
		var st wire.ChatState
		if err := json.Unmarshal(s.State, &st); err != nil {
			return fmt.Errorf("the snapshot of chat %s does not decode: %w", s.Resource, err)
		}
		c.chats[s.Resource] = &st
		c.observeChatLocked(s.Resource)
	default:
		var st wire.SessionState
		if err := json.Unmarshal(s.State, &st); err != nil {
			return fmt.Errorf("the snapshot of session %s does not decode: %w", s.Resource, err)
		}
		c.sessions[s.Resource] = &st
	}
	c.signalLocked()
	return nil
}

// applyEnvelopeLocked applies one action envelope to the state of its
// channel, as VS Code's subscription manager does with confirmed actions.
func (c *Client) applyEnvelopeLocked(raw json.RawMessage) {
	var env wire.ActionEnvelope
	if err := json.Unmarshal(raw, &env); err != nil {
		c.stray = append(c.stray, "an action envelope that does not decode: "+err.Error()+": "+string(raw))
		return
	}
	if env.ServerSeq > c.serverSeq {
		c.serverSeq = env.ServerSeq
	}
	if env.RejectionReason != nil {
		if env.Origin != nil && env.Origin.ClientID == c.clientID {
			c.rejected = append(c.rejected, fmt.Sprintf("%s on %s (clientSeq %d): %s",
				env.Action.Type(), env.Channel, env.Origin.ClientSeq, *env.RejectionReason))
		}
		return
	}
	clock := func() int64 { return c.opts.Now().UnixMilli() }
	switch {
	case IsRootChannel(env.Channel):
		if c.root != nil {
			reducer.Root(c.root, env.Action, clock)
		}
	case c.chats[env.Channel] != nil:
		reducer.Chat(c.chats[env.Channel], env.Action, clock)
		c.observeChatLocked(env.Channel)
	case c.sessions[env.Channel] != nil:
		reducer.Session(c.sessions[env.Channel], env.Action, clock)
	}
}

// observeChatLocked records, after every change of a chat, the turn it
// streams (for VS Code's end-of-turn rule) and whether its markdown only
// grew: VS Code renders markdown as appended deltas by length, so a part
// whose new content does not start with the old is shown wrong.
func (c *Client) observeChatLocked(chat string) {
	st := c.chats[chat]
	if st.ActiveTurn == nil {
		return
	}
	turn := st.ActiveTurn.ID
	c.seenActive[chat+" "+turn] = true
	b, err := json.Marshal(st.ActiveTurn.ResponseParts)
	if err != nil {
		return
	}
	var parts []struct {
		Kind    string          `json:"kind"`
		ID      string          `json:"id"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(b, &parts) != nil {
		return
	}
	for _, p := range parts {
		if p.Kind != "markdown" && p.Kind != "reasoning" {
			continue
		}
		var content string
		if json.Unmarshal(p.Content, &content) != nil {
			continue
		}
		key := chat + " " + turn + " " + p.ID
		if old, ok := c.text[key]; ok && !strings.HasPrefix(content, old) {
			c.regressed = append(c.regressed, fmt.Sprintf("turn %s, %s part %s: %q became %q", turn, p.Kind, p.ID, old, content))
		}
		c.text[key] = content
	}
}

// WaitFor waits until cond holds; cond runs again whenever something
// arrives. It fails when ctx ends or the connection closes first.
func (c *Client) WaitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		c.mu.Lock()
		changed, readErr := c.changed, c.readErr
		c.mu.Unlock()
		if cond() {
			return nil
		}
		if readErr != nil {
			return fmt.Errorf("waiting for %s: %w: %v", what, ErrConnectionLost, readErr)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// TurnEnded is VS Code's rule for a turn's end: the turn is in turns[],
// or the chat's activeTurn was seen to be it and now is not.
func (c *Client) TurnEnded(chat, turnID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.chats[chat]
	if st == nil {
		return false
	}
	for _, t := range st.Turns {
		if t.ID == turnID {
			return true
		}
	}
	return c.seenActive[chat+" "+turnID] && (st.ActiveTurn == nil || st.ActiveTurn.ID != turnID)
}

// WaitTurnEnd waits for a turn's end by VS Code's rule and returns the
// turn from turns[] (ok false when it ended without appearing there).
func (c *Client) WaitTurnEnd(ctx context.Context, chat, turnID string) (turn wire.Turn, ok bool, err error) {
	if err := c.WaitFor(ctx, "the end of turn "+turnID, func() bool { return c.TurnEnded(chat, turnID) }); err != nil {
		return wire.Turn{}, false, err
	}
	st, _ := c.Chat(chat)
	for _, t := range st.Turns {
		if t.ID == turnID {
			return t, true, nil
		}
	}
	return wire.Turn{}, false, nil
}

// Root returns a copy of the root state.
func (c *Client) Root() (wire.RootState, bool) {
	return copyState[wire.RootState](c, func() *wire.RootState { return c.root })
}

// Session returns a copy of a subscribed session's state.
func (c *Client) Session(session string) (wire.SessionState, bool) {
	return copyState[wire.SessionState](c, func() *wire.SessionState { return c.sessions[session] })
}

// Chat returns a copy of a subscribed chat's state.
func (c *Client) Chat(chat string) (wire.ChatState, bool) {
	return copyState[wire.ChatState](c, func() *wire.ChatState { return c.chats[chat] })
}

// ChatJSON returns a subscribed chat's state as JSON, for checks on the
// member names VS Code reads.
func (c *Client) ChatJSON(chat string) (map[string]any, bool) {
	return copyState[map[string]any](c, func() *wire.ChatState { return c.chats[chat] })
}

// copyState deep-copies, through JSON, the state get returns under the
// client's lock into a T; false when there is none.
func copyState[T, S any](c *Client, get func() *S) (T, bool) {
	var out T
	c.mu.Lock()
	st := get()
	if st == nil {
		c.mu.Unlock()
		return out, false
	}
	b, err := json.Marshal(st)
	c.mu.Unlock()
	return out, err == nil && json.Unmarshal(b, &out) == nil
}

// Subscriptions returns the subscribed channels, in order.
func (c *Client) Subscriptions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.subs...)
}

// Sent returns every message sent so far, in order.
func (c *Client) Sent() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]json.RawMessage(nil), c.sent...)
}

// Notifications returns what the host notified so far, in order.
func (c *Client) Notifications() []Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Notification(nil), c.notes...)
}

// StrayFrames returns the frames that answered no request of this client:
// error frames for notifications, mostly, which VS Code does not expect.
func (c *Client) StrayFrames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.stray...)
}

// Rejected returns this client's actions the host rejected.
func (c *Client) Rejected() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.rejected...)
}

// TextRegressions returns the markdown or reasoning parts whose content
// changed other than by growing.
func (c *Client) TextRegressions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.regressed...)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
