package main

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// These tests prove the security defaults of `ahp-bridge serve` (issue #7)
// against the built binary, over real sockets.

// splitReadyURL returns the bare ws:// URL and the token of a READY URL.
func splitReadyURL(t *testing.T, ready string) (base, token string) {
	t.Helper()
	i := strings.Index(ready, "?tkn=")
	require.Positive(t, i, "READY URL %q carries no token", ready)
	return ready[:i], ready[i+len("?tkn="):]
}

// dialStatus attempts a WebSocket upgrade and returns the HTTP status the
// server answered with, and the connection when it upgraded.
func dialStatus(t *testing.T, url string, header http.Header) (int, *websocket.Conn, string) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.Dial(url, header)
	require.NotNil(t, resp, "no HTTP answer from %s: %v", url, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		require.Nil(t, c)
	}
	return resp.StatusCode, c, string(body)
}

func TestSecurityDefaultsFromConfig(t *testing.T) {
	cfg, err := parseServeConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8081", cfg.Listen, "the default listen address is loopback")
	assert.False(t, cfg.NoToken)
	assert.Equal(t, int64(4<<20), cfg.MaxFrameBytes, "the default frame limit is 4 MiB")

	// The default token is random and carries at least 128 bits.
	t1, err := resolveToken(cfg)
	require.NoError(t, err)
	t2, err := resolveToken(cfg)
	require.NoError(t, err)
	raw, err := hex.DecodeString(t1)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(raw)*8, 128)
	assert.NotEqual(t, t1, t2, "every start gets a fresh token")

	// A token is never optional on a non-loopback address: --no-token is
	// refused there, while loopback and stdio may go without.
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--no-token", "--listen", "0.0.0.0:0"}, false},
		{[]string{"--no-token", "--listen", "[::]:9000"}, false},
		{[]string{"--no-token", "--listen", "192.0.2.1:9000"}, false},
		{[]string{"--no-token", "--listen", ":9000"}, false}, // empty host = every interface
		{[]string{"--no-token", "--listen", "127.0.0.1:0"}, true},
		{[]string{"--no-token", "--listen", "[::1]:0"}, true},
		{[]string{"--no-token", "--listen", "localhost:0"}, true},
		{[]string{"--listen", "0.0.0.0:0"}, true}, // with the default random token
	} {
		_, err := parseServeConfig(tc.args)
		if tc.ok {
			assert.NoError(t, err, "%v", tc.args)
			continue
		}
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%v", tc.args)
		assert.Contains(t, err.Error(), "refusing to accept unauthenticated connections on a non-loopback address", "%v", tc.args)
	}
}

func TestSecurityTokenRequiredBeforeUpgrade(t *testing.T) {
	ready, cmd, serveErr := startServe(t, "--log-level", "debug")
	base, token := splitReadyURL(t, ready)
	raw, err := hex.DecodeString(token)
	require.NoError(t, err, "the generated token is hex")
	assert.GreaterOrEqual(t, len(raw)*8, 128)

	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		want   int
	}{
		{"missing", base, nil, http.StatusUnauthorized},
		{"wrong", base + "?tkn=" + strings.Repeat("0", len(token)), nil, http.StatusUnauthorized},
		{"prefix", base + "?tkn=" + token[:len(token)-1], nil, http.StatusUnauthorized},
		{"wrong bearer", base, http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"query", ready, nil, http.StatusSwitchingProtocols},
		{"bearer", base, http.Header{"Authorization": {"Bearer " + token}}, http.StatusSwitchingProtocols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, c, body := dialStatus(t, tc.url, tc.header)
			assert.Equal(t, tc.want, status, body)
			if c != nil {
				_ = c.Close()
			}
			if tc.want == http.StatusUnauthorized {
				assert.Contains(t, body, "token")
			}
		})
	}

	// A complete turn, so that every code path that might log has run.
	code, out, errOut := runBin(t, 60*time.Second, "", "client", ready, "--approve-all", "--cwd", demoDir(t), "demo")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.NotContains(t, errOut, token, "the client never prints the token")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	logs := serveErr.String()
	assert.Contains(t, logs, "refused WebSocket connection", "refusals are logged")
	assert.NotContains(t, logs, token, "the token never appears in the logs")
}

