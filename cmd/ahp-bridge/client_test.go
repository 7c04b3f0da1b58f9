package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/client/fakehost"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestParseClientArgs(t *testing.T) {
	const url = "ws://127.0.0.1:8081/?tkn=x"
	tests := []struct {
		name    string
		args    []string
		want    clientOptions
		wantErr string
	}{
		{name: "plain", args: []string{url, "hello", "world"},
			want: clientOptions{URL: url, Prompt: "hello world"}},
		{name: "flags first", args: []string{"--json", "--provider", "claude", url, "hi"},
			want: clientOptions{URL: url, Provider: "claude", JSON: true, Prompt: "hi"}},
		{name: "flags interleaved", args: []string{url, "--approve-all", "fix", "--cwd=/tmp", "the", "bug"},
			want: clientOptions{URL: url, ApproveAll: true, Cwd: "/tmp", Prompt: "fix the bug"}},
		{name: "double dash keeps flag-like prompt", args: []string{url, "--deny-all", "--", "explain", "--json"},
			want: clientOptions{URL: url, DenyAll: true, Prompt: "explain --json"}},
		{name: "join session", args: []string{"--session", "ahp-session:/abc", url, "go"},
			want: clientOptions{URL: url, Session: "ahp-session:/abc", Prompt: "go"}},
		{name: "missing url", args: nil, wantErr: "missing the server URL"},
		{name: "missing prompt", args: []string{url, "--json"}, wantErr: "missing the PROMPT"},
		{name: "blank prompt", args: []string{url, " "}, wantErr: "missing the PROMPT"},
		{name: "not a websocket url", args: []string{"http://x/", "hi"}, wantErr: "ws://HOST:PORT"},
		{name: "approve and deny", args: []string{url, "--approve-all", "--deny-all", "hi"}, wantErr: "exclude each other"},
		{name: "session with provider", args: []string{url, "--session", "ahp-session:/a", "--provider", "p", "hi"}, wantErr: "only apply to new ones"},
		{name: "session not a uri", args: []string{url, "--session", "abc", "hi"}, wantErr: "wants a session URI"},
		{name: "unknown flag", args: []string{url, "--nope", "hi"}, wantErr: "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseClientArgs(tc.args, &stderr)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Contains(t, stderr.String(), "usage: ahp-bridge client", "bad usage prints the usage")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRunClientUsageExitCodes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, runClient(context.Background(), []string{"ws://x/"}, strings.NewReader(""), &stdout, &stderr))
	assert.Equal(t, exitOK, runClient(context.Background(), []string{"-h"}, strings.NewReader(""), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "Exit codes:")
	assert.Empty(t, stdout.String())
}

func TestRunClientConnectionError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runClient(context.Background(), []string{"ws://127.0.0.1:1/?tkn=s3cret", "hi"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr.String(), "connecting to AHP server")
	assert.NotContains(t, stderr.String(), "s3cret")
}

// clientRun is one `client` run against a fake host.
type clientRun struct {
	code           int
	stdout, stderr string
}

func runAgainst(t *testing.T, h *fakehost.Host, args []string, stdin string) clientRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runClient(ctx, append([]string{h.URL()}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return clientRun{code, stdout.String(), stderr.String()}
}

func newFakeHost(t *testing.T, opts fakehost.Options) *fakehost.Host {
	h := fakehost.New(opts)
	t.Cleanup(func() {
		h.Close()
		assert.NoError(t, h.Err())
	})
	return h
}

func TestRunClientAgainstFakeHost(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout, in order
	}{
		{"echo", []string{"hello", "there"}, exitOK, []string{"echo: hello there\n"}},
		{"approve all", []string{"--approve-all", "tool", "please"}, exitOK, []string{
			"│ I should read\n│ the file.\n",
			"⚙ Read file: Read README.md\n",
			"  ✓ approved (Allow once)\n",
			"  ✓ Read README.md\n    # Title\n    Some text.\n",
			"The README has a title.\n",
		}},
		{"deny all", []string{"--deny-all", "tool"}, exitDenied, []string{"  ✗ denied (Reject)\n", "Not reading it, then.\n"}},
		{"turn error", []string{"fail"}, exitTurnError, []string{"✗ error: the agent crashed (agentError)\n"}},
		{"result approved", []string{"--approve-all", "result"}, exitOK, []string{"⚙ Search: Search the web\n", "  ✓ Searched the web\n", "  ✓ result accepted\n", "result accepted\n"}},
		{"result denied", []string{"--deny-all", "result"}, exitDenied, []string{"  ✗ result rejected\n", "result rejected\n"}},
		{"provider flag", []string{"--provider", "echo", "--cwd", ".", "hi"}, exitOK, []string{"echo: hi"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, fakehost.Options{})
			r := runAgainst(t, h, tc.args, "")
			assert.Equal(t, tc.wantCode, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assertInOrder(t, r.stdout, tc.wantOut)
		})
	}
}

func TestRunClientUnknownProvider(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	r := runAgainst(t, h, []string{"--provider", "nope", "hi"}, "")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "no such provider: nope")
}

func TestRunClientCreationFailed(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{CreationError: "claude is not logged in"})
	r := runAgainst(t, h, []string{"hi"}, "")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "the session could not be created: claude is not logged in")
}

