package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/agentchan"
	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/stdio"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/ws"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/bridge"
	"github.com/ahp-bridge/ahp-bridge/mapping"
	"github.com/ahp-bridge/ahp-bridge/ops"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// shutdownGrace is how long agents get to exit after their stdin closes.
const shutdownGrace = 3 * time.Second

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, fs, err := parseServe(args)
	if err != nil {
		var ue *usageError
		if errors.Is(err, flag.ErrHelp) || errors.As(err, &ue) {
			return parseProblem("serve", serveUsage, fs, err, stdout, stderr)
		}
		fmt.Fprintf(stderr, "ahp-bridge serve: %v\n", err)
		return exitError
	}
	// The status page shows the last warnings and errors logged.
	errs := ops.NewErrorLog(maxStatusErrors)
	log, err := newLogger(cfg, stderr, errs)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge serve: %v\n", err)
		return exitUsage
	}
	srv, err := newServer(cfg, log, errs)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge serve: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitError
	}
	defer srv.close()
	stopReloads := srv.reloadOnHangup(args)
	defer stopReloads()

	if cfg.Stdio {
		err = srv.serveStdio(ctx, stdin, stdout)
	} else {
		err = srv.serveWS(ctx, stdout)
	}
	if err != nil {
		log.Error().Err(err).Msg("serve failed")
		return exitError
	}
	return exitOK
}

// maxStatusErrors is how many of the last warnings and errors the status
// page shows.
const maxStatusErrors = 20

// server is one running bridge: host, bridge and providers, plus the
// listener or pipes it serves and its ops endpoints.
type server struct {
	cfg      Config
	log      zerolog.Logger
	host     *host.Host
	bridge   *bridge.Bridge
	wireLog  *wireLogger
	token    string
	ready    chan string // receives the READY URL once listening (tests, demo)
	listener net.Listener

	// providers are the running providers by id, with the settings they
	// were built from, so that a reload keeps the unchanged ones. Only
	// newServer and the reload goroutine touch it, one after the other.
	providers map[string]builtProvider
	order     []string // the providers' ids in the order offered
	// The ops endpoints: health (listening says whether the AHP side
	// serves), metrics in a registry of this server's own, the status page.
	ops       *ops.Endpoints
	listening *ops.Flag
	registry  *prometheus.Registry
	metrics   *ops.Metrics
	// storeMetrics is metrics once made: the host's store writes start
	// before the ops endpoints exist.
	storeMetrics atomic.Pointer[ops.Metrics]

	// state keeps the sessions (nil under --state none); closed after the
	// host.
	state *store.SQLite
}

