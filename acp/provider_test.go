package acp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func isToolCall(id string, update bool) func(backend.Event) bool {
	return func(ev backend.Event) bool {
		tc, ok := ev.(backend.ToolCall)
		return ok && tc.ID == id && tc.Update == update
	}
}

func indexOf(evs []backend.Event, pred func(backend.Event) bool) int {
	for i, ev := range evs {
		if pred(ev) {
			return i
		}
	}
	return -1
}

func TestDemoTurnApproved(t *testing.T) {
	p := scriptProvider(t, nil)
	assert.Empty(t, p.Info().Models, "models are unknown before the agent runs")
	s, rec, dir := openSession(t, p)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Readme\nline 2\n"), 0o644))

	cfg := rec.waitFor(t, "initial config", func(ev backend.Event) bool {
		_, ok := ev.(backend.ConfigChanged)
		return ok
	}).(backend.ConfigChanged)
	require.Len(t, cfg.Options, 2)
	assert.Equal(t, "model", cfg.Options[0].Category)
	assert.Equal(t, "script-fast", cfg.Options[0].Current)
	assert.Equal(t, ModeOptionID, cfg.Options[1].ID)
	assert.Equal(t, "default", cfg.Options[1].Current)
	assert.Equal(t, []backend.ModelInfo{{ID: "script-fast", Name: "Script Fast"}, {ID: "script-smart", Name: "Script Smart"}}, p.Info().Models)
	rec.waitFor(t, "commands", func(ev backend.Event) bool {
		cc, ok := ev.(backend.CommandsChanged)
		return ok && len(cc.Commands) == 1 && cc.Commands[0].Name == "demo" && cc.Commands[0].InputHint != ""
	})

	done := startPrompt(t, s, "demo please")
	perm := rec.permission(t)
	assert.Equal(t, "read-1", perm.ToolCall.ID)
	assert.Equal(t, "Read README.md", perm.ToolCall.Title)
	assert.Equal(t, []backend.PermissionOption{{ID: "allow", Name: "Allow", Kind: backend.AllowOnce}, {ID: "reject", Name: "Reject", Kind: backend.RejectOnce}}, perm.Options)
	perm.Respond(backend.PermissionOutcome{OptionID: "allow"})
	perm.Respond(backend.PermissionOutcome{OptionID: "reject"}) // ignored

	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
	require.NotNil(t, r.res.Usage)
	assert.Equal(t, backend.Usage{InputTokens: 10, OutputTokens: 20, CachedInputTokens: 5, TotalTokens: 30, Model: "script-fast",
		Reported: backend.UsageInput | backend.UsageOutput | backend.UsageCacheRead | backend.UsageTotal}, *r.res.Usage)

	evs := rec.all()
	assert.Equal(t, "Hello from the script agent. I read README.md. Done.", rec.text())
	iThought := indexOf(evs, func(ev backend.Event) bool { _, ok := ev.(backend.ThoughtChunk); return ok })
	iPlan := indexOf(evs, func(ev backend.Event) bool { _, ok := ev.(backend.Plan); return ok })
	iTool := indexOf(evs, isToolCall("read-1", false))
	iPerm := indexOf(evs, func(ev backend.Event) bool { _, ok := ev.(backend.PermissionRequest); return ok })
	iDone := indexOf(evs, func(ev backend.Event) bool {
		tc, ok := ev.(backend.ToolCall)
		return ok && tc.ID == "read-1" && tc.Status == backend.ToolCompleted
	})
	require.True(t, iThought >= 0 && iPlan > iThought && iTool > iPlan && iPerm > iTool && iDone > iPerm,
		"events out of order: %s", summarize(evs))
	done1 := evs[iDone].(backend.ToolCall)
	require.Len(t, done1.Content, 1)
	assert.Equal(t, "# Readme\nline 2\n", done1.Content[0].Text)
	assert.Equal(t, backend.ContentReplace, done1.ContentMode)
}

