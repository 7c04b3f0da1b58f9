package agentchan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// ErrNotConnected is returned (wrapped) when a frame must be sent while the
// socket is down and being re-established.
var ErrNotConnected = errors.New("not connected to the agent-channel backend")

// ErrSessionClosed is returned (wrapped) by calls on a closed session.
var ErrSessionClosed = errors.New("agent-channel session is closed")

// maxAborted bounds how many aborted task ids are remembered to drop their
// late frames.
const maxAborted = 64

// session is one workspace socket and the conversation on it.
type session struct {
	p    *Provider
	cfg  Config
	log  zerolog.Logger
	sink backend.Sink

	// ctx lives until Close; it stops reconnection and dialling.
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{} // closed when the connection goroutine has returned

	// emitMu is held while one frame's events are delivered, so that Prompt
	// can wait for deliveries in flight before it returns.
	emitMu sync.Mutex

	mu        sync.Mutex
	conn      *websocket.Conn // nil while disconnected
	connected chan struct{}   // closed while conn is up; replaced when it drops
	lastErr   error           // why the last connection or attempt failed
	turn      *turn
	aborted   map[string]struct{}
	abortList []string
	provider  string // settings to restore after a reconnection
	model     string
	closed    bool
	turnSeq   int

	writeMu sync.Mutex // one writer at a time (gorilla's rule)
}

// turn is a running Prompt.
type turn struct {
	state *turnState
	done  chan turnOutcome // buffered; receives exactly one outcome
	once  sync.Once
}

type turnOutcome struct {
	result backend.TurnResult
	err    error
}

func newTurn(taskID string) *turn {
	return &turn{state: newTurnState(taskID), done: make(chan turnOutcome, 1)}
}

func (t *turn) finish(o turnOutcome) { t.once.Do(func() { t.done <- o }) }

func newSession(p *Provider, opts backend.SessionOptions, sink backend.Sink) *session {
	ctx, stop := context.WithCancel(context.Background())
	return &session{
		p:         p,
		cfg:       p.cfg,
		log:       p.log.With().Str("session", opts.SessionID).Logger(),
		sink:      sink,
		ctx:       ctx,
		stop:      stop,
		done:      make(chan struct{}),
		connected: make(chan struct{}),
		aborted:   map[string]struct{}{},
		model:     opts.Model,
	}
}

// start dials the socket and starts the connection goroutine.
func (s *session) start(ctx context.Context) error {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Close during the first dial also stops it.
		select {
		case <-s.ctx.Done():
			cancel()
		case <-dctx.Done():
		}
	}()
	conn, err := s.dial(dctx)
	if err != nil {
		s.stop()
		close(s.done)
		return fmt.Errorf("connect to agent-channel backend %q: %w", s.cfg.ID, err)
	}
	if err := s.attach(conn); err != nil {
		_ = conn.Close()
		s.stop()
		close(s.done)
		return fmt.Errorf("agent-channel backend %q: %w", s.cfg.ID, err)
	}
	go s.run(conn)
	return nil
}

