package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ahp-bridge/ahp-bridge/backend"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"
)

// sdkLineLimit is the longest line handed to acp-go-sdk. Its reader gives
// up on lines of 10 MiB and more and closes the connection, so longer
// messages are dealt with here (see agentProc.route).
const sdkLineLimit = 8 << 20

// Caps on updates that arrive for an ACP session id nobody has registered
// yet (typically the updates an agent sends right before or after its
// session/new response).
const (
	maxOrphanSessions = 16
	maxOrphanUpdates  = 1024
)

// stderrTailLines is how many of the agent's last stderr lines are kept
// for the error shown when it dies: enough for a stack trace and the
// messages before it, which is where agents say why they stopped.
const stderrTailLines = 64

// lockedWriter serialises whole-message writes to the agent's stdin: the
// SDK writes its messages and this package writes permission responses.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Close does not take the lock: closing the pipe is what unblocks a write
// stuck on an agent that stopped reading.
func (l *lockedWriter) Close() error { return l.w.Close() }

// tailLines keeps the last few lines written to it.
type tailLines struct {
	mu    sync.Mutex
	lines []string
	max   int
}

func (t *tailLines) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(line) > 2000 {
		line = line[:2000] + "…"
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *tailLines) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// agentProc is one running agent process and its ACP connection.
type agentProc struct {
	p      *Provider
	log    zerolog.Logger
	cmd    *exec.Cmd
	pid    int
	stdin  *lockedWriter
	stdout *os.File
	stderr *os.File
	sdkR   *io.PipeReader
	sdkW   *io.PipeWriter
	conn   *sdk.ClientSideConnection
	tail   *tailLines

	// Set once during start, read-only afterwards.
	caps        sdk.AgentCapabilities
	authMethods []string // described, for errors
	authFull    []sdk.AuthMethod

	pumpDone   chan struct{}
	stderrDone chan struct{}
	exited     chan struct{} // closed once exitErr is set
	done       chan struct{} // closed when every goroutine of the process has ended
	exitErr    error

	// noSetModel is set once the agent answered session/set_model with
	// "method not found", so later model changes go straight to
	// session/set_config_option.
	noSetModel atomic.Bool

	mu       sync.Mutex
	sessions map[string]*session
	orphans  map[string][]json.RawMessage
	killNote string // why we killed the process, if we did
	calls    map[string]chan rawResponse
	nextCall int
	callsEnd bool // the process is gone: no call will be answered
}

// rawResponse is the answer to a request sent with call.
type rawResponse struct {
	result json.RawMessage
	err    error
}

// callIDPrefix starts the ids of the requests this package sends itself.
// The SDK numbers its requests, so a string id never meets one of its own.
const callIDPrefix = "ahp-bridge-"

// call sends a request to the agent and returns its result as raw JSON,
// bypassing the SDK, whose typed results drop what the schema it was
// generated from does not have (session/new `models`) or turn absent
// numbers into zeros (session/prompt `usage`), and which has no method for
// session/set_model. An error answer comes back as *sdk.RequestError, the
// agent's death as its exit error.
func (a *agentProc) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s request: %w", method, err)
	}
	ch := make(chan rawResponse, 1)
	a.mu.Lock()
	if a.callsEnd {
		a.mu.Unlock()
		return nil, a.exitError()
	}
	a.nextCall++
	id := fmt.Sprintf("%s%d", callIDPrefix, a.nextCall)
	a.calls[id] = ch
	a.mu.Unlock()
	a.writeMessage(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": json.RawMessage(p)})
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		a.mu.Lock()
		delete(a.calls, id)
		a.mu.Unlock()
		return nil, ctx.Err()
	}
}

// answerCall delivers a response to a request sent with call. It reports
// false when id is not one of those.
func (a *agentProc) answerCall(id json.RawMessage, line []byte) bool {
	var key string
	if json.Unmarshal(id, &key) != nil || !strings.HasPrefix(key, callIDPrefix) {
		return false
	}
	a.mu.Lock()
	ch := a.calls[key]
	delete(a.calls, key)
	a.mu.Unlock()
	if ch == nil {
		// Its caller gave up waiting.
		return true
	}
	var m struct {
		Result json.RawMessage   `json:"result"`
		Error  *sdk.RequestError `json:"error"`
	}
	switch err := json.Unmarshal(line, &m); {
	case err != nil:
		ch <- rawResponse{err: fmt.Errorf("the agent's response cannot be read: %w", err)}
	case m.Error != nil:
		ch <- rawResponse{err: m.Error}
	default:
		ch <- rawResponse{result: m.Result}
	}
	return true
}

