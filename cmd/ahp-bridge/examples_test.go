package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// TestExamples checks that examples/ still says what the code does: the
// configurations parse, the probes name the endpoints and the port the
// bridge serves them on, and the editor's requests are all answered.
func TestExamples(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "examples")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	opsPort := func(cfg Config) string {
		_, port, err := net.SplitHostPort(cfg.OpsListen)
		require.NoError(t, err)
		return port
	}

	t.Run("sidecar", func(t *testing.T) {
		cfg, err := parseServeConfig([]string{"--config", filepath.Join(dir, "sidecar", "config.json")})
		require.NoError(t, err)
		compose := read("sidecar/compose.yaml")
		assert.Contains(t, compose, `command: ["serve", "--config", "/etc/ahp-bridge/config.json"]`)
		assert.Contains(t, compose, "./config.json:/etc/ahp-bridge/config.json:ro")
		assert.Contains(t, compose, "http://127.0.0.1:"+opsPort(cfg)+"/readyz", "the healthcheck asks the ops listener")
		assert.Contains(t, compose, "/run/secrets/ahp_token")
		assert.Equal(t, "/run/secrets/ahp_token", cfg.TokenFile)
		assert.Contains(t, read("sidecar/Dockerfile"), "COPY --from=bridge /usr/local/bin/ahp-bridge")
	})

	t.Run("kubernetes", func(t *testing.T) {
		pod := read("kubernetes/pod.yaml")
		m := regexp.MustCompile(`(?s)config\.json: \|\n(.*?)\n---`).FindStringSubmatch(pod)
		require.NotNil(t, m, "the ConfigMap holds config.json")
		cfg, err := parseServeConfig([]string{"--config", writeConfig(t, m[1])})
		require.NoError(t, err)
		assert.Contains(t, pod, `args: ["serve", "--config", "/etc/ahp-bridge/config.json"]`)
		assert.Contains(t, pod, "{name: ops, containerPort: "+opsPort(cfg)+"}")
		assert.Contains(t, pod, "httpGet: {path: /readyz, port: ops}")
		assert.Contains(t, pod, "httpGet: {path: /healthz, port: ops}")
		assert.Contains(t, pod, `prometheus.io/port: "`+opsPort(cfg)+`"`)
		assert.Contains(t, pod, "mountPath: "+filepath.Dir(cfg.TokenFile))
	})

	t.Run("editor", func(t *testing.T) {
		bin := bridgetest.Binary(t)
		session := read("editor/session.jsonl")
		assert.Contains(t, read("editor/README.md"), "ahp-bridge serve --stdio --acp demo='ahp-bridge demo-agent' < session.jsonl")
		code, out, errOut := runBin(t, 30*time.Second, session, "serve", "--stdio", "--acp", "demo="+bin+" demo-agent")
		require.Equal(t, 0, code, "stderr:\n%s", errOut)
		answered := map[int]bool{}
		for line := range strings.Lines(out) {
			var msg struct {
				ID    int             `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &msg), line)
			assert.Nil(t, msg.Error, line)
			answered[msg.ID] = true
		}
		for id := 1; id <= strings.Count(session, "\n"); id++ {
			assert.True(t, answered[id], "request %d has no answer; stdout:\n%s", id, out)
		}
	})
}