// newServer builds a bridge for cfg. errs, when not nil, is the log of
// recent errors the status page shows.
func newServer(cfg Config, log zerolog.Logger, errs *ops.ErrorLog) (srv *server, err error) {
	token, err := resolveToken(cfg)
	if err != nil {
		return nil, err
	}
	built, err := buildProviders(cfg, log)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: log, token: token, ready: make(chan string, 1), providers: map[string]builtProvider{}}
	if s.state, err = openStateStore(cfg, log); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && s.state != nil {
			_ = s.state.Close()
		}
	}()
	providers := make([]backend.Provider, 0, len(built))
	for _, bp := range built {
		s.providers[bp.id] = bp
		s.order = append(s.order, bp.id)
		providers = append(providers, bp.provider)
	}
	opts := host.Options{
		ReplayBuffer: cfg.ReplayBuffer,
		Logger:       log.With().Str("component", "host").Logger(),
		MaxSessions:  cfg.MaxSessions,
		// Per-connection limits: a client gets a clear error, never
		// unbounded work or memory (docs/reliability.md).
		MaxSubscriptionsPerConn: cfg.MaxSubscriptions,
		MaxPendingRequests:      cfg.MaxPendingRequests,
		ServerName:              "ahp-bridge",
		ReadOnlyFiles:           cfg.ReadOnlyFiles,
		DefaultDirectory:        cfg.DefaultDirectory,
		BrowseRoots:             cfg.BrowseRoots,
	}
	// Validated with the rest of the configuration.
	opts.ArchiveRetention, _ = parseRetention(cfg.ArchiveRetention)
	if s.state != nil {
		opts.Store = s.state
		opts.OnStoreWrite = func(d time.Duration, err error) {
			if m := s.storeMetrics.Load(); m != nil {
				m.ObserveStoreWrite(d, err)
			}
		}
	}
	if cfg.WireLog != "" {
		wl, err := openWireLog(cfg.WireLog, token)
		if err != nil {
			return nil, usagef("%s: %v", cfg.name("wireLog"), err)
		}
		s.wireLog = wl
		opts.WireLog = wl.write
	}
	policy, err := mapping.ParsePolicy(cfg.Approve)
	if err != nil {
		return nil, usagef("%s: %v", cfg.name("approve"), err)
	}
	// Which dialects a client may speak, for whoever debugs one that
	// cannot connect (the host logs each connection's choice).
	log.Debug().Strs("protocolVersions", codec.Supported()).Str("hostVersion", codec.Current.String()).
		Msg("speaking AHP: each client gets the newest of these it offers")
	if s.host, err = host.Open(opts); err != nil {
		s.host.Close()
		return nil, err
	}
	bopts := bridge.Options{
		Approve: policy,
		Logger:  log.With().Str("component", "bridge").Logger(),
	}
	if s.state != nil {
		// The models each provider offered, published before its first
		// session of the next run.
		bopts.Models = s.state
	}
	s.bridge = bridge.New(providers, bopts)
	s.bridge.Attach(s.host)
	s.host.SetHandler(s.bridge)
	if err := s.bridge.Start(context.Background()); err != nil {
		return nil, err
	}
	if err := s.setUpOps(errs); err != nil {
		return nil, err
	}
	return s, nil
}

// setUpOps makes the ops endpoints: readiness (the AHP side listens, every
// provider started or not needed yet, the state store's writes succeed),
// metrics in a registry of this server's own (the store's writes fed to
// them), and the status page.
func (s *server) setUpOps(errs *ops.ErrorLog) error {
	version, rev := buildVersion()
	s.registry = prometheus.NewRegistry()
	if err := s.registry.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("registering the Go runtime metrics: %w", err)
	}
	if err := s.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("registering the process metrics: %w", err)
	}
	m, err := ops.NewMetrics(s.registry, s.host, s.bridge, version)
	if err != nil {
		return err
	}
	s.metrics = m
	s.storeMetrics.Store(m)
	s.listening = ops.NewFlag("the AHP listener is not up yet")
	checks := []ops.Check{s.listening.Check("listener"), ops.ProvidersCheck(s.bridge)}
	if s.state != nil {
		checks = append(checks, ops.StoreCheck(s.state))
	}
	s.ops = &ops.Endpoints{
		Health:  ops.NewHealth(checks...),
		Metrics: ops.MetricsHandler(s.registry),
		Status:  ops.NewStatus(s.host, s.bridge, errs, version+" (commit "+rev+")"),
		// Profiles are served only by the ops listener's Handler, which
		// validate requires --pprof to have.
		Profiles: s.cfg.Pprof,
	}
	return nil
}

// builtProvider is a running provider and the settings it was built from.
type builtProvider struct {
	id       string
	spec     any // AgentConfig or AgentChanConfig, without where it came from
	provider backend.Provider
}

