package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// These tests run the built binary as an operator would: probes, a
// scrape, the status page, a SIGHUP.

// logLine waits until the child's JSON log (--log-format json) has a line
// whose message starts with msg, and returns that line decoded.
func logLine(t *testing.T, stderr *lockedWriter, msg string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		for line := range strings.Lines(readLocked(stderr)) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil {
				if s, _ := m["message"].(string); strings.HasPrefix(s, msg) {
					return m
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no log line %q; stderr:\n%s", msg, readLocked(stderr))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// opsURL is where the child serves its ops endpoints (--ops-listen).
func opsURL(t *testing.T, stderr *lockedWriter) string {
	t.Helper()
	u, _ := logLine(t, stderr, "ops endpoints listening")["url"].(string)
	require.True(t, strings.HasPrefix(u, "http://127.0.0.1:"), "ops url %q", u)
	return strings.TrimSuffix(u, "/")
}

// httpGet fetches url with optional header name/value pairs.
func httpGet(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(bridgetest.Context(t, 10*time.Second), http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// httpBase turns a READY URL into the listener's http:// base and token.
func httpBase(readyURL string) (base, token string) {
	base, token, _ = strings.Cut(strings.TrimPrefix(readyURL, "ws://"), "/?tkn=")
	return "http://" + strings.TrimSuffix(base, "/"), token
}

// TestHealthAndMetricsOnTheAHPListener: without --ops-listen the probes
// answer on the AHP listener without a token, and /metrics only with it.
func TestHealthAndMetricsOnTheAHPListener(t *testing.T) {
	url, _, _ := startServe(t)
	base, token := httpBase(url)
	require.NotEmpty(t, token)

	code, body := httpGet(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = httpGet(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.JSONEq(t, `{"status":"ready"}`, body)
	code, _ = httpGet(t, base+"/metrics")
	assert.Equal(t, http.StatusUnauthorized, code, "metrics need the token on the AHP listener")
	code, body = httpGet(t, base+"/metrics", "Authorization", "Bearer "+token)
	assert.Equal(t, http.StatusOK, code)
	// 0 or 1: the bridge may already have started the agent to learn its
	// models (agents[].probeModels).
	assert.Regexp(t, `ahp_bridge_agent_processes_started_total\{provider="demo"\} [01]\n`, body)
	assert.Contains(t, body, "go_goroutines", "the Go runtime's metrics")
	code, _ = httpGet(t, base+"/")
	assert.NotEqual(t, http.StatusOK, code, "no status page on the AHP listener")
}

// TestOpsListenServesProbesMetricsAndStatus: --ops-listen moves the ops
// endpoints, with the status page, to a listener of their own without a
// token; the AHP listener no longer answers them.
func TestOpsListenServesProbesMetricsAndStatus(t *testing.T) {
	bin := bridgetest.Binary(t)
	url, _, stderr := startBinary(t, "serve", "--listen", "127.0.0.1:0", "--acp", "demo="+bin+" demo-agent",
		"--ops-listen", "127.0.0.1:0", "--log-format", "json")
	ops := opsURL(t, stderr)
	base, _ := httpBase(url)

	code, body := httpGet(t, ops+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	code, _ = httpGet(t, ops+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body = httpGet(t, ops+"/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "ahp_bridge_actions_sequenced_total")
	code, body = httpGet(t, ops+"/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "<title>ahp-bridge status</title>")
	assert.Contains(t, body, "<td>demo</td>")

	code, _ = httpGet(t, base+"/healthz")
	assert.Equal(t, http.StatusUnauthorized, code, "the AHP listener is only the WebSocket endpoint now")
}

// TestStdioServesOpsOnlyWithOpsListen: under --stdio the ops endpoints
// exist only on --ops-listen, and stdout stays protocol only.
func TestStdioServesOpsOnlyWithOpsListen(t *testing.T) {
	bin := bridgetest.Binary(t)
	cmd := exec.Command(bin, "serve", "--stdio", "--ops-listen", "127.0.0.1:0", "--log-format", "json", "--acp", "demo="+bin+" demo-agent")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	ops := opsURL(t, stderr)
	code, body := httpGet(t, ops+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = httpGet(t, ops+"/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "<td>demo</td>")

	require.NoError(t, stdin.Close())
	out, err := io.ReadAll(stdout)
	require.NoError(t, err)
	assert.Empty(t, out, "nothing but protocol on stdout")
	require.NoError(t, cmd.Wait())
}

// TestSighupReloadAddsAndRemovesProviders: SIGHUP applies the config
// file's providers — the new one is offered and works, the removed one is
// no longer offered but its running session keeps its agent until it
// ends — and a file that does not parse changes nothing.
func TestSighupReloadAddsAndRemovesProviders(t *testing.T) {
	bin := bridgetest.Binary(t)
	cfg := filepath.Join(t.TempDir(), "ahp-bridge.json")
	writeAgents := func(ids ...string) {
		t.Helper()
		var agents []map[string]any
		for _, id := range ids {
			agents = append(agents, map[string]any{"id": id, "command": bin, "args": []string{"demo-agent"}})
		}
		b, err := json.Marshal(map[string]any{"agents": agents})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfg, b, 0o600))
	}
	writeAgents("demo")
	url, cmd, stderr := startBinary(t, "serve", "--listen", "127.0.0.1:0", "--config", cfg, "--log-format", "json")

	c, err := client.Dial(bridgetest.Context(t, 10*time.Second), url, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(bridgetest.Context(t, 10*time.Second), client.RootChannel)
	require.NoError(t, err)
	agents := func(r *wire.RootState) []string {
		var ids []string
		for _, a := range r.Agents {
			ids = append(ids, a.Provider)
		}
		return ids
	}
	root, err := c.Root()
	require.NoError(t, err)
	require.Equal(t, []string{"demo"}, agents(root))
	old := bridgetest.CreateSession(t, c, "demo", demoDir(t))

	writeAgents("second")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	_, err = c.WaitForRoot(bridgetest.Context(t, 30*time.Second), func(r *wire.RootState) bool {
		return slices.Equal(agents(r), []string{"second"})
	})
	require.NoError(t, err, "the root agents are republished; stderr:\n%s", readLocked(stderr))
	line := logLine(t, stderr, "SIGHUP: reloaded the providers")
	assert.Equal(t, []any{"second"}, line["added"])
	assert.Equal(t, []any{"demo"}, line["removed"])

	turn := bridgetest.StartTurn(t, c, old, "echo still here")
	ended := bridgetest.WaitTurnEnd(t, c, old, turn, time.Minute)
	assert.Equal(t, wire.TurnStateComplete, ended.State, "the running session keeps its agent")

	added := bridgetest.CreateSession(t, c, "second", demoDir(t))
	turn = bridgetest.StartTurn(t, c, added, "echo from the new provider")
	ended = bridgetest.WaitTurnEnd(t, c, added, turn, time.Minute)
	assert.Equal(t, wire.TurnStateComplete, ended.State)

	require.NoError(t, c.DisposeSession(bridgetest.Context(t, 10*time.Second), old))
	closed := logLine(t, stderr, "closed a provider the configuration no longer has")
	assert.Equal(t, "demo", closed["provider"], "the removed provider's agent stops with its last session")

	require.NoError(t, os.WriteFile(cfg, []byte(`{"agents": [`), 0o600))
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	bad := logLine(t, stderr, "SIGHUP: the configuration is not valid; keeping the running one")
	assert.Contains(t, bad["error"], "broken JSON", "it says why")
	root, err = c.Root()
	require.NoError(t, err)
	assert.Equal(t, []string{"second"}, agents(root))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "a clean exit after reloads; stderr:\n%s", readLocked(stderr))
}

// TestReloadNamesTheSettingsThatNeedARestart: a reload applies only the
// providers and names, by key and without their values, the other
// settings that changed.
func TestReloadNamesTheSettingsThatNeedARestart(t *testing.T) {
	was, err := parseServeConfig([]string{"--config", writeConfig(t, `{"listen": "127.0.0.1:1", "token": "old-secret", "agents": [{"id": "a", "command": "x"}]}`)})
	require.NoError(t, err)
	now, err := parseServeConfig([]string{"--config", writeConfig(t, `{"listen": "127.0.0.1:2", "token": "new-secret", "opsListen": "127.0.0.1:3", "agents": [{"id": "b", "command": "y"}]}`)})
	require.NoError(t, err)
	assert.Equal(t, []string{"listen", "opsListen", "token"}, restartOnlyChanges(was, now))
	assert.Empty(t, restartOnlyChanges(was, was))
}
