package tui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/fakehost"
)

func TestRunAgainstFakeHost(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		prompt   string
		wantCode int
		wantOut  []string // substrings of stdout, in order
	}{
		{"echo", Options{}, "hello there", ExitOK, []string{"echo: hello there\n"}},
		{"approve all", Options{ApproveAll: true}, "tool please", ExitOK, []string{
			"│ I should read\n│ the file.\n",
			"⚙ Read file: Read README.md\n",
			"  ✓ approved (Allow once)\n",
			"  ✓ Read README.md\n    # Title\n    Some text.\n",
			"The README has a title.\n",
		}},
		{"deny all", Options{DenyAll: true}, "tool", ExitDenied, []string{"  ✗ denied (Reject)\n", "Not reading it, then.\n"}},
		{"turn error", Options{}, "fail", ExitTurnError, []string{"✗ error: the agent crashed (agentError)\n"}},
		{"result approved", Options{ApproveAll: true}, "result", ExitOK, []string{"⚙ Search the web\n", "  ✓ Searched the web\n", "  ✓ result accepted\n", "result accepted\n"}},
		{"result denied", Options{DenyAll: true}, "result", ExitDenied, []string{"  ✗ result rejected\n", "result rejected\n"}},
		{"provider and cwd", Options{Provider: "echo", Cwd: "."}, "hi", ExitOK, []string{"echo: hi"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, fakehost.Options{})
			r := runOn(t, h, tc.opts, tc.prompt)
			assert.Equal(t, tc.wantCode, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assertInOrder(t, r.stdout, tc.wantOut)
		})
	}
}

func TestRunUnknownProvider(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	r := runOn(t, h, Options{Provider: "nope"}, "hi")
	assert.Equal(t, ExitError, r.code)
	assert.Contains(t, r.stderr, "no such provider: nope")
}

func TestRunCreationFailed(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{CreationError: "claude is not logged in"})
	r := runOn(t, h, Options{}, "hi")
	assert.Equal(t, ExitError, r.code)
	assert.Contains(t, r.stderr, "the session could not be created: claude is not logged in")
}

func TestRunNoAgents(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{Agents: []wire.AgentInfo{}})
	r := runOn(t, h, Options{}, "hi")
	assert.Equal(t, ExitError, r.code)
	assert.Contains(t, r.stderr, "offers no agents")
}

func TestRunJSON(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	r := runOn(t, h, Options{JSON: true, ApproveAll: true}, "tool")
	require.Equal(t, ExitOK, r.code, r.stderr)
	var (
		types []string
		asked bool
	)
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
		if strings.HasPrefix(env.Channel, "ahp-chat:") {
			types = append(types, env.Action.Type())
		} else if env.Action.Type() == "session/inputNeededSet" {
			asked = true
		}
	}
	assert.Equal(t, []string{
		"chat/turnStarted", "chat/responsePart", "chat/reasoning", "chat/toolCallStart",
		"chat/toolCallReady", "chat/toolCallConfirmed", "chat/toolCallComplete",
		"chat/responsePart", "chat/turnComplete",
	}, types, "the default chat's turn")
	assert.True(t, asked, "the session's inputNeeded, where the confirmation was asked, is in the output too")
	assert.NotContains(t, r.stdout, "⚙", "JSON prints nothing but JSON")
}

