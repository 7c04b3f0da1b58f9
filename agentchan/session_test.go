package agentchan

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
	fake "github.com/ahp-bridge/ahp-bridge/internal/fakeagentchan"
)

const testToken = "s3cret-token"

// recorder is a Sink that keeps every event and can answer permission
// requests and questions synchronously, as a bridge with an approval policy
// would.
type recorder struct {
	mu         sync.Mutex
	events     []backend.Event
	changed    chan struct{}
	permission func(backend.PermissionRequest)
	question   func(backend.Question)
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Event(ev backend.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	close(r.changed)
	r.changed = make(chan struct{})
	perm, q := r.permission, r.question
	r.mu.Unlock()
	switch e := ev.(type) {
	case backend.PermissionRequest:
		if perm != nil {
			perm(e)
		}
	case backend.Question:
		if q != nil {
			q(e)
		}
	}
}

func (r *recorder) all() []backend.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]backend.Event(nil), r.events...)
}

// waitFor waits until some event satisfies match and returns it.
func (r *recorder) waitFor(t *testing.T, match func(backend.Event) bool) backend.Event {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		r.mu.Lock()
		ch := r.changed
		for _, ev := range r.events {
			if match(ev) {
				r.mu.Unlock()
				return ev
			}
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no matching event; got %v", r.all())
			return nil
		}
	}
}

func texts(evs []backend.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if tc, ok := ev.(backend.TextChunk); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func testConfig(srv *fake.Server) Config {
	return Config{
		ID:             "ws1",
		URL:            srv.URL(),
		Token:          testToken,
		DialTimeout:    2 * time.Second,
		WriteTimeout:   2 * time.Second,
		PingInterval:   50 * time.Millisecond,
		PongTimeout:    time.Second,
		ConnectWait:    5 * time.Second,
		BackoffInitial: 10 * time.Millisecond,
		BackoffMax:     50 * time.Millisecond,
	}
}

type fixture struct {
	srv  *fake.Server
	p    *Provider
	rec  *recorder
	logs *logCapture
	sess backend.Session
}

// logCapture keeps log lines so that a test can wait for the session to
// have handled a frame that has no other visible effect.
type logCapture struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, string(p))
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	return len(p), nil
}

// waitCount waits until n log lines contain substr.
func (l *logCapture) waitCount(t *testing.T, substr string, n int) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		l.mu.Lock()
		ch, got := l.changed, 0
		for _, line := range l.lines {
			if strings.Contains(line, substr) {
				got++
			}
		}
		l.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("saw %d of %d log lines containing %q", got, n, substr)
		}
	}
}

// open starts a fake server with opts and opens a session on it.
func open(t *testing.T, opts fake.Options, edit ...func(*Config)) *fixture {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	srv := fake.New(opts)
	t.Cleanup(srv.Close)
	cfg := testConfig(srv)
	for _, e := range edit {
		e(&cfg)
	}
	logs := &logCapture{changed: make(chan struct{})}
	log := zerolog.New(io.MultiWriter(zerolog.NewTestWriter(t), logs)).Level(zerolog.DebugLevel)
	p := NewProvider(cfg, log)
	rec := newRecorder()
	sess, err := p.OpenSession(context.Background(), backend.SessionOptions{SessionID: "s1"}, rec)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	// The server registers a connection just after the handshake answer;
	// wait so that DropAll finds it.
	require.True(t, srv.WaitFor(5*time.Second, func() bool { return srv.Connections() == 1 }))
	return &fixture{srv: srv, p: p, rec: rec, logs: logs, sess: sess}
}

func (f *fixture) prompt(t *testing.T, turnID, text string) (backend.TurnResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.sess.Prompt(ctx, backend.Prompt{TurnID: turnID, Text: text})
}