// dial opens one connection, presenting the token as configured.
func (s *session) dial(ctx context.Context) (*websocket.Conn, error) {
	u := *s.p.url
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: s.cfg.DialTimeout,
	}
	if s.cfg.Token != "" {
		switch s.cfg.TokenMode {
		case TokenSubprotocol:
			d.Subprotocols = []string{"Bearer", s.cfg.Token}
		default:
			q := u.Query()
			q.Set("token", s.cfg.Token)
			u.RawQuery = q.Encode()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	conn, resp, err := d.DialContext(ctx, u.String(), nil)
	if err != nil {
		return nil, s.describeDialError(err, resp)
	}
	conn.SetReadLimit(s.cfg.MaxMessageSize)
	return conn, nil
}

// describeDialError says what the server answered, never the token.
func (s *session) describeDialError(err error, resp *http.Response) error {
	where := redactURL(s.p.url)
	msg := err.Error()
	if s.cfg.Token != "" {
		msg = strings.ReplaceAll(msg, s.cfg.Token, "REDACTED")
	}
	if resp == nil {
		return fmt.Errorf("dial %s: %s", where, msg)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text := strings.TrimSpace(string(body))
	if s.cfg.Token != "" {
		text = strings.ReplaceAll(text, s.cfg.Token, "REDACTED")
	}
	hint := ""
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		hint = " (check the token)"
	}
	if text != "" {
		return fmt.Errorf("dial %s: the server answered %s%s: %s", where, resp.Status, hint, text)
	}
	return fmt.Errorf("dial %s: the server answered %s%s", where, resp.Status, hint)
}

// attach makes conn the session's connection and restores the settings.
func (s *session) attach(conn *websocket.Conn) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSessionClosed
	}
	s.conn = conn
	provider, model := s.provider, s.model
	s.mu.Unlock()
	if provider != "" || model != "" {
		if err := s.writeTo(conn, SettingsMessage(provider, model)); err != nil {
			s.mu.Lock()
			s.conn = nil
			s.mu.Unlock()
			return fmt.Errorf("send settings: %w", err)
		}
	}
	s.mu.Lock()
	close(s.connected)
	s.mu.Unlock()
	s.log.Debug().Msg("agent-channel connected")
	return nil
}

// run owns the connection: it reads until the connection fails, then
// reconnects, until the session is closed.
func (s *session) run(conn *websocket.Conn) {
	defer close(s.done)
	for {
		err := s.readLoop(conn)
		_ = conn.Close()
		s.lost(err)
		if s.ctx.Err() != nil {
			return
		}
		conn = s.reconnect()
		if conn == nil {
			return
		}
	}
}

// errTooBig explains an oversize message.
type errTooBig struct{ limit int64 }

func (e errTooBig) Error() string {
	return fmt.Sprintf("the agent-channel backend sent a message larger than %d bytes", e.limit)
}

// readLoop reads frames until the connection fails, keeping it alive with
// pings while idle and declaring it dead after PongTimeout of silence.
func (s *session) readLoop(conn *websocket.Conn) error {
	var lastRead atomic.Int64
	alive := func() {
		now := time.Now()
		lastRead.Store(now.UnixNano())
		_ = conn.SetReadDeadline(now.Add(s.cfg.PongTimeout))
	}
	alive()
	conn.SetPongHandler(func(string) error { alive(); return nil })
	conn.SetPingHandler(func(data string) error {
		alive()
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(s.cfg.WriteTimeout))
		if err == websocket.ErrCloseSent {
			return nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})

	pingCtx, stopPing := context.WithCancel(s.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.pinger(pingCtx, conn, &lastRead)
	}()
	defer func() {
		stopPing()
		wg.Wait()
	}()

	for {
		typ, data, err := conn.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				s.log.Warn().Int64("limit", s.cfg.MaxMessageSize).Msg("agent-channel message too large; reconnecting")
				return errTooBig{limit: s.cfg.MaxMessageSize}
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("no answer from the agent-channel backend for %s", s.cfg.PongTimeout)
			}
			return err
		}
		alive()
		if typ != websocket.TextMessage {
			s.log.Debug().Int("type", typ).Msg("agent-channel: ignoring non-text message")
			continue
		}
		s.handle(data)
		// Time spent handling a frame is not silence of the server.
		alive()
	}
}

// pinger pings the server when nothing was read for a ping interval.
func (s *session) pinger(ctx context.Context, conn *websocket.Conn, lastRead *atomic.Int64) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if time.Since(time.Unix(0, lastRead.Load())) < s.cfg.PingInterval {
				continue
			}
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.cfg.WriteTimeout)); err != nil {
				s.log.Debug().Err(err).Msg("agent-channel ping failed")
				return
			}
		}
	}
}

