// Package ws serves AHP over WebSocket: an http.Handler that checks the
// access token and the browser Origin before upgrading, then hands each
// connection (one JSON-RPC message per text frame) to a transport.Server.
package ws

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
	"github.com/ahp-bridge/ahp-bridge/logfield"
)

// Defaults used when Options leaves a field zero.
const (
	DefaultMaxMessageSize = 4 << 20
	DefaultWriteTimeout   = 10 * time.Second
	DefaultPingInterval   = 30 * time.Second
)

// Options configures a Handler.
type Options struct {
	// Token, when non-empty, must be presented as the `tkn` query parameter
	// or an `Authorization: Bearer TOKEN` header; otherwise the upgrade is
	// answered 401. Empty disables the check (the `--no-token` mode).
	Token string
	// AllowedOrigins lists the browser origins (scheme://host[:port]) that
	// may connect. A request without an Origin header (a non-browser client)
	// is always allowed; any other Origin not listed is answered 403.
	AllowedOrigins []string
	// MaxMessageSize is the largest accepted frame in bytes (default 4 MiB).
	// A larger frame closes the connection.
	MaxMessageSize int64
	// WriteTimeout bounds a single frame write (default 10s); a peer that
	// does not drain its socket within it is disconnected.
	WriteTimeout time.Duration
	// PingInterval is how often WebSocket pings are sent to keep
	// intermediaries from timing out an idle connection (default 30s;
	// negative disables). A peer that does not answer within two intervals
	// is disconnected.
	PingInterval time.Duration
	// Logger receives connection-level events.
	Logger zerolog.Logger
}

// readBufferSize is the read buffer of each accepted connection.
const readBufferSize = 1 << 10

// Handler is the http.Handler serving AHP WebSocket connections.
type Handler struct {
	srv      transport.Server
	opts     Options
	origins  map[string]struct{}
	upgrader websocket.Upgrader

	// ctx is cancelled by Close so ServeConn calls end with the handler.
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // guards closed and wg.Add against Close
	closed bool
	wg     sync.WaitGroup
}

// NewHandler returns a Handler that serves every accepted connection with
// srv.ServeConn.
func NewHandler(srv transport.Server, opts Options) *Handler {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.PingInterval == 0 {
		opts.PingInterval = DefaultPingInterval
	}
	h := &Handler{srv: srv, opts: opts, origins: make(map[string]struct{})}
	for _, o := range opts.AllowedOrigins {
		if n, ok := normalizeOrigin(o); ok {
			h.origins[n] = struct{}{}
		}
	}
	h.upgrader = websocket.Upgrader{
		// Idle connections must be cheap (docs/performance.md): the read
		// buffer, held for the connection's lifetime, is 1 KiB rather
		// than the HTTP server's 4 KiB one (which gorilla would reuse with
		// ReadBufferSize 0, and which becomes garbage instead): what
		// clients send is small requests, and a larger message is read
		// past the buffer, straight into the message. Write buffers are
		// borrowed from a pool for each message instead of being held.
		ReadBufferSize:  readBufferSize,
		WriteBufferSize: 32 << 10,
		WriteBufferPool: &sync.Pool{},
		// The Origin was already checked in ServeHTTP, before the upgrade.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// ServeHTTP authenticates the request, upgrades it and serves the
// connection until it ends.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := logfield.Str(h.opts.Logger, "remote", r.RemoteAddr)
	if !h.tokenOK(r) {
		log.Warn().Msg("refused WebSocket connection: missing or wrong token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="ahp"`)
		http.Error(w, "unauthorized: a valid token is required (tkn query parameter or Authorization: Bearer)", http.StatusUnauthorized)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !h.originOK(origin) {
		log.Warn().Str("origin", origin).Msg("refused WebSocket connection from a browser origin that is not allowed")
		http.Error(w, "forbidden: origin not allowed", http.StatusForbidden)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.Error(w, "this endpoint speaks AHP over WebSocket; send a WebSocket upgrade request", http.StatusUpgradeRequired)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
		return
	}
	h.wg.Add(1)
	h.mu.Unlock()
	wsc, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		h.wg.Done()
		// Upgrade has already answered the request with an HTTP error.
		log.Warn().Err(err).Msg("WebSocket upgrade failed")
		return
	}
	copts := h.opts
	copts.Logger = log
	c := newConn(wsc, copts)
	// Server frames are not masked (RFC 6455 §5.1), which is what
	// WriteMessages writes; on anything but a plain TCP socket (a TLS
	// stream would not write a batch in one call) it is not used.
	c.tcp, _ = wsc.NetConn().(*net.TCPConn)
	log.Debug().Msg("WebSocket connection accepted")
	// Serve the connection from a goroutine of our own and let net/http's
	// request goroutine end: it would otherwise keep the request, the
	// response and their buffers (several KiB) alive for the whole life of
	// the connection, which is most of what an idle client costs.
	remote := r.RemoteAddr
	go func() {
		defer h.wg.Done()
		defer c.Close()
		if err := h.srv.ServeConn(h.ctx, c); err != nil && !errors.Is(err, context.Canceled) {
			h.opts.Logger.Debug().Str("remote", remote).Err(err).Msg("WebSocket connection ended")
		}
	}()
}

// Close stops every connection served by h and waits for them to end.
// Requests arriving afterwards are refused.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Authorized reports whether r presents the connection token (or no token
// is required), so that other endpoints served beside the WebSocket one
// (metrics) can ask for the same credential.
func (h *Handler) Authorized(r *http.Request) bool { return h.tokenOK(r) }

func (h *Handler) tokenOK(r *http.Request) bool {
	if h.opts.Token == "" {
		return true
	}
	want := []byte(h.opts.Token)
	if got := r.URL.Query().Get("tkn"); got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 {
		return true
	}
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) > len(prefix) && strings.EqualFold(auth[:len(prefix)], prefix) {
		got := strings.TrimSpace(auth[len(prefix):])
		if subtle.ConstantTimeCompare([]byte(got), want) == 1 {
			return true
		}
	}
	return false
}

func (h *Handler) originOK(origin string) bool {
	n, ok := normalizeOrigin(origin)
	if !ok {
		return false
	}
	_, allowed := h.origins[n]
	return allowed
}

// normalizeOrigin lower-cases scheme and host and drops default ports so
// that configured and presented origins compare reliably.
func normalizeOrigin(o string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = host + ":" + port
	}
	return scheme + "://" + host, true
}

