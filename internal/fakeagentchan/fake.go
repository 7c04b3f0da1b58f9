// Package fakeagentchan is a scriptable fake of an agent-channel workspace
// socket (`GET /workspaces/{id}/ws`) for tests of package agentchan and of
// the bridge.
//
// Each test gives the server a Script: for every `prompt` the client sends,
// the script returns the Steps to play — frames to send (with or without the
// prompt's taskId, on the agent channel or another one, raw bytes of any
// size), waits for the client's approve/reject/tool_response/abort, a dropped
// connection, or silence (pings no longer answered). The server checks the
// token (query parameter or `Sec-WebSocket-Protocol: Bearer, TOKEN`) and
// records every frame it receives.
package fakeagentchan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Path is the socket path the server serves.
const Path = "/workspaces/ws-test/ws"

// ClientFrame is one frame the client sent.
type ClientFrame struct {
	Channel string
	Type    string
	// Fields holds the whole decoded object.
	Fields map[string]any
	// Raw is the message as received.
	Raw []byte
	// Conn is the 1-based number of the connection it arrived on.
	Conn int
}

// String returns field key when it is a string, else "".
func (f ClientFrame) String(key string) string {
	s, _ := f.Fields[key].(string)
	return s
}

// Has reports whether the frame has field key.
func (f ClientFrame) Has(key string) bool {
	_, ok := f.Fields[key]
	return ok
}

// Step is one action of a script. Exactly one of its fields should be set;
// build steps with the helpers below.
type Step struct {
	// Frame is sent as JSON. "channel" defaults to "agent" and "taskId" to
	// the prompt's taskId (unless NoTaskID is set or there is no prompt).
	Frame    map[string]any
	NoTaskID bool
	// Raw is sent verbatim as a text message.
	Raw []byte
	// Await waits for a client frame on the agent channel whose type is one
	// of these, received after the script started.
	Await []string
	// Drop closes the TCP connection without a close frame.
	Drop bool
	// Silence stops answering pings and sending anything.
	Silence bool
	// Sleep pauses the script.
	Sleep time.Duration
}

// Script returns the steps to play for a prompt.
type Script func(prompt ClientFrame) []Step

// Send returns a step that sends frame (see Step.Frame).
func Send(frame map[string]any) Step { return Step{Frame: frame} }

// SendNoTask returns a step that sends frame without a taskId.
func SendNoTask(frame map[string]any) Step { return Step{Frame: frame, NoTaskID: true} }

// Text sends a `text` frame.
func Text(content string) Step { return Send(map[string]any{"type": "text", "content": content}) }

// Thinking sends a `thinking` frame.
func Thinking(content string) Step {
	return Send(map[string]any{"type": "thinking", "content": content})
}

// ToolInvocation sends a `tool_invocation` frame.
func ToolInvocation(id, name string, args any) Step {
	return Send(map[string]any{"type": "tool_invocation", "toolCallId": id, "toolName": name, "args": args})
}

// ToolResult sends a `tool_result` frame; result is a string or an object.
func ToolResult(id string, result any) Step {
	return Send(map[string]any{"type": "tool_result", "toolCallId": id, "result": result})
}

// Question sends a `question` frame.
func Question(questions ...string) Step {
	return Send(map[string]any{"type": "question", "questions": questions})
}

// Permission sends a permission request of frame type typ (e.g.
// "permission", "permission_request", "approval_request"); toolCallID and
// message are left out when empty.
func Permission(typ, requestID, toolCallID, message string) Step {
	f := map[string]any{"type": typ, "requestId": requestID}
	if toolCallID != "" {
		f["toolCallId"] = toolCallID
	}
	if message != "" {
		f["message"] = message
	}
	return Send(f)
}

// Result sends a `result` frame, ending the task.
func Result(summary string) Step { return Send(map[string]any{"type": "result", "summary": summary}) }

// Error sends an `error` frame, ending the task.
func Error(message string) Step { return Send(map[string]any{"type": "error", "message": message}) }

// OtherChannel sends a frame of another channel.
func OtherChannel(channel, typ string) Step {
	return SendNoTask(map[string]any{"channel": channel, "type": typ, "data": "x"})
}

// Raw sends b verbatim.
func Raw(b []byte) Step { return Step{Raw: b} }

// Oversize sends a text message of n bytes (a valid agent text frame).
func Oversize(n int) Step {
	head := `{"channel":"agent","type":"text","content":"`
	tail := `"}`
	if n < len(head)+len(tail) {
		n = len(head) + len(tail)
	}
	return Raw([]byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail))
}

// Await waits for a client frame of one of the types.
func Await(types ...string) Step { return Step{Await: types} }

// Drop closes the connection abruptly.
func Drop() Step { return Step{Drop: true} }

