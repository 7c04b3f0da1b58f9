package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/fakehost"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	goleak.VerifyTestMain(m)
}

// testCtx bounds every wait of a test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const epochMs = 1_700_000_000_000

// fixedNow is the client clock matching the hosts' fixed clocks, so that
// the states both sides reduce compare equal.
func fixedNow() time.Time { return time.UnixMilli(epochMs) }

func newHost(t *testing.T, opts fakehost.Options) *fakehost.Host {
	if opts.Clock == nil {
		opts.Clock = func() int64 { return epochMs }
	}
	h := fakehost.New(opts)
	t.Cleanup(func() {
		h.Close()
		assert.NoError(t, h.Err())
	})
	return h
}

// connect dials and initializes a client against h.
func connect(t *testing.T, h *fakehost.Host, opts client.Options) *client.Client {
	ctx := testCtx(t)
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	c, err := client.Dial(ctx, h.URL(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(ctx)
	require.NoError(t, err)
	return c
}

// readySession creates and subscribes to a session and waits until it is ready.
func readySession(t *testing.T, c *client.Client) string {
	ctx := testCtx(t)
	uri := client.NewSessionURI()
	require.NoError(t, c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri, Provider: wire.Ptr("echo")}))
	_, err := c.Subscribe(ctx, uri)
	require.NoError(t, err)
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Lifecycle != wire.SessionLifecycleCreating })
	require.NoError(t, err)
	require.Equal(t, wire.SessionLifecycleReady, st.Lifecycle)
	return uri
}

// nextActions reads events until one with the given action type on channel
// arrives, returning the action types seen on that channel on the way.
func nextActions(t *testing.T, c *client.Client, channel, until string) []string {
	ctx := testCtx(t)
	var types []string
	for {
		ev, err := c.Next(ctx)
		require.NoError(t, err)
		if ev.Envelope == nil || ev.Channel != channel {
			continue
		}
		types = append(types, ev.Envelope.Action.Type())
		if ev.Envelope.Action.Type() == until {
			return types
		}
	}
}

// markdown is the text of a turn's markdown parts.
func markdown(parts []wire.ResponsePart) string {
	var b strings.Builder
	for _, p := range parts {
		if md, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			b.WriteString(md.Content)
		}
	}
	return b.String()
}

// waitSettled waits until the session's catalogue shows none of its chats
// in progress and it waits for nothing: the host updates the catalogue with
// an action of its own after the one that ends a turn, so a client that has
// seen a turn end may not have its session in step yet.
func waitSettled(t *testing.T, c *client.Client, uri string) {
	t.Helper()
	_, err := c.WaitFor(testCtx(t), uri, func(s *wire.SessionState) bool {
		for _, ch := range s.Chats {
			if ch.Status&wire.SessionStatusInProgress != 0 {
				return false
			}
		}
		return len(s.InputNeeded) == 0
	})
	require.NoError(t, err, "the session did not settle")
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestInitializeInstallsRootSnapshot(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{ClientID: "tester"})
	assert.Equal(t, "tester", c.ClientID())
	root, err := c.Root()
	require.NoError(t, err)
	require.Len(t, root.Agents, 1)
	assert.Equal(t, "echo", root.Agents[0].Provider)

	_, err = c.Session("ahp-session:/nope")
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = c.Chat("ahp-chat:/nope")
	assert.ErrorIs(t, err, client.ErrNoState)
	assert.NoError(t, c.ReconnectRefused())
}

func TestInitializeOffersTheChatDialect(t *testing.T) {
	params := make(chan wire.InitializeParams, 1)
	h := newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"initialize": func(raw json.RawMessage) (any, *fakehost.Error) {
			var p wire.InitializeParams
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, &fakehost.Error{Code: wire.CodeInvalidParams, Message: err.Error()}
			}
			params <- p
			return wire.InitializeResult{ProtocolVersion: "1.0.0", Snapshots: []wire.Snapshot{}}, nil
		},
	}})
	ctx := testCtx(t)
	c, err := client.Dial(ctx, h.URL(), client.Options{ClientID: "me", ClientInfo: &wire.Implementation{Name: "tests", Version: wire.Ptr("1")}})
	require.NoError(t, err)
	defer c.Close()
	res, err := c.Initialize(ctx)
	require.NoError(t, err)
	assert.Equal(t, client.ProtocolVersion, res.ProtocolVersion)
	p := <-params
	assert.Equal(t, []string{"1.0.0"}, p.ProtocolVersions, "the client's state is AHP 1.0.0, so it offers that alone")
	assert.Equal(t, "me", p.ClientID)
	assert.Equal(t, []string{client.RootChannel}, p.InitialSubscriptions)
	require.NotNil(t, p.ClientInfo)
	assert.Equal(t, "tests", p.ClientInfo.Name)
}

func TestRandomClientID(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	a := connect(t, h, client.Options{})
	b := connect(t, h, client.Options{})
	assert.True(t, strings.HasPrefix(a.ClientID(), "ahp-client-"))
	assert.NotEqual(t, a.ClientID(), b.ClientID())
}