func TestRunInteractive(t *testing.T) {
	tests := []struct {
		name     string
		prompt   string
		stdin    string
		wantCode int
		wantOut  []string
	}{
		{"approve by number", "tool", "1\n", ExitOK, []string{
			"  ? needs approval: Allow reading README.md?\n",
			"  Allow Read file?  [1] Allow once  [2] Reject  (1-2, y or n)\n",
			"  ✓ approved (Allow once)\n"}},
		{"deny by y/n after a typo", "tool", "maybe\nn\n", ExitDenied, []string{
			"  \"maybe\" is not an answer: type a number from 1 to 2, y or n\n",
			"  Allow Read file?",
			"  ✗ denied (Reject)\n"}},
		{"approve by label", "tool", "allow once\n", ExitOK, []string{"  ✓ approved (Allow once)\n"}},
		{"result by hand", "result", "n\n", ExitDenied, []string{"  Let the agent use the result of Search? [y/n]\n", "  ✗ result rejected\n"}},
		{"questions with default and text", "ask", "\nAda\n", ExitOK, []string{
			"? A few questions\n",
			"  Favourite colour?\n    [1] Red\n    [2] Blue (recommended)\n  (a number)\n",
			"  Your name?\n  (empty to skip)\n",
			"  ✓ input accept\n",
			"accept: color=blue, name=Ada\n"}},
		{"questions by number, skipping", "ask", "1\n\n", ExitOK, []string{"accept: color=red, name skipped\n"}},
		{"stdin closes before the answer", "tool", "", ExitCancelled, []string{"stdin closed; waiting for another client to answer\n", "[turn cancelled]\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost(t, fakehost.Options{})
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			c := dialFake(t, h)
			var stdout, stderr bytes.Buffer
			sio := IO{Stdin: strings.NewReader(tc.stdin), Stdout: &stdout, Stderr: &stderr, Interactive: true, WaitHint: "use --approve-all"}
			if tc.wantCode == ExitCancelled {
				// Nobody answers: the run must still be waiting. Without
				// Interrupts, cancelling ctx acts like Ctrl-C: the turn is
				// cancelled.
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			} else {
				sio.Interrupts = make(chan struct{})
			}
			code := Run(ctx, c, Options{Cwd: "."}, tc.prompt, sio)
			assert.Equal(t, tc.wantCode, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			assertInOrder(t, stdout.String(), tc.wantOut)
			if tc.wantCode == ExitCancelled {
				assert.Contains(t, stderr.String(), "use --approve-all", "stdin closed: say what would help")
			}
		})
	}
}

// startRun runs Run in the background and returns its outputs and a
// channel with its exit code.
func startRun(t *testing.T, c *client.Client, opts Options, prompt string, sio IO) (out, errOut *syncBuffer, done <-chan int) {
	t.Helper()
	out, errOut = &syncBuffer{}, &syncBuffer{}
	if sio.Stdin == nil {
		sio.Stdin = strings.NewReader("")
	}
	sio.Stdout, sio.Stderr = out, errOut
	ch := make(chan int, 1)
	go func() { ch <- Run(t.Context(), c, opts, prompt, sio) }()
	return out, errOut, ch
}

func waitCode(t *testing.T, done <-chan int) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(waitTimeout):
		t.Fatal("the run did not end")
	}
	return -1
}

// sessionOf waits until the fake host has exactly one session and returns it.
func sessionOf(t *testing.T, c *client.Client) string {
	t.Helper()
	var uri string
	eventually(t, func() bool {
		sessions, err := c.ListSessions(waitCtx(t))
		require.NoError(t, err)
		if len(sessions) == 1 {
			uri = sessions[0].Resource
		}
		return uri != ""
	}, "no session was created")
	return uri
}

// TestWaitsForAnotherClientAndSaysSo is finding 6 of issue 11: without a
// terminal, a question nobody answers here is announced once on stderr
// with the flags that would answer it, then left to another client.
func TestWaitsForAnotherClientAndSaysSo(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	c, other := dialFake(t, h), dialFake(t, h)
	out, errOut, done := startRun(t, c, Options{Cwd: "."}, "tool", IO{
		Interrupts: make(chan struct{}), Name: "ahp-bridge client", WaitHint: "hint: use --approve-all or --deny-all",
	})
	uri := sessionOf(t, other)
	quiet(t, h, uri, func(s *wire.SessionState) bool { return len(client.PendingConfirmations(s)) == 1 })
	_, err := other.Subscribe(waitCtx(t), uri)
	require.NoError(t, err)
	pending := waitConfirmation(t, other, uri)
	eventually(t, func() bool { return strings.Contains(errOut.String(), "--approve-all") }, "no hint on stderr")
	_, err = other.ApproveToolCall(waitCtx(t), pending.Chat, pending.TurnID, pending.ToolCallID, "")
	require.NoError(t, err)
	assert.Equal(t, ExitOK, waitCode(t, done))
	assertInOrder(t, out.String(), []string{
		"waiting for another client to answer: may Read file run? (Read README.md)\n",
		"  ✓ approved by " + other.ClientID() + "\n",
		"The README has a title.\n",
	})
	assert.Equal(t, "ahp-bridge client: hint: use --approve-all or --deny-all\n", errOut.String())
}