func TestRunClientNoAgents(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{Agents: []wire.AgentInfo{}})
	r := runAgainst(t, h, []string{"hi"}, "")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "offers no agents")
}

func TestRunClientJSON(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	r := runAgainst(t, h, []string{"--json", "--approve-all", "tool"}, "")
	require.Equal(t, exitOK, r.code, r.stderr)
	var types []string
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		if m.Method != "action" {
			continue
		}
		var env wire.ActionEnvelope
		require.NoError(t, json.Unmarshal(m.Params, &env))
		types = append(types, env.Action.Type())
	}
	assert.Equal(t, []string{
		"session/turnStarted", "session/responsePart", "session/reasoning", "session/toolCallStart",
		"session/toolCallReady", "session/toolCallConfirmed", "session/toolCallComplete",
		"session/responsePart", "session/turnComplete",
	}, types)
	assert.NotContains(t, r.stdout, "⚙", "--json prints nothing but JSON")
}

func TestRunClientInteractive(t *testing.T) {
	tests := []struct {
		name     string
		prompt   string
		stdin    string
		wantCode int
		wantOut  []string
	}{
		{"approve by number", "tool", "1\n", exitOK, []string{
			"  ? needs approval: Allow reading README.md?\n",
			"  Allow Read file?  [1] Allow once  [2] Reject  (1-2, y or n)\n",
			"  ✓ approved (Allow once)\n"}},
		{"deny by y/n after a typo", "tool", "maybe\nn\n", exitDenied, []string{
			"  \"maybe\" is not an answer: type a number from 1 to 2, y or n\n",
			"  Allow Read file?",
			"  ✗ denied (Reject)\n"}},
		{"approve by label", "tool", "allow once\n", exitOK, []string{"  ✓ approved (Allow once)\n"}},
		{"result by hand", "result", "n\n", exitDenied, []string{"  Let the agent use the result of Search? [y/n]\n", "  ✗ result rejected\n"}},
		{"questions with default and text", "ask", "\nAda\n", exitOK, []string{
			"? A few questions\n",
			"  Favourite colour?\n    [1] Red\n    [2] Blue (recommended)\n  (a number)\n",
			"  Your name?\n  (empty to skip)\n",
			"  ✓ input accept\n",
			"accept: color=blue, name=Ada\n"}},
		{"questions by number, skipping", "ask", "1\n\n", exitOK, []string{"accept: color=red, name skipped\n"}},
		{"stdin closes before the answer", "tool", "", exitCancelled, []string{"stdin closed; waiting for another client to answer\n", "[turn cancelled]\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, fakehost.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := dialFake(t, h)
			var stdout, stderr bytes.Buffer
			sio := sessionIO{Stdin: strings.NewReader(tc.stdin), Stdout: &stdout, Stderr: &stderr, Interactive: true}
			if tc.wantCode == exitCancelled {
				// Nobody answers: the run must still be waiting. Cancelling
				// ctx acts like Ctrl-C: the turn is cancelled.
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			code := runClientSession(ctx, c, clientOptions{Prompt: tc.prompt, Cwd: "."}, sio)
			assert.Equal(t, tc.wantCode, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			assertInOrder(t, stdout.String(), tc.wantOut)
		})
	}
}

func TestRunClientWaitsForAnotherClient(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialFake(t, h)
	other := dialFake(t, h)

	out := &syncBuffer{}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		sio := sessionIO{Stdin: strings.NewReader(""), Stdout: out, Stderr: &stderr}
		done <- runClientSession(ctx, c, clientOptions{Prompt: "tool", Cwd: "."}, sio)
	}()
	// The other client finds the session and approves the tool call.
	var uri string
	require.Eventually(t, func() bool {
		sessions, err := other.ListSessions(ctx)
		require.NoError(t, err)
		if len(sessions) == 1 {
			uri = sessions[0].Resource
		}
		return uri != ""
	}, 5*time.Second, 10*time.Millisecond)
	_, err := other.Subscribe(ctx, uri)
	require.NoError(t, err)
	st, err := other.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.ActiveTurn != nil && len(s.ActiveTurn.ResponseParts) >= 2 })
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "waiting for another client") }, 5*time.Second, 10*time.Millisecond)
	_, err = other.Confirm(ctx, uri, wire.Action(&wire.SessionToolCallApprovedAction{
		TurnID: st.ActiveTurn.ID, ToolCallID: "tc-1", Approved: true, Confirmed: wire.ToolCallConfirmationReasonUserAction,
	}))
	require.NoError(t, err)
	assert.Equal(t, exitOK, <-done)
	assertInOrder(t, out.String(), []string{
		"waiting for another client to answer: may Read file run? (Read README.md)\n",
		"  ✓ approved by " + other.ClientID() + "\n",
		"The README has a title.\n",
	})
}