// endCalls fails every request sent with call that is still unanswered:
// the process is gone.
func (a *agentProc) endCalls() {
	a.mu.Lock()
	calls := a.calls
	a.calls = nil
	a.callsEnd = true
	a.mu.Unlock()
	for _, ch := range calls {
		ch <- rawResponse{err: a.exitError()}
	}
}

// isMethodNotFound reports whether err is the agent's JSON-RPC "method not
// found" answer.
func isMethodNotFound(err error) bool {
	var re *sdk.RequestError
	return errors.As(err, &re) && re.Code == -32601
}

// startProc starts the agent process and its reader goroutines. It does not
// run initialize.
func startProc(p *Provider) (*agentProc, error) {
	cfg := p.cfg
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("no agent command configured")
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = append(os.Environ(), cfg.Env...)
	setProcessGroup(cmd)

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("starting agent %q: %w", strings.Join(cfg.Command, " "), err)
	}
	// The child has its copies; ours would keep the pipes open forever.
	closeAll(inR, outW, errW)

	a := &agentProc{
		p:          p,
		log:        p.log.With().Int("pid", cmd.Process.Pid).Logger(),
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      &lockedWriter{w: inW},
		stdout:     outR,
		stderr:     errR,
		tail:       &tailLines{max: stderrTailLines},
		pumpDone:   make(chan struct{}),
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
		done:       make(chan struct{}),
		sessions:   make(map[string]*session),
		orphans:    make(map[string][]json.RawMessage),
		calls:      make(map[string]chan rawResponse),
	}
	a.sdkR, a.sdkW = io.Pipe()
	a.conn = sdk.NewClientSideConnection(&clientHandler{a: a}, a.stdin, a.sdkR)
	a.conn.SetLogger(slog.New(slog.NewTextHandler(a.log.With().Str("component", "acp-sdk").Logger(),
		&slog.HandlerOptions{Level: slog.LevelWarn})))
	go a.drainStderr()
	go a.pump()
	go a.wait()
	return a, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// initialize runs the ACP handshake.
func (a *agentProc) initialize(ctx context.Context) error {
	resp, err := a.conn.Initialize(ctx, sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{
			Fs:       sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Terminal: true,
		},
		ClientInfo: &sdk.Implementation{Name: "ahp-bridge", Version: "0.1.0"},
	})
	if err != nil {
		return a.describeErr("initialize", err)
	}
	a.caps = resp.AgentCapabilities
	a.authFull = resp.AuthMethods
	for _, m := range resp.AuthMethods {
		a.authMethods = append(a.authMethods, describeAuthMethod(m))
	}
	return nil
}

func describeAuthMethod(m sdk.AuthMethod) string {
	switch {
	case m.Agent != nil:
		return authName(m.Agent.Id, m.Agent.Name)
	case m.EnvVar != nil:
		return authName(m.EnvVar.Id, m.EnvVar.Name)
	case m.Terminal != nil:
		return authName(m.Terminal.Id, m.Terminal.Name)
	}
	return "unknown"
}

func authName(id, name string) string {
	if name == "" || name == id {
		return id
	}
	return fmt.Sprintf("%s (%s)", name, id)
}