func TestFullTask(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.Thinking("Let me look."),
			fake.Text("Reading "),
			fake.ToolInvocation("tc-1", "read_file", map[string]any{"path": "main.go"}),
			fake.ToolResult("tc-1", "package main"),
			fake.ToolInvocation("tc-2", "bash", map[string]any{"command": "go test"}),
			fake.ToolResult("tc-2", map[string]any{"exitCode": 0}),
			fake.ToolInvocation("tc-3", "grep", nil),
			fake.Text("done."),
			fake.Result("Read main.go."),
		}
	}})
	res, err := f.prompt(t, "turn-1", "look at main.go")
	require.NoError(t, err)
	assert.Equal(t, backend.TurnResult{StopReason: backend.StopEndTurn, Summary: "Read main.go."}, res)

	evs := f.rec.all()
	require.Len(t, evs, 9)
	assert.Equal(t, backend.ThoughtChunk{Text: "Let me look."}, evs[0])
	assert.Equal(t, "Reading done.", texts(evs))
	start := evs[2].(backend.ToolCall)
	assert.Equal(t, "tc-1", start.ID)
	assert.Equal(t, "read_file", start.Title)
	assert.Equal(t, "read", start.Kind)
	assert.Equal(t, backend.ToolInProgress, start.Status)
	assert.JSONEq(t, `{"path":"main.go"}`, string(start.RawInput))
	assert.Equal(t, map[string]any{"toolName": "read_file"}, start.Meta)
	done := evs[3].(backend.ToolCall)
	assert.True(t, done.Update)
	assert.Equal(t, backend.ToolCompleted, done.Status)
	assert.Equal(t, backend.ContentReplace, done.ContentMode)
	assert.Equal(t, "package main", done.Content[0].Text)
	assert.Equal(t, `{"exitCode":0}`, evs[5].(backend.ToolCall).Content[0].Text)
	// The unfinished grep call is completed before the turn ends.
	assert.Equal(t, backend.ToolCall{ID: "tc-3", Update: true, Status: backend.ToolCompleted}, evs[8])

	prompts := f.srv.ReceivedOfType("prompt")
	require.Len(t, prompts, 1)
	assert.Equal(t, "turn-1", prompts[0].String("taskId"))
	assert.Equal(t, "look at main.go", prompts[0].String("prompt"))
	assert.Equal(t, []string{"query"}, f.srv.AuthModes())
}

func TestPermission(t *testing.T) {
	for _, typ := range []string{"permission", "permission_request", "approval_request"} {
		for _, answer := range []string{"approve", "reject", "cancelled"} {
			for _, withCall := range []bool{true, false} {
				name := typ + "/" + answer
				if withCall {
					name += "/tool-call"
				}
				t.Run(name, func(t *testing.T) {
					testPermission(t, typ, answer, withCall)
				})
			}
		}
	}
}

func testPermission(t *testing.T, typ, answer string, withCall bool) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		var steps []fake.Step
		callID := ""
		if withCall {
			callID = "tc-1"
			steps = append(steps, fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "rm -rf build"}))
		}
		return append(steps,
			fake.Permission(typ, "r1", callID, "Delete build?"),
			fake.Await("approve", "reject"),
			fake.Text("after"),
			fake.Result("ok"),
		)
	}})
	f.rec.permission = func(pr backend.PermissionRequest) {
		switch answer {
		case "cancelled":
			pr.Respond(backend.PermissionOutcome{Cancelled: true})
		default:
			pr.Respond(backend.PermissionOutcome{OptionID: answer})
		}
		pr.Respond(backend.PermissionOutcome{OptionID: "approve"}) // ignored: only the first answer counts
	}
	res, err := f.prompt(t, "turn-p", "clean")
	require.NoError(t, err)
	assert.Equal(t, backend.StopEndTurn, res.StopReason)

	pr := f.rec.waitFor(t, func(ev backend.Event) bool { _, ok := ev.(backend.PermissionRequest); return ok }).(backend.PermissionRequest)
	assert.Equal(t, "Delete build?", pr.ToolCall.Title)
	assert.Equal(t, PermissionOptions(), pr.Options)
	if withCall {
		assert.Equal(t, "tc-1", pr.ToolCall.ID)
		assert.Equal(t, "execute", pr.ToolCall.Kind)
	} else {
		assert.Equal(t, "perm-r1", pr.ToolCall.ID)
	}
	want := "approve"
	if answer != "approve" {
		want = "reject"
	}
	got := append(f.srv.ReceivedOfType("approve"), f.srv.ReceivedOfType("reject")...)
	require.Len(t, got, 1, "exactly one answer")
	assert.Equal(t, want, got[0].Type)
	assert.Equal(t, "r1", got[0].String("requestId"))
	assert.Equal(t, "after", texts(f.rec.all()))
}

