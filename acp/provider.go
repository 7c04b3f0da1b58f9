// Package acp connects the bridge to Agent Client Protocol agents that speak
// ACP over their stdio. It implements backend.Provider and backend.Session
// on top of github.com/coder/acp-go-sdk (the only package of the project
// that imports it) and provides the services ACP agents ask their client
// for: text file access confined to the session's working directory,
// terminals, and permission prompts.
//
// One agent process serves all sessions of a provider. It is started on
// first use, restarted on the next use after it dies, and killed as a whole
// process group on Close.
//
// session/update notifications and session/request_permission requests are
// read from the agent's raw output rather than through the SDK's typed
// handlers, so that ACP v2 kinds and `_` extensions survive (see
// DecodeUpdate) and so that a flood of updates can never overflow the SDK's
// bounded notification queue: they go to an unbounded per-session queue
// drained by one goroutine per session.
//
// For the same reason session/new, session/prompt, session/set_config_option
// and session/set_model are sent by this package itself (agentProc.call)
// and their results read raw: the SDK's typed results drop what its schema
// lacks (claude-code-acp's `models` in the session/new result), turn counts
// the agent did not send into zeros (the prompt result's `usage`), cannot
// tell an empty option list from none, and the SDK has no session/set_model.
// The SDK still serves the agent's requests to the client (fs, terminals)
// and sends initialize, session/set_mode, session/cancel and session/close.
package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/rs/zerolog"
)

// Config describes one ACP agent provider.
type Config struct {
	// ID is the provider id shown in the AHP root state.
	ID string
	// DisplayName is the provider's human-readable name.
	DisplayName string
	// Description is an optional longer description.
	Description string
	// Command is the agent command line, already split into arguments.
	Command []string
	// Env holds extra environment entries ("NAME=value") for the agent,
	// added to the bridge's own environment.
	Env []string
	// Dir is the agent process's working directory ("" = the bridge's).
	Dir string

	// StartTimeout bounds starting the agent and its initialize handshake.
	// Default 30s.
	StartTimeout time.Duration
	// CancelGrace is how long a cancelled turn may take to end before the
	// agent is considered stuck: the turn then ends as cancelled and the
	// agent process is killed and restarted on next use. Default 10s.
	CancelGrace time.Duration
	// CloseGrace is how long Close waits for the agent to exit after its
	// stdin is closed before signalling it. Default 3s.
	CloseGrace time.Duration
	// MaxLineBytes is the longest line accepted from the agent; longer
	// lines are dropped. Default 64 MiB.
	MaxLineBytes int
	// MaxReadBytes caps fs/read_text_file. Default 16 MiB.
	MaxReadBytes int64
	// ReadOnlyFiles refuses every fs/write_text_file (the bridge's
	// --read-only-files). It does not stop the agent process itself, or
	// the commands it runs, from writing.
	ReadOnlyFiles bool
	// CoalesceText merges consecutive text (or thought) chunks that queued
	// up while the sink was busy into one event (see coalescer). What
	// clients end up with is the same either way; with it, a flood costs
	// the bridge one envelope per drain instead of one per chunk. Off, every
	// chunk is passed on as its own event.
	CoalesceText bool

	// McpServers are the MCP servers configured for every session of the
	// agent (the bridge's per-provider `mcpServers` key). Info shows them,
	// and the bridge passes them, with those a session brings and as far
	// as the user keeps them enabled, in SessionOptions.McpServers: only
	// those reach session/new.
	McpServers []backend.McpServer

	// ProbeModels lets the bridge start the agent at start and open one
	// throwaway session to learn its models when none are known from an
	// earlier run (backend.ProviderInfo.ProbeModels).
	ProbeModels bool

	// ListAgentSessions lets the bridge start the agent only to list its
	// own sessions (backend.AgentSessions.ListsWithoutRunning); without it
	// they are listed only while the agent runs anyway.
	ListAgentSessions bool
	// HideAgentSessions never lists the agent's own sessions: SessionCaps
	// reports no list, whatever the agent advertised.
	HideAgentSessions bool

	// OnInfoChanged, if set, is called (from an internal goroutine; it must
	// not block) when Info's result changes, e.g. when the agent reports
	// its models.
	OnInfoChanged func()
}

func (c *Config) defaults() {
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 10 * time.Second
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = 3 * time.Second
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = 64 << 20
	}
	if c.MaxReadBytes <= 0 {
		c.MaxReadBytes = 16 << 20
	}
}

// Provider is a backend.Provider for one ACP stdio agent.
type Provider struct {
	cfg Config
	log zerolog.Logger

	// startMu serialises starting the agent; mu guards the fields below
	// and is never held while waiting on the agent.
	startMu  sync.Mutex
	mu       sync.Mutex
	proc     *agentProc
	closed   bool
	sessions map[*session]struct{}
	models   []backend.ModelInfo
	auth     backend.AuthInfo // what the agent said of signing in; see auth.go
	ops      procCounters     // guarded by mu; see ops.go
}