// Silence stops answering pings.
func Silence() Step { return Step{Silence: true} }

// Sleep pauses the script.
func Sleep(d time.Duration) Step { return Step{Sleep: d} }

// Options configure a Server.
type Options struct {
	// Token is required on the upgrade when not empty.
	Token string
	// PingInterval makes the server ping the client; 0 disables it.
	PingInterval time.Duration
	// Script plays for each prompt; nil answers every prompt with
	// Result("done").
	Script Script
	// OnConnect plays right after connection n (1-based) is accepted, with
	// no prompt (so no taskId is added).
	OnConnect func(n int) []Step
	// ReadLimit is the largest client message accepted (default 1 MiB).
	ReadLimit int64
}

// Server is a running fake. Close it when done.
type Server struct {
	opts Options
	hs   *httptest.Server

	mu          sync.Mutex
	script      Script
	conns       map[*fakeConn]struct{}
	received    []ClientFrame
	connections int
	rejected    int
	refused     int
	authModes   []string
	closed      bool
	refusing    bool
	wg          sync.WaitGroup
	changed     chan struct{} // closed and replaced whenever state changes
}

// New starts a server.
func New(opts Options) *Server {
	if opts.ReadLimit <= 0 {
		opts.ReadLimit = 1 << 20
	}
	s := &Server{
		opts:    opts,
		script:  opts.Script,
		conns:   map[*fakeConn]struct{}{},
		changed: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, s.serve)
	s.hs = httptest.NewServer(mux)
	return s
}

// URL is the socket URL, without a token.
func (s *Server) URL() string {
	return "ws" + strings.TrimPrefix(s.hs.URL, "http") + Path
}

// SetScript replaces the script for later prompts.
func (s *Server) SetScript(sc Script) {
	s.mu.Lock()
	s.script = sc
	s.mu.Unlock()
}

// Received returns every frame received so far, in order.
func (s *Server) Received() []ClientFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ClientFrame(nil), s.received...)
}

// ReceivedOfType returns the received agent-channel frames of type typ.
func (s *Server) ReceivedOfType(typ string) []ClientFrame {
	var out []ClientFrame
	for _, f := range s.Received() {
		if f.Channel == "agent" && f.Type == typ {
			out = append(out, f)
		}
	}
	return out
}

// Connections is the number of connections accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// Rejected is the number of upgrades refused for a bad token.
func (s *Server) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// AuthModes lists how each accepted connection presented the token:
// "query", "subprotocol" or "none".
func (s *Server) AuthModes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.authModes...)
}

// WaitFor waits until cond (called with no lock held) holds or the timeout
// passes, and reports whether it held.
func (s *Server) WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}

// Push plays steps on every open connection now, outside any prompt.
func (s *Server) Push(steps ...Step) error {
	s.mu.Lock()
	conns := make([]*fakeConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if len(conns) == 0 {
		return errors.New("fakeagentchan: no open connection")
	}
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.play(c.ctx, "", steps, nil))
	}
	return errors.Join(errs...)
}

// SetRefusing makes the server answer new upgrades with 503 Service
// Unavailable (as a workspace that is restarting would) while on is true.
func (s *Server) SetRefusing(on bool) {
	s.mu.Lock()
	s.refusing = on
	s.mu.Unlock()
}

// Refused is the number of upgrades answered 503 because of SetRefusing.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// DropAll closes every open connection abruptly and returns how many it
// closed. A connection is open from just after its handshake answer, so a
// test that drops right after dialling should first wait (WaitFor) for
// Connections to count it.
func (s *Server) DropAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.ws.UnderlyingConn().Close()
	}
	return len(s.conns)
}

// Close drops every connection and stops the server, waiting for its
// goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.ws.UnderlyingConn().Close()
	}
	s.mu.Unlock()
	s.hs.Close()
	s.wg.Wait()
}

