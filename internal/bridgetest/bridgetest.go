// Package bridgetest starts a whole ahp-bridge in process — host, bridge,
// providers and the WebSocket transport on a loopback port — so tests can
// drive it over AHP 1.0.0 exactly as a client would. Its helpers take a
// session URI where the client does: for turns it stands for the session's
// default chat.
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
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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

	closeOnce sync.Once
	close     func()
}

// Close stops the bridge as `serve` does on its way out (the bridge, then
// the host, then the listener), before the test ends: a test of a restart
// starts a new Env afterwards. The test's end calls it too.
func (e *Env) Close() { e.closeOnce.Do(e.close) }

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
	// ListRefresh is the bridge's Options.ListRefresh.
	ListRefresh time.Duration
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

// Context returns a context for one wait of a test: it ends after d, or
// when the test ends. Every wait gets its own, so a long test cannot run
// out of one budget shared by all its steps.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
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
	b := bridge.New(providers, bridge.Options{Approve: policy, Logger: log.With().Str("component", "bridge").Logger(), ListRefresh: opts.ListRefresh})
	b.Attach(h)
	h.SetHandler(b)
	require.NoError(t, b.Start(t.Context()))
	handler := ws.NewHandler(h, ws.Options{Token: Token, Logger: log})
	srv := httptest.NewUnstartedServer(handler)
	if opts.SendBuffer > 0 {
		srv.Listener = sendBufferListener{Listener: srv.Listener, size: opts.SendBuffer}
	}
	srv.Start()
	env := &Env{
		URL:    "ws" + strings.TrimPrefix(srv.URL, "http") + "/?tkn=" + Token,
		Host:   h,
		Bridge: b,
		close: func() {
			// The test's own context may have ended by now; shutting down
			// gets its own deadline.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
			defer cancel()
			b.Close(ctx)
			h.Close()
			handler.Close()
			srv.Close()
		},
	}
	t.Cleanup(env.Close)
	return env
}

// Client dials and initializes an AHP client subscribed to the root channel.
func (e *Env) Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.Dial(Context(t, 10*time.Second), e.URL, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(Context(t, 10*time.Second), client.RootChannel)
	require.NoError(t, err)
	return c
}

// CreateSession creates a session for provider in cwd ("" = none: the
// bridge's own directory), subscribes to it (and so to its default chat)
// and waits until it is ready. It returns the session URI, which stands
// for the default chat wherever the client takes a chat.
func CreateSession(t testing.TB, c *client.Client, provider, cwd string) string {
	t.Helper()
	params := wire.CreateSessionParams{Provider: wire.Ptr(provider)}
	if cwd != "" {
		params.WorkingDirectories = []string{"file://" + cwd}
	}
	return CreateSessionWith(t, c, params)
}

// CreateSessionWith is CreateSession with the caller's params (a fresh
// session URI when params.Channel is empty).
func CreateSessionWith(t testing.TB, c *client.Client, params wire.CreateSessionParams) string {
	t.Helper()
	if params.Channel == "" {
		params.Channel = client.NewSessionURI()
	}
	ch := params.Channel
	require.NoError(t, c.CreateSession(Context(t, 30*time.Second), params))
	_, err := c.Subscribe(Context(t, 10*time.Second), ch)
	require.NoError(t, err)
	st, err := c.WaitFor(Context(t, 30*time.Second), ch, func(s *wire.SessionState) bool {
		return s.Lifecycle != wire.SessionLifecycleCreating
	})
	require.NoError(t, err)
	require.Equal(t, wire.SessionLifecycleReady, st.Lifecycle, "session creation failed: %+v", st.CreationError)
	return ch
}

// StartTurn starts a turn with text on a chat (a session URI: its default
// chat), waits for the host to accept it and returns the turn id.
func StartTurn(t testing.TB, c *client.Client, chat, text string) string {
	t.Helper()
	turnID := client.NewUUID()
	_, err := c.StartTurn(Context(t, 10*time.Second), chat, turnID, client.UserMessage(text))
	require.NoError(t, err)
	return turnID
}

// WaitTurnEnd waits until turnID of a chat (a session URI: its default
// chat) has ended and returns it.
func WaitTurnEnd(t testing.TB, c *client.Client, chat, turnID string, timeout time.Duration) wire.Turn {
	t.Helper()
	turn, err := c.WaitForTurn(Context(t, timeout), chat, turnID)
	require.NoError(t, err, "turn %s did not end", turnID)
	return *turn
}

// WaitPendingTool waits until a session waits for a tool call's
// confirmation (its inputNeeded) and returns the tool call's id.
func WaitPendingTool(t testing.TB, c *client.Client, session string, timeout time.Duration) string {
	t.Helper()
	var id string
	_, err := c.WaitFor(Context(t, timeout), session, func(s *wire.SessionState) bool {
		if pcs := client.PendingConfirmations(s); len(pcs) > 0 {
			id = pcs[0].ToolCallID
			return true
		}
		return false
	})
	require.NoError(t, err, "no tool call became pending-confirmation")
	return id
}

// built caches the commands go-built for this test process, by package:
// building is slow, and every test of the process can share the result.
// It is the one package-level variable here, because a cache per test
// would build the same command dozens of times.
var built struct {
	mu    sync.Mutex
	paths map[string]buildResult
}

type buildResult struct {
	path string
	err  error
}

// build go-builds pkg once per test process and returns the executable.
func build(t testing.TB, pkg, name string) string {
	t.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	r, ok := built.paths[pkg]
	if !ok {
		r = buildResult{}
		dir, err := os.MkdirTemp("", "ahp-bridge-bin")
		if err == nil {
			r.path = filepath.Join(dir, name)
			out, berr := exec.Command("go", "build", "-o", r.path, pkg).CombinedOutput()
			if berr != nil {
				err = fmt.Errorf("go build %s: %w\n%s", pkg, berr, out)
			}
		}
		r.err = err
		if built.paths == nil {
			built.paths = map[string]buildResult{}
		}
		built.paths[pkg] = r
	}
	require.NoError(t, r.err)
	return r.path
}

// Binary builds ./cmd/ahp-bridge once per test process and returns its
// path.
func Binary(t testing.TB) string {
	t.Helper()
	return build(t, "github.com/ahp-bridge/ahp-bridge/cmd/ahp-bridge", "ahp-bridge")
}

// ScriptAgent builds the scripted ACP agent (internal/scriptagent, the
// same agent as `ahp-bridge demo-agent`) once per test process and returns
// its path, for tests that run it as a real subprocess without needing
// the whole command.
func ScriptAgent(t testing.TB) string {
	t.Helper()
	return build(t, "github.com/ahp-bridge/ahp-bridge/internal/scriptagent/cmd/scriptagent", "scriptagent")
}
