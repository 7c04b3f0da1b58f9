package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// These tests run the built binary as a user or an editor would.

// startServe runs `ahp-bridge serve` with the scripted agent as provider
// "demo" and returns the READY URL and the process.
func startServe(t *testing.T, extra ...string) (string, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	bin := bridgetest.Binary(t)
	url, cmd, stderr := startBinary(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--acp", "demo=" + bin + " demo-agent"}, extra...)...)
	return url, cmd, stderr.w.(*bytes.Buffer)
}

// startBinary runs the binary with args until it prints its READY line,
// and returns the READY URL, the process and its stderr (read it with
// readLocked).
func startBinary(t *testing.T, args ...string) (string, *exec.Cmd, *lockedWriter) {
	t.Helper()
	cmd := exec.Command(bridgetest.Binary(t), args...)
	cmd.Env = ownStateDir(t)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case line := <-lines:
		require.True(t, strings.HasPrefix(line, "READY ws://127.0.0.1:"), "first stdout line: %q", line)
		return strings.TrimPrefix(line, "READY "), cmd, stderr
	case <-time.After(30 * time.Second):
		t.Fatalf("no READY line; stderr:\n%s", readLocked(stderr))
	}
	return "", nil, nil
}

// ownStateDir is the environment of a binary a test runs: the test's, with
// a state directory of its own, so that its default state file is nobody
// else's.
func ownStateDir(t *testing.T) []string {
	return append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
}

// lockedWriter lets a test read a child's output while the child writes it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func demoDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Demo project\nThe answer is 42.\n"), 0o644))
	return dir
}

func runBin(t *testing.T, timeout time.Duration, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bridgetest.Binary(t), args...)
	cmd.Env = ownStateDir(t)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running %v: %v\nstderr:\n%s", args, err, errb.String())
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

func TestServePrintsReadyAndClientCompletesTurn(t *testing.T) {
	url, _, serveErr := startServe(t)
	assert.Contains(t, url, "/?tkn=")
	code, out, errOut := runBin(t, 60*time.Second, "", "client", url, "--approve-all", "--cwd", demoDir(t), "demo", "please")
	if code != 0 { // serveErr is only read on failure: the server is still writing to it
		t.Fatalf("client exit %d; stdout:\n%s\nstderr:\n%s\nserve stderr:\n%s", code, out, errOut, serveErr)
	}
	assert.Contains(t, out, "The answer is 42", "the file read by the agent reaches the answer")
}

func TestClientJSONIsNDJSON(t *testing.T) {
	url, _, _ := startServe(t)
	code, out, errOut := runBin(t, 60*time.Second, "", "client", url, "--json", "--approve-all", "--cwd", demoDir(t), "demo")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Greater(t, len(lines), 5)
	// The first line says what the handshake settled.
	var first struct {
		Method string `json:"method"`
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct {
				Name string `json:"name"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first), "line %q", lines[0])
	assert.Equal(t, "initialize", first.Method)
	assert.Equal(t, "1.0.0", first.Result.ProtocolVersion, "the negotiated version: the newest both speak")
	assert.Equal(t, "ahp-bridge", first.Result.ServerInfo.Name)
	sawComplete := false
	for _, line := range lines {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), "line %q", line)
		if strings.Contains(line, `"chat/turnComplete"`) {
			sawComplete = true
		}
	}
	assert.True(t, sawComplete, "the NDJSON stream shows the turn completing")
}

func TestClientDeniedExitCode(t *testing.T) {
	url, _, _ := startServe(t)
	code, out, errOut := runBin(t, 60*time.Second, "", "client", url, "--deny-all", "--cwd", demoDir(t), "demo")
	assert.Equal(t, 5, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
}

func TestWireLogLinesCarryAhpLog(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "wire.jsonl")
	url, cmd, _ := startServe(t, "--wire-log", logFile)
	code, _, errOut := runBin(t, 60*time.Second, "", "client", url, "--approve-all", "--cwd", demoDir(t), "demo")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())

	data, err := os.ReadFile(logFile)
	require.NoError(t, err)
	token := url[strings.Index(url, "tkn=")+4:]
	assert.NotContains(t, string(data), token, "the token never appears in the wire log")
	dirs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v struct {
			JSONRPC string `json:"jsonrpc"`
			AhpLog  struct {
				TS  string `json:"ts"`
				Dir string `json:"dir"`
			} `json:"_ahpLog"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &v), "line %q", line)
		assert.Equal(t, "2.0", v.JSONRPC)
		_, err := time.Parse(time.RFC3339Nano, v.AhpLog.TS)
		assert.NoError(t, err)
		dirs[v.AhpLog.Dir]++
	}
	assert.Greater(t, dirs["c2s"], 2)
	assert.Greater(t, dirs["s2c"], 10)
}