func TestRunClientJoinSession(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	creator := dialFake(t, h)
	uri := client.NewSessionURI()
	require.NoError(t, creator.CreateSession(ctx, wire.CreateSessionParams{Channel: uri}))
	r := runAgainst(t, h, []string{"--session", uri, "joined"}, "")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "echo: joined\n", r.stdout)

	r = runAgainst(t, h, []string{"--session", "ahp-session:/missing", "x"}, "")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "no such channel")
}

func TestRunClientCancel(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialFake(t, h)
	out := &syncBuffer{}
	interrupts := make(chan struct{}, 1)
	done := make(chan int, 1)
	go func() {
		sio := sessionIO{Stdin: strings.NewReader(""), Stdout: out, Stderr: out, Interrupts: interrupts}
		done <- runClientSession(ctx, c, clientOptions{Prompt: "wait", Cwd: "."}, sio)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "working…") }, 5*time.Second, 10*time.Millisecond)
	interrupts <- struct{}{}
	assert.Equal(t, exitCancelled, <-done)
	assertInOrder(t, out.String(), []string{"working…\n", "cancelling the turn (Ctrl-C again to quit)…\n", "[turn cancelled]\n"})
}

func TestRunClientInterruptedWhileCreating(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{HoldCreation: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialFake(t, h)
	interrupts := make(chan struct{}, 1)
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		sio := sessionIO{Stdin: strings.NewReader(""), Stdout: &syncBuffer{}, Stderr: &stderr, Interrupts: interrupts}
		done <- runClientSession(ctx, c, clientOptions{Prompt: "hi", Cwd: "."}, sio)
	}()
	require.Eventually(t, func() bool {
		sessions, err := c.ListSessions(ctx)
		return err == nil && len(sessions) == 1
	}, 5*time.Second, 10*time.Millisecond)
	interrupts <- struct{}{}
	assert.Equal(t, exitCancelled, <-done)
	assert.Contains(t, stderr.String(), "interrupted before the turn started")
}

func TestWatchInterrupts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	presses, stop := watchInterrupts(ctx)
	select {
	case <-presses:
		t.Fatal("a press before ctx was cancelled")
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	select {
	case <-presses:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancellation of ctx is not a press")
	}
	stop()
}

func TestRunClientConnectionLost(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialFake(t, h)
	out := &syncBuffer{}
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		sio := sessionIO{Stdin: strings.NewReader(""), Stdout: out, Stderr: &stderr}
		done <- runClientSession(ctx, c, clientOptions{Prompt: "wait", Cwd: "."}, sio)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "working…") }, 5*time.Second, 10*time.Millisecond)
	h.DropConnections()
	assert.Equal(t, exitError, <-done)
	assert.Contains(t, stderr.String(), "connection lost during the turn")
}

func dialFake(t *testing.T, h *fakehost.Host) *client.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, h.URL(), client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(ctx)
	require.NoError(t, err)
	return c
}

