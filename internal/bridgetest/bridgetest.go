// Package bridgetest starts a whole ahp-bridge in process — host, bridge,
// providers and the WebSocket transport on a loopback port — so tests can
// drive it over AHP exactly as a client would.
package bridgetest

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/ws"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/bridge"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// Token is the connection token every Env requires.
const Token = "test-token"

// Env is one running bridge.
type Env struct {
	// URL is the WebSocket URL with the token, as printed on the READY line.
	URL    string
	Host   *host.Host
	Bridge *bridge.Bridge
}

// Options tune Start.
type Options struct {
	Approve string // --approve policy by name (mapping.ParsePolicy); "ask" when empty
	Host    host.Options
	// SendBuffer, when positive, is the kernel send buffer (SO_SNDBUF) of
	// every connection the host accepts. Tests about a client that stops
	// reading set it small, so that the kernel holds little of what the
	// host sends and the host's own queue fills after a few frames instead
	// of megabytes.
	SendBuffer int
}

// Context returns a context for one wait of a test: it ends after d, or
// when the test ends. Every wait gets its own, so a long test cannot run
// out of one budget shared by all its steps.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// sendBufferListener sets the send buffer of each accepted connection.
type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetWriteBuffer(l.size); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("setting the send buffer of an accepted connection: %w", err)
		}
	}
	return c, nil
}

// Start runs a bridge over providers until the test ends.
func Start(t testing.TB, providers []backend.Provider, opts Options) *Env {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	if os.Getenv("BRIDGETEST_DEBUG") != "" {
		log = log.Level(zerolog.DebugLevel)
	}
	hopts := opts.Host
	if hopts.OutboundQueue == 0 {
		// In-process clients decode slower than the host encodes under
		// -race on a loaded machine; only tests about slow clients should
		// see one dropped, and they set a small queue themselves.
		hopts.OutboundQueue = 1 << 16
	}
	hopts.Logger = log.With().Str("component", "host").Logger()
	h := host.New(hopts)
	policy := mapping.PolicyAsk
	if opts.Approve != "" {
		var err error
		policy, err = mapping.ParsePolicy(opts.Approve)
		require.NoError(t, err)
	}
	b := bridge.New(providers, bridge.Options{Approve: policy, Logger: log.With().Str("component", "bridge").Logger()})
	b.Attach(h)
	h.SetBackend(b)
	require.NoError(t, b.Start(context.Background()))
	handler := ws.NewHandler(h, ws.Options{Token: Token, Logger: log})
	srv := httptest.NewUnstartedServer(handler)
	if opts.SendBuffer > 0 {
		srv.Listener = sendBufferListener{Listener: srv.Listener, size: opts.SendBuffer}
	}
	srv.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.Close(ctx)
		h.Close()
		handler.Close()
		srv.Close()
	})
	return &Env{
		URL:    "ws" + strings.TrimPrefix(srv.URL, "http") + "/?tkn=" + Token,
		Host:   h,
		Bridge: b,
	}
}

// Client dials and initializes an AHP client subscribed to the root channel.
func (e *Env) Client(t testing.TB) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, e.URL, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(ctx, wire.RootChannel)
	require.NoError(t, err)
	return c
}

// CreateSession creates a session for provider in cwd, subscribes to it and
// waits until it is ready. It returns the session channel.
func CreateSession(t testing.TB, c *client.Client, provider, cwd string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ch := client.NewSessionURI()
	params := wire.CreateSessionParams{Channel: ch, Provider: wire.Ptr(provider)}
	if cwd != "" {
		params.WorkingDirectory = wire.Ptr("file://" + cwd)
	}
	require.NoError(t, c.CreateSession(ctx, params))
	_, err := c.Subscribe(ctx, ch)
	require.NoError(t, err)
	st, err := c.WaitFor(ctx, ch, func(s *wire.SessionState) bool {
		return s.Lifecycle != wire.SessionLifecycleCreating
	})
	require.NoError(t, err)
	require.Equal(t, wire.SessionLifecycleReady, st.Lifecycle, "session creation failed: %+v", st.CreationError)
	return ch
}

// StartTurn dispatches session/turnStarted with text and returns the turn id.
func StartTurn(t testing.TB, c *client.Client, channel, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	turnID := client.NewUUID()
	_, err := c.DispatchAction(ctx, channel, wire.Action(&wire.SessionTurnStartedAction{
		TurnID:  turnID,
		Message: wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}},
	}))
	require.NoError(t, err)
	return turnID
}

// WaitTurnEnd waits until turnID is no longer active and returns it from
// the completed turns.
func WaitTurnEnd(t testing.TB, c *client.Client, channel, turnID string, timeout time.Duration) wire.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	st, err := c.WaitFor(ctx, channel, func(s *wire.SessionState) bool {
		for _, tr := range s.Turns {
			if tr.ID == turnID {
				return true
			}
		}
		return false
	})
	require.NoError(t, err, "turn %s did not end", turnID)
	for _, tr := range st.Turns {
		if tr.ID == turnID {
			return tr
		}
	}
	panic("unreachable")
}

// WaitPendingTool waits until a tool call of the active turn is pending
// confirmation and returns its id.
func WaitPendingTool(t testing.TB, c *client.Client, channel string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var id string
	_, err := c.WaitFor(ctx, channel, func(s *wire.SessionState) bool {
		if ids := client.PendingConfirmations(s); len(ids) > 0 {
			id = ids[0]
			return true
		}
		return false
	})
	require.NoError(t, err, "no tool call became pending-confirmation")
	return id
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary builds ./cmd/ahp-bridge once per test process and returns its
// path; tests use `BINARY demo-agent` as a real ACP agent subprocess.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ahp-bridge-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "ahp-bridge")
		cmd := exec.Command("go", "build", "-o", builtBin, "github.com/ahp-bridge/ahp-bridge/cmd/ahp-bridge")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	require.NoError(t, buildErr, "building ahp-bridge: %s", builtBin)
	return builtBin
}