func TestBadFlagsExit2(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"agents":[{"id":"a","command":"x"}],"typo":1}`), 0o644))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--approve", "maybe"}, "--approve"},
		{[]string{"serve", "--listen", "nonsense"}, "--listen"},
		{[]string{"serve", "--acp", "noequals"}, "--acp"},
		{[]string{"serve", "--acp", "a=echo 'unterminated"}, "unterminated"},
		{[]string{"serve", "--agentchan", "x=http://not-ws"}, "ws://"},
		{[]string{"serve", "--log-format", "xml"}, "--log-format"},
		{[]string{"serve", "--no-token", "--listen", "0.0.0.0:0"}, "non-loopback"},
		{[]string{"serve", "--token", "a", "--no-token"}, "exclude"},
		{[]string{"serve", "--config", cfg}, "typo"},
		{[]string{"serve", "--bogus"}, "bogus"},
		{[]string{"client"}, "URL"},
		{[]string{"nosuchcommand"}, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := runBin(t, 30*time.Second, "", tc.args...)
			assert.Equal(t, 2, code, "stderr: %s", errOut)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runBin(t, 30*time.Second, "", "version")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "ahp-bridge "), out)
	assert.Contains(t, out, "commit")
}

// TestStdioCompletesTurn speaks AHP over the pipes of `serve --stdio` as an
// editor would: in the host's own dialect, 0.7.0 (a turn on the session's
// default chat), and in 0.3.0 (a turn on the session channel), which the
// bridge still serves.
func TestStdioCompletesTurn(t *testing.T) {
	t.Run("0.7.0", func(t *testing.T) {
		e := startStdioEditor(t, "0.7.0")
		session := "ahp-session:/8d7f5c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f"
		e.call(2, "createSession", map[string]any{"channel": session, "provider": "demo", "workingDirectories": []string{"file://" + demoDir(t)}})
		snap := e.call(3, "subscribe", map[string]any{"channel": session})
		var sub struct {
			Snapshot struct {
				State struct {
					Lifecycle   string `json:"lifecycle"`
					DefaultChat string `json:"defaultChat"`
				} `json:"state"`
			} `json:"snapshot"`
		}
		require.NoError(t, json.Unmarshal(snap, &sub))
		chat := sub.Snapshot.State.DefaultChat
		require.True(t, strings.HasPrefix(chat, "ahp-chat:"), "the session names its default chat: %s", snap)
		if sub.Snapshot.State.Lifecycle != "ready" {
			e.await("session/ready", isAction("session/ready"))
		}
		e.call(4, "subscribe", map[string]any{"channel": chat})

		// "echo" replies without asking permission.
		e.send(0, "dispatchAction", map[string]any{"channel": chat, "clientSeq": 1, "action": map[string]any{
			"type": "chat/turnStarted", "turnId": "turn-1", "startedAt": time.Now().UTC().Format(time.RFC3339Nano),
			"message": map[string]any{"text": "echo hello over stdio", "origin": map[string]any{"kind": "user"}},
		}})
		done := e.await("turn end", func(f map[string]any) bool {
			return isAction("chat/turnComplete")(f) || isAction("chat/error")(f)
		})
		assert.True(t, isAction("chat/turnComplete")(done), "turn ended with %v", done)
		e.close()
	})
	t.Run("0.3.0", func(t *testing.T) {
		e := startStdioEditor(t, "0.3.0")
		session := "ahp-session:/0d7f5c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f"
		e.call(2, "createSession", map[string]any{"channel": session, "provider": "demo", "workingDirectory": "file://" + demoDir(t)})
		snap := e.call(3, "subscribe", map[string]any{"channel": session})
		if !strings.Contains(string(snap), `"lifecycle":"ready"`) {
			e.await("session/ready", isAction("session/ready"))
		}
		e.send(0, "dispatchAction", map[string]any{"channel": session, "clientSeq": 1, "action": map[string]any{
			"type": "session/turnStarted", "turnId": "turn-1",
			"message": map[string]any{"text": "echo hello over stdio", "origin": map[string]any{"kind": "user"}},
		}})
		done := e.await("turn end", func(f map[string]any) bool {
			return isAction("session/turnComplete")(f) || isAction("session/error")(f)
		})
		assert.True(t, isAction("session/turnComplete")(done), "turn ended with %v", done)
		e.close()
	})
}

// stdioEditor is an editor speaking AHP to `serve --stdio` through its
// pipes.
type stdioEditor struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedWriter // read it with readLocked: the child writes meanwhile
	frames chan map[string]any
}

// startStdioEditor starts `serve --stdio` with the scripted agent as
// provider "demo" and initializes with protocol version.
func startStdioEditor(t *testing.T, version string) *stdioEditor {
	t.Helper()
	bin := bridgetest.Binary(t)
	cmd := exec.Command(bin, "serve", "--stdio", "--acp", "demo="+bin+" demo-agent")
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
	res := e.call(1, "initialize", map[string]any{"channel": "ahp-root://", "protocolVersions": []string{version}, "clientId": "editor", "initialSubscriptions": []string{"ahp-root://"}})
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	require.NoError(t, json.Unmarshal(res, &init))
	require.Equal(t, version, init.ProtocolVersion)
	return e
}

// send writes a request, or a notification when id is 0.
func (e *stdioEditor) send(id int, method string, params any) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
	if id == 0 {
		delete(msg, "id")
	}
	b, err := json.Marshal(msg)
	require.NoError(e.t, err)
	_, err = e.stdin.Write(append(b, '\n'))
	require.NoError(e.t, err)
}

// call sends a request and returns its result, failing on an error.
func (e *stdioEditor) call(id int, method string, params any) json.RawMessage {
	e.send(id, method, params)
	resp := e.await(method, func(f map[string]any) bool { v, ok := f["id"].(float64); return ok && int(v) == id })
	require.Nil(e.t, resp["error"], "%s: %v", method, resp)
	b, err := json.Marshal(resp["result"])
	require.NoError(e.t, err)
	return b
}

// await reads frames until one satisfies pred, within a minute.
func (e *stdioEditor) await(what string, pred func(map[string]any) bool) map[string]any {
	ctx, cancel := context.WithTimeout(e.t.Context(), 60*time.Second)
	defer cancel()
	for {
		select {
		case f, ok := <-e.frames:
			if !ok {
				e.t.Fatalf("stdout closed while waiting for %s; stderr:\n%s", what, readLocked(e.stderr))
			}
			require.NotContains(e.t, f, "_notJSON", "stdout carries only protocol")
			if pred(f) {
				return f
			}
		case <-ctx.Done():
			e.t.Fatalf("timed out waiting for %s; stderr:\n%s", what, readLocked(e.stderr))
		}
	}
}

// close ends the editor's input; serve must then exit cleanly.
func (e *stdioEditor) close() {
	require.NoError(e.t, e.stdin.Close())
	waitErr := make(chan error, 1)
	go func() { waitErr <- e.cmd.Wait() }()
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	defer cancel()
	select {
	case err := <-waitErr:
		assert.NoError(e.t, err, "serve --stdio exits cleanly when stdin closes")
	case <-ctx.Done():
		e.t.Fatal("serve --stdio did not exit after stdin closed")
	}
}

// isAction matches an action envelope of the given type.
func isAction(typ string) func(map[string]any) bool {
	return func(f map[string]any) bool {
		if f["method"] != "action" {
			return false
		}
		b, _ := json.Marshal(f["params"])
		return strings.Contains(string(b), fmt.Sprintf(`"type":%q`, typ))
	}
}

// TestServeLogsProtocolVersions: at debug, serve says which AHP versions a
// client may speak.
func TestServeLogsProtocolVersions(t *testing.T) {
	code, _, errOut := runBin(t, 30*time.Second, "", "serve", "--stdio", "--log-level", "debug", "--log-format", "json")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	var found []string
	for line := range strings.Lines(errOut) {
		var m struct {
			Versions []string `json:"protocolVersions"`
			Host     string   `json:"hostVersion"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Versions != nil {
			found = m.Versions
			assert.Equal(t, "1.0.0", m.Host)
		}
	}
	assert.Equal(t, codec.Supported(), found, "stderr:\n%s", errOut)
	assert.Contains(t, found, "1.0.0")
	assert.Contains(t, found, "0.9.0")
	assert.Contains(t, found, "0.7.0")
	assert.Contains(t, found, "0.3.0")
}