// assertInOrder checks that every want string occurs in got, in order.
func assertInOrder(t *testing.T, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if !assert.GreaterOrEqual(t, i, 0, "missing (in order) %q in output:\n%s", w, got) {
			return
		}
		rest = rest[i+len(w):]
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRendererGolden renders recorded envelope streams and compares the
// text with testdata/render/NAME.golden (go test -update rewrites them).
func TestRendererGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "render", "*.ndjson"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".ndjson")
		for _, color := range []bool{false, true} {
			golden := name + ".golden"
			if color {
				golden = name + ".color.golden"
			}
			t.Run(golden, func(t *testing.T) {
				f, err := os.Open(in)
				require.NoError(t, err)
				defer f.Close()
				var out bytes.Buffer
				r := newRenderer(&out, color, "me")
				sc := bufio.NewScanner(f)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					if len(bytes.TrimSpace(sc.Bytes())) == 0 {
						continue
					}
					var env wire.ActionEnvelope
					require.NoError(t, json.Unmarshal(sc.Bytes(), &env), "line %q", sc.Text())
					r.envelope(&env)
				}
				require.NoError(t, sc.Err())
				path := filepath.Join("testdata", "render", golden)
				if *updateGolden {
					require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, string(want), out.String())
			})
		}
	}
}