func TestSecurityOriginRefusedUnlessAllowed(t *testing.T) {
	ready, _, _ := startServe(t, "--allow-origin", "https://editor.example")
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"https://evil.example", http.StatusForbidden},
		{"http://editor.example", http.StatusForbidden}, // scheme matters
		{"https://editor.example.evil", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"https://editor.example", http.StatusSwitchingProtocols},
		{"https://EDITOR.example:443", http.StatusSwitchingProtocols},
		{"", http.StatusSwitchingProtocols}, // not a browser
	} {
		t.Run(tc.origin, func(t *testing.T) {
			var h http.Header
			if tc.origin != "" {
				h = http.Header{"Origin": {tc.origin}}
			}
			status, c, body := dialStatus(t, ready, h)
			assert.Equal(t, tc.want, status, body)
			if c != nil {
				_ = c.Close()
			}
		})
	}

	// Without --allow-origin every browser origin is refused, even the
	// bridge's own.
	ready2, _, _ := startServe(t)
	base, _ := splitReadyURL(t, ready2)
	self := "http://" + strings.TrimSuffix(strings.TrimPrefix(base, "ws://"), "/")
	for _, origin := range []string{"https://editor.example", self} {
		status, c, body := dialStatus(t, ready2, http.Header{"Origin": {origin}})
		assert.Equal(t, http.StatusForbidden, status, "origin %s: %s", origin, body)
		if c != nil {
			_ = c.Close()
		}
	}
}

func TestSecurityFrameAndSessionLimits(t *testing.T) {
	ready, cmd, serveErr := startServe(t, "--max-frame-bytes", "4096", "--max-sessions", "1", "--max-subscriptions", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// An over-long frame ends that connection, and only that one.
	status, big, _ := dialStatus(t, ready, nil)
	require.Equal(t, http.StatusSwitchingProtocols, status)
	c, err := client.Dial(ctx, ready, client.Options{})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Initialize(ctx, wire.RootChannel)
	require.NoError(t, err)

	frame := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`
	require.NoError(t, big.WriteMessage(websocket.TextMessage, []byte(frame)))
	require.NoError(t, big.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, _, err = big.ReadMessage()
	require.Error(t, err, "the over-long frame closes its connection")
	assert.NotContains(t, err.Error(), "timeout")
	var ce *websocket.CloseError
	if assert.ErrorAs(t, err, &ce) {
		assert.Equal(t, websocket.CloseMessageTooBig, ce.Code)
	}
	_ = big.Close()
	require.NoError(t, c.Ping(ctx), "other connections are unaffected")

	// The session limit is a clear error, and the server carries on.
	params := wire.CreateSessionParams{Channel: client.NewSessionURI(), Provider: wire.Ptr("demo"),
		WorkingDirectories: []string{"file://" + demoDir(t)}}
	require.NoError(t, c.CreateSession(ctx, params))
	// The root channel is this connection's one allowed subscription.
	_, err = c.Subscribe(ctx, params.Channel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "subscription limit reached: a connection may hold at most 1 subscriptions")
	params.Channel = client.NewSessionURI()
	err = c.CreateSession(ctx, params)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "session limit reached: this server allows at most 1 sessions")
	require.NoError(t, c.Ping(ctx))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "serve exits cleanly after the refusals; stderr:\n%s", serveErr.String())
}

func TestSecurityLimitFlagsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-frame-bytes", "10"}, "--max-frame-bytes 10: must be at least 1024"},
		{[]string{"--max-sessions", "-1"}, "--max-sessions -1: must be at least 1"},
		{[]string{"--max-subscriptions", "-5"}, "--max-subscriptions -5: must be at least 1"},
		{[]string{"--max-pending-requests", "-1"}, "--max-pending-requests -1: must be at least 1"},
	} {
		_, err := parseServeConfig(tc.args)
		var ue *usageError
		require.ErrorAs(t, err, &ue, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want)
	}
	cfg, err := parseServeConfig([]string{"--max-subscriptions", "8", "--max-pending-requests", "3"})
	require.NoError(t, err)
	assert.Equal(t, 8, cfg.MaxSubscriptions)
	assert.Equal(t, 3, cfg.MaxPendingRequests)
	cfg, err = parseServeConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, 1024, cfg.MaxSubscriptions)
	assert.Equal(t, 64, cfg.MaxPendingRequests)

	// The binary exits 2 on a bad limit, from a flag or the config file.
	file := filepath.Join(t.TempDir(), "limits.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"maxPendingRequests": -2}`), 0o600))
	for _, tc := range []struct {
		args []string
		want string // a flag is named as a flag, a key of the file as a key
	}{
		{[]string{"serve", "--max-pending-requests", "0x"}, "--max-pending-requests"},
		{[]string{"serve", "--config", file}, "maxPendingRequests"},
	} {
		code, _, errOut := runBin(t, 30*time.Second, "", tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want)
	}
}