// TestSIGTERMMidTurnLeavesNoChild checks graceful shutdown: exit 0 and the
// agent process is gone.
func TestSIGTERMMidTurnLeavesNoChild(t *testing.T) {
	url, cmd, serveErr := startServe(t)
	client := exec.Command(bridgetest.Binary(t), "client", url, "--approve-all", "--cwd", demoDir(t), "ignore-cancel")
	cout := &lockedWriter{w: &bytes.Buffer{}}
	client.Stdout = cout
	require.NoError(t, client.Start())
	t.Cleanup(func() { _ = client.Process.Kill(); _ = client.Wait() })

	var children []int
	require.Eventually(t, func() bool {
		children = childPIDs(cmd.Process.Pid)
		return len(children) > 0 && strings.Contains(readLocked(cout), "ignoring cancel")
	}, 60*time.Second, 50*time.Millisecond, "the agent never started the turn; client output: %s", readLocked(cout))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		require.NoError(t, err, "serve exits 0 on SIGTERM; stderr:\n%s", serveErr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit after SIGTERM; stderr:\n%s", serveErr.String())
	}
	for _, pid := range children {
		assert.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 50*time.Millisecond, "agent pid %d outlived the bridge", pid)
	}
}

func readLocked(w *lockedWriter) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.(*bytes.Buffer).String()
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may contain spaces, so cut at ')'.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
		fields := strings.Fields(rest)
		if len(fields) > 1 {
			if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := string(stat[bytes.LastIndexByte(stat, ')')+2:])
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

func TestDemoCompletesNonInteractively(t *testing.T) {
	t.Parallel() // mostly waits on a subprocess or a timer: overlaps the CPU-bound tests
	code, out, errOut := runBin(t, 90*time.Second, "", "demo")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	for _, want := range []string{"READY", "Thinking", "approves each tool call after 3 seconds", "approved by demo-auto-approver", "Demo project", "Plan", "Demo complete"} {
		if want == "READY" {
			assert.Contains(t, out, "a bridge is running at ws://127.0.0.1:")
			continue
		}
		assert.Contains(t, out, want)
	}
}

// TestStdioPipedRequestsAllAnswered is `printf '<requests>' | ahp-bridge
// serve --stdio`: the input ends at once, and every reply still arrives.
func TestStdioPipedRequestsAllAnswered(t *testing.T) {
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.7.0"],"clientId":"pipe"}}` + "\n")
	const n = 50
	for id := 2; id <= n; id++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"listSessions","params":{"channel":"ahp-root://"}}`+"\n", id)
	}
	code, out, errOut := runBin(t, 30*time.Second, in.String(), "serve", "--stdio", "--no-token")
	require.Equal(t, 0, code, "stderr:\n%s", errOut)
	answered := map[int]bool{}
	for line := range strings.Lines(out) {
		var m struct {
			ID    int             `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		assert.Nil(t, m.Error, line)
		answered[m.ID] = true
	}
	for id := 1; id <= n; id++ {
		assert.True(t, answered[id], "request %d has no reply; stdout:\n%s", id, out)
	}
}

// serve --stdio leaves the process's standard output open when its
// connection ends: closing it would let the next pipe opened (an agent's
// stdin) take descriptor 1, and a write to that pipe after its agent is
// gone would kill the bridge with SIGPIPE (seen in TestExamples/editor:
// exit 141 one run in ten when the input ended during createSession).
func TestServeStdioLeavesStdoutOpen(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["1.0.0"],"clientId":"pipe"}}` + "\n")
	var errOut bytes.Buffer
	stateFile := filepath.Join(t.TempDir(), "state.db")
	code := run(t.Context(), []string{"serve", "--stdio", "--no-token", "--state", stateFile}, in, w, &errOut)
	require.Equal(t, 0, code, "stderr:\n%s", errOut.String())
	_, err = w.Write([]byte("still open\n"))
	require.NoError(t, err, "serve --stdio closed the standard output it was given")
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"id":1`, "the reply came first")
}