// lost handles a dropped connection: a running turn ends with an error;
// otherwise the sink hears that the backend is disconnected.
func (s *session) lost(err error) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.mu.Lock()
	s.conn = nil
	s.connected = make(chan struct{})
	s.lastErr = err
	t := s.turn
	s.turn = nil
	closing := s.closed
	s.mu.Unlock()
	if closing {
		return
	}
	s.log.Warn().Err(err).Msg("agent-channel connection lost; reconnecting")
	if t != nil {
		t.finish(turnOutcome{err: fmt.Errorf("the connection to the agent-channel backend was lost during the turn: %w", err)})
		return
	}
	s.sink.Event(backend.Disconnected{Err: fmt.Errorf("the connection to the agent-channel backend was lost (reconnecting): %w", err)})
}

// reconnect dials with exponential backoff and jitter until it succeeds or
// the session is closed (then it returns nil).
func (s *session) reconnect() *websocket.Conn {
	for attempt := 0; ; attempt++ {
		delay := backoff(attempt, s.cfg.BackoffInitial, s.cfg.BackoffMax, rand.Float64())
		t := time.NewTimer(delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		conn, err := s.dial(s.ctx)
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			s.mu.Lock()
			s.lastErr = err
			s.mu.Unlock()
			s.log.Warn().Err(err).Int("attempt", attempt+1).Msg("agent-channel reconnection failed")
			continue
		}
		if err := s.attach(conn); err != nil {
			_ = conn.Close()
			if errors.Is(err, ErrSessionClosed) {
				return nil
			}
			s.mu.Lock()
			s.lastErr = err
			s.mu.Unlock()
			continue
		}
		s.log.Info().Int("attempt", attempt+1).Msg("agent-channel reconnected")
		return conn
	}
}

// backoff is the delay before reconnection attempt n (0-based): initial
// doubled n times, capped at max, then jittered into [d/2, d) by r in [0,1).
func backoff(n int, initial, max time.Duration, r float64) time.Duration {
	d := initial
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	if d > max || d <= 0 {
		d = max
	}
	half := d / 2
	return half + time.Duration(r*float64(d-half))
}

// handle decodes one message and delivers what it means for the turn.
func (s *session) handle(data []byte) {
	f, err := DecodeFrame(data)
	if err != nil {
		s.log.Warn().Err(err).Int("bytes", len(data)).Msg("agent-channel: ignoring undecodable message")
		return
	}
	if f.Channel != ChannelAgent {
		s.log.Debug().Str("channel", f.Channel).Str("type", f.Type).Msg("agent-channel: ignoring frame of another channel")
		return
	}
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.mu.Lock()
	t := s.turn
	if f.TaskID != "" && (t == nil || f.TaskID != t.state.taskID) {
		_, late := s.aborted[f.TaskID]
		s.mu.Unlock()
		if late {
			s.log.Debug().Str("task", f.TaskID).Str("type", f.Type).Msg("agent-channel: dropping late frame of an aborted task")
		} else {
			s.log.Debug().Str("task", f.TaskID).Str("type", f.Type).Msg("agent-channel: dropping frame of a task that is not running")
		}
		return
	}
	if t == nil {
		s.mu.Unlock()
		if f.Type == TypeError {
			s.log.Warn().Str("error", f.Message).Msg("agent-channel: the backend reported an error outside a turn")
			return
		}
		s.log.Debug().Str("type", f.Type).Msg("agent-channel: dropping frame received outside a turn")
		return
	}
	st := t.state.translate(f)
	if st.End != nil {
		s.turn = nil
	}
	s.mu.Unlock()
	if len(st.Events) == 0 && st.End == nil {
		s.log.Debug().Str("type", f.Type).Msg("agent-channel: ignoring unknown frame type")
	}
	for _, ev := range st.Events {
		switch e := ev.(type) {
		case backend.PermissionRequest:
			e.Respond = s.permissionResponder(t, st.RequestID, e.ToolCall.ID)
			ev = e
		case backend.Question:
			e.Respond = s.questionResponder(t, st.AnswerTo)
			ev = e
		}
		s.sink.Event(ev)
	}
	if st.End != nil {
		if st.End.Failed {
			t.finish(turnOutcome{err: fmt.Errorf("the agent-channel backend reported an error: %s", st.End.Err)})
		} else {
			t.finish(turnOutcome{result: backend.TurnResult{StopReason: backend.StopEndTurn, Summary: st.End.Summary}})
		}
	}
}