// TestWaitHintSaidOnce: the hint is for the person, not a log line per
// question.
func TestWaitHintSaidOnce(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	creator, c := dialFake(t, h), dialFake(t, h)
	uri := createSession(t, creator)
	interrupts := make(chan struct{}, 1)
	out, errOut, done := startFollow(t, c, Options{Session: uri}, IO{Interrupts: interrupts, WaitHint: "the hint"})
	for range 2 {
		turn := startTurn(t, creator, uri, "tool")
		pending := waitConfirmation(t, creator, uri)
		eventually(t, func() bool { return strings.Count(out.String(), "waiting for another client") == 1 }, "the follower did not see the question")
		_, err := creator.ApproveToolCall(waitCtx(t), pending.Chat, pending.TurnID, pending.ToolCallID, "")
		require.NoError(t, err)
		waitTurnEnd(t, creator, uri, turn)
		eventually(t, func() bool { return strings.Contains(out.String(), "The README has a title.") }, "the follower did not see the answer")
		out.Reset()
	}
	interrupts <- struct{}{}
	assert.Equal(t, ExitOK, waitCode(t, done))
	assert.Equal(t, 1, strings.Count(errOut.String(), "the hint"), "stderr:\n%s", errOut.String())
}

// quiet waits until the fake host's session satisfies cond, a point where
// its turn script waits for a client. The fake host encodes a subscribe's
// snapshot outside its lock, so a client must not subscribe while a
// script is emitting (a data race in fakehost, not in the client).
func quiet(t *testing.T, h *fakehost.Host, uri string, cond func(*wire.SessionState) bool) {
	t.Helper()
	eventually(t, func() bool {
		st, ok := h.Session(uri)
		return ok && cond(st)
	}, "the fake host's session never reached the expected state")
}

// startFollow opens the session (so that it is subscribed when this
// returns) and follows it in the background until interrupted.
func startFollow(t *testing.T, c *client.Client, opts Options, sio IO) (out, errOut *syncBuffer, done <-chan int) {
	t.Helper()
	out, errOut = &syncBuffer{}, &syncBuffer{}
	sio.Stdin, sio.Stdout, sio.Stderr = strings.NewReader(""), out, errOut
	s, err := Open(t.Context(), c, opts, sio)
	require.NoError(t, err)
	ch := make(chan int, 1)
	go func() {
		defer s.Close()
		code, _ := s.Follow(t.Context(), false)
		ch <- code
	}()
	return out, errOut, ch
}

// startTurn starts a turn on the session's default chat.
func startTurn(t *testing.T, c *client.Client, uri, text string) string {
	t.Helper()
	id := client.NewUUID()
	_, err := c.StartTurn(waitCtx(t), uri, id, client.UserMessage(text))
	require.NoError(t, err)
	return id
}

func waitTurnEnd(t *testing.T, c *client.Client, uri, turnID string) *wire.Turn {
	t.Helper()
	turn, err := c.WaitForTurn(waitCtx(t), uri, turnID)
	require.NoError(t, err, "turn %s did not end", turnID)
	return turn
}

// waitConfirmation waits until the session waits for exactly one tool
// call to be confirmed, and returns it.
func waitConfirmation(t *testing.T, c *client.Client, uri string) client.Confirmation {
	t.Helper()
	st, err := c.WaitFor(waitCtx(t), uri, func(s *wire.SessionState) bool { return len(client.PendingConfirmations(s)) == 1 })
	require.NoError(t, err, "no confirmation is pending")
	return client.PendingConfirmations(st)[0]
}

// createSession creates a session on the fake host (with the default
// agent) and subscribes c to it and its default chat.
func createSession(t *testing.T, c *client.Client) string {
	t.Helper()
	uri := client.NewSessionURI()
	require.NoError(t, c.CreateSession(waitCtx(t), wire.CreateSessionParams{Channel: uri}))
	_, err := c.Subscribe(waitCtx(t), uri)
	require.NoError(t, err)
	return uri
}

// waitCtx is the context of one wait: t's, with a deadline of its own.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestRunJoinSession(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	creator := dialFake(t, h)
	uri := client.NewSessionURI()
	require.NoError(t, creator.CreateSession(waitCtx(t), wire.CreateSessionParams{Channel: uri}))
	r := runOn(t, h, Options{Session: uri}, "joined")
	assert.Equal(t, ExitOK, r.code, r.stderr)
	assert.Equal(t, "echo: joined\n", r.stdout)

	r = runOn(t, h, Options{Session: "ahp-session:/missing"}, "x")
	assert.Equal(t, ExitError, r.code)
	assert.Contains(t, r.stderr, "no such channel")
}