func TestToolInvocationWithRequestID(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.Send(map[string]any{"type": "tool_invocation", "toolCallId": "tc-7", "toolName": "write_file", "requestId": 9}),
			fake.Await("approve", "reject"),
			fake.ToolResult("tc-7", "written"),
			fake.Result("ok"),
		}
	}})
	// Answer asynchronously, as a bridge that asks a user would.
	f.rec.permission = func(pr backend.PermissionRequest) {
		go pr.Respond(backend.PermissionOutcome{OptionID: OptionApprove})
	}
	_, err := f.prompt(t, "turn-w", "write")
	require.NoError(t, err)
	evs := f.rec.all()
	require.Len(t, evs, 3)
	assert.Equal(t, "tc-7", evs[0].(backend.ToolCall).ID)
	assert.Equal(t, "tc-7", evs[1].(backend.PermissionRequest).ToolCall.ID)
	approves := f.srv.ReceivedOfType("approve")
	require.Len(t, approves, 1)
	assert.Equal(t, "9", approves[0].String("requestId"))
}

func TestQuestion(t *testing.T) {
	tests := []struct {
		name     string
		withCall bool
		answers  []string
		declined bool
		wantType string
		want     map[string]string
	}{
		{"answered to tool call", true, []string{"main", "yes"}, false, "tool_response",
			map[string]string{"toolCallId": "ask-1", "result": "main\nyes"}},
		{"declined to tool call", true, nil, true, "tool_response",
			map[string]string{"toolCallId": "ask-1", "result": DeclinedAnswer}},
		{"answered as follow-up prompt", false, []string{"main"}, false, "prompt",
			map[string]string{"taskId": "turn-q", "prompt": "main"}},
		{"declined as follow-up prompt", false, nil, true, "prompt",
			map[string]string{"taskId": "turn-q", "prompt": DeclinedAnswer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := open(t, fake.Options{})
			f.srv.SetScript(func(p fake.ClientFrame) []fake.Step {
				if p.String("prompt") != "start" {
					return nil // the follow-up answer; the first script goes on
				}
				var steps []fake.Step
				if tt.withCall {
					steps = append(steps, fake.ToolInvocation("ask-1", "ask_user", nil))
				}
				return append(steps,
					fake.Question("Which branch?", "Sure?"),
					fake.Await(tt.wantType),
					fake.Result("answered"),
				)
			})
			f.rec.question = func(q backend.Question) {
				assert.Equal(t, []string{"Which branch?", "Sure?"}, q.Questions)
				q.Respond(tt.answers, tt.declined)
				q.Respond([]string{"again"}, false) // ignored
			}
			res, err := f.prompt(t, "turn-q", "start")
			require.NoError(t, err)
			assert.Equal(t, "answered", res.Summary)
			got := f.srv.ReceivedOfType(tt.wantType)
			if tt.wantType == "prompt" {
				require.Len(t, got, 2)
				got = got[1:]
			}
			require.Len(t, got, 1)
			for k, v := range tt.want {
				assert.Equal(t, v, got[0].String(k), k)
			}
			if tt.wantType == "prompt" {
				assert.Empty(t, f.srv.ReceivedOfType("tool_response"))
			} else {
				assert.Len(t, f.srv.ReceivedOfType("prompt"), 1, "no follow-up prompt")
			}
		})
	}
}

func TestErrorEndsTurn(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.ToolInvocation("tc-1", "bash", nil), fake.Error("rate limited")}
	}})
	_, err := f.prompt(t, "turn-e", "go")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rate limited")
	evs := f.rec.all()
	require.Len(t, evs, 2)
	assert.Equal(t, backend.ToolCall{ID: "tc-1", Update: true, Status: backend.ToolFailed}, evs[1])

	// The session is still usable.
	f.srv.SetScript(nil)
	res, err := f.prompt(t, "turn-e2", "again")
	require.NoError(t, err)
	assert.Equal(t, "done", res.Summary)
}