func TestDialFailures(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	ctx := testCtx(t)

	_, err := client.Dial(ctx, strings.Replace(h.URL(), "tkn=secret", "tkn=wrong", 1), client.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.NotContains(t, err.Error(), "wrong", "the token must not appear in errors")
	assert.Contains(t, err.Error(), "tkn=REDACTED")

	_, err = client.Dial(ctx, "ws://127.0.0.1:1/", client.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connecting to AHP server")
}

func TestInitializeVersionMismatch(t *testing.T) {
	h := newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"initialize": func(json.RawMessage) (any, *fakehost.Error) {
			return nil, &fakehost.Error{Code: wire.CodeUnsupportedProtocolVersion, Message: "unsupported", Data: json.RawMessage(`{"supportedVersions":["9.9.9"]}`)}
		},
	}})
	ctx := testCtx(t)
	c, err := client.Dial(ctx, h.URL(), client.Options{})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Initialize(ctx)
	var rpcErr *client.RPCError
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, wire.CodeUnsupportedProtocolVersion, rpcErr.Code)
	assert.Contains(t, err.Error(), "9.9.9")
	_, err = c.Root()
	assert.ErrorIs(t, err, client.ErrNoState, "a failed initialize leaves no state behind")
}

// TestInitializeRejectsOtherVersion: a server that answers with a version
// the client did not offer (here the 0.7.0 it used to speak) would send
// shapes the client's reducers misread, so initialize fails.
func TestInitializeRejectsOtherVersion(t *testing.T) {
	h := newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"initialize": func(json.RawMessage) (any, *fakehost.Error) {
			return wire.InitializeResult{ProtocolVersion: "0.7.0", Snapshots: []wire.Snapshot{}}, nil
		},
	}})
	ctx := testCtx(t)
	c, err := client.Dial(ctx, h.URL(), client.Options{})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Initialize(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"0.7.0"`)
}

func TestSubscribeFollowsTheDefaultChat(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)

	chat, err := c.DefaultChat(uri)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(chat, "ahp-chat:/"), chat)
	st, err := c.Chat(chat)
	require.NoError(t, err)
	assert.Equal(t, chat, st.Resource)
	byURI, err := c.Chat(uri)
	require.NoError(t, err)
	assert.Equal(t, st, byURI, "a session URI stands for its default chat")

	_, err = c.DefaultChat(chat)
	assert.ErrorIs(t, err, client.ErrNoState, "a chat has no default chat")

	require.NoError(t, c.Unsubscribe(ctx, uri))
	_, err = c.Session(uri)
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = c.Chat(chat)
	assert.ErrorIs(t, err, client.ErrNoState, "unsubscribing from a session releases its default chat")

	// Initialize with a session among the subscriptions follows its chat too.
	c2, err := client.Dial(ctx, h.URL(), client.Options{Now: fixedNow})
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Initialize(ctx, client.RootChannel, uri)
	require.NoError(t, err)
	_, err = c2.Chat(chat)
	assert.NoError(t, err)
}

func TestSessionTurnEndToEnd(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	chat, err := c.DefaultChat(uri)
	require.NoError(t, err)
	ctx := testCtx(t)

	env, err := c.StartTurn(ctx, uri, "t1", client.UserMessage("hello"))
	require.NoError(t, err)
	require.NotNil(t, env.Origin)
	assert.Equal(t, c.ClientID(), env.Origin.ClientID)
	assert.Equal(t, chat, env.Channel, "turns are dispatched on the default chat")
	started, ok := env.Action.Value.(*wire.ChatTurnStartedAction)
	require.True(t, ok, "got %T", env.Action.Value)
	assert.Equal(t, "2023-11-14T22:13:20.000Z", started.StartedAt, "the turn starts at the client's clock")

	turn, err := c.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "echo: hello", markdown(turn.ResponseParts))
	active, err := c.ActiveTurn(uri)
	require.NoError(t, err)
	assert.Nil(t, active)

	// The client's states equal the host's: both ran the same actions.
	waitSettled(t, c, uri)
	hostSession, ok := h.Session(uri)
	require.True(t, ok)
	hostChat, ok := h.Chat(chat)
	require.True(t, ok)
	st, err := c.Session(uri)
	require.NoError(t, err)
	cs, err := c.Chat(chat)
	require.NoError(t, err)
	assert.JSONEq(t, jsonOf(t, hostSession), jsonOf(t, st))
	assert.JSONEq(t, jsonOf(t, hostChat), jsonOf(t, cs))

	// Every envelope since the subscription also came through Next, in
	// order, and chat events name their session.
	types := nextActions(t, c, chat, string(wire.ActionTypeChatTurnComplete))
	assert.Equal(t, []string{
		"chat/turnStarted", "chat/responsePart", "chat/delta", "chat/delta", "chat/turnComplete",
	}, types)
	assert.GreaterOrEqual(t, c.LastServerSeq(), env.ServerSeq)
}

// TestFailedTurnError: a failed turn ends with chat/error, whose error is
// the turn's last response part (AHP 0.9.0 on); TurnError finds it.
func TestFailedTurnError(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)

	_, err := c.StartTurn(ctx, uri, "t1", client.UserMessage("fail"))
	require.NoError(t, err)
	turn, err := c.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	assert.Equal(t, wire.TurnStateError, turn.State)
	require.NotEmpty(t, turn.ResponseParts)
	last, ok := turn.ResponseParts[len(turn.ResponseParts)-1].Value.(*wire.ErrorResponsePart)
	require.True(t, ok, "the error is the turn's last part: %s", jsonOf(t, turn.ResponseParts))
	assert.Nil(t, last.Resumable)
	e := client.TurnError(turn)
	require.NotNil(t, e)
	assert.Equal(t, wire.ErrorInfo{ErrorType: "agentError", Message: "the agent crashed"}, *e)

	ok2 := runTurn(t, c, uri, "t2", "hello")
	assert.Nil(t, client.TurnError(ok2), "a completed turn has no error")
}

func TestEventsNameTheirSession(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	chat, err := c.DefaultChat(uri)
	require.NoError(t, err)
	ctx := testCtx(t)
	_, err = c.StartTurn(ctx, uri, "t1", client.UserMessage("hi"))
	require.NoError(t, err)
	_, err = c.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	seen := map[string]bool{}
	for !seen[chat] || !seen[uri] {
		ev, err := c.Next(ctx)
		require.NoError(t, err)
		if ev.Envelope == nil {
			continue
		}
		if ev.Channel == chat || ev.Channel == uri {
			assert.Equal(t, uri, ev.Session, "%s on %s", ev.Envelope.Action.Type(), ev.Channel)
			seen[ev.Channel] = true
		}
	}
}

func TestDispatchActionAssignsIncreasingClientSeq(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	s1, err := c.DispatchAction(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "one"}))
	require.NoError(t, err)
	s2, err := c.DispatchAction(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "two"}))
	require.NoError(t, err)
	assert.Greater(t, s2, s1)
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Title == "two" })
	require.NoError(t, err)
	assert.Equal(t, "two", st.Title)
}

func TestRejectedActionIsNotApplied(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	before, err := c.Chat(uri)
	require.NoError(t, err)

	env, err := c.CancelTurn(ctx, uri, "nope")
	var rej *client.RejectedError
	require.ErrorAs(t, err, &rej)
	require.NotNil(t, env.RejectionReason)
	assert.Contains(t, err.Error(), "chat/turnCancelled")
	assert.Contains(t, err.Error(), "no active turn")

	after, err := c.Chat(uri)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	// A server-only action is refused as such.
	_, err = c.Confirm(ctx, uri, wire.Action(&wire.SessionReadyAction{}))
	require.ErrorAs(t, err, &rej)
	assert.Contains(t, err.Error(), "server-only")
}

func TestTwoClientsShareASession(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	a := connect(t, h, client.Options{ClientID: "a"})
	b := connect(t, h, client.Options{ClientID: "b"})
	uri := readySession(t, a)
	ctx := testCtx(t)
	_, err := b.Subscribe(ctx, uri)
	require.NoError(t, err)

	_, err = a.StartTurn(ctx, uri, "t1", client.UserMessage("tool time"))
	require.NoError(t, err)
	// b sees the permission request in the session's inputNeeded and
	// answers it; a sees b's answer.
	var conf client.Confirmation
	_, err = b.WaitFor(ctx, uri, func(s *wire.SessionState) bool {
		if cs := client.PendingConfirmations(s); len(cs) > 0 {
			conf = cs[0]
			return true
		}
		return false
	})
	require.NoError(t, err)
	chat, err := b.DefaultChat(uri)
	require.NoError(t, err)
	assert.Equal(t, client.Confirmation{Chat: chat, TurnID: "t1", ToolCallID: "tc-1", ToolCall: conf.ToolCall}, conf)
	assert.Equal(t, "Read file", conf.ToolCall.DisplayName())
	_, err = b.ApproveToolCall(ctx, conf.Chat, conf.TurnID, conf.ToolCallID, "allow-once")
	require.NoError(t, err)
	for _, c := range []*client.Client{a, b} {
		turn, err := c.WaitForTurn(ctx, uri, "t1")
		require.NoError(t, err)
		assert.Equal(t, wire.TurnStateComplete, turn.State)
		assert.Equal(t, "The README has a title.", markdown(turn.ResponseParts))
		st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.InputNeeded) == 0 })
		require.NoError(t, err)
		assert.Empty(t, client.PendingConfirmations(st))
	}
	// A second answer to the same tool call is rejected: first one wins.
	_, err = a.DenyToolCall(ctx, uri, "t1", "tc-1", "reject")
	var rej *client.RejectedError
	assert.ErrorAs(t, err, &rej)
}

func TestDeniedToolCall(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	_, err := c.StartTurn(ctx, uri, "t1", client.UserMessage("tool please"))
	require.NoError(t, err)
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(client.PendingConfirmations(s)) == 1 })
	require.NoError(t, err)
	_, err = c.DenyToolCall(ctx, uri, "t1", "tc-1", "reject")
	require.NoError(t, err)
	turn, err := c.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	assert.Equal(t, "Not reading it, then.", markdown(turn.ResponseParts))
}

func TestInputRequestRoundTrip(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	_, err := c.StartTurn(ctx, uri, "t1", client.UserMessage("ask me"))
	require.NoError(t, err)
	var req *wire.SessionChatInputRequest
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool {
		if in := client.PendingInputs(s); len(in) > 0 {
			req = in[0]
			return true
		}
		return false
	})
	require.NoError(t, err)
	assert.Equal(t, "in-1", req.Request.ID)
	assert.Len(t, req.Request.Questions, 2)

	answers := map[string]wire.ChatInputAnswer{
		"color": wire.NewChatInputAnswer(&wire.ChatInputAnswered{State: wire.ChatInputAnswerStateSubmitted,
			Value: wire.NewChatInputAnswerValue(&wire.ChatInputSelectedAnswerValue{Value: "blue"})}),
		"name": wire.NewChatInputAnswer(&wire.ChatInputSkipped{State: wire.ChatInputAnswerStateSkipped}),
	}
	_, err = c.CompleteInput(ctx, req.Chat, req.Request.ID, wire.ChatInputResponseKindAccept, answers)
	require.NoError(t, err)
	turn, err := c.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	assert.Equal(t, "accept: color=blue, name skipped", markdown(turn.ResponseParts))

	_, err = c.CompleteInput(ctx, uri, "in-1", wire.ChatInputResponseKindCancel, nil)
	var rej *client.RejectedError
	assert.ErrorAs(t, err, &rej, "the request is answered already")
}

func TestToolResultConfirmation(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	_, err := c.StartTurn(ctx, uri, "t1", client.UserMessage("result please"))
	require.NoError(t, err)
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.InputNeeded) == 1 })
	require.NoError(t, err)
	assert.Empty(t, client.PendingConfirmations(st), "a result waiting for confirmation is not a call waiting to run")
	_, err = c.ConfirmToolResult(ctx, uri, "t1", "tc-r", true)
	require.NoError(t, err)
	turn, err := c.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	assert.Equal(t, "result accepted", markdown(turn.ResponseParts))
}

func TestCancelAndQueuedMessage(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	_, err := c.StartTurn(ctx, uri, "t1", client.UserMessage("wait for me"))
	require.NoError(t, err)
	active, err := c.ActiveTurn(uri)
	require.NoError(t, err)
	require.NotNil(t, active)
	assert.Equal(t, "t1", active.ID)

	_, err = c.StartTurn(ctx, uri, "t2", client.UserMessage("too early"))
	var rej *client.RejectedError
	require.ErrorAs(t, err, &rej, "a second turn while one is active")

	_, err = c.SetPendingMessage(ctx, uri, wire.PendingMessageKindQueued, "q-1", client.UserMessage("after that"))
	require.NoError(t, err)
	st, err := c.Chat(uri)
	require.NoError(t, err)
	require.Len(t, st.QueuedMessages, 1)

	_, err = c.CancelTurn(ctx, uri, "t1")
	require.NoError(t, err)
	// The queued message starts the next turn once the chat is idle.
	st, err = c.WaitForChat(ctx, uri, func(s *wire.ChatState) bool { return len(s.Turns) == 2 })
	require.NoError(t, err)
	assert.Equal(t, wire.TurnStateCancelled, st.Turns[0].State)
	assert.Equal(t, "after that", st.Turns[1].Message.Text)
	assert.Equal(t, "echo: after that", markdown(st.Turns[1].ResponseParts))
	assert.Empty(t, st.QueuedMessages)
}

func TestSelectModelKeepsTheDraft(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	draft := client.UserMessage("half-typed")
	_, err := c.Confirm(ctx, must(c.DefaultChat(uri)), wire.Action(&wire.ChatDraftChangedAction{Draft: &draft}))
	require.NoError(t, err)
	_, err = c.SelectModel(ctx, uri, &wire.ModelSelection{ID: "smart"})
	require.NoError(t, err)
	st, err := c.Chat(uri)
	require.NoError(t, err)
	require.NotNil(t, st.Draft)
	assert.Equal(t, "half-typed", st.Draft.Text)
	require.NotNil(t, st.Draft.Model)
	assert.Equal(t, "smart", st.Draft.Model.ID)

	// Turns and queued messages take the chosen model unless they name one.
	_, err = c.StartTurn(ctx, uri, "t1", client.UserMessage("wait with the draft's model"))
	require.NoError(t, err)
	active, err := c.ActiveTurn(uri)
	require.NoError(t, err)
	require.NotNil(t, active.Message.Model)
	assert.Equal(t, "smart", active.Message.Model.ID)
	own := client.UserMessage("with my own")
	own.Model = &wire.ModelSelection{ID: "fast"}
	_, err = c.SetPendingMessage(ctx, uri, wire.PendingMessageKindQueued, "q-1", own)
	require.NoError(t, err)
	st, err = c.Chat(uri)
	require.NoError(t, err)
	require.Len(t, st.QueuedMessages, 1)
	assert.Equal(t, "fast", st.QueuedMessages[0].Message.Model.ID)

	_, err = c.SelectModel(ctx, uri, nil)
	require.NoError(t, err)
	st, err = c.Chat(uri)
	require.NoError(t, err)
	assert.Nil(t, st.Draft.Model)
	assert.Equal(t, "half-typed", st.Draft.Text)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestCreateAndDisposeChat(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	assert.Equal(t, wire.DefaultChatURI(uri), must(c.DefaultChat(uri)), "the default chat has VS Code's name")
	side := client.NewSessionChatURI(uri)
	require.NoError(t, c.CreateChat(ctx, wire.CreateChatParams{Channel: uri, Chat: side}))
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Chats) == 2 })
	require.NoError(t, err)
	assert.Equal(t, side, st.Chats[1].Resource)
	_, err = c.Subscribe(ctx, side)
	require.NoError(t, err)
	_, err = c.StartTurn(ctx, side, "s1", client.UserMessage("aside"))
	require.NoError(t, err)
	turn, err := c.WaitForTurn(ctx, side, "s1")
	require.NoError(t, err)
	assert.Equal(t, "echo: aside", markdown(turn.ResponseParts))
	def, err := c.Chat(uri)
	require.NoError(t, err)
	assert.Empty(t, def.Turns, "the default chat took no part")
	for {
		ev, err := c.Next(ctx)
		require.NoError(t, err)
		if ev.Channel == side {
			assert.Equal(t, uri, ev.Session, "a chat from the session's catalogue is known to be the session's")
			break
		}
	}

	require.NoError(t, c.DisposeChat(ctx, side))
	_, err = c.Chat(side)
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Chats) == 1 })
	require.NoError(t, err)
	var rpcErr *client.RPCError
	require.ErrorAs(t, c.DisposeChat(ctx, must(c.DefaultChat(uri))), &rpcErr, "the default chat goes with its session")
}

func TestListSessionsPaging(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	ctx := testCtx(t)
	want := map[string]bool{}
	for range 3 {
		uri := client.NewSessionURI()
		require.NoError(t, c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri, WorkingDirectories: []string{"file:///tmp"}}))
		want[uri] = true
	}
	all, err := c.ListSessions(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 3)

	got := map[string]bool{}
	cursor, pages := "", 0
	for {
		items, next, err := c.ListSessionsPage(ctx, 2, cursor)
		require.NoError(t, err)
		pages++
		for _, s := range items {
			got[s.Resource] = true
			assert.Equal(t, []string{"file:///tmp"}, s.WorkingDirectories)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 2, pages)
}

func TestCreationFailure(t *testing.T) {
	h := newHost(t, fakehost.Options{CreationError: "agent not installed"})
	c := connect(t, h, client.Options{})
	ctx := testCtx(t)
	uri := client.NewSessionURI()
	require.NoError(t, c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri}))
	_, err := c.Subscribe(ctx, uri)
	require.NoError(t, err)
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Lifecycle != wire.SessionLifecycleCreating })
	require.NoError(t, err)
	assert.Equal(t, wire.SessionLifecycleFailed, st.Lifecycle)
	require.NotNil(t, st.CreationError)
	assert.Equal(t, "agent not installed", st.CreationError.Message)
}

func TestCallErrors(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	ctx := testCtx(t)

	err := c.Call(ctx, "noSuchMethod", map[string]string{"channel": client.RootChannel}, nil)
	var rpcErr *client.RPCError
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, wire.CodeMethodNotFound, rpcErr.Code)

	err = c.CreateSession(ctx, wire.CreateSessionParams{Channel: client.NewSessionURI(), Provider: wire.Ptr("missing")})
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, wire.CodeProviderNotFound, rpcErr.Code)

	_, err = c.Subscribe(ctx, "ahp-session:/unknown")
	require.ErrorAs(t, err, &rpcErr)
	_, err = c.Session("ahp-session:/unknown")
	assert.ErrorIs(t, err, client.ErrNoState, "a failed subscribe leaves no state behind")

	_, err = c.StartTurn(ctx, "ahp-session:/unknown", "t", client.UserMessage("x"))
	assert.ErrorIs(t, err, client.ErrNoState, "a session the client does not watch has no default chat it knows")
	_, err = c.FetchTurns(ctx, "ahp-chat:/unknown")
	assert.ErrorIs(t, err, client.ErrNoState)

	require.NoError(t, c.Ping(ctx))
	sessions, err := c.ListSessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, sessions)
}

func TestCallContextCancelled(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"slow": func(json.RawMessage) (any, *fakehost.Error) { close(entered); <-release; return struct{}{}, nil },
	}})
	defer close(release)
	c := connect(t, h, client.Options{})
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		select {
		case <-entered:
		case <-ctx.Done():
		}
		cancel()
	}()
	err := c.Call(ctx, "slow", struct{}{}, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "slow")
}

func TestServerRequestsAreRefused(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	connect(t, h, client.Options{})
	require.NoError(t, h.Request(7, "resourceRead", map[string]string{"channel": client.RootChannel, "uri": "file:///etc/passwd"}))
	resp, err := h.WaitResponse(testCtx(t), 0)
	require.NoError(t, err)
	var m struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(resp, &m))
	assert.Equal(t, 7, m.ID)
	assert.Equal(t, wire.CodeMethodNotFound, m.Error.Code)
	assert.Contains(t, m.Error.Message, "resourceRead")
}

func TestNotificationsAreQueued(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	require.NoError(t, h.Notify("root/sessionAdded", map[string]any{"channel": client.RootChannel, "summary": map[string]any{"resource": "ahp-session:/x"}}))
	ev, err := c.Next(testCtx(t))
	require.NoError(t, err)
	assert.Equal(t, "root/sessionAdded", ev.Method)
	assert.Equal(t, client.RootChannel, ev.Channel)
	assert.Empty(t, ev.Session)
	assert.Nil(t, ev.Envelope)
	assert.JSONEq(t, `{"channel":"ahp-root://","summary":{"resource":"ahp-session:/x"}}`, string(ev.Params))
}

func TestStrayErrorBecomesEvent(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	h.SendRaw(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
	ev, err := c.Next(testCtx(t))
	require.NoError(t, err)
	require.NotNil(t, ev.Err)
	assert.Equal(t, -32700, ev.Err.Code)
	assert.NoError(t, c.Err(), "a stray error does not end the connection")
}

func TestProtocolErrorsEndTheConnection(t *testing.T) {
	tests := []struct {
		name, frame, want string
	}{
		{"not json", `hello`, "not JSON-RPC"},
		{"wrong version", `{"jsonrpc":"1.0","method":"action","params":{}}`, `without jsonrpc "2.0"`},
		{"no method no id", `{"jsonrpc":"2.0"}`, "neither method nor id"},
		{"bad envelope", `{"jsonrpc":"2.0","method":"action","params":{"channel":"x","serverSeq":"one","action":{"type":"session/ready"}}}`, "action envelope"},
		{"params not object", `{"jsonrpc":"2.0","method":"root/sessionAdded","params":[1]}`, "not an object"},
		{"bad batch", `[1,`, "malformed JSON-RPC batch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, fakehost.Options{})
			c := connect(t, h, client.Options{})
			h.SendRaw(tc.frame)
			select {
			case <-c.Done():
			case <-testCtx(t).Done():
				t.Fatal("the client did not end the connection")
			}
			require.Error(t, c.Err())
			assert.Contains(t, c.Err().Error(), tc.want)
			_, err := c.Next(testCtx(t))
			assert.Equal(t, c.Err(), err)
			assert.Error(t, c.Ping(testCtx(t)))
		})
	}
}

func TestBatchFramesAreAccepted(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	h.SendRaw(`[{"jsonrpc":"2.0","method":"a/one","params":{"channel":"ahp-root://"}},{"jsonrpc":"2.0","method":"a/two","params":{"channel":"ahp-root://"}}]`)
	ctx := testCtx(t)
	for _, want := range []string{"a/one", "a/two"} {
		ev, err := c.Next(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, ev.Method)
	}
}

func TestServerDisconnectFailsWaiters(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	errc := make(chan error, 2)
	go func() {
		_, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Title == "never" })
		errc <- err
	}()
	go func() {
		_, err := c.WaitForTurn(ctx, uri, "never")
		errc <- err
	}()
	h.DropConnections()
	for range 2 {
		select {
		case err := <-errc:
			require.Error(t, err)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
		case <-ctx.Done():
			t.Fatal("a wait did not return after the connection dropped")
		}
	}
	<-c.Done()
	_, err := c.DispatchAction(ctx, uri, c.TurnStarted("t", client.UserMessage("x")))
	assert.Error(t, err)
}

func TestCloseIsIdempotentAndDrainsQueue(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	require.NoError(t, h.Notify("x/one", map[string]string{"channel": client.RootChannel}))
	// The host answers in order, so after the ping's reply the
	// notification is queued.
	require.NoError(t, c.Ping(testCtx(t)))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.Err(), client.ErrClosed)
	ev, err := c.Next(testCtx(t))
	require.NoError(t, err, "queued events survive Close")
	assert.Equal(t, "x/one", ev.Method)
	_, err = c.Next(testCtx(t))
	assert.ErrorIs(t, err, client.ErrClosed)
	assert.ErrorIs(t, c.Ping(testCtx(t)), client.ErrClosed)
}

func TestEventQueueLimit(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{MaxQueuedEvents: 2})
	for range 3 {
		require.NoError(t, h.Notify("x/n", map[string]string{"channel": client.RootChannel}))
	}
	select {
	case <-c.Done():
	case <-testCtx(t).Done():
		t.Fatal("the client did not give up on the full queue")
	}
	assert.ErrorIs(t, c.Err(), client.ErrEventQueueFull)
}

func TestSnapshotDeduplicatesEnvelopes(t *testing.T) {
	// The host answers subscribe with a snapshot at fromSeq, but sends an
	// envelope already contained in it (seq ≤ fromSeq) and one that arrives
	// before the subscribe response (seq > fromSeq). The first must be
	// skipped and the second applied exactly once.
	uri := "ahp-session:/dedupe"
	st := &wire.SessionState{Provider: "echo", Title: "from snapshot", Lifecycle: wire.SessionLifecycleReady,
		ActiveClients: []wire.SessionActiveClient{}, Chats: []wire.ChatSummary{}}
	const snapshotSeq = 10
	env := func(seq int64, title string) string {
		b, err := json.Marshal(wire.ActionEnvelope{Channel: uri, ServerSeq: seq, Action: wire.Action(&wire.SessionTitleChangedAction{Title: title})})
		require.NoError(t, err)
		return `{"jsonrpc":"2.0","method":"action","params":` + string(b) + `}`
	}
	var h *fakehost.Host
	h = newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"subscribe": func(json.RawMessage) (any, *fakehost.Error) {
			// An envelope newer than the snapshot overtakes the response.
			h.SendRaw(env(snapshotSeq+1, "after snapshot"))
			return wire.SubscribeResult{Snapshot: &wire.Snapshot{Resource: uri, State: wire.NewSnapshotState(st), FromSeq: snapshotSeq}}, nil
		},
	}})
	c := connect(t, h, client.Options{})
	ctx := testCtx(t)
	_, err := c.Subscribe(ctx, uri)
	require.NoError(t, err)
	got, err := c.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, "after snapshot", got.Title, "the early envelope is applied on top of the snapshot")
	h.SendRaw(env(snapshotSeq, "stale"))
	require.NoError(t, c.Ping(ctx)) // the reply comes after the stale envelope was handled
	got, err = c.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, "after snapshot", got.Title, "an envelope contained in the snapshot is not applied again")
	h.SendRaw(env(snapshotSeq+2, "latest"))
	got, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Title == "latest" })
	require.NoError(t, err)
	assert.Equal(t, "latest", got.Title)

	var titles []string
	for len(titles) < 3 {
		ev, err := c.Next(ctx)
		require.NoError(t, err)
		if a, ok := ev.Envelope.Action.Value.(*wire.SessionTitleChangedAction); ok {
			titles = append(titles, a.Title)
		}
	}
	assert.Equal(t, []string{"after snapshot", "stale", "latest"}, titles, "every envelope is still delivered")
}

func TestWaitForContextCancelled(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err := c.WaitFor(ctx, uri, func(*wire.SessionState) bool { return false })
	assert.ErrorIs(t, err, context.Canceled)
	_, err = c.WaitForChat(ctx, uri, func(*wire.ChatState) bool { return false })
	assert.ErrorIs(t, err, context.Canceled)
	_, err = c.WaitForTurn(ctx, uri, "none")
	assert.ErrorIs(t, err, context.Canceled)
	_, err = c.WaitForRoot(ctx, func(*wire.RootState) bool { return false })
	assert.ErrorIs(t, err, context.Canceled)
}

func TestWaitForRoot(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	h.Emit(client.RootChannel, &wire.RootActiveSessionsChangedAction{ActiveSessions: 3})
	root, err := c.WaitForRoot(testCtx(t), func(r *wire.RootState) bool { return r.ActiveSessions != nil && *r.ActiveSessions == 3 })
	require.NoError(t, err)
	assert.EqualValues(t, 3, *root.ActiveSessions)
}

func TestNewURIs(t *testing.T) {
	re := regexp.MustCompile(`^ahp-session:/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := client.NewSessionURI(), client.NewSessionURI()
	assert.Regexp(t, re, a)
	assert.NotEqual(t, a, b)
	assert.Regexp(t, `^ahp-chat:/[0-9a-f-]{36}$`, client.NewChatURI())
	side := client.NewSessionChatURI("claude:/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
	assert.Regexp(t, `^ahp-chat://[0-9a-f-]{36}/Y2xhdWRlOi8wYTFiMmMzZC00ZTVmLTRhNmItOGM3ZC05ZTBmMWEyYjNjNGQ$`, side)
	name, ok := wire.ParseChatURI(side)
	require.True(t, ok)
	assert.Equal(t, "claude:/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", name.Session)
}

func TestRPCErrorText(t *testing.T) {
	e := &client.RPCError{Code: -32005, Message: "unsupported", Data: json.RawMessage(`{"supportedVersions":["0.7.0"]}`)}
	assert.Equal(t, `AHP error -32005: unsupported (data: {"supportedVersions":["0.7.0"]})`, e.Error())
	assert.Equal(t, "AHP error -32601: nope", (&client.RPCError{Code: -32601, Message: "nope"}).Error())
	var target *client.RPCError
	assert.True(t, errors.As(error(e), &target))
}

func TestOptimisticState(t *testing.T) {
	h := newHost(t, fakehost.Options{IgnoreActions: true})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	chat, err := c.DefaultChat(uri)
	require.NoError(t, err)
	ctx := testCtx(t)
	_, err = c.DispatchAction(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "mine"}))
	require.NoError(t, err)
	_, err = c.DispatchAction(ctx, chat, c.TurnStarted("t1", client.UserMessage("hi")))
	require.NoError(t, err)
	assert.Equal(t, 1, c.Pending(uri))
	assert.Equal(t, 1, c.Pending(chat))

	opt, err := c.Optimistic(uri)
	require.NoError(t, err)
	assert.Equal(t, "mine", opt.Title)
	optChat, err := c.OptimisticChat(uri)
	require.NoError(t, err)
	require.NotNil(t, optChat.ActiveTurn)
	assert.Equal(t, "hi", optChat.ActiveTurn.Message.Text)

	confirmed, err := c.Session(uri)
	require.NoError(t, err)
	assert.Empty(t, confirmed.Title, "confirmed state waits for the echo")
	confirmedChat, err := c.Chat(uri)
	require.NoError(t, err)
	assert.Nil(t, confirmedChat.ActiveTurn)

	_, err = c.Optimistic("ahp-session:/other")
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = c.OptimisticChat("ahp-chat:/other")
	assert.ErrorIs(t, err, client.ErrNoState)

	// Unsubscribing forgets the actions that will never be echoed.
	require.NoError(t, c.Unsubscribe(ctx, uri))
	assert.Equal(t, 0, c.Pending(uri))
	assert.Equal(t, 0, c.Pending(chat))
}

