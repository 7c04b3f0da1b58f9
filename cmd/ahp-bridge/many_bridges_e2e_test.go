package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// TestManyStdioBridgesOneStateFile: five editor windows, each starting its
// own `serve --stdio` at the same moment on the default state file (a
// state directory they share, a file none of them has created yet). None
// fails to start; each creates a session and runs a turn; the file ends
// up with all five sessions, and no hold is left once they exit.
func TestManyStdioBridgesOneStateFile(t *testing.T) {
	const n = 5
	stateHome := t.TempDir()
	env := append(os.Environ(), "XDG_STATE_HOME="+stateHome)
	dir := demoDir(t)
	bin := bridgetest.Binary(t)

	editors := make([]*stdioEditor, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { editors[i] = startStdioEditorEnv(t, bin, env) })
	}
	wg.Wait()
	sessions := make([]string, n)
	for i, e := range editors {
		require.NotNil(t, e, "editor %d", i)
		sessions[i] = fmt.Sprintf("ahp-session:/0d7f5c1e-2a3b-4c5d-8e9f-0a1b2c3d4e%02d", i)
	}
	for i, e := range editors {
		wg.Go(func() {
			e.call(2, "createSession", map[string]any{"channel": sessions[i], "provider": "demo", "workingDirectory": "file://" + dir})
			snap := e.call(3, "subscribe", map[string]any{"channel": sessions[i]})
			if !strings.Contains(string(snap), `"lifecycle":"ready"`) {
				e.await("session/ready", isAction("session/ready"))
			}
			e.send(0, "dispatchAction", map[string]any{"channel": sessions[i], "clientSeq": 1, "action": map[string]any{
				"type": "session/turnStarted", "turnId": "turn-1",
				"message": map[string]any{"text": fmt.Sprintf("echo window %d", i), "origin": map[string]any{"kind": "user"}},
			}})
			done := e.await("turn end", func(f map[string]any) bool {
				return isAction("session/turnComplete")(f) || isAction("session/error")(f)
			})
			assert.True(t, isAction("session/turnComplete")(done), "window %d: turn ended with %v", i, done)
		})
	}
	wg.Wait()

	// Each bridge lists every session in the file, its own and the others'.
	for i, e := range editors {
		res := string(e.call(10, "listSessions", map[string]any{"channel": "ahp-root://"}))
		for _, s := range sessions {
			assert.Contains(t, res, s, "window %d lists %s", i, s)
		}
	}

	// sessions list on the same default file, while all five run.
	cmd := exec.Command(bin, "sessions", "list")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, s := range sessions {
		assert.Contains(t, string(out), s)
	}
	for _, e := range editors {
		e.close()
	}
	// Every bridge released its holds when it exited: each session can be
	// deleted.
	args := append([]string{"sessions", "delete"}, sessions...)
	cmd = exec.Command(bin, args...)
	cmd.Env = env
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, n, strings.Count(string(out), "deleted "))
}

// startStdioEditorEnv is startStdioEditor with the environment given (the
// state directory, which several editors share here), speaking AHP 0.3.0.
func startStdioEditorEnv(t *testing.T, bin string, env []string) *stdioEditor {
	cmd := exec.Command(bin, "serve", "--stdio", "--acp", "demo="+bin+" demo-agent")
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	e := &stdioEditor{t: t, cmd: cmd, stdin: stdin, stderr: &lockedWriter{w: &bytes.Buffer{}}, frames: make(chan map[string]any, 1024)}
	cmd.Stderr = e.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		defer close(e.frames)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				e.frames <- map[string]any{"_notJSON": sc.Text()}
				continue
			}
			e.frames <- m
		}
	}()
	res := e.call(1, "initialize", map[string]any{"channel": "ahp-root://", "protocolVersions": []string{"0.3.0"}, "clientId": "editor", "initialSubscriptions": []string{"ahp-root://"}})
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	require.NoError(t, json.Unmarshal(res, &init))
	require.Equal(t, "0.3.0", init.ProtocolVersion)
	return e
}
