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
	"time"

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
	log, err := newLogger(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge serve: %v\n", err)
		return exitUsage
	}
	srv, err := newServer(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge serve: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitError
	}
	defer srv.close()

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

// server is one running bridge: host, bridge and providers, plus the
// listener or pipes it serves.
type server struct {
	cfg      Config
	log      zerolog.Logger
	host     *host.Host
	bridge   *bridge.Bridge
	wireLog  *wireLogger
	token    string
	ready    chan string // receives the READY URL once listening (tests, demo)
	listener net.Listener
}

func newServer(cfg Config, log zerolog.Logger) (*server, error) {
	token, err := resolveToken(cfg)
	if err != nil {
		return nil, err
	}
	providers, err := buildProviders(cfg, log)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: log, token: token, ready: make(chan string, 1)}
	opts := host.Options{
		ReplayBuffer: cfg.ReplayBuffer,
		Logger:       log.With().Str("component", "host").Logger(),
		MaxSessions:  cfg.MaxSessions,
		// Per-connection limits: a client gets a clear error, never
		// unbounded work or memory (docs/reliability.md).
		MaxSubscriptionsPerConn: cfg.MaxSubscriptions,
		MaxPendingRequests:      cfg.MaxPendingRequests,
		ServerName:              "ahp-bridge",
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
	s.host = host.New(opts)
	s.bridge = bridge.New(providers, bridge.Options{
		Approve: policy,
		Logger:  log.With().Str("component", "bridge").Logger(),
	})
	s.bridge.Attach(s.host)
	s.host.SetHandler(s.bridge)
	if err := s.bridge.Start(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

func buildProviders(cfg Config, log zerolog.Logger) ([]backend.Provider, error) {
	var out []backend.Provider
	for _, a := range cfg.Agents {
		words, err := splitCommand(a.Command)
		if err != nil {
			return nil, usagef("agent %s: the command %v", a.ID, err)
		}
		words = append(words, a.Args...)
		env := make([]string, 0, len(a.Env))
		for k, v := range a.Env {
			env = append(env, k+"="+v)
		}
		out = append(out, acp.NewProvider(acp.Config{
			ID:          a.ID,
			DisplayName: a.DisplayName,
			Command:     words,
			Env:         env,
			Dir:         a.Cwd,
			// Merge text chunks that queue up while the bridge is busy:
			// same client state, far fewer envelopes (docs/performance.md).
			CoalesceText: true,
		}, log.With().Str("provider", a.ID).Logger()))
	}
	for _, c := range cfg.AgentChannels {
		out = append(out, agentchan.NewProvider(agentchan.Config{
			ID:          c.ID,
			DisplayName: c.DisplayName,
			URL:         c.URL,
			Token:       c.Token,
		}, log.With().Str("provider", c.ID).Logger()))
	}
	return out, nil
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
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.cfg.Listen, err)
	}
	s.listener = ln
	handler := ws.NewHandler(s.host, ws.Options{
		Token:          s.token,
		AllowedOrigins: s.cfg.AllowOrigins,
		MaxMessageSize: s.cfg.MaxFrameBytes,
		Logger:         s.log.With().Str("component", "ws").Logger(),
	})
	httpSrv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()

	url := "ws://" + ln.Addr().String() + "/"
	printed := url
	if s.token != "" {
		printed = url + "?tkn=" + s.token
	}
	fmt.Fprintf(stdout, "READY %s\n", printed)
	s.log.Info().Str("url", url).Bool("token", s.token != "").Msg("listening")
	s.ready <- printed

	select {
	case <-ctx.Done():
		s.log.Info().Msg("shutting down")
	case err := <-errc:
		return fmt.Errorf("websocket server stopped: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*shutdownGrace)
	defer cancel()
	s.bridge.Close(shutdownCtx)
	s.host.Close()
	handler.Close()
	_ = httpSrv.Shutdown(shutdownCtx)
	return nil
}

func (s *server) serveStdio(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	conn := stdio.New(stdin, stdout, stdio.Options{MaxMessageSize: int(s.cfg.MaxFrameBytes)})
	err := s.host.ServeConn(ctx, conn)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*shutdownGrace)
	defer cancel()
	s.bridge.Close(shutdownCtx)
	s.host.Close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (s *server) close() {
	if s.wireLog != nil {
		s.wireLog.close()
	}
}