func TestEchoesClearPending(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	chat, err := c.DefaultChat(uri)
	require.NoError(t, err)
	ctx := testCtx(t)
	_, err = c.Confirm(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "mine"}))
	require.NoError(t, err)
	_, err = c.CancelTurn(ctx, uri, "none")
	require.Error(t, err, "rejected")
	assert.Equal(t, 0, c.Pending(uri), "accepted and rejected echoes both clear the pending list")
	assert.Equal(t, 0, c.Pending(chat))
	opt, err := c.Optimistic(uri)
	require.NoError(t, err)
	confirmed, err := c.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, confirmed, opt)
	optChat, err := c.OptimisticChat(chat)
	require.NoError(t, err)
	confirmedChat, err := c.Chat(chat)
	require.NoError(t, err)
	assert.Equal(t, confirmedChat, optChat)
}

func TestReconnectToAHostThatKnowsTheClient(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	a := connect(t, h, client.Options{})
	uri := readySession(t, a)
	ctx := testCtx(t)
	_, err := a.StartTurn(ctx, uri, "t1", client.UserMessage("before"))
	require.NoError(t, err)
	_, err = a.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	h.DropConnections()
	<-a.Done()

	a2, res, err := client.Reconnect(ctx, h.URL(), a, client.Options{Now: fixedNow})
	require.NoError(t, err)
	defer a2.Close()
	assert.NoError(t, a2.ReconnectRefused())
	snap, ok := res.Value.(*wire.ReconnectSnapshotResult)
	require.True(t, ok, "got %T", res.Value)
	assert.Len(t, snap.Snapshots, 3, "root, session and chat")
	chat := must(a.DefaultChat(uri))
	assert.Equal(t, chat, must(a2.DefaultChat(uri)))
	st, err := a2.Chat(uri)
	require.NoError(t, err)
	assert.Len(t, st.Turns, 1)
	_, err = a2.StartTurn(ctx, uri, "t2", client.UserMessage("after"))
	require.NoError(t, err)
	_, err = a2.WaitForTurn(ctx, uri, "t2")
	require.NoError(t, err)

	// The reconnected client still releases the default chat with its session.
	require.NoError(t, a2.Unsubscribe(ctx, uri))
	_, err = a2.Chat(chat)
	assert.ErrorIs(t, err, client.ErrNoState)
}