// notify wakes WaitFor; call with s.mu held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// authenticate checks the token and says how it came.
func (s *Server) authenticate(r *http.Request) (mode string, ok bool) {
	protos := websocket.Subprotocols(r)
	if s.opts.Token == "" {
		return "none", true
	}
	if r.URL.Query().Get("token") == s.opts.Token {
		return "query", true
	}
	if len(protos) == 2 && protos[0] == "Bearer" && protos[1] == s.opts.Token {
		return "subprotocol", true
	}
	return "", false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if s.refusing {
		s.refused++
		s.notify()
		s.mu.Unlock()
		http.Error(w, "workspace is restarting", http.StatusServiceUnavailable)
		return
	}
	mode, ok := s.authenticate(r)
	if !ok {
		s.rejected++
		s.notify()
		s.mu.Unlock()
		http.Error(w, "invalid token", http.StatusUnauthorized)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	if mode == "subprotocol" {
		up.Subprotocols = []string{"Bearer"}
	}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the request
	}
	ws.SetReadLimit(s.opts.ReadLimit)
	ctx, cancel := context.WithCancel(context.Background())
	c := &fakeConn{s: s, ws: ws, ctx: ctx}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		_ = ws.Close()
		return
	}
	s.connections++
	c.n = s.connections
	s.conns[c] = struct{}{}
	s.authModes = append(s.authModes, mode)
	s.notify()
	s.mu.Unlock()

	var wg sync.WaitGroup
	defer func() {
		cancel()
		_ = ws.Close()
		wg.Wait()
		s.mu.Lock()
		delete(s.conns, c)
		s.notify()
		s.mu.Unlock()
	}()

	ws.SetPingHandler(func(data string) error {
		if c.silent.Load() {
			return nil
		}
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	if s.opts.PingInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.pinger(s.opts.PingInterval)
		}()
	}
	if s.opts.OnConnect != nil {
		if steps := s.opts.OnConnect(c.n); len(steps) > 0 {
			sub := c.subscribe()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.unsubscribe(sub)
				_ = c.play(ctx, "", steps, sub)
			}()
		}
	}

	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		f := ClientFrame{Raw: data, Conn: c.n}
		if err := json.Unmarshal(data, &f.Fields); err == nil {
			f.Channel, _ = f.Fields["channel"].(string)
			f.Type, _ = f.Fields["type"].(string)
		}
		s.mu.Lock()
		s.received = append(s.received, f)
		script := s.script
		s.notify()
		s.mu.Unlock()
		c.deliver(f)
		if f.Channel == "agent" && f.Type == "prompt" {
			steps := []Step{Result("done")}
			if script != nil {
				steps = script(f)
			}
			sub := c.subscribe()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.unsubscribe(sub)
				_ = c.play(ctx, f.String("taskId"), steps, sub)
			}()
		}
	}
}

// fakeConn is one accepted connection.
type fakeConn struct {
	s       *Server
	ws      *websocket.Conn
	ctx     context.Context
	n       int
	silent  atomic.Bool
	writeMu sync.Mutex

	subMu sync.Mutex
	subs  map[chan ClientFrame]struct{}
}

func (c *fakeConn) subscribe() chan ClientFrame {
	ch := make(chan ClientFrame, 256)
	c.subMu.Lock()
	if c.subs == nil {
		c.subs = map[chan ClientFrame]struct{}{}
	}
	c.subs[ch] = struct{}{}
	c.subMu.Unlock()
	return ch
}

func (c *fakeConn) unsubscribe(ch chan ClientFrame) {
	c.subMu.Lock()
	delete(c.subs, ch)
	c.subMu.Unlock()
}

// deliver hands f to every running script; a script that fell 256 frames
// behind misses frames, which a test would notice as a timeout.
func (c *fakeConn) deliver(f ClientFrame) {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	for ch := range c.subs {
		select {
		case ch <- f:
		default:
		}
	}
}

func (c *fakeConn) pinger(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			if c.silent.Load() {
				continue
			}
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)); err != nil {
				return
			}
		}
	}
}

func (c *fakeConn) write(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// play runs steps; sub receives client frames for Await (nil: Await fails).
func (c *fakeConn) play(ctx context.Context, taskID string, steps []Step, sub chan ClientFrame) error {
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case st.Frame != nil:
			f := make(map[string]any, len(st.Frame)+2)
			for k, v := range st.Frame {
				f[k] = v
			}
			if _, ok := f["channel"]; !ok {
				f["channel"] = "agent"
			}
			if _, ok := f["taskId"]; !ok && !st.NoTaskID && taskID != "" {
				f["taskId"] = taskID
			}
			b, err := json.Marshal(f)
			if err != nil {
				return fmt.Errorf("fakeagentchan step %d: %w", i, err)
			}
			if err := c.write(b); err != nil {
				return err
			}
		case st.Raw != nil:
			if err := c.write(st.Raw); err != nil {
				return err
			}
		case st.Await != nil:
			if sub == nil {
				return fmt.Errorf("fakeagentchan step %d: Await outside a script", i)
			}
			if err := awaitFrame(ctx, sub, st.Await); err != nil {
				return err
			}
		case st.Drop:
			return c.ws.UnderlyingConn().Close()
		case st.Silence:
			c.silent.Store(true)
		case st.Sleep > 0:
			t := time.NewTimer(st.Sleep)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
	return nil
}

func awaitFrame(ctx context.Context, sub chan ClientFrame, types []string) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case f := <-sub:
			if f.Channel != "agent" {
				continue
			}
			for _, t := range types {
				if f.Type == t {
					return nil
				}
			}
		}
	}
}