// Conn adapts a gorilla WebSocket connection to transport.Conn.
type Conn struct {
	ws   *websocket.Conn
	opts Options
	// tcp is the socket under an accepted (server-side) connection, or
	// nil; WriteMessages writes whole batches of frames to it itself.
	tcp *net.TCPConn
	// bufs and hdrs are WriteMessages' scratch space, used only by the
	// writing goroutine and dropped after a large batch.
	bufs net.Buffers
	hdrs []byte

	closeOnce sync.Once
	done      chan struct{}

	// Keep-alive pings run on a timer rather than a goroutine per
	// connection. pingMu orders a ping against Close.
	pingMu      sync.Mutex
	pingTimer   *time.Timer
	pingStopped bool
}

// NewConn wraps an already-established WebSocket connection (client or
// server side) as a transport.Conn. Handler uses it for accepted
// connections; clients and tests may use it for dialled ones.
func NewConn(wsc *websocket.Conn, opts Options) *Conn {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	return newConn(wsc, opts)
}

func newConn(wsc *websocket.Conn, opts Options) *Conn {
	c := &Conn{ws: wsc, opts: opts, done: make(chan struct{})}
	wsc.SetReadLimit(opts.MaxMessageSize)
	if opts.PingInterval > 0 {
		deadline := func() time.Time { return time.Now().Add(2 * opts.PingInterval) }
		_ = wsc.SetReadDeadline(deadline())
		wsc.SetPongHandler(func(string) error { return wsc.SetReadDeadline(deadline()) })
		c.pingMu.Lock()
		c.pingTimer = time.AfterFunc(opts.PingInterval, c.ping)
		c.pingMu.Unlock()
	}
	return c
}

// ping sends one keep-alive ping and schedules the next, until Close or
// a failed write.
func (c *Conn) ping() {
	c.pingMu.Lock()
	defer c.pingMu.Unlock()
	if c.pingStopped {
		return
	}
	if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.opts.WriteTimeout)); err != nil {
		return
	}
	c.pingTimer.Reset(c.opts.PingInterval)
}

// ReadMessage returns the payload of the next data frame. Text and binary
// frames are both accepted; AHP peers send text. A peer that closes the
// socket cleanly ends the stream with io.EOF, as transport.Conn promises;
// see cleanClose.
func (c *Conn) ReadMessage() ([]byte, error) {
	for {
		typ, msg, err := c.ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && cleanClose(ce.Code) {
				c.opts.Logger.Debug().Int("code", ce.Code).Str("text", ce.Text).Msg("the WebSocket peer closed the connection")
				return nil, io.EOF
			}
			if errors.Is(err, websocket.ErrReadLimit) {
				return nil, fmt.Errorf("ws: frame larger than %d bytes: %w", c.opts.MaxMessageSize, err)
			}
			return nil, err
		}
		if typ == websocket.TextMessage || typ == websocket.BinaryMessage {
			return msg, nil
		}
	}
}