func buildProviders(cfg Config, log zerolog.Logger) ([]builtProvider, error) {
	var out []builtProvider
	for _, a := range cfg.Agents {
		p, err := buildAgent(a, cfg.ReadOnlyFiles, log)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	for _, c := range cfg.AgentChannels {
		out = append(out, buildAgentChan(c, log))
	}
	return out, nil
}

// buildAgent makes an ACP provider (its agent starts on first use);
// readOnlyFiles refuses its agent's fs/write_text_file.
func buildAgent(a AgentConfig, readOnlyFiles bool, log zerolog.Logger) (builtProvider, error) {
	words, err := splitCommand(a.Command)
	if err != nil {
		return builtProvider{}, usagef("agent %s: the command %v", a.ID, err)
	}
	words = append(words, a.Args...)
	env := make([]string, 0, len(a.Env))
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	mcp, err := a.mcpServers()
	if err != nil {
		return builtProvider{}, usagef("agent %s: mcpServers: %v", a.ID, err)
	}
	a.flag = ""
	return builtProvider{id: a.ID, spec: a, provider: acp.NewProvider(acp.Config{
		ID:          a.ID,
		DisplayName: a.DisplayName,
		Command:     words,
		Env:         env,
		Dir:         a.Cwd,
		// The same refusal as the host's resource commands: one setting
		// for every way the bridge writes files on a peer's behalf.
		ReadOnlyFiles: readOnlyFiles,
		// Merge text chunks that queue up while the bridge is busy:
		// same client state, far fewer envelopes (docs/performance.md).
		CoalesceText: true,
		McpServers:   mcp,
		// Learn the models at start when no earlier run stored them, so
		// that clients can pick one before the first session.
		ProbeModels: a.ProbeModels == nil || *a.ProbeModels,
		// The agent's own sessions in listSessions (README).
		ListAgentSessions: a.ListAgentSessions != nil && *a.ListAgentSessions,
		HideAgentSessions: a.ListAgentSessions != nil && !*a.ListAgentSessions,
	}, log.With().Str("provider", a.ID).Logger())}, nil
}

// buildAgentChan makes an agent-channel provider (it dials per session).
func buildAgentChan(c AgentChanConfig, log zerolog.Logger) builtProvider {
	c.flag = ""
	return builtProvider{id: c.ID, spec: c, provider: agentchan.NewProvider(agentchan.Config{
		ID:          c.ID,
		DisplayName: c.DisplayName,
		URL:         c.URL,
		Token:       c.Token,
	}, log.With().Str("provider", c.ID).Logger())}
}

// resolveToken returns the connection token: given, read from a file, none,
// or 128 random bits.
func resolveToken(cfg Config) (string, error) {
	switch {
	case cfg.NoToken || cfg.Stdio:
		return "", nil
	case cfg.Token != "":
		return cfg.Token, nil
	case cfg.TokenFile != "":
		b, err := os.ReadFile(cfg.TokenFile)
		if err != nil {
			return "", usagef("%s: %v", cfg.name("tokenFile"), err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", usagef("%s %s: the file is empty", cfg.name("tokenFile"), cfg.TokenFile)
		}
		return t, nil
	default:
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("generating a connection token: %w", err)
		}
		return hex.EncodeToString(b[:]), nil
	}
}

func (s *server) serveWS(ctx context.Context, stdout io.Writer) error {
	opsLn, err := s.startOps()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		opsLn.stop()
		return fmt.Errorf("listening on %s: %w", s.cfg.Listen, err)
	}
	s.listener = ln
	handler := ws.NewHandler(s.host, ws.Options{
		Token:          s.token,
		AllowedOrigins: s.cfg.AllowOrigins,
		MaxMessageSize: s.cfg.MaxFrameBytes,
		Logger:         s.log.With().Str("component", "ws").Logger(),
	})
	var h http.Handler = handler
	if opsLn == nil {
		// Probes without a token, metrics with it, beside the WebSocket.
		h = s.ops.WithAHP(handler, handler.Authorized)
	}
	httpSrv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	s.listening.Set(nil)

	url := "ws://" + ln.Addr().String() + "/"
	s.announceAddress(url)
	printed := url
	if s.token != "" {
		printed = url + "?tkn=" + s.token
	}
	fmt.Fprintf(stdout, "READY %s\n", printed)
	s.log.Info().Str("url", url).Bool("token", s.token != "").Msg("listening")
	s.ready <- printed

	var failed error
	select {
	case <-ctx.Done():
		s.log.Info().Msg("shutting down")
	case err := <-errc:
		failed = fmt.Errorf("websocket server stopped: %w", err)
	case err := <-opsLn.failed():
		failed = fmt.Errorf("ops endpoints server stopped: %w", err)
	}
	s.listening.Set(errors.New("shutting down"))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*shutdownGrace)
	defer cancel()
	s.bridge.Close(shutdownCtx)
	s.host.Close()
	s.closeState()
	handler.Close()
	_ = httpSrv.Shutdown(shutdownCtx)
	opsLn.stop()
	return failed
}