func TestPermissionOptionsAndDeny(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	done := startPrompt(t, s, "permission")
	perm := rec.permission(t)
	kinds := []backend.PermissionOptionKind{}
	for _, o := range perm.Options {
		kinds = append(kinds, o.Kind)
	}
	assert.Equal(t, []backend.PermissionOptionKind{backend.AllowOnce, backend.AllowAlways, backend.RejectOnce, backend.RejectAlways}, kinds)
	assert.Equal(t, "execute", perm.ToolCall.Kind)
	assert.JSONEq(t, `{"command":"true"}`, string(perm.ToolCall.RawInput))
	perm.Respond(backend.PermissionOutcome{OptionID: "reject-always"})
	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
	assert.Equal(t, "selected: reject-always", rec.text())
	rec.waitFor(t, "failed tool call", func(ev backend.Event) bool {
		tc, ok := ev.(backend.ToolCall)
		return ok && tc.ID == "perm-1" && tc.Status == backend.ToolFailed
	})
}

func TestCancelWhilePermissionPending(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	done := startPrompt(t, s, "permission")
	perm := rec.permission(t)
	require.NoError(t, s.Cancel(waitCtx(t)))
	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopCancelled, r.res.StopReason)
	// A late answer is ignored.
	perm.Respond(backend.PermissionOutcome{OptionID: "allow-once"})
	assert.NotContains(t, rec.text(), "selected")

	// The session still works.
	r = prompt(t, s, "echo again")
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
}

func TestCancelWaitingTurn(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	assert.NoError(t, s.Cancel(waitCtx(t)), "cancel without a turn is a no-op")
	done := startPrompt(t, s, "wait")
	rec.waitFor(t, "waiting", func(ev backend.Event) bool { tc, ok := ev.(backend.TextChunk); return ok && tc.Text == "waiting" })
	require.NoError(t, s.Cancel(waitCtx(t)))
	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopCancelled, r.res.StopReason)
}

func TestCancelGraceKillsStuckAgent(t *testing.T) {
	p := scriptProvider(t, func(c *Config) { c.CancelGrace = 300 * time.Millisecond })
	s, rec, _ := openSession(t, p)
	done := startPrompt(t, s, "ignore-cancel")
	rec.waitFor(t, "ignoring", func(ev backend.Event) bool {
		tc, ok := ev.(backend.TextChunk)
		return ok && tc.Text == "ignoring cancel"
	})
	first := p.proc
	start := time.Now()
	require.NoError(t, s.Cancel(waitCtx(t)))
	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopCancelled, r.res.StopReason)
	assert.Less(t, time.Since(start), 10*time.Second)
	<-first.done
	for _, ev := range rec.all() {
		_, isDisc := ev.(backend.Disconnected)
		assert.False(t, isDisc, "the session that cancelled is not told it was disconnected")
	}

	// The next turn restarts the agent and re-creates the session.
	rec.reset()
	r = prompt(t, s, "echo after restart")
	require.NoError(t, r.err)
	assert.Equal(t, "text:echo after restart", rec.text())
	assert.NotSame(t, first, p.proc)
}

func TestCrashMidTurnAndRestart(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	s2, rec2, _ := openSession(t, p)
	r := prompt(t, s, "crash")
	require.Error(t, r.err)
	assert.Contains(t, r.err.Error(), "exit status 3")
	assert.Contains(t, r.err.Error(), "crashing on purpose")
	assert.Equal(t, "about to crash", rec.text(), "output before the crash is delivered")
	for _, rc := range []*recorder{rec, rec2} {
		d := rc.waitFor(t, "disconnected", func(ev backend.Event) bool { _, ok := ev.(backend.Disconnected); return ok }).(backend.Disconnected)
		assert.Contains(t, d.Err.Error(), "exit status 3")
	}

	rec.reset()
	r = prompt(t, s, "echo revived")
	require.NoError(t, r.err)
	assert.Equal(t, "text:echo revived", rec.text())
	rec2.reset()
	r = prompt(t, s2, "echo also")
	require.NoError(t, r.err)
	assert.Equal(t, "text:echo also", rec2.text())
}

func TestFloodDeliveredInOrder(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	const n = 10000
	r := prompt(t, s, fmt.Sprintf("flood %d 64", n))
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
	i := 0
	for _, ev := range rec.all() {
		tc, ok := ev.(backend.TextChunk)
		if !ok {
			continue
		}
		require.Len(t, tc.Text, 64)
		require.Equal(t, fmt.Sprintf("%08d", i), tc.Text[:8], "chunk %d out of order", i)
		i++
	}
	assert.Equal(t, n, i)
}