// permissionResponder answers a permission request once, while its turn
// runs.
func (s *session) permissionResponder(t *turn, requestID, callID string) func(backend.PermissionOutcome) {
	var once sync.Once
	return func(o backend.PermissionOutcome) {
		once.Do(func() {
			approve := !o.Cancelled && o.OptionID == OptionApprove
			s.mu.Lock()
			active := s.turn == t
			if active && !approve {
				t.state.rejected(callID)
			}
			s.mu.Unlock()
			if !active {
				s.log.Debug().Str("request", requestID).Msg("agent-channel: permission answered after its turn ended; not sent")
				return
			}
			msg := RejectMessage(requestID)
			if approve {
				msg = ApproveMessage(requestID)
			}
			if err := s.send(msg); err != nil {
				s.log.Warn().Err(err).Str("request", requestID).Msg("agent-channel: could not answer the permission request")
			}
		})
	}
}

// questionResponder answers a question once, while its turn runs: with a
// tool_response to the tool call that asked, or with a follow-up prompt.
func (s *session) questionResponder(t *turn, toolCallID string) func([]string, bool) {
	var once sync.Once
	return func(answers []string, declined bool) {
		once.Do(func() {
			s.mu.Lock()
			active := s.turn == t
			s.mu.Unlock()
			if !active {
				s.log.Debug().Msg("agent-channel: question answered after its turn ended; not sent")
				return
			}
			text := strings.Join(answers, "\n")
			if declined {
				text = DeclinedAnswer
			}
			msg := PromptMessage(text, t.state.taskID)
			if toolCallID != "" {
				msg = ToolResponseMessage(toolCallID, text)
			}
			if err := s.send(msg); err != nil {
				s.log.Warn().Err(err).Msg("agent-channel: could not answer the question")
			}
		})
	}
}

// send writes msg on the current connection.
func (s *session) send(msg ClientMessage) error {
	s.mu.Lock()
	conn, closed := s.conn, s.closed
	s.mu.Unlock()
	if closed {
		return ErrSessionClosed
	}
	if conn == nil {
		return ErrNotConnected
	}
	return s.writeTo(conn, msg)
}

func (s *session) writeTo(conn *websocket.Conn, msg ClientMessage) error {
	b, err := msg.Encode()
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)); err != nil {
		return fmt.Errorf("write agent-channel %q frame: %w", msg.Type, err)
	}
	if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
		return fmt.Errorf("write agent-channel %q frame: %w", msg.Type, err)
	}
	return nil
}

// waitConnected waits for a reconnection in progress, up to ConnectWait.
func (s *session) waitConnected(ctx context.Context) error {
	s.mu.Lock()
	ch, closed, lastErr := s.connected, s.closed, s.lastErr
	s.mu.Unlock()
	if closed {
		return ErrSessionClosed
	}
	select {
	case <-ch:
		return nil
	default:
	}
	t := time.NewTimer(s.cfg.ConnectWait)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return ErrSessionClosed
	case <-t.C:
		s.mu.Lock()
		lastErr = s.lastErr
		s.mu.Unlock()
		if lastErr != nil {
			return fmt.Errorf("%w (still reconnecting after %s; last error: %w)", ErrNotConnected, s.cfg.ConnectWait, lastErr)
		}
		return fmt.Errorf("%w (still reconnecting after %s)", ErrNotConnected, s.cfg.ConnectWait)
	}
}