// TestPromptQueuedWhileBusy is finding 5 of issue 11: a prompt for a
// session whose turn is running is queued (not refused), says so, and
// Ctrl-C takes it back.
func TestPromptQueuedWhileBusy(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	creator, c := dialFake(t, h), dialFake(t, h)
	uri := createSession(t, creator)
	startTurn(t, creator, uri, "wait")
	chat, err := creator.DefaultChat(uri)
	require.NoError(t, err)
	eventually(t, func() bool {
		st, ok := h.Chat(chat)
		return ok && st.ActiveTurn != nil && len(st.ActiveTurn.ResponseParts) == 1
	}, "the turn did not start working")

	interrupts := make(chan struct{}, 1)
	out, errOut, done := startRun(t, c, Options{Session: uri}, "and then?", IO{Interrupts: interrupts, Name: "ahp-bridge client"})
	st, err := creator.WaitForChat(waitCtx(t), uri, func(s *wire.ChatState) bool { return len(s.QueuedMessages) == 1 })
	require.NoError(t, err)
	assert.Equal(t, "and then?", st.QueuedMessages[0].Message.Text)
	assert.Contains(t, errOut.String(), "ahp-bridge client: the session is busy; your message is queued")
	assertInOrder(t, out.String(), []string{"» wait\n", "… (joined while this turn runs)\n"})

	interrupts <- struct{}{}
	assert.Equal(t, ExitCancelled, waitCode(t, done), "stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	assert.Contains(t, out.String(), "taking back the queued message")
	_, err = creator.WaitForChat(waitCtx(t), uri, func(s *wire.ChatState) bool { return len(s.QueuedMessages) == 0 })
	require.NoError(t, err)
}

// TestFollowAnswersConfirmations: `client URL --session S --approve-all`
// without a prompt answers every turn's confirmations, including one that
// was already waiting when it joined, and ends on Ctrl-C with 0.
func TestFollowAnswersConfirmations(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	creator, c := dialFake(t, h), dialFake(t, h)
	uri := createSession(t, creator)
	first := startTurn(t, creator, uri, "tool")
	quiet(t, h, uri, func(s *wire.SessionState) bool { return len(client.PendingConfirmations(s)) == 1 })

	interrupts := make(chan struct{}, 1)
	out, errOut, done := startFollow(t, c, Options{Session: uri, ApproveAll: true}, IO{Interrupts: interrupts})
	waitTurnEnd(t, creator, uri, first)
	second := startTurn(t, creator, uri, "tool again")
	waitTurnEnd(t, creator, uri, second)
	eventually(t, func() bool { return strings.Count(out.String(), "The README has a title.\n") == 2 }, "the follower did not see both turns")
	interrupts <- struct{}{}
	assert.Equal(t, ExitOK, waitCode(t, done), "stderr:\n%s", errOut.String())
	assertInOrder(t, out.String(), []string{
		"» tool\n", "… (joined while this turn runs)\n", "⚙ Read file: Read README.md\n", "  ? needs approval: Allow reading README.md?\n",
		"  ✓ approved (Allow once)\n", "The README has a title.\n",
		"» tool again\n", "⚙ Read file: Read README.md\n", "  ✓ approved (Allow once)\n", "The README has a title.\n",
	})
	st, err := creator.Chat(uri)
	require.NoError(t, err)
	require.Len(t, st.Turns, 2)
	for _, tr := range st.Turns {
		assert.Equal(t, wire.TurnStateComplete, tr.State)
	}
}

func TestRunCancel(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	c := dialFake(t, h)
	interrupts := make(chan struct{}, 1)
	out, _, done := startRun(t, c, Options{Cwd: "."}, "wait", IO{Interrupts: interrupts})
	eventually(t, func() bool { return strings.Contains(out.String(), "working…") }, "the turn did not start")
	interrupts <- struct{}{}
	assert.Equal(t, ExitCancelled, waitCode(t, done))
	assertInOrder(t, out.String(), []string{"working…\n", "cancelling the turn (Ctrl-C again to quit)…\n", "[turn cancelled]\n"})
}

func TestRunInterruptedWhileCreating(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{HoldCreation: true})
	c := dialFake(t, h)
	interrupts := make(chan struct{}, 1)
	_, errOut, done := startRun(t, c, Options{Cwd: "."}, "hi", IO{Interrupts: interrupts})
	eventually(t, func() bool {
		sessions, err := c.ListSessions(waitCtx(t))
		return err == nil && len(sessions) == 1
	}, "no session was created")
	interrupts <- struct{}{}
	assert.Equal(t, ExitCancelled, waitCode(t, done))
	assert.Contains(t, errOut.String(), "interrupted before the session was ready")
}