// describeErr words an error of an ACP request for the user: what the
// agent said, or how it died.
func (a *agentProc) describeErr(what string, err error) error {
	select {
	case <-a.exited:
		return fmt.Errorf("%s: %w", what, a.exitError())
	default:
	}
	var re *sdk.RequestError
	if errors.As(err, &re) {
		msg := re.Message
		if d := dataDetail(re.Data); d != "" {
			msg += ": " + d
		}
		if re.Code == -32000 {
			if len(a.authMethods) > 0 {
				return fmt.Errorf("%s: agent requires authentication (methods: %s): %s", what,
					strings.Join(a.authMethods, ", "), msg)
			}
			return fmt.Errorf("%s: agent requires authentication: %s", what, msg)
		}
		if strings.Contains(msg, "peer disconnected") {
			// The connection went down; the process exit follows shortly.
			select {
			case <-a.exited:
				return fmt.Errorf("%s: %w", what, a.exitError())
			case <-time.After(2 * time.Second):
			}
		}
		return fmt.Errorf("%s: agent error %d: %s", what, re.Code, msg)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// dataDetail renders the data of a JSON-RPC error compactly.
func dataDetail(d any) string {
	switch v := d.(type) {
	case nil:
		return ""
	case string:
		return v
	case map[string]any:
		for _, k := range []string{"details", "error", "message"} {
			if s, ok := v[k].(string); ok && len(v) == 1 {
				return s
			}
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Sprint(d)
	}
	return string(b)
}

// exitError says how the process ended, with its last stderr lines.
func (a *agentProc) exitError() error {
	err := a.exitErr
	if err == nil {
		err = errors.New("agent exited")
	}
	return err
}

func (a *agentProc) isExited() bool {
	select {
	case <-a.exited:
		return true
	default:
		return false
	}
}

// kill ends the process group; note says why, for the exit error.
func (a *agentProc) kill(note string) {
	if a.isExited() {
		// Reaped already: the group id may belong to someone else by now.
		return
	}
	a.mu.Lock()
	if a.killNote == "" {
		a.killNote = note
	}
	a.mu.Unlock()
	if err := killGroup(a.pid); err != nil {
		a.log.Warn().Err(err).Msg("killing agent process group")
	}
}

// stop closes stdin, gives the agent grace to exit, then kills it, and
// waits until every goroutine of the process has ended.
func (a *agentProc) stop(grace time.Duration) {
	_ = a.stdin.Close()
	select {
	case <-a.exited:
	case <-time.After(grace):
		_ = termGroup(a.pid)
		select {
		case <-a.exited:
		case <-time.After(grace):
			a.kill("killed on shutdown")
		}
	}
	<-a.done
}

func (a *agentProc) drainStderr() {
	defer close(a.stderrDone)
	sc := bufio.NewScanner(a.stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		a.tail.add(line)
		// Debug: agents write progress and chatter there at a rate that
		// would drown the bridge's own log; what matters when the agent
		// dies is kept in the tail and shown in its exit error.
		a.log.Debug().Str("stream", "stderr").Msg(line)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		a.log.Warn().Err(err).Msg("reading agent stderr")
		// Keep draining so the agent never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, a.stderr)
	}
}

// wait reaps the process and tears the connection down behind it.
func (a *agentProc) wait() {
	defer close(a.done)
	werr := a.cmd.Wait()
	// Grandchildren may still hold the pipes; the group goes with the agent.
	_ = killGroup(a.pid)
	for _, ch := range []chan struct{}{a.pumpDone, a.stderrDone} {
		select {
		case <-ch:
		case <-time.After(2 * time.Second):
			// Something outside the group keeps the pipe open.
			closeAll(a.stdout, a.stderr)
			<-ch
		}
	}
	closeAll(a.stdout, a.stderr)
	_ = a.stdin.Close()

	a.mu.Lock()
	note := a.killNote
	a.mu.Unlock()
	status := "exited"
	if st := a.cmd.ProcessState; st != nil {
		status = st.String()
	} else if werr != nil {
		status = werr.Error()
	}
	msg := "agent process " + status
	if note != "" {
		msg += " (" + note + ")"
	}
	if t := a.tail.String(); t != "" {
		msg += "; last stderr lines:\n" + t
	}
	a.exitErr = errors.New(msg)
	close(a.exited)
	a.log.Info().Str("status", status).Msg("agent process ended")

	// Sessions hear of it (Disconnected) before the SDK fails the requests
	// in flight, so a failing Prompt has delivered that event too. The SDK
	// sees EOF only now, so callers told "peer disconnected" find exitErr.
	a.p.procExited(a)
	a.endCalls()
	_ = a.sdkW.Close()
	<-a.conn.Done()
}

// pump reads the agent's stdout line by line. session/update notifications
// and session/request_permission requests are handled here from the raw
// JSON; everything else is passed to the SDK connection.
func (a *agentProc) pump() {
	defer close(a.pumpDone)
	r := bufio.NewReaderSize(a.stdout, 64<<10)
	maxLine := a.p.cfg.MaxLineBytes
	sdkBroken := false
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		tooLong := false
		if len(line)+len(chunk) > maxLine {
			tooLong = true
		} else {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) && !tooLong {
			continue
		}
		if tooLong {
			total := len(line) + len(chunk)
			// Skip the rest of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = r.ReadSlice('\n')
				total += len(chunk)
			}
			a.log.Error().Int("bytes", total).Int("limit", maxLine).
				Msg("dropped a line from the agent that exceeds the line limit")
			line = line[:0]
			if err != nil {
				return
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 && !sdkBroken {
			if ferr := a.route(line); ferr != nil {
				a.log.Error().Err(ferr).Msg("the ACP connection stopped reading; restarting the agent")
				sdkBroken = true
				// Nothing more can reach the SDK: let the agent restart.
				a.kill("the ACP connection broke")
			}
		}
		line = line[:0]
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				a.log.Warn().Err(err).Msg("reading agent stdout")
			}
			return
		}
	}
}

// envelope is the part of a JSON-RPC message needed for routing.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// route handles one line of the agent's stdout. It returns an error only
// when the SDK connection no longer accepts input.
func (a *agentProc) route(line []byte) error {
	if a.routeTextChunk(line) {
		return nil
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		a.log.Warn().Str("line", clip(line, 300)).Msg("ignored a line from the agent that is not JSON-RPC")
		return nil
	}
	isRequest := len(env.ID) > 0 && !isNull(env.ID) && env.Method != ""
	if len(env.ID) > 0 && env.Method == "" && a.answerCall(env.ID, line) {
		return nil
	}
	switch {
	case env.Method == sdk.ClientMethodSessionUpdate && len(env.ID) == 0:
		a.routeUpdate(env.Params)
		return nil
	case env.Method == sdk.ClientMethodSessionRequestPermission && isRequest:
		a.routePermission(env.ID, env.Params)
		return nil
	case env.Method != "" && len(env.ID) == 0 && env.Method != "$/cancel_request":
		// Other notifications (extension `_` ones, unstable ones) carry
		// nothing this client acts on, and would only fill the SDK's
		// bounded notification queue, whose overflow drops the connection.
		a.log.Debug().Str("method", env.Method).Msg("ignored a notification from the agent")
		return nil
	}
	if len(line) >= sdkLineLimit {
		switch {
		case isRequest:
			a.log.Error().Str("method", env.Method).Int("bytes", len(line)).Msg("agent request too large")
			a.writeMessage(map[string]any{"jsonrpc": "2.0", "id": env.ID,
				"error": map[string]any{"code": -32600, "message": "request too large for the client"}})
			return nil
		case len(env.ID) > 0 && env.Method == "":
			// Turn an oversized response into an error for its caller rather
			// than leaving the caller waiting forever.
			a.log.Error().Int("bytes", len(line)).Msg("agent response too large")
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": env.ID,
				"error": map[string]any{"code": -32603, "message": "agent response too large for the client"}})
			line = b
		default:
			a.log.Error().Str("method", env.Method).Int("bytes", len(line)).Msg("dropped an oversized notification from the agent")
			return nil
		}
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, bytes.TrimRight(line, "\r\n")...), '\n')
	_, err := a.sdkW.Write(buf)
	return err
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(bytes.TrimRight(b, "\r\n"))
}

