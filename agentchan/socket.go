package agentchan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// ErrNotConnected is returned (wrapped) when a frame must be sent while the
// socket is down and being re-established.
var ErrNotConnected = errors.New("not connected to the agent-channel backend")

// ErrSessionClosed is returned (wrapped) by calls on a closed session.
var ErrSessionClosed = errors.New("agent-channel session is closed")

// socketEvents is what a socket tells its owner. The socket calls these
// from its run goroutine, one at a time, without holding its own lock, so
// they may call the socket's send.
type socketEvents struct {
	// greeting returns the frames to send on every new connection before
	// it counts as connected (the settings to restore).
	greeting func() []ClientMessage
	// frame receives each text frame read.
	frame func(data []byte)
	// lost is told why a connection ended; the socket is reconnecting,
	// unless it is being closed.
	lost func(err error)
}

// socket is one agent-channel WebSocket kept up for a session: it dials,
// reads frames and hands them to its owner, pings the server while the
// connection is idle, and reconnects with backoff when it drops, until
// close.
//
// Goroutines: open starts run, which reads, reconnects and reads again
// until close cancels ctx; readLoop starts a pinger per connection and
// stops it before returning. close waits for run.
//
// Lock discipline: mu guards conn, connected, lastErr and closed; it is
// held only to read or write them. writeMu orders writers (gorilla's rule:
// one at a time) and is held across a write.
type socket struct {
	url *url.URL
	cfg Config
	log zerolog.Logger
	on  socketEvents

	ctx  context.Context // cancelled by close: stops dialling and reconnecting
	stop context.CancelFunc
	done chan struct{} // closed when run has returned (or open failed)

	mu        sync.Mutex
	conn      *websocket.Conn // nil while disconnected
	connected chan struct{}   // closed while conn is up; replaced when it drops
	lastErr   error           // why the last connection or attempt failed
	closed    bool

	writeMu sync.Mutex
}

func newSocket(u *url.URL, cfg Config, log zerolog.Logger, on socketEvents) *socket {
	ctx, stop := context.WithCancel(context.Background())
	return &socket{
		url: u, cfg: cfg, log: log, on: on,
		ctx: ctx, stop: stop, done: make(chan struct{}),
		connected: make(chan struct{}),
	}
}

// open dials the first connection, then leaves it to run. An error means
// the socket is finished: there is no reconnecting from a failed open.
func (s *socket) open(ctx context.Context) error {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// close during the first dial stops it too.
	stopWatch := context.AfterFunc(s.ctx, cancel)
	defer stopWatch()
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
func (s *socket) dial(ctx context.Context) (*websocket.Conn, error) {
	u := *s.url
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
func (s *socket) describeDialError(err error, resp *http.Response) error {
	where := redactURL(s.url)
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

// attach makes conn the current connection once the greeting is sent.
func (s *socket) attach(conn *websocket.Conn) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSessionClosed
	}
	s.conn = conn
	s.mu.Unlock()
	for _, msg := range s.on.greeting() {
		if err := s.writeTo(conn, msg); err != nil {
			s.mu.Lock()
			s.conn = nil
			s.mu.Unlock()
			return fmt.Errorf("send %s: %w", msg.Type, err)
		}
	}
	s.mu.Lock()
	close(s.connected)
	s.mu.Unlock()
	s.log.Debug().Msg("agent-channel connected")
	return nil
}

// run owns the connection: it reads until the connection fails, then
// reconnects, until the socket is closed.
func (s *socket) run(conn *websocket.Conn) {
	defer close(s.done)
	for {
		err := s.readLoop(conn)
		_ = conn.Close()
		s.mu.Lock()
		s.conn = nil
		s.connected = make(chan struct{})
		s.lastErr = err
		s.mu.Unlock()
		s.on.lost(err)
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
func (s *socket) readLoop(conn *websocket.Conn) error {
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
		s.on.frame(data)
		// Time spent handling a frame is not silence of the server.
		alive()
	}
}

// pinger pings the server when nothing was read for a ping interval.
func (s *socket) pinger(ctx context.Context, conn *websocket.Conn, lastRead *atomic.Int64) {
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

// reconnect dials with exponential backoff and jitter until it succeeds or
// the socket is closed (then it returns nil).
func (s *socket) reconnect() *websocket.Conn {
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
			s.setLastErr(err)
			s.log.Warn().Err(err).Int("attempt", attempt+1).Msg("agent-channel reconnection failed")
			continue
		}
		if err := s.attach(conn); err != nil {
			_ = conn.Close()
			if errors.Is(err, ErrSessionClosed) {
				return nil
			}
			s.setLastErr(err)
			continue
		}
		s.log.Info().Int("attempt", attempt+1).Msg("agent-channel reconnected")
		return conn
	}
}

func (s *socket) setLastErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
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

// send writes msg on the current connection.
func (s *socket) send(msg ClientMessage) error {
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

func (s *socket) writeTo(conn *websocket.Conn, msg ClientMessage) error {
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
func (s *socket) waitConnected(ctx context.Context) error {
	s.mu.Lock()
	ch, closed := s.connected, s.closed
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
		lastErr := s.lastErr
		s.mu.Unlock()
		if lastErr != nil {
			return fmt.Errorf("%w (still reconnecting after %s; last error: %w)", ErrNotConnected, s.cfg.ConnectWait, lastErr)
		}
		return fmt.Errorf("%w (still reconnecting after %s)", ErrNotConnected, s.cfg.ConnectWait)
	}
}

// close says goodbye to the server, closes the connection, stops
// reconnecting and waits for run to return, or for ctx.
func (s *socket) close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.wait(ctx)
	}
	s.closed = true
	conn := s.conn
	s.mu.Unlock()
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

func (s *socket) wait(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close agent-channel session: %w", ctx.Err())
	}
}
