package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// These tests run the client against the real host and bridge, with the
// scripted ACP agent (`ahp-bridge demo-agent`) as a subprocess: what the
// fake host does not do — publish terminals, run an ACP agent's turns.

func startBridge(t *testing.T) *bridgetest.Env {
	t.Helper()
	// The demo's agent, built on its own: these tests need no command.
	p := acp.NewProvider(acp.Config{ID: "script", Command: []string{bridgetest.ScriptAgent(t)}}, zerolog.Nop())
	return bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})
}

func dialEnv(t *testing.T, e *bridgetest.Env) *client.Client {
	t.Helper()
	c, err := client.Dial(waitCtx(t), e.URL, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(waitCtx(t))
	require.NoError(t, err)
	return c
}

// TestQueuedPromptRunsAfterTheRunningTurn: the demo's join hint, `client
// URL --session S 'and then?'` while a turn runs, queues the prompt; the
// host starts it when the turn ends and the client shows it to the end.
func TestQueuedPromptRunsAfterTheRunningTurn(t *testing.T) {
	e := startBridge(t)
	owner := e.Client(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Demo\n"), 0o644))
	uri := bridgetest.CreateSession(t, owner, "script", dir)
	startTurn(t, owner, uri, "permission")
	pending := waitConfirmation(t, owner, uri)

	out, errOut, done := startRun(t, dialEnv(t, e), Options{Session: uri}, "echo and then?", IO{Interrupts: make(chan struct{})})
	st, err := owner.WaitForChat(waitCtx(t), uri, func(s *wire.ChatState) bool { return len(s.QueuedMessages) == 1 })
	require.NoError(t, err, "the prompt was not queued; stderr:\n%s", errOut.String())
	assert.Equal(t, "echo and then?", st.QueuedMessages[0].Message.Text)

	_, err = owner.ApproveToolCall(waitCtx(t), pending.Chat, pending.TurnID, pending.ToolCallID, "allow-once")
	require.NoError(t, err)
	assert.Equal(t, ExitOK, waitCode(t, done), "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	assertInOrder(t, out.String(), []string{"» permission\n", "selected: allow-once", "echo and then?\n"})
	assert.NotContains(t, out.String(), "» echo and then?", "our own prompt is not echoed back")
	assert.Contains(t, errOut.String(), "your message is queued")
}

// TestCommandOutputIsShown: a tool call that runs a command in a client
// terminal shows what the command printed, not just the terminal's URI.
func TestCommandOutputIsShown(t *testing.T) {
	e := startBridge(t)
	r := runOnEnv(t, e, Options{Cwd: t.TempDir(), ApproveAll: true}, "terminal echo first-line; echo second-line")
	require.Equal(t, ExitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assertInOrder(t, r.stdout, []string{"⚙ echo first-line; echo second-line\n", "    first-line\n    second-line\n"})
	assert.NotContains(t, r.stdout, "[terminal ")
}

func runOnEnv(t *testing.T, e *bridgetest.Env, opts Options, prompt string) run {
	t.Helper()
	var stdout, stderr strings.Builder
	code := Run(waitCtx(t), dialEnv(t, e), opts, prompt, IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Interrupts: make(chan struct{})})
	return run{code, stdout.String(), stderr.String()}
}

// TestFollowUntilIdleWaitsForQueuedTurns: the demo without a terminal
// stays up while a joined client's queued prompt waits or runs. The host
// takes a queued message (pendingMessageRemoved) before it starts its turn;
// the chat is not idle in between.
func TestFollowUntilIdleWaitsForQueuedTurns(t *testing.T) {
	e := startBridge(t)
	owner := e.Client(t)
	uri := bridgetest.CreateSession(t, owner, "script", t.TempDir())
	startTurn(t, owner, uri, "permission")
	pending := waitConfirmation(t, owner, uri)
	_, err := owner.SetPendingMessage(waitCtx(t), uri, wire.PendingMessageKindQueued, "q-1", client.UserMessage("echo queued"))
	require.NoError(t, err)

	var out, errOut syncBuffer
	s, err := Open(waitCtx(t), dialEnv(t, e), Options{Session: uri}, IO{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Interrupts: make(chan struct{}),
	})
	require.NoError(t, err)
	defer s.Close()
	done := make(chan int, 1)
	followCtx := waitCtx(t)
	go func() {
		code, _ := s.Follow(followCtx, true)
		done <- code
	}()
	_, err = owner.ApproveToolCall(waitCtx(t), pending.Chat, pending.TurnID, pending.ToolCallID, "allow-once")
	require.NoError(t, err)
	assert.Equal(t, ExitOK, waitCode(t, done), "stderr:\n%s", errOut.String())
	assert.Len(t, s.chatState.Turns, 2, "Follow returned before the queued turn ran; output:\n%s", out.String())
	assertInOrder(t, out.String(), []string{"» permission\n", "selected: allow-once", "» echo queued\n", "echo queued\n"})
}
