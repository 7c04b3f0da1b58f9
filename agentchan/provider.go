// Package agentchan drives an "agent-channel" backend: the `agent` channel of
// a workspace WebSocket (Aether's `GET /workspaces/{id}/ws`), on which the
// client sends prompts and answers and the server streams text, thinking,
// tool calls, questions, permission requests and the task's result.
//
// Provider implements backend.Provider with one socket per session (a
// workspace socket is one conversation). Frame decoding (DecodeFrame,
// ClientMessage) and the translation of frames into backend events are pure
// and separate from the socket handling, which answers pings, pings when
// idle, limits message size, and reconnects with exponential backoff.
package agentchan

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// TokenMode says how the token is presented on the WebSocket upgrade.
type TokenMode string

// Token modes.
const (
	// TokenQuery appends `?token=TOKEN` to the URL (the default).
	TokenQuery TokenMode = "query"
	// TokenSubprotocol sends `Sec-WebSocket-Protocol: Bearer, TOKEN`.
	TokenSubprotocol TokenMode = "subprotocol"
)

// Defaults for Config's zero values. They follow the documented server
// behaviour: pings every 45 s, closing after 120 s without pong, a 30 s write
// timeout and 1 MB messages.
const (
	DefaultDialTimeout    = 15 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
	DefaultPingInterval   = 30 * time.Second
	DefaultPongTimeout    = 90 * time.Second
	DefaultConnectWait    = 15 * time.Second
	DefaultBackoffInitial = 250 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
	DefaultMaxMessageSize = 1 << 20
)

// Config describes one agent-channel backend.
type Config struct {
	// ID names the provider in the AHP root state.
	ID string
	// DisplayName is shown to users; ID is used when empty.
	DisplayName string
	// Description is shown to users; a default naming the host is used when
	// empty.
	Description string
	// URL is the workspace socket, ws:// or wss:// (http:// and https:// are
	// accepted and converted), e.g. wss://api.example/workspaces/ws-1/ws.
	URL string
	// Token authenticates the upgrade; "" sends none.
	Token string
	// TokenMode says how Token is sent; "" means TokenQuery.
	TokenMode TokenMode
	// Models are the models the backend offers, shown in the root state.
	Models []backend.ModelInfo

	// DialTimeout bounds one connection attempt (TCP, TLS and upgrade).
	DialTimeout time.Duration
	// WriteTimeout bounds every write.
	WriteTimeout time.Duration
	// PingInterval is how often an idle connection is pinged.
	PingInterval time.Duration
	// PongTimeout is how long a connection may stay silent (no message, ping
	// or pong) before it is considered dead and re-established.
	PongTimeout time.Duration
	// ConnectWait is how long Prompt waits for a reconnection in progress.
	ConnectWait time.Duration
	// BackoffInitial and BackoffMax bound the reconnection delay, which
	// doubles after each failed attempt, with jitter.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// MaxMessageSize is the largest message accepted from the server.
	MaxMessageSize int64
}

// withDefaults fills in zero values.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.DialTimeout, DefaultDialTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.PingInterval, DefaultPingInterval)
	def(&c.PongTimeout, DefaultPongTimeout)
	def(&c.ConnectWait, DefaultConnectWait)
	def(&c.BackoffInitial, DefaultBackoffInitial)
	def(&c.BackoffMax, DefaultBackoffMax)
	if c.BackoffMax < c.BackoffInitial {
		c.BackoffMax = c.BackoffInitial
	}
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.TokenMode == "" {
		c.TokenMode = TokenQuery
	}
	if c.DisplayName == "" {
		c.DisplayName = c.ID
	}
	return c
}

// parseURL checks the socket URL and normalises its scheme.
func parseURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("no URL configured")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", err)
	}
	switch u.Scheme {
	case "ws", "wss":
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return nil, fmt.Errorf("URL scheme %q is not ws, wss, http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("URL %q has no host", redactURL(u))
	}
	return u, nil
}

// redactURL prints u without a token in its query.
func redactURL(u *url.URL) string {
	c := *u
	q := c.Query()
	if q.Has("token") {
		q.Set("token", "REDACTED")
		c.RawQuery = q.Encode()
	}
	c.User = nil
	return c.String()
}

// Provider is an agent-channel backend. It implements backend.Provider.
type Provider struct {
	cfg    Config
	url    *url.URL
	urlErr error
	log    zerolog.Logger

	mu       sync.Mutex
	sessions map[*session]struct{}
	closed   bool
}

var _ backend.Provider = (*Provider)(nil)

// NewProvider returns a provider for cfg. It does not connect; a bad URL is
// reported by OpenSession, so that configuration problems show up as the
// session's creation failure.
func NewProvider(cfg Config, log zerolog.Logger) *Provider {
	cfg = cfg.withDefaults()
	u, err := parseURL(cfg.URL)
	return &Provider{
		cfg:      cfg,
		url:      u,
		urlErr:   err,
		log:      log,
		sessions: map[*session]struct{}{},
	}
}

// Info describes the provider.
func (p *Provider) Info() backend.ProviderInfo {
	desc := p.cfg.Description
	if desc == "" {
		desc = "Agent-channel WebSocket backend"
		if p.url != nil {
			desc += " at " + p.url.Host
		}
	}
	return backend.ProviderInfo{
		ID:          p.cfg.ID,
		DisplayName: p.cfg.DisplayName,
		Description: desc,
		Models:      append([]backend.ModelInfo(nil), p.cfg.Models...),
	}
}

// OpenSession dials the workspace socket and returns a session on it. Events
// go to sink until the session is closed. With opts.Model set, a `settings`
// frame selects the model first.
func (p *Provider) OpenSession(ctx context.Context, opts backend.SessionOptions, sink backend.Sink) (backend.Session, error) {
	if p.urlErr != nil {
		return nil, fmt.Errorf("agent-channel backend %q: %w", p.cfg.ID, p.urlErr)
	}
	if sink == nil {
		return nil, errors.New("agent-channel OpenSession: nil sink")
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("agent-channel backend %q: provider is closed", p.cfg.ID)
	}
	s := newSession(p, opts, sink)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = s.Close(context.Background())
		return nil, fmt.Errorf("agent-channel backend %q: provider is closed", p.cfg.ID)
	}
	p.sessions[s] = struct{}{}
	p.mu.Unlock()
	// The agent-channel protocol has no way to give an agent MCP servers:
	// each one the session was to get says so in its state.
	for _, m := range opts.McpServers {
		sink.Event(backend.McpServerStatus{ID: m.ID, Status: backend.McpError,
			Message: "left out: the agent-channel protocol cannot give an agent MCP servers"})
	}
	return s, nil
}

// Close closes every session of the provider.
func (p *Provider) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	ss := make([]*session, 0, len(p.sessions))
	for s := range p.sessions {
		ss = append(ss, s)
	}
	p.mu.Unlock()
	var errs []error
	for _, s := range ss {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}

func (p *Provider) forget(s *session) {
	p.mu.Lock()
	delete(p.sessions, s)
	p.mu.Unlock()
}