func TestReconnectFallsBackToInitialize(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	a := connect(t, h, client.Options{})
	uri := readySession(t, a)
	require.NoError(t, a.Close())

	// A host that has never seen the client, as after a restart.
	restarted := newHost(t, fakehost.Options{})
	ctx := testCtx(t)
	a2, res, err := client.Reconnect(ctx, restarted.URL(), a, client.Options{Now: fixedNow})
	require.NoError(t, err)
	defer a2.Close()
	var refusal *client.RPCError
	require.ErrorAs(t, a2.ReconnectRefused(), &refusal)
	assert.Equal(t, wire.CodeInvalidRequest, refusal.Code)
	snap, ok := res.Value.(*wire.ReconnectSnapshotResult)
	require.True(t, ok, "got %T", res.Value)
	require.Len(t, snap.Snapshots, 1)
	assert.Equal(t, client.RootChannel, snap.Snapshots[0].Resource)
	_, err = a2.Root()
	assert.NoError(t, err)
	_, err = a2.Session(uri)
	assert.ErrorIs(t, err, client.ErrNoState, "the restarted host has no such session")
	assert.Equal(t, int64(0), a2.LastServerSeq(), "the new host numbers from scratch")

	// The fresh connection works.
	uri2 := readySession(t, a2)
	_, err = a2.StartTurn(ctx, uri2, "t1", client.UserMessage("again"))
	require.NoError(t, err)
	_, err = a2.WaitForTurn(ctx, uri2, "t1")
	require.NoError(t, err)
}