func TestPermissionBeforeToolCall(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	done := startPrompt(t, s, "perm-first")
	perm := rec.permission(t)
	assert.Equal(t, backend.ToolCall{ID: "early-1", Title: "Early tool", Kind: "execute", Update: true}, perm.ToolCall)
	assert.Equal(t, -1, indexOf(rec.all(), isToolCall("early-1", false)), "no tool_call before the request")
	perm.Respond(backend.PermissionOutcome{OptionID: "yes"})
	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, "selected: yes", rec.text())
	evs := rec.all()
	assert.Greater(t, indexOf(evs, isToolCall("early-1", false)), indexOf(evs, func(ev backend.Event) bool {
		_, ok := ev.(backend.PermissionRequest)
		return ok
	}))
}

func TestV2Kinds(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	r := prompt(t, s, "v2")
	require.NoError(t, r.err)
	var calls []backend.ToolCall
	var custom []backend.Custom
	for _, ev := range rec.all() {
		switch e := ev.(type) {
		case backend.ToolCall:
			calls = append(calls, e)
		case backend.Custom:
			custom = append(custom, e)
		}
	}
	require.Len(t, calls, 6)
	assert.Equal(t, "_custom_kind", calls[0].Kind)
	assert.Equal(t, backend.ToolStatus("_queued"), calls[0].Status)
	assert.Equal(t, backend.ContentAppend, calls[1].ContentMode)
	assert.Equal(t, "part 1", calls[1].Content[0].Text)
	assert.Equal(t, "part 2", calls[2].Content[0].Text)
	assert.Equal(t, backend.ContentReplace, calls[3].ContentMode)
	assert.Empty(t, calls[3].Content)
	assert.Equal(t, backend.ToolStatus("_paused"), calls[4].Status)
	assert.Equal(t, backend.ContentUnchanged, calls[4].ContentMode)
	require.Len(t, calls[5].Content, 1)
	assert.Equal(t, "_custom_content", calls[5].Content[0].Type)
	assert.JSONEq(t, `{"type":"_custom_content","data":1}`, string(calls[5].Content[0].Raw))
	require.Len(t, custom, 1)
	assert.Equal(t, "_custom_update", custom[0].Kind)
	assert.JSONEq(t, `{"sessionUpdate":"_custom_update","payload":{"x":1}}`, string(custom[0].Raw))
	assert.Equal(t, "v2 done", rec.text())
}

func TestGarbageAndOverlongLines(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	r := prompt(t, s, "garbage")
	require.NoError(t, r.err)
	assert.Equal(t, "before garbage after garbage", rec.text())

	rec.reset()
	const size = 11 << 20 // above the SDK's 10 MiB line limit
	r = prompt(t, s, fmt.Sprintf("longline %d", size))
	require.NoError(t, r.err)
	text := rec.text()
	assert.Len(t, text, size+len("after"))
	assert.True(t, strings.HasSuffix(text, "after"))

	// Lines over our own limit are dropped without losing the session.
	p2 := scriptProvider(t, func(c *Config) { c.MaxLineBytes = 1 << 20 })
	s2, rec2, _ := openSession(t, p2)
	r = prompt(t, s2, "longline 2000000")
	require.NoError(t, r.err)
	assert.Equal(t, "after", rec2.text())
}

func TestUnknownClientMethod(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	r := prompt(t, s, "unknown-method")
	require.NoError(t, r.err)
	assert.Contains(t, rec.text(), "unknown-method error: -32601")
	assert.Contains(t, rec.text(), "extension error: -32601")
}

func TestPromptErrorAndAttachments(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	r := prompt(t, s, "error")
	require.Error(t, r.err)
	assert.Contains(t, r.err.Error(), "scripted failure")

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := s.Prompt(ctx, backend.Prompt{Text: "echo files", Attachments: []backend.Attachment{
		{Kind: backend.AttachResourceLink, URI: "file:///w/a.go", Name: "a.go"},
		{Kind: backend.AttachEmbedded, URI: "file:///w/b.txt", Text: "inline text", MimeType: "text/plain"},
	}})
	require.NoError(t, err)
	assert.Equal(t, backend.StopEndTurn, res.StopReason)
	assert.Equal(t, "text:echo files|link:a.go=file:///w/a.go|resource:file:///w/b.txt=inline text", rec.text())
}