var _ backend.Provider = (*Provider)(nil)

// NewProvider returns a provider for cfg. The agent is not started until
// the first session is opened.
func NewProvider(cfg Config, log zerolog.Logger) *Provider {
	cfg.defaults()
	return &Provider{
		cfg:      cfg,
		log:      log.With().Str("provider", cfg.ID).Logger(),
		sessions: make(map[*session]struct{}),
	}
}

// Info describes the provider. Models are those of the agent's "model"
// config option as last reported by any session; Info never starts the agent.
func (p *Provider) Info() backend.ProviderInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return backend.ProviderInfo{
		ID:          p.cfg.ID,
		DisplayName: p.cfg.DisplayName,
		Description: p.cfg.Description,
		Models:      slices.Clone(p.models),
		McpServers:  slices.Clone(p.cfg.McpServers),
		Auth:        p.authInfoLocked(),
		ProbeModels: p.cfg.ProbeModels,
	}
}

// setModels records the models the agent offers.
func (p *Provider) setModels(opts []backend.ConfigOption) {
	var models []backend.ModelInfo
	found := false
	for _, o := range opts {
		if o.Category != "model" {
			continue
		}
		found = true
		for _, v := range o.Values {
			models = append(models, backend.ModelInfo{ID: v.ID, Name: v.Name})
		}
	}
	if !found {
		return
	}
	p.mu.Lock()
	changed := !slices.Equal(models, p.models)
	p.models = models
	p.mu.Unlock()
	if changed && p.cfg.OnInfoChanged != nil {
		p.cfg.OnInfoChanged()
	}
}

// ensureProc returns a running, initialized agent, starting one if
// needed (ensure, in ops.go, records failed starts).
func (p *Provider) ensureProc(ctx context.Context) (*agentProc, error) {
	p.startMu.Lock()
	defer p.startMu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("provider is closed")
	}
	cur := p.proc
	p.mu.Unlock()
	if cur != nil && !cur.isExited() {
		return cur, nil
	}
	if cur != nil {
		<-cur.done
	}

	a, err := startProc(p)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	if err := a.initialize(ictx); err != nil {
		timedOut := ictx.Err() != nil && ctx.Err() == nil
		a.kill("initialize failed")
		<-a.done
		if timedOut {
			msg := fmt.Sprintf("starting agent: it did not answer initialize within %s", p.cfg.StartTimeout)
			if tail := a.tail.String(); tail != "" {
				msg += "; last stderr lines:\n" + tail
			}
			return nil, errors.New(msg)
		}
		if a.exitErr != nil && !errors.Is(err, a.exitErr) {
			return nil, fmt.Errorf("starting agent: %w (%v)", err, a.exitErr)
		}
		return nil, fmt.Errorf("starting agent: %w", err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		a.stop(p.cfg.CloseGrace)
		return nil, errors.New("provider is closed")
	}
	p.proc = a
	p.ops.started(cur != nil)
	p.mu.Unlock()
	p.noteAuthMethods(authMethodsOf(a.authFull))
	a.log.Info().Strs("command", p.cfg.Command).Msg("agent started")
	return a, nil
}

// procExited is called once a's process has ended and its connection is
// down: every session on it learns that it is disconnected.
func (p *Provider) procExited(a *agentProc) {
	p.noteExit(a)
	for _, s := range a.allSessions() {
		s.agentExited(a)
	}
}

// OpenSession creates an ACP session (session/new) with the session's
// working directory, starting the agent if it is not running; with
// opts.Resume it continues that ACP session when the agent can (attach.go).
func (p *Provider) OpenSession(ctx context.Context, opts backend.SessionOptions, sink backend.Sink) (backend.Session, error) {
	s, err := newSession(p, opts, sink)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		s.queue.stop()
		return nil, errors.New("provider is closed")
	}
	p.sessions[s] = struct{}{}
	p.mu.Unlock()
	if err := s.attach(ctx, opts.Resume); err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

func (p *Provider) forget(s *session) {
	p.mu.Lock()
	delete(p.sessions, s)
	p.mu.Unlock()
}

// Close ends every session, closes the agent's stdin, waits CloseGrace for
// it to exit and then kills its process group.
func (p *Provider) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	sessions := make([]*session, 0, len(p.sessions))
	for s := range p.sessions {
		sessions = append(sessions, s)
	}
	p.mu.Unlock()

	for _, s := range sessions {
		s.shutdown()
	}
	// Wait for a start in progress to finish so its process is not missed.
	p.startMu.Lock()
	p.mu.Lock()
	a := p.proc
	p.proc = nil
	p.mu.Unlock()
	p.startMu.Unlock()
	if a != nil {
		stopped := make(chan struct{})
		go func() {
			a.stop(p.cfg.CloseGrace)
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			a.kill("killed on shutdown")
			<-stopped
		}
	}
	for _, s := range sessions {
		s.queue.stop()
	}
	return nil
}