func TestQuestionParse(t *testing.T) {
	opts := []wire.SessionInputOption{{ID: "red", Label: "Red"}, {ID: "blue", Label: "Blue"}}
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name    string
		q       question
		in      string
		want    string // JSON of the answer
		problem string
	}{
		{"bool yes", question{kind: wire.SessionInputQuestionKindBoolean}, "y",
			`{"state":"submitted","value":{"kind":"boolean","value":true}}`, ""},
		{"bool no", question{kind: wire.SessionInputQuestionKindBoolean}, "No",
			`{"state":"submitted","value":{"kind":"boolean","value":false}}`, ""},
		{"bool default", question{kind: wire.SessionInputQuestionKindBoolean, defBool: wire.Ptr(true)}, "",
			`{"state":"submitted","value":{"kind":"boolean","value":true}}`, ""},
		{"bool junk", question{kind: wire.SessionInputQuestionKindBoolean}, "maybe", "", `"maybe" is not an answer: type y or n`},
		{"required empty", question{kind: wire.SessionInputQuestionKindText, required: true}, "", "", "an answer is required"},
		{"optional empty skips", question{kind: wire.SessionInputQuestionKindText}, "", `{"state":"skipped"}`, ""},
		{"text", question{kind: wire.SessionInputQuestionKindText}, "hi there",
			`{"state":"submitted","value":{"kind":"text","value":"hi there"}}`, ""},
		{"text default", question{kind: wire.SessionInputQuestionKindText, defText: wire.Ptr("main")}, "",
			`{"state":"submitted","value":{"kind":"text","value":"main"}}`, ""},
		{"text too long", question{kind: wire.SessionInputQuestionKindText, max: f(3)}, "abcd", "", "the answer must have (at most 3) characters"},
		{"number", question{kind: wire.SessionInputQuestionKindNumber}, "3.5",
			`{"state":"submitted","value":{"kind":"number","value":3.5}}`, ""},
		{"number default", question{kind: wire.SessionInputQuestionKindNumber, defNumber: f(7)}, "",
			`{"state":"submitted","value":{"kind":"number","value":7}}`, ""},
		{"integer not whole", question{kind: wire.SessionInputQuestionKindInteger}, "3.5", "", `"3.5" is not a whole number`},
		{"not a number", question{kind: wire.SessionInputQuestionKindNumber}, "many", "", `"many" is not a number`},
		{"number out of range", question{kind: wire.SessionInputQuestionKindNumber, min: f(1), max: f(5)}, "9", "", "9 is out of range (between 1 and 5)"},
		{"select by number", question{kind: wire.SessionInputQuestionKindSingleSelect, options: opts}, "2",
			`{"state":"submitted","value":{"kind":"selected","value":"blue"}}`, ""},
		{"select by label", question{kind: wire.SessionInputQuestionKindSingleSelect, options: opts}, "red",
			`{"state":"submitted","value":{"kind":"selected","value":"red"}}`, ""},
		{"select freeform", question{kind: wire.SessionInputQuestionKindSingleSelect, options: opts, freeform: true}, "green",
			`{"state":"submitted","value":{"kind":"selected","value":"green","freeformValues":["green"]}}`, ""},
		{"select unknown", question{kind: wire.SessionInputQuestionKindSingleSelect, options: opts}, "3", "", `"3" is not one of the choices: type a number from 1 to 2`},
		{"select recommended default", question{kind: wire.SessionInputQuestionKindSingleSelect, required: true,
			options: []wire.SessionInputOption{{ID: "a", Label: "A"}, {ID: "b", Label: "B", Recommended: wire.Ptr(true)}}}, "",
			`{"state":"submitted","value":{"kind":"selected","value":"b"}}`, ""},
		{"multi", question{kind: wire.SessionInputQuestionKindMultiSelect, options: opts}, "1, blue",
			`{"state":"submitted","value":{"kind":"selected-many","value":["red","blue"]}}`, ""},
		{"multi freeform", question{kind: wire.SessionInputQuestionKindMultiSelect, options: opts, freeform: true}, "2,teal",
			`{"state":"submitted","value":{"kind":"selected-many","value":["blue"],"freeformValues":["teal"]}}`, ""},
		{"multi unknown", question{kind: wire.SessionInputQuestionKindMultiSelect, options: opts}, "1,9", "", `"9" is not one of the choices: type numbers from 1 to 2`},
		{"multi too many", question{kind: wire.SessionInputQuestionKindMultiSelect, options: opts, max: f(1)}, "1,2", "", "choose (at most 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := tc.q.parse(tc.in)
			assert.Equal(t, tc.problem, problem)
			if tc.problem != "" {
				return
			}
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestAskersAuto(t *testing.T) {
	ready := &wire.SessionToolCallReadyAction{TurnID: "t", ToolCallID: "tc", InvocationMessage: wire.PlainText("x"),
		Options: []wire.ConfirmationOption{
			{ID: "always", Label: "Always", Kind: wire.ConfirmationOptionKindApprove},
			{ID: "no", Label: "No", Kind: wire.ConfirmationOptionKindDeny},
		}}
	a := newApprovalAsker(ready, "Tool")
	act, ok := a.auto(false, false)
	assert.False(t, ok)
	assert.Nil(t, act)
	act, ok = a.auto(true, false)
	require.True(t, ok)
	assert.Equal(t, "always", *act.(*wire.SessionToolCallApprovedAction).SelectedOptionID)
	act, ok = a.auto(false, true)
	require.True(t, ok)
	denied := act.(*wire.SessionToolCallDeniedAction)
	assert.Equal(t, wire.ToolCallCancellationReasonDenied, denied.Reason)
	assert.Equal(t, "no", *denied.SelectedOptionID)

	// Without options: y/n only, no selectedOptionId.
	bare := newApprovalAsker(&wire.SessionToolCallReadyAction{TurnID: "t", ToolCallID: "tc"}, "Tool")
	assert.Equal(t, "  Allow Tool? [y/n]", bare.prompt())
	act, done, problem := bare.answer("1")
	assert.False(t, done)
	assert.Nil(t, act)
	assert.Equal(t, `"1" is not an answer: type y or n`, problem)
	act, done, _ = bare.answer("yes")
	require.True(t, done)
	assert.Nil(t, act.(*wire.SessionToolCallApprovedAction).SelectedOptionID)

	req := func(qs ...wire.SessionInputQuestion) *wire.SessionInputRequest {
		return &wire.SessionInputRequest{ID: "in", Questions: qs}
	}
	withDefault := wire.NewSessionInputQuestion(&wire.SessionInputBooleanQuestion{ID: "b", Message: "ok?", Kind: wire.SessionInputQuestionKindBoolean, Required: wire.Ptr(true), DefaultValue: wire.Ptr(false)})
	noDefault := wire.NewSessionInputQuestion(&wire.SessionInputTextQuestion{ID: "t", Message: "name?", Kind: wire.SessionInputQuestionKindText, Required: wire.Ptr(true)})

	act, ok = newInputAsker(req(withDefault)).auto(true, false)
	require.True(t, ok)
	b, err := json.Marshal(act)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"session/inputCompleted","requestId":"in","response":"accept","answers":{"b":{"state":"submitted","value":{"kind":"boolean","value":false}}}}`, string(b))

	_, ok = newInputAsker(req(withDefault, noDefault)).auto(true, false)
	assert.False(t, ok, "a required question without a default needs a person")
	act, ok = newInputAsker(req(noDefault)).auto(false, true)
	require.True(t, ok)
	assert.Equal(t, wire.SessionInputResponseKindDecline, act.(*wire.SessionInputCompletedAction).Response)
	assert.Nil(t, act.(*wire.SessionInputCompletedAction).Answers)

	// A request with no questions is a yes/no.
	plain := newInputAsker(&wire.SessionInputRequest{ID: "in", Message: wire.Ptr("Open the browser?")})
	assert.Equal(t, "Open the browser?", plain.summary())
	_, done, problem = plain.answer("what")
	assert.False(t, done)
	assert.NotEmpty(t, problem)
	act, done, _ = plain.answer("n")
	require.True(t, done)
	assert.Equal(t, wire.SessionInputResponseKindDecline, act.(*wire.SessionInputCompletedAction).Response)
}