func TestTitleAndUsageUpdates(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	require.NoError(t, prompt(t, s, "title My session").err)
	rec.waitFor(t, "title", func(ev backend.Event) bool {
		tc, ok := ev.(backend.TitleChanged)
		return ok && tc.Title == "My session"
	})
	r := prompt(t, s, "usage")
	require.NoError(t, r.err)
	rec.waitFor(t, "context usage", func(ev backend.Event) bool {
		u, ok := ev.(backend.ContextUsage)
		return ok && u.Used != nil && *u.Used == 1234 && u.Size != nil && *u.Size == 200000
	})
}

func TestSetConfig(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	require.NoError(t, s.SetConfig(waitCtx(t), "model", "script-smart"))
	rec.waitFor(t, "model changed", func(ev backend.Event) bool {
		cc, ok := ev.(backend.ConfigChanged)
		return ok && len(cc.Options) == 2 && cc.Options[0].Current == "script-smart"
	})
	require.NoError(t, s.SetConfig(waitCtx(t), "mode", "plan"))
	rec.waitFor(t, "mode changed", func(ev backend.Event) bool {
		cc, ok := ev.(backend.ConfigChanged)
		return ok && len(cc.Options) == 2 && cc.Options[1].Current == "plan" && cc.Options[0].Current == "script-smart"
	})
	err := s.SetConfig(waitCtx(t), "model", "nope")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `invalid config "model"="nope"`)
	err = s.SetConfig(waitCtx(t), "temperature", "1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no setting "temperature"`)

	// A model requested at creation is selected.
	rec2 := newRecorder()
	s2, err := p.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir(), Model: "script-smart"}, rec2)
	require.NoError(t, err)
	defer s2.Close(context.Background())
	rec2.waitFor(t, "requested model", func(ev backend.Event) bool {
		cc, ok := ev.(backend.ConfigChanged)
		return ok && len(cc.Options) > 0 && cc.Options[0].Current == "script-smart"
	})
}

func TestAuthRequired(t *testing.T) {
	p := scriptProvider(t, func(c *Config) { c.Env = append(c.Env, "SCRIPTAGENT_REQUIRE_AUTH=1") })
	_, err := p.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "agent requires authentication (methods: Script token (script-token))")
}

func TestStartFailures(t *testing.T) {
	p := NewProvider(Config{ID: "x", Command: []string{filepath.Join(t.TempDir(), "no-such-agent")}}, testLogger(t))
	defer p.Close(context.Background())
	_, err := p.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "starting agent")
	assert.Contains(t, err.Error(), "no-such-agent")

	// An agent that exits at once: the error names the exit and stderr.
	p2 := NewProvider(Config{ID: "y", Command: []string{"/bin/sh", "-c", "echo 'bad config file' >&2; exit 2"}}, testLogger(t))
	defer p2.Close(context.Background())
	_, err = p2.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exit status 2")
	assert.Contains(t, err.Error(), "bad config file")

	_, err = p2.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: filepath.Join(t.TempDir(), "missing")}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "working directory")

	// An agent that never answers initialize.
	p4 := NewProvider(Config{ID: "w", StartTimeout: 300 * time.Millisecond,
		Command: []string{"/bin/sh", "-c", "echo 'waiting for godot' >&2; exec sleep 30"}}, testLogger(t))
	defer p4.Close(context.Background())
	_, err = p4.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not answer initialize within 300ms")
	assert.Contains(t, err.Error(), "waiting for godot")

	p3 := NewProvider(Config{ID: "z"}, testLogger(t))
	defer p3.Close(context.Background())
	_, err = p3.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, newRecorder())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no agent command")
}