// routeTextChunk is route's fast path: a session/update carrying a text
// chunk for an open session is read in one pass (scanTextUpdate) and
// queued decoded. It reports false for every other line, which then takes
// the general path.
func (a *agentProc) routeTextChunk(line []byte) bool {
	u, ok := scanTextUpdate(line)
	if !ok {
		return false
	}
	a.mu.Lock()
	s := a.sessions[string(u.sessionID)] // no copy: a lookup
	a.mu.Unlock()
	if s == nil {
		return false // not yet open: kept raw with the session's other early updates
	}
	var ev backend.Event = backend.TextChunk{Text: u.text}
	if u.kind == kindAgentThoughtChunk {
		ev = backend.ThoughtChunk{Text: u.text}
	}
	// As routeUpdate: waits while the session's queue is full.
	s.queue.pushWait(queueItem{update: ev})
	return true
}

// routeUpdate queues a session/update for its session.
func (a *agentProc) routeUpdate(params json.RawMessage) {
	var n struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if err := json.Unmarshal(params, &n); err != nil || isNull(n.Update) {
		a.log.Warn().Str("params", clip(params, 300)).Msg("ignored a malformed session/update")
		return
	}
	upd := cloneRaw(n.Update)
	a.mu.Lock()
	if s := a.sessions[n.SessionID]; s != nil {
		a.mu.Unlock()
		// Waits when the session's queue is full (backpressure to the
		// agent); only this goroutine pushes updates, so order is kept.
		s.queue.pushWait(queueItem{raw: upd})
		return
	}
	defer a.mu.Unlock()
	q, known := a.orphans[n.SessionID]
	if !known && len(a.orphans) >= maxOrphanSessions {
		a.log.Warn().Str("acp_session", n.SessionID).Msg("dropped a session/update for an unknown session")
		return
	}
	if len(q) >= maxOrphanUpdates {
		// Debug, not Warn: a flood for a closed session would flood the log.
		a.log.Debug().Str("acp_session", n.SessionID).Msg("dropped a session/update for a session not yet open")
		return
	}
	a.orphans[n.SessionID] = append(q, upd)
}