func (s *server) serveStdio(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	opsLn, err := s.startOps()
	if err != nil {
		return err
	}
	defer opsLn.stop()
	// The connection's Close must not close the process's standard output:
	// descriptor 1 would be handed to the next pipe opened (an agent's
	// stdin, started by a createSession still under way), and a write to
	// that pipe once its agent is gone would kill the bridge with SIGPIPE,
	// which Go raises only for descriptors 1 and 2.
	conn := stdio.New(stdin, writeOnly{stdout}, stdio.Options{MaxMessageSize: int(s.cfg.MaxFrameBytes)})
	s.listening.Set(nil)
	err = s.host.ServeConn(ctx, conn)
	s.listening.Set(errors.New("shutting down"))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*shutdownGrace)
	defer cancel()
	s.bridge.Close(shutdownCtx)
	s.host.Close()
	s.closeState()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// startOps starts the ops listener when --ops-listen asks for one; it
// returns nil otherwise (whose methods do nothing).
func (s *server) startOps() (*opsListener, error) {
	if s.cfg.OpsListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", s.cfg.OpsListen)
	if err != nil {
		return nil, fmt.Errorf("listening for the ops endpoints on %s: %w", s.cfg.OpsListen, err)
	}
	o := &opsListener{
		srv:  &http.Server{Handler: s.ops.Handler(), ReadHeaderTimeout: 10 * time.Second},
		errc: make(chan error, 1),
		done: make(chan struct{}),
		log:  s.log,
	}
	go func() {
		defer close(o.done)
		if err := o.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			o.log.Error().Err(err).Msg("the ops endpoints server stopped")
			o.errc <- err
		}
	}()
	s.log.Info().Str("url", "http://"+ln.Addr().String()+"/").
		Msg("ops endpoints listening: /healthz, /readyz, /metrics and the status page at /")
	return o, nil
}

// opsListener is the running ops endpoints server; its goroutine is
// owned by the serve call that started it and ends in stop.
type opsListener struct {
	srv  *http.Server
	errc chan error    // receives Serve's error if it stops by itself
	done chan struct{} // closed when Serve has returned
	log  zerolog.Logger
}

// failed receives the server's error should it stop serving; never for a
// nil listener.
func (o *opsListener) failed() <-chan error {
	if o == nil {
		return nil
	}
	return o.errc
}

// stop shuts the server down and waits for its goroutine.
func (o *opsListener) stop() {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := o.srv.Shutdown(ctx); err != nil {
		o.log.Warn().Err(err).Msg("stopping the ops endpoints")
	}
	<-o.done
}

func (s *server) close() {
	if s.wireLog != nil {
		s.wireLog.close()
	}
	s.host.Close() // a no-op when serving closed it
	s.closeState()
}

// closeState closes the state file, after the host that writes it.
func (s *server) closeState() {
	if s.state == nil {
		return
	}
	if err := s.state.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		s.log.Warn().Err(err).Msg("closing the state file")
	}
}

// writeOnly hides its writer's Close (serveStdio).
type writeOnly struct{ w io.Writer }

func (w writeOnly) Write(p []byte) (int, error) { return w.w.Write(p) }