func TestCloseLeavesNoProcesses(t *testing.T) {
	p := scriptProvider(t, func(c *Config) { c.CloseGrace = 200 * time.Millisecond })
	s, rec, _ := openSession(t, p)
	done := startPrompt(t, s, "terminal-limit 100 sleep 30")
	rec.waitFor(t, "terminal", func(ev backend.Event) bool { _, ok := ev.(backend.TerminalStarted); return ok })
	pid := p.proc.pid
	sess := s.(*session)
	sess.mu.Lock()
	require.Len(t, sess.terms, 1)
	var termPid int
	for _, term := range sess.terms {
		termPid = term.pid
	}
	sess.mu.Unlock()
	// Session close with a turn running: the terminal is released.
	require.NoError(t, s.Close(waitCtx(t)))
	require.NoError(t, p.Close(waitCtx(t)))
	// The turn ends one way or another; it must not hang.
	waitPrompt(t, done)
	assert.Error(t, syscall.Kill(-pid, 0), "agent process group still exists")
	assert.Eventually(t, func() bool { return syscall.Kill(-termPid, 0) != nil }, 5*time.Second, 50*time.Millisecond, "terminal process group still exists")
	_, err := p.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, newRecorder())
	assert.ErrorContains(t, err, "closed")
}

func TestSessionCloseAnswersPendingPermission(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	done := startPrompt(t, s, "permission")
	rec.permission(t)
	require.NoError(t, s.Close(waitCtx(t)))
	r := waitPrompt(t, done)
	// The agent sees "cancelled" and ends the turn.
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopCancelled, r.res.StopReason)
	assert.Error(t, s.SetConfig(waitCtx(t), "model", "script-smart"), "closed session refuses work")
}

func TestTerminals(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)

	r := prompt(t, s, "terminal echo hello; echo oops >&2; exit 7")
	require.NoError(t, r.err)
	assert.Equal(t, "exit=7 truncated=false output=hello\noops\n", rec.text())
	var out strings.Builder
	var started backend.TerminalStarted
	var exited backend.TerminalExited
	var released backend.TerminalReleased
	for _, ev := range rec.all() {
		switch e := ev.(type) {
		case backend.TerminalStarted:
			started = e
		case backend.TerminalOutput:
			assert.Equal(t, started.TerminalID, e.TerminalID)
			out.WriteString(e.Data)
		case backend.TerminalExited:
			exited = e
		case backend.TerminalReleased:
			released = e
		}
	}
	require.NotEmpty(t, started.TerminalID)
	assert.Contains(t, started.Command, "echo hello")
	assert.Equal(t, "hello\noops\n", out.String())
	require.NotNil(t, exited.ExitCode)
	assert.Equal(t, 7, *exited.ExitCode)
	assert.Equal(t, started.TerminalID, released.TerminalID)
	tool := rec.waitFor(t, "terminal tool call", isToolCall("term-1", false)).(backend.ToolCall)
	assert.Equal(t, started.TerminalID, tool.Content[0].TerminalID)

	// Output limit: truncated from the start at a character boundary.
	rec.reset()
	r = prompt(t, s, "terminal-limit 7 printf 'ééééé'")
	require.NoError(t, r.err)
	text := rec.text()
	require.True(t, strings.HasPrefix(text, "exit=0 truncated=true output="), text)
	got := strings.TrimPrefix(text, "exit=0 truncated=true output=")
	assert.True(t, utf8.ValidString(got))
	assert.Equal(t, "ééé", got)

	rec.reset()
	r = prompt(t, s, "terminal-kill")
	require.NoError(t, r.err)
	assert.Equal(t, "killed signal=killed exit=none", rec.text())

	rec.reset()
	r = prompt(t, s, "terminal-release")
	require.NoError(t, r.err)
	assert.True(t, strings.HasPrefix(rec.text(), "released term-"), rec.text())
	rec.waitFor(t, "released", func(ev backend.Event) bool { _, ok := ev.(backend.TerminalReleased); return ok })
	rec.waitFor(t, "killed", func(ev backend.Event) bool {
		e, ok := ev.(backend.TerminalExited)
		return ok && e.Signal == "killed"
	})
}