// routePermission turns a session/request_permission into a
// PermissionRequest event; the response is written when the user answers.
func (a *agentProc) routePermission(id, params json.RawMessage) {
	id = cloneRaw(id)
	var req struct {
		SessionID string          `json:"sessionId"`
		ToolCall  json.RawMessage `json:"toolCall"`
		Options   []struct {
			OptionID string `json:"optionId"`
			Name     string `json:"name"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(params, &req); err != nil {
		a.writeError(id, -32602, "invalid session/request_permission params: "+err.Error())
		return
	}
	tc, err := decodeToolCall(req.ToolCall, true)
	if err != nil {
		a.writeError(id, -32602, "invalid toolCall in session/request_permission: "+err.Error())
		return
	}
	opts := make([]backend.PermissionOption, 0, len(req.Options))
	for _, o := range req.Options {
		opts = append(opts, backend.PermissionOption{ID: o.OptionID, Name: o.Name, Kind: backend.PermissionOptionKind(o.Kind)})
	}
	a.mu.Lock()
	s := a.sessions[req.SessionID]
	if s == nil {
		a.mu.Unlock()
		a.writeError(id, -32602, "unknown session "+req.SessionID)
		return
	}
	// Queued under a.mu so it stays in order with the session's updates.
	s.addPermission(a, id, tc, opts)
	a.mu.Unlock()
}

// writePermissionOutcome answers a session/request_permission.
func (a *agentProc) writePermissionOutcome(id json.RawMessage, cancelled bool, optionID string) {
	outcome := map[string]any{"outcome": "cancelled"}
	if !cancelled {
		outcome = map[string]any{"outcome": "selected", "optionId": optionID}
	}
	a.writeMessage(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"outcome": outcome}})
}

func (a *agentProc) writeError(id json.RawMessage, code int, msg string) {
	a.writeMessage(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (a *agentProc) writeMessage(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		a.log.Error().Err(err).Msg("encoding a message for the agent")
		return
	}
	if _, err := a.stdin.Write(append(b, '\n')); err != nil && !a.isExited() {
		a.log.Warn().Err(err).Msg("writing to the agent")
	}
}

// register routes the updates of ACP session id to s, delivering any that
// arrived before.
func (a *agentProc) register(id string, s *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessions[id] = s
	for _, u := range a.orphans[id] {
		s.queue.push(queueItem{raw: u})
	}
	delete(a.orphans, id)
}

func (a *agentProc) unregister(id string, s *session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions[id] == s {
		delete(a.sessions, id)
	}
}

func (a *agentProc) session(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *agentProc) allSessions() []*session {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		out = append(out, s)
	}
	return out
}