func TestCancelDropsLateFrames(t *testing.T) {
	f := open(t, fake.Options{})
	f.srv.SetScript(func(p fake.ClientFrame) []fake.Step {
		if p.String("taskId") == "turn-a" {
			return []fake.Step{
				fake.Text("working"),
				fake.Await("abort"),
				fake.Text(" late"),
				fake.SendNoTask(map[string]any{"type": "text", "content": " stray"}),
				fake.Result("late result"),
			}
		}
		return []fake.Step{fake.Sleep(50 * time.Millisecond), fake.Text("second"), fake.Result("two")}
	})
	type out struct {
		res backend.TurnResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := f.prompt(t, "turn-a", "long job")
		done <- out{res, err}
	}()
	f.rec.waitFor(t, func(ev backend.Event) bool { return ev == backend.TextChunk{Text: "working"} })
	require.NoError(t, f.sess.Cancel(context.Background()))
	select {
	case o := <-done:
		require.NoError(t, o.err)
		assert.Equal(t, backend.StopCancelled, o.res.StopReason)
	case <-time.After(2 * time.Second):
		t.Fatal("Prompt did not return promptly after Cancel")
	}
	require.True(t, f.srv.WaitFor(2*time.Second, func() bool { return len(f.srv.ReceivedOfType("abort")) == 1 }))
	assert.Equal(t, "turn-a", f.srv.ReceivedOfType("abort")[0].String("taskId"))
	require.NoError(t, f.sess.Cancel(context.Background()), "Cancel without a turn is a no-op")

	// Frames without a taskId cannot be told apart from the next turn's, so
	// wait until the late frames (two with the aborted taskId around one
	// without) have been handled before starting the next turn.
	f.logs.waitCount(t, "late frame of an aborted task", 2)
	f.logs.waitCount(t, "dropping frame received outside a turn", 1)
	res, err := f.prompt(t, "turn-b", "next")
	require.NoError(t, err)
	assert.Equal(t, "two", res.Summary)
	assert.Equal(t, "workingsecond", texts(f.rec.all()))
}

func TestPromptContextCancelled(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Text("x"), fake.Await("abort")}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		f.rec.waitFor(t, func(ev backend.Event) bool { _, ok := ev.(backend.TextChunk); return ok })
		cancel()
	}()
	res, err := f.sess.Prompt(ctx, backend.Prompt{TurnID: "turn-c", Text: "x"})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, backend.StopCancelled, res.StopReason)
	require.True(t, f.srv.WaitFor(2*time.Second, func() bool { return len(f.srv.ReceivedOfType("abort")) == 1 }))
}

func TestReconnectAfterDrop(t *testing.T) {
	f := open(t, fake.Options{})
	f.srv.SetScript(func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Text("partial"), fake.Drop()}
	})
	_, err := f.prompt(t, "turn-1", "first")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection to the agent-channel backend was lost during the turn")

	f.srv.SetScript(func(fake.ClientFrame) []fake.Step { return []fake.Step{fake.Result("again")} })
	res, err := f.prompt(t, "turn-2", "second")
	require.NoError(t, err)
	assert.Equal(t, "again", res.Summary)
	assert.Equal(t, 2, f.srv.Connections())
	for _, ev := range f.rec.all() {
		_, isDisc := ev.(backend.Disconnected)
		assert.False(t, isDisc, "the turn's error reports the drop; no Disconnected event")
	}
}

func TestDisconnectedWhenIdle(t *testing.T) {
	f := open(t, fake.Options{})
	require.Equal(t, 1, f.srv.DropAll())
	ev := f.rec.waitFor(t, func(ev backend.Event) bool { _, ok := ev.(backend.Disconnected); return ok })
	assert.Contains(t, ev.(backend.Disconnected).Err.Error(), "reconnecting")
	res, err := f.prompt(t, "turn-1", "after drop")
	require.NoError(t, err)
	assert.Equal(t, "done", res.Summary)
	assert.Equal(t, 2, f.srv.Connections())
}