func TestFileServicesConfinement(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, dir := openSession(t, p)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "outdir")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "a.txt"), filepath.Join(dir, "inlink.txt")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))

	tests := []struct {
		prompt string
		want   string
	}{
		{"read a.txt", "content:one\ntwo\nthree\n"},
		{"read a.txt 2 1", "content:two\n"},
		{"read a.txt 3 10", "content:three\n"},
		{"read inlink.txt", "content:one\ntwo\nthree\n"},
		{"read missing.txt", "read error: -32002"},
		{"read ../" + filepath.Base(outside) + "/secret.txt", "outside the session's working directory"},
		{"read sub/../a.txt", "content:one\ntwo\nthree\n"},
		{"read " + filepath.Join(outside, "secret.txt"), "outside the session's working directory"},
		{"read /etc/passwd", "outside the session's working directory"},
		{"read link.txt", "outside the session's working directory"},
		{"read outdir/secret.txt", "outside the session's working directory"},
		{"read outdir/missing.txt", "outside the session's working directory"},
		{"read fifo", "not a regular file"},
		{"read sub", "a directory, not a file"},
		{"write new.txt hello world", "wrote new.txt"},
		{"write deep/er/file.txt nested", "wrote deep/er/file.txt"},
		{"write a.txt replaced", "wrote a.txt"},
		{"write ../escape.txt x", "outside the session's working directory"},
		{"write " + filepath.Join(outside, "x.txt") + " x", "outside the session's working directory"},
		{"write outdir/x.txt x", "outside the session's working directory"},
		{"write link.txt x", "outside the session's working directory"},
		{"write outdir/newdir/x.txt x", "outside the session's working directory"},
		{"write fifo x", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			rec.reset()
			r := prompt(t, s, tt.prompt)
			require.NoError(t, r.err)
			assert.Contains(t, rec.text(), tt.want)
		})
	}
	b, err := os.ReadFile(filepath.Join(dir, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello world", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "deep", "er", "file.txt"))
	require.NoError(t, err)
	assert.Equal(t, "nested", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "replaced", string(b))
	fi, err := os.Stat(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "rewrite keeps the file mode")
	_, err = os.Stat(filepath.Join(outside, "x.txt"))
	assert.True(t, os.IsNotExist(err))
	_, err = os.Stat(filepath.Join(outside, "newdir"))
	assert.True(t, os.IsNotExist(err))
	b, err = os.ReadFile(filepath.Join(outside, "secret.txt"))
	require.NoError(t, err)
	assert.Equal(t, "secret", string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), ".tmp"), "temporary file left behind: %s", e.Name())
	}
}

// TestExampleAgent runs acp-go-sdk's own example agent, built from the
// module cache.
func TestExampleAgent(t *testing.T) {
	// The example agent pauses about a second between steps, as if a model
	// were thinking: the test mostly waits, so it runs beside the others.
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "example-agent")
	build := exec.Command("go", "build", "-o", bin, "github.com/coder/acp-go-sdk/example/agent")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the example agent: %s", out)

	p := NewProvider(Config{ID: "example", DisplayName: "Example", Command: []string{bin}}, testLogger(t))
	defer p.Close(context.Background())
	rec := newRecorder()
	s, err := p.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, rec)
	require.NoError(t, err)
	defer s.Close(context.Background())
	done := startPrompt(t, s, "hello")
	perm := rec.permission(t)
	assert.Equal(t, "call_2", perm.ToolCall.ID)
	perm.Respond(backend.PermissionOutcome{OptionID: "allow"})
	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
	assert.Contains(t, rec.text(), "ACP Go Example Agent")
	assert.Contains(t, rec.text(), "successfully updated the configuration")
	done1 := rec.waitFor(t, "call_1 completed", func(ev backend.Event) bool {
		tc, ok := ev.(backend.ToolCall)
		return ok && tc.ID == "call_1" && tc.Status == backend.ToolCompleted
	}).(backend.ToolCall)
	assert.Equal(t, "# My Project\n\nThis is a sample project...", done1.Content[0].Text)
}