// cleanClose reports whether a close code means the peer meant to leave:
// 1000 (normal closure), 1001 (going away: a page unloaded, a server
// shutting down) and 1005 (no status: what a browser's close() without
// arguments sends). Any other code, and a socket dropped without a close
// frame, stays an error.
func cleanClose(code int) bool {
	switch code {
	case websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived:
		return true
	}
	return false
}

// WriteMessage sends msg as one text frame, giving up after WriteTimeout.
func (c *Conn) WriteMessage(msg []byte) error {
	if err := c.ws.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
		return err
	}
	return c.ws.WriteMessage(websocket.TextMessage, msg)
}

// WriteMessages sends msgs as consecutive text frames with one write to
// the socket (transport.BatchWriter), where WriteMessage costs a write
// each. The frames are those gorilla/websocket would write for an
// uncompressed server connection; they go out in one writev(2), which the
// runtime issues under the socket's write lock, so a keep-alive ping or a
// close frame written by gorilla from another goroutine lands before or
// after the batch, never inside it. Client-side connections, and
// accepted ones not on a plain TCP socket, write the frames one by one.
func (c *Conn) WriteMessages(msgs [][]byte) error {
	if c.tcp == nil || len(msgs) == 1 {
		for _, m := range msgs {
			if err := c.WriteMessage(m); err != nil {
				return err
			}
		}
		return nil
	}
	bufs, hdrs := c.bufs[:0], c.hdrs[:0]
	if cap(hdrs) < maxFrameHeader*len(msgs) {
		// Not grown by append below: bufs points into it.
		hdrs = make([]byte, 0, maxFrameHeader*len(msgs))
	}
	for _, m := range msgs {
		start := len(hdrs)
		hdrs = appendFrameHeader(hdrs, len(m))
		bufs = append(bufs, hdrs[start:len(hdrs):len(hdrs)], m)
	}
	all := bufs // WriteTo consumes bufs; all keeps the scratch for reuse
	if err := c.tcp.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
		return err
	}
	_, err := bufs.WriteTo(c.tcp)
	clear(all) // the messages belong to the caller
	if len(msgs) <= 64 {
		c.bufs, c.hdrs = all[:0], hdrs[:0]
	} else {
		c.bufs, c.hdrs = nil, nil // an idle connection keeps no large scratch
	}
	return err
}

// maxFrameHeader is the longest header of an unmasked frame.
const maxFrameHeader = 10

// appendFrameHeader appends the header of a final, unmasked text frame of
// n payload bytes (RFC 6455 §5.2).
func appendFrameHeader(b []byte, n int) []byte {
	const finText = 0x80 | websocket.TextMessage
	switch {
	case n < 126:
		return append(b, finText, byte(n))
	case n <= 0xffff:
		return append(b, finText, 126, byte(n>>8), byte(n))
	default:
		return append(b, finText, 127, byte(uint64(n)>>56), byte(uint64(n)>>48), byte(uint64(n)>>40), byte(uint64(n)>>32),
			byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// WriteMessageFrom sends one text message produced by write, in frames
// as it is produced (transport.StreamWriter). The write timeout applies to
// each piece rather than to the whole message, so a large message to a
// peer that keeps reading is never cut short, while a peer that stops
// reading is still given up on after WriteTimeout.
func (c *Conn) WriteMessageFrom(write func(w io.Writer) error) error {
	if err := c.ws.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout)); err != nil {
		return err
	}
	mw, err := c.ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	if err := write(deadlineWriter{c: c, w: mw}); err != nil {
		// Closing mw would send what was written as a complete message;
		// the caller closes the connection instead.
		return err
	}
	return mw.Close()
}

// deadlineWriter moves the write deadline forward before each piece.
type deadlineWriter struct {
	c *Conn
	w io.Writer
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	if err := d.c.ws.SetWriteDeadline(time.Now().Add(d.c.opts.WriteTimeout)); err != nil {
		return 0, err
	}
	return d.w.Write(p)
}

// RemoteAddr is the peer's network address (shown to operators).
func (c *Conn) RemoteAddr() net.Addr { return c.ws.RemoteAddr() }

// Close sends a best-effort close frame and closes the socket. It is safe
// to call more than once and from any goroutine.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		err = c.ws.Close()
		c.pingMu.Lock()
		c.pingStopped = true
		if c.pingTimer != nil {
			c.pingTimer.Stop()
		}
		c.pingMu.Unlock()
	})
	return err
}

var (
	_ transport.Conn         = (*Conn)(nil)
	_ transport.StreamWriter = (*Conn)(nil)
	_ transport.BatchWriter  = (*Conn)(nil)
)