func TestReconnectBacksOffUntilServerReturns(t *testing.T) {
	f := open(t, fake.Options{})
	f.srv.SetRefusing(true)
	require.Equal(t, 1, f.srv.DropAll())
	require.True(t, f.srv.WaitFor(5*time.Second, func() bool { return f.srv.Refused() >= 3 }))
	f.srv.SetRefusing(false)
	// Prompt waits for the reconnection in progress.
	res, err := f.prompt(t, "turn-1", "back?")
	require.NoError(t, err)
	assert.Equal(t, "done", res.Summary)
	assert.Equal(t, 2, f.srv.Connections())
	f.logs.waitCount(t, "agent-channel reconnection failed", 3)
	f.logs.waitCount(t, "503 Service Unavailable", 3)
}

func TestPromptWhileReconnectingTimesOut(t *testing.T) {
	f := open(t, fake.Options{}, func(c *Config) { c.ConnectWait = 200 * time.Millisecond })
	f.srv.SetRefusing(true)
	require.Equal(t, 1, f.srv.DropAll())
	f.rec.waitFor(t, func(ev backend.Event) bool { _, ok := ev.(backend.Disconnected); return ok })
	require.True(t, f.srv.WaitFor(5*time.Second, func() bool { return f.srv.Refused() >= 1 }))
	_, err := f.prompt(t, "turn-1", "anyone?")
	require.ErrorIs(t, err, ErrNotConnected)
	assert.Contains(t, err.Error(), "still reconnecting after 200ms")
	assert.Contains(t, err.Error(), "workspace is restarting")
	assert.Empty(t, f.srv.ReceivedOfType("prompt"))
	err = f.sess.SetConfig(context.Background(), "model", "m")
	require.ErrorIs(t, err, ErrNotConnected)
}

func TestNoPongReconnects(t *testing.T) {
	t.Parallel() // mostly waits on a subprocess or a timer: overlaps the CPU-bound tests
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Text("thinking hard"), fake.Silence()}
	}})
	start := time.Now()
	_, err := f.prompt(t, "turn-1", "hang")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer from the agent-channel backend")
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)

	f.srv.SetScript(nil)
	res, err := f.prompt(t, "turn-2", "again")
	require.NoError(t, err)
	assert.Equal(t, "done", res.Summary)
	assert.Equal(t, 2, f.srv.Connections())
}

func TestIdleConnectionStaysUp(t *testing.T) {
	t.Parallel() // mostly waits on a subprocess or a timer: overlaps the CPU-bound tests
	// Our pings keep an idle connection alive well past PongTimeout.
	f := open(t, fake.Options{})
	time.Sleep(2500 * time.Millisecond)
	assert.Equal(t, 1, f.srv.Connections())
	_, err := f.prompt(t, "turn-1", "still there?")
	require.NoError(t, err)
	assert.Equal(t, 1, f.srv.Connections())
}

func TestUnknownFramesIgnored(t *testing.T) {
	f := open(t, fake.Options{
		OnConnect: func(int) []fake.Step {
			// Frames outside any turn (e.g. history replay) are dropped.
			return []fake.Step{fake.SendNoTask(map[string]any{"type": "text", "content": "replayed"})}
		},
		Script: func(fake.ClientFrame) []fake.Step {
			return []fake.Step{
				fake.OtherChannel("terminal", "output"),
				fake.OtherChannel("files", "changed"),
				fake.OtherChannel("ports", "opened"),
				fake.OtherChannel("config", "updated"),
				fake.Raw([]byte("not json")),
				fake.Raw([]byte(`{"channel":"agent"}`)),
				fake.Raw([]byte(`[1,2,3]`)),
				fake.Send(map[string]any{"type": "status", "state": "busy"}),
				fake.Send(map[string]any{"type": "text", "content": 42}),
				fake.Send(map[string]any{"type": "text", "content": "ok", "unknownField": map[string]any{"a": 1}}),
				fake.Send(map[string]any{"type": "text", "content": "other task", "taskId": "someone-else"}),
				fake.Result("done"),
			}
		},
	})
	f.logs.waitCount(t, "dropping frame received outside a turn", 1)
	res, err := f.prompt(t, "turn-1", "go")
	require.NoError(t, err)
	assert.Equal(t, "done", res.Summary)
	assert.Equal(t, []backend.Event{backend.TextChunk{Text: "ok"}}, f.rec.all())
}