func TestUpdateBeforeSessionResponseAndClose(t *testing.T) {
	p := scriptProvider(t, nil)
	rec := newRecorder()
	dir := t.TempDir()
	s, err := p.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: "file://" + dir}, rec)
	require.NoError(t, err)
	rec.waitFor(t, "title sent before the session/new response", func(ev backend.Event) bool {
		tc, ok := ev.(backend.TitleChanged)
		return ok && tc.Title == "Script session"
	})
	assert.Equal(t, dir, s.(*session).cwd)
	a := p.proc
	require.NoError(t, s.Close(waitCtx(t)))
	require.NoError(t, s.Close(waitCtx(t)), "second close is a no-op")
	assert.Eventually(t, func() bool { return strings.Contains(a.tail.String(), "closed session sess-1") },
		5*time.Second, 20*time.Millisecond, "session/close was not sent")
}

func TestNotificationFloodAndOversizedMessages(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	r := prompt(t, s, "notify-flood 5000")
	require.NoError(t, r.err)
	assert.Equal(t, "survived", rec.text())

	// A prompt response larger than the SDK accepts is read all the same:
	// the session reads prompt results itself.
	r = prompt(t, s, "longresponse 9000000")
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopEndTurn, r.res.StopReason)

	// A request larger than the SDK accepts is refused.
	rec.reset()
	r = prompt(t, s, "longrequest 9000000")
	require.NoError(t, r.err)
	assert.Contains(t, rec.text(), "longrequest error: -32600 request too large")

	rec.reset()
	r = prompt(t, s, "echo still alive")
	require.NoError(t, r.err)
	assert.Equal(t, "text:echo still alive", rec.text())
}

// slowSink blocks on its first event for a while, as a stuck consumer
// would; the agent's output must keep being read meanwhile.
type slowSink struct {
	*recorder
	once sync.Once
}

func (s *slowSink) Event(ev backend.Event) {
	s.once.Do(func() { time.Sleep(2 * time.Second) })
	s.recorder.Event(ev)
}

func TestSlowSinkDoesNotStallTheAgent(t *testing.T) {
	t.Parallel() // two of its seconds are the sink's stall: it runs beside TestExampleAgent
	p := scriptProvider(t, nil)
	rec := newRecorder()
	sink := &slowSink{recorder: rec}
	s, err := p.OpenSession(waitCtx(t), backend.SessionOptions{Cwd: t.TempDir()}, sink)
	require.NoError(t, err)
	defer s.Close(context.Background())
	const n = 3000 // well over the SDK's 1024 queued notifications
	r := prompt(t, s, fmt.Sprintf("flood %d 16", n))
	require.NoError(t, r.err)
	count := 0
	for _, ev := range rec.all() {
		if tc, ok := ev.(backend.TextChunk); ok {
			require.Equal(t, fmt.Sprintf("%08d", count), tc.Text[:8])
			count++
		}
	}
	assert.Equal(t, n, count)
}

func TestCancelBeforePromptIsSent(t *testing.T) {
	// The agent takes a moment to start, so a Cancel can arrive while
	// Prompt is still restarting it.
	p := scriptProvider(t, func(c *Config) {
		c.Command = []string{"/bin/sh", "-c", `sleep 0.5; exec "$0"`, os.Args[0]}
	})
	s, rec, _ := openSession(t, p)
	a := p.proc
	a.kill("test")
	<-a.done
	rec.waitFor(t, "disconnected", func(ev backend.Event) bool { _, ok := ev.(backend.Disconnected); return ok })

	done := startPrompt(t, s, "echo never sent")
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, s.Cancel(waitCtx(t)))
	r := waitPrompt(t, done)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopCancelled, r.res.StopReason)
	assert.Empty(t, rec.text())
}

// TestFileServicesRefuseDeviceFiles uses /dev as the session's working
// directory, so a real device node is inside the confinement and only the
// device check can refuse it (creating a node would need root).
func TestFileServicesRefuseDeviceFiles(t *testing.T) {
	p := scriptProvider(t, nil)
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := p.OpenSession(ctx, backend.SessionOptions{SessionID: "0123456789abcdef", Cwd: "/dev"}, rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	for _, tc := range []string{"read null", "read zero", "write null x"} {
		t.Run(tc, func(t *testing.T) {
			rec.reset()
			r := prompt(t, s, tc)
			require.NoError(t, r.err)
			assert.Contains(t, rec.text(), "not a regular file")
		})
	}
}