// Prompt sends the prompt as a task whose id is the turn id and waits for
// the task's `result` (StopEndTurn), `error` (an error), a Cancel
// (StopCancelled) or the loss of the connection (an error).
func (s *session) Prompt(ctx context.Context, p backend.Prompt) (backend.TurnResult, error) {
	if err := s.waitConnected(ctx); err != nil {
		return backend.TurnResult{}, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return backend.TurnResult{}, ErrSessionClosed
	}
	if s.turn != nil {
		s.mu.Unlock()
		return backend.TurnResult{}, errors.New("agent-channel session: a turn is already running")
	}
	s.turnSeq++
	id := p.TurnID
	if id == "" {
		id = fmt.Sprintf("turn-%d", s.turnSeq)
	}
	t := newTurn(id)
	s.turn = t
	s.mu.Unlock()

	if err := s.send(PromptMessage(PromptText(p), id)); err != nil {
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		s.mu.Unlock()
		return backend.TurnResult{}, fmt.Errorf("send the prompt to the agent-channel backend: %w", err)
	}

	var o turnOutcome
	select {
	case o = <-t.done:
	case <-ctx.Done():
		if err := s.abort(t); err != nil {
			s.log.Warn().Err(err).Msg("agent-channel: could not abort the task")
		}
		o = <-t.done
		if o.result.StopReason == backend.StopCancelled {
			o.err = fmt.Errorf("agent-channel turn stopped: %w", ctx.Err())
		}
	}
	// Wait for a frame whose events are being delivered right now.
	s.emitMu.Lock()
	s.emitMu.Unlock() //nolint:staticcheck // an intentional barrier
	return o.result, o.err
}

// Cancel aborts the running task and ends the turn at once as cancelled;
// frames the server still sends for the task are dropped.
func (s *session) Cancel(ctx context.Context) error {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	if err := s.abort(t); err != nil && !errors.Is(err, ErrNotConnected) {
		s.log.Warn().Err(err).Msg("agent-channel: could not send abort; the turn is ended locally")
	}
	return nil
}

// abort ends turn t as cancelled and tells the server to stop the task.
func (s *session) abort(t *turn) error {
	s.mu.Lock()
	if s.turn != t {
		s.mu.Unlock()
		return nil
	}
	s.turn = nil
	id := t.state.taskID
	s.aborted[id] = struct{}{}
	s.abortList = append(s.abortList, id)
	if len(s.abortList) > maxAborted {
		delete(s.aborted, s.abortList[0])
		s.abortList = s.abortList[1:]
	}
	s.mu.Unlock()
	t.finish(turnOutcome{result: backend.TurnResult{StopReason: backend.StopCancelled}})
	return s.send(AbortMessage(id))
}

// SetConfig sends `settings`: key "model" or "provider".
func (s *session) SetConfig(ctx context.Context, key, value string) error {
	if value == "" {
		return fmt.Errorf("agent-channel setting %q: empty value", key)
	}
	var msg ClientMessage
	s.mu.Lock()
	switch key {
	case "model":
		s.model = value
		msg = SettingsMessage("", value)
	case "provider":
		s.provider = value
		msg = SettingsMessage(value, "")
	default:
		s.mu.Unlock()
		return fmt.Errorf("agent-channel backend has no setting %q (only model and provider)", key)
	}
	s.mu.Unlock()
	if err := s.send(msg); err != nil {
		return fmt.Errorf("change agent-channel setting %q: %w", key, err)
	}
	return nil
}

// Close ends a running turn with an error, closes the socket and stops
// reconnection. It waits for the connection goroutine, or for ctx.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.wait(ctx)
	}
	s.closed = true
	conn := s.conn
	t := s.turn
	s.turn = nil
	s.mu.Unlock()
	s.p.forget(s)
	if t != nil {
		t.finish(turnOutcome{err: ErrSessionClosed})
	}
	s.stop()
	if conn != nil {
		s.writeMu.Lock()
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, "session closed"),
			time.Now().Add(time.Second))
		s.writeMu.Unlock()
		_ = conn.Close()
	}
	return s.wait(ctx)
}

func (s *session) wait(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close agent-channel session: %w", ctx.Err())
	}
}