func TestOversizeMessage(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Text("before"), fake.Oversize(DefaultMaxMessageSize + 10)}
	}})
	_, err := f.prompt(t, "turn-1", "big")
	require.Error(t, err)
	var tooBig errTooBig
	require.ErrorAs(t, err, &tooBig)
	assert.Contains(t, err.Error(), "larger than 1048576 bytes")

	// Exactly at the limit is fine, after reconnection.
	f.srv.SetScript(func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Oversize(DefaultMaxMessageSize), fake.Result("big but fine")}
	})
	res, err := f.prompt(t, "turn-2", "limit")
	require.NoError(t, err)
	assert.Equal(t, "big but fine", res.Summary)
	assert.Equal(t, 2, f.srv.Connections())
}

func TestMissingTaskID(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.SendNoTask(map[string]any{"type": "text", "content": "no id"}),
			fake.SendNoTask(map[string]any{"type": "tool_invocation", "toolCallId": "tc-1", "toolName": "bash"}),
			fake.SendNoTask(map[string]any{"type": "permission_request", "requestId": "r1", "toolCallId": "tc-1"}),
			fake.Await("approve"),
			fake.SendNoTask(map[string]any{"type": "result", "summary": "finished"}),
		}
	}})
	f.rec.permission = func(pr backend.PermissionRequest) { pr.Respond(backend.PermissionOutcome{OptionID: OptionApprove}) }
	res, err := f.prompt(t, "turn-1", "go")
	require.NoError(t, err)
	assert.Equal(t, "finished", res.Summary)
	assert.Equal(t, "no id", texts(f.rec.all()))
}

func TestSubprotocolToken(t *testing.T) {
	f := open(t, fake.Options{}, func(c *Config) { c.TokenMode = TokenSubprotocol })
	_, err := f.prompt(t, "turn-1", "hi")
	require.NoError(t, err)
	assert.Equal(t, []string{"subprotocol"}, f.srv.AuthModes())
}