func TestWatchInterrupts(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	presses, stop := WatchInterrupts(ctx)
	select {
	case <-presses:
		t.Fatal("a press before ctx was cancelled")
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	select {
	case <-presses:
	case <-time.After(waitTimeout):
		t.Fatal("the cancellation of ctx is not a press")
	}
	stop()
}

func TestRunConnectionLost(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	c := dialFake(t, h)
	out, errOut, done := startRun(t, c, Options{Cwd: "."}, "wait", IO{Interrupts: make(chan struct{})})
	eventually(t, func() bool { return strings.Contains(out.String(), "working…") }, "the turn did not start")
	h.DropConnections()
	assert.Equal(t, ExitError, waitCode(t, done))
	assert.Contains(t, errOut.String(), "connection lost during the turn")
}

// TestPromptTakesTheChatsModel: a prompt sent to a joined session goes
// with the model the chat's draft names (chosen by another client, say an
// editor), as any composer of that chat would send it.
func TestPromptTakesTheChatsModel(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	creator := dialFake(t, h)
	uri := createSession(t, creator)
	_, err := creator.SelectModel(waitCtx(t), uri, &wire.ModelSelection{ID: "big-model"})
	require.NoError(t, err)

	r := runOn(t, h, Options{Session: uri}, "which model?")
	require.Equal(t, ExitOK, r.code, r.stderr)
	st, err := creator.WaitForChat(waitCtx(t), uri, func(s *wire.ChatState) bool { return len(s.Turns) == 1 })
	require.NoError(t, err)
	require.NotNil(t, st.Turns[0].Message.Model, "the turn names no model")
	assert.Equal(t, "big-model", st.Turns[0].Message.Model.ID)
}

// TestQuestionAskedOncePerEntry: the host may update an entry of the
// session's inputNeeded (upsert by id); the question is asked once, and
// again only after the entry was removed and came back.
func TestQuestionAskedOncePerEntry(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	creator, c := dialFake(t, h), dialFake(t, h)
	uri := createSession(t, creator)
	chat, err := creator.DefaultChat(uri)
	require.NoError(t, err)
	interrupts := make(chan struct{}, 1)
	out, _, done := startFollow(t, c, Options{Session: uri}, IO{Interrupts: interrupts})

	entry := func(id, message string) *wire.SessionInputNeededSetAction {
		return &wire.SessionInputNeededSetAction{Request: wire.NewSessionInputRequest(&wire.SessionChatInputRequest{
			ID: id, Chat: chat, Request: wire.ChatInputRequest{ID: "req-" + id, Message: wire.Ptr(message)},
		})}
	}
	h.Emit(uri, entry("need-1", "Pick a colour"))
	h.Emit(uri, entry("need-1", "Pick a colour"))
	h.Emit(uri, entry("need-2", "Barrier one"))
	eventually(t, func() bool { return strings.Contains(out.String(), "Barrier one") }, "the follower did not see the second entry")
	assert.Equal(t, 1, strings.Count(out.String(), "Pick a colour"), "output:\n%s", out.String())

	h.Emit(uri, &wire.SessionInputNeededRemovedAction{ID: "need-1"})
	h.Emit(uri, entry("need-1", "Pick a colour"))
	h.Emit(uri, entry("need-3", "Barrier two"))
	eventually(t, func() bool { return strings.Contains(out.String(), "Barrier two") }, "the follower did not see the third entry")
	assert.Equal(t, 2, strings.Count(out.String(), "Pick a colour"), "output:\n%s", out.String())
	interrupts <- struct{}{}
	assert.Equal(t, ExitOK, waitCode(t, done))
}

// TestFollowAnswersEveryChat: a follower answers the confirmations of the
// whole session, also those of a chat other than the default one, which
// it does not watch.
func TestFollowAnswersEveryChat(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{})
	creator, c := dialFake(t, h), dialFake(t, h)
	uri := createSession(t, creator)
	second := client.NewChatURI()
	require.NoError(t, creator.CreateChat(waitCtx(t), wire.CreateChatParams{Channel: uri, Chat: second}))
	_, err := creator.Subscribe(waitCtx(t), second)
	require.NoError(t, err)

	interrupts := make(chan struct{}, 1)
	_, errOut, done := startFollow(t, c, Options{Session: uri, ApproveAll: true}, IO{Interrupts: interrupts})
	turn := startTurn(t, creator, second, "tool")
	ended := waitTurnEnd(t, creator, second, turn)
	assert.Equal(t, wire.TurnStateComplete, ended.State)
	assert.Contains(t, turnText(ended), "The README has a title.", "the tool call was not approved")
	interrupts <- struct{}{}
	assert.Equal(t, ExitOK, waitCode(t, done), "stderr:\n%s", errOut.String())
}

// turnText is the markdown a turn answered, its parts joined.
func turnText(turn *wire.Turn) string {
	var b strings.Builder
	for _, p := range turn.ResponseParts {
		if md, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			b.WriteString(md.Content)
		}
	}
	return b.String()
}