func TestDialErrors(t *testing.T) {
	srv := fake.New(fake.Options{Token: testToken})
	defer srv.Close()
	log := zerolog.Nop()

	cfg := testConfig(srv)
	cfg.Token = "wrong-token"
	p := NewProvider(cfg, log)
	_, err := p.OpenSession(context.Background(), backend.SessionOptions{}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.Contains(t, err.Error(), "check the token")
	assert.Contains(t, err.Error(), "invalid token")
	assert.NotContains(t, err.Error(), "wrong-token")
	assert.Equal(t, 1, srv.Rejected())

	for _, url := range []string{"", "ftp://host/x", "ws://", "::bad"} {
		cfg := testConfig(srv)
		cfg.URL = url
		_, err := NewProvider(cfg, log).OpenSession(context.Background(), backend.SessionOptions{}, newRecorder())
		require.Error(t, err, url)
		assert.Contains(t, err.Error(), `agent-channel backend "ws1"`)
	}

	cfg = testConfig(srv)
	cfg.URL = "ws://127.0.0.1:1/workspaces/x/ws"
	_, err = NewProvider(cfg, log).OpenSession(context.Background(), backend.SessionOptions{}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dial ws://127.0.0.1:1/workspaces/x/ws")
}

func TestSettings(t *testing.T) {
	srv := fake.New(fake.Options{Token: testToken})
	defer srv.Close()
	p := NewProvider(testConfig(srv), zerolog.Nop())
	defer func() { require.NoError(t, p.Close(context.Background())) }()
	rec := newRecorder()
	sess, err := p.OpenSession(context.Background(), backend.SessionOptions{Model: "m-initial"}, rec)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, sess.SetConfig(ctx, "model", "m2"))
	require.NoError(t, sess.SetConfig(ctx, "provider", "anthropic"))
	err = sess.SetConfig(ctx, "mode", "plan")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no setting "mode"`)

	require.True(t, srv.WaitFor(2*time.Second, func() bool { return len(srv.ReceivedOfType("settings")) == 3 }))
	got := srv.ReceivedOfType("settings")
	assert.Equal(t, "m-initial", got[0].String("model"))
	assert.False(t, got[0].Has("provider"))
	assert.Equal(t, "m2", got[1].String("model"))
	assert.Equal(t, "anthropic", got[2].String("provider"))

	// Settings are restored on a new connection.
	require.Equal(t, 1, srv.DropAll())
	rec.waitFor(t, func(ev backend.Event) bool { _, ok := ev.(backend.Disconnected); return ok })
	require.True(t, srv.WaitFor(2*time.Second, func() bool { return len(srv.ReceivedOfType("settings")) == 4 }))
	last := srv.ReceivedOfType("settings")[3]
	assert.Equal(t, 2, last.Conn)
	assert.Equal(t, "m2", last.String("model"))
	assert.Equal(t, "anthropic", last.String("provider"))
}

func TestCloseDuringTurn(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Text("x"), fake.Await("never")}
	}})
	done := make(chan error, 1)
	go func() {
		_, err := f.prompt(t, "turn-1", "x")
		done <- err
	}()
	f.rec.waitFor(t, func(ev backend.Event) bool { _, ok := ev.(backend.TextChunk); return ok })
	require.NoError(t, f.sess.Close(context.Background()))
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrSessionClosed)
	case <-time.After(2 * time.Second):
		t.Fatal("Prompt did not return after Close")
	}
	_, err := f.prompt(t, "turn-2", "after close")
	require.ErrorIs(t, err, ErrSessionClosed)
	require.NoError(t, f.sess.Close(context.Background()), "second Close is harmless")
	for _, ev := range f.rec.all() {
		_, isDisc := ev.(backend.Disconnected)
		assert.False(t, isDisc, "closing is not a disconnection")
	}
}

func TestConcurrentPromptRefused(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Text("x"), fake.Await("abort")}
	}})
	done := make(chan error, 1)
	go func() {
		_, err := f.prompt(t, "turn-1", "x")
		done <- err
	}()
	f.rec.waitFor(t, func(ev backend.Event) bool { _, ok := ev.(backend.TextChunk); return ok })
	_, err := f.prompt(t, "turn-2", "y")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already running")
	require.NoError(t, f.sess.Cancel(context.Background()))
	require.NoError(t, <-done)
}

func TestProviderInfoAndClose(t *testing.T) {
	srv := fake.New(fake.Options{Token: testToken})
	defer srv.Close()
	cfg := testConfig(srv)
	cfg.Models = []backend.ModelInfo{{ID: "m1", Name: "Model 1"}}
	p := NewProvider(cfg, zerolog.Nop())
	info := p.Info()
	assert.Equal(t, "ws1", info.ID)
	assert.Equal(t, "ws1", info.DisplayName)
	assert.Contains(t, info.Description, "127.0.0.1")
	assert.NotContains(t, info.Description, testToken)
	assert.Equal(t, cfg.Models, info.Models)

	var sessions []backend.Session
	for range 3 {
		s, err := p.OpenSession(context.Background(), backend.SessionOptions{}, newRecorder())
		require.NoError(t, err)
		sessions = append(sessions, s)
	}
	require.NoError(t, p.Close(context.Background()))
	for _, s := range sessions {
		_, err := s.Prompt(context.Background(), backend.Prompt{Text: "x"})
		require.ErrorIs(t, err, ErrSessionClosed)
	}
	_, err := p.OpenSession(context.Background(), backend.SessionOptions{}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "provider is closed")
}

func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{0, 0, 50 * ms}, {0, 0.999999, 100 * ms}, {1, 0, 100 * ms}, {2, 0.5, 300 * ms},
		{10, 0, 500 * ms}, {1000, 0.999999, 1000 * ms},
	}
	for _, tt := range tests {
		assert.InDelta(t, float64(tt.want), float64(backoff(tt.n, 100*ms, time.Second, tt.r)), float64(ms), "n=%d r=%v", tt.n, tt.r)
	}
}
