package client_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/ws"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// echoHandler is a host.Handler whose sessions are ready at once and whose
// turns answer "echo: PROMPT"; a prompt starting with "tool" first asks to
// run a tool and waits for the confirmation.
type echoHandler struct {
	h  *host.Host
	wg sync.WaitGroup // turn goroutines
}

func (b *echoHandler) CreateSession(_ context.Context, session, _ string, _ wire.CreateSessionParams) {
	b.goRun(func() { _, _ = b.h.Dispatch(session, wire.Action(&wire.SessionReadyAction{})) })
}

func (b *echoHandler) DisposeSession(context.Context, string) {}

func (b *echoHandler) CreateChat(context.Context, string, string, wire.CreateChatParams) {}

func (b *echoHandler) DisposeChat(context.Context, string, string) {}

func (b *echoHandler) ClientAction(_ context.Context, chat string, action wire.StateAction, _ wire.ActionOrigin) {
	emit := func(a any) { _, _ = b.h.Dispatch(chat, wire.Action(a)) }
	switch a := action.Value.(type) {
	case *wire.ChatTurnStartedAction:
		b.goRun(func() {
			if strings.HasPrefix(a.Message.Text, "tool") {
				emit(&wire.ChatToolCallStartAction{TurnID: a.TurnID, ToolCallID: "tc-1", ToolName: "read", DisplayName: "Read"})
				emit(&wire.ChatToolCallReadyAction{TurnID: a.TurnID, ToolCallID: "tc-1", InvocationMessage: wire.PlainText("Read x"),
					Options: []wire.ConfirmationOption{{ID: "ok", Label: "Allow", Kind: wire.ConfirmationOptionKindApprove}}})
				return // continues when the confirmation arrives
			}
			b.answer(chat, a.TurnID, "echo: "+a.Message.Text)
		})
	case *wire.ChatToolCallApprovedAction:
		b.goRun(func() {
			emit(&wire.ChatToolCallCompleteAction{TurnID: a.TurnID, ToolCallID: a.ToolCallID,
				Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("Read x")}})
			b.answer(chat, a.TurnID, "read it")
		})
	}
}

// goRun runs f on a goroutine the test waits for at cleanup.
func (b *echoHandler) goRun(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

func (b *echoHandler) answer(chat, turnID, text string) {
	emit := func(a any) { _, _ = b.h.Dispatch(chat, wire.Action(a)) }
	emit(&wire.ChatResponsePartAction{TurnID: turnID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "md-" + turnID, Content: ""})})
	emit(&wire.ChatDeltaAction{TurnID: turnID, PartID: "md-" + turnID, Content: text})
	emit(&wire.ChatTurnCompleteAction{TurnID: turnID})
}

func (b *echoHandler) Completions(_ context.Context, p wire.CompletionsParams) (wire.CompletionsResult, error) {
	return wire.CompletionsResult{Items: []wire.CompletionItem{{InsertText: "/deploy", Attachment: wire.NewMessageAttachment(
		&wire.SimpleMessageAttachment{Label: "deploy in " + p.Channel})}}}, nil
}

func (b *echoHandler) ResourceRead(context.Context, wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	return wire.ResourceReadResult{}, nil
}

func (b *echoHandler) ResolveSessionConfig(context.Context, string) wire.SessionConfigState {
	return wire.SessionConfigState{
		Schema: wire.SessionConfigSchema{Type: "object", Properties: map[string]wire.SessionConfigPropertySchema{
			"mode": {Type: "string", Title: "Mode", Default: "ask", Enum: []any{"ask", "auto"}},
		}},
		Values: map[string]any{"mode": "ask"},
	}
}

// startRealHost serves the real host over the real WebSocket transport.
// Its one agent, "echo", allows several chats per session.
func startRealHost(t *testing.T, replayBuffer int) (*host.Host, string) {
	h := host.New(host.Options{
		Clock: func() int64 { return epochMs },
		Agents: []wire.AgentInfo{{Provider: "echo", DisplayName: "Echo", Description: "test", Models: []wire.SessionModelInfo{},
			Capabilities: &wire.AgentCapabilities{MultipleChats: &wire.MultipleChatsCapability{}}}},
		ReplayBuffer: replayBuffer,
	})
	b := &echoHandler{h: h}
	h.SetHandler(b)
	handler := ws.NewHandler(h, ws.Options{Token: "tok"})
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		handler.Close()
		srv.Close()
		b.wg.Wait()
		h.Close()
	})
	return h, "ws" + strings.TrimPrefix(srv.URL, "http") + "/?tkn=tok"
}

var fixedClock = client.Options{Now: fixedNow}

// assertSameState checks that the client's confirmed state of a session
// and of its default chat are exactly the host's, once the session has
// settled (no turn running).
func assertSameState(t *testing.T, h *host.Host, c *client.Client, uri string) {
	t.Helper()
	waitSettled(t, c, uri)
	var hostSession, hostChat string
	require.True(t, h.ReadSession(uri, func(s *wire.SessionState) { hostSession = jsonOf(t, s) }))
	st, err := c.Session(uri)
	require.NoError(t, err)
	assert.JSONEq(t, hostSession, jsonOf(t, st), "session %s", uri)
	chat, err := c.DefaultChat(uri)
	require.NoError(t, err)
	require.True(t, h.ReadChat(chat, func(s *wire.ChatState) { hostChat = jsonOf(t, s) }))
	cs, err := c.Chat(chat)
	require.NoError(t, err)
	assert.JSONEq(t, hostChat, jsonOf(t, cs), "chat %s", chat)
}

// realSession connects a client to the real host and opens a ready session.
func realSession(t *testing.T, url string) (*client.Client, string) {
	ctx := testCtx(t)
	c, err := client.Dial(ctx, url, fixedClock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(ctx)
	require.NoError(t, err)
	uri := client.NewSessionURI()
	require.NoError(t, c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri}))
	_, err = c.Subscribe(ctx, uri)
	require.NoError(t, err)
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Lifecycle == wire.SessionLifecycleReady })
	require.NoError(t, err)
	return c, uri
}

// joinSession connects a further client to the session.
func joinSession(t *testing.T, url, uri string, opts ...client.SubscribeOption) *client.Client {
	ctx := testCtx(t)
	c, err := client.Dial(ctx, url, fixedClock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(ctx)
	require.NoError(t, err)
	_, err = c.Subscribe(ctx, uri, opts...)
	require.NoError(t, err)
	return c
}

// runTurn starts a turn and waits for its end.
func runTurn(t *testing.T, c *client.Client, chat, turnID, text string) *wire.Turn {
	t.Helper()
	ctx := testCtx(t)
	_, err := c.StartTurn(ctx, chat, turnID, client.UserMessage(text))
	require.NoError(t, err)
	turn, err := c.WaitForTurn(ctx, chat, turnID)
	require.NoError(t, err)
	return turn
}

func TestAgainstRealHost(t *testing.T) {
	h, url := startRealHost(t, 0)
	ctx := testCtx(t)
	c, err := client.Dial(ctx, url, fixedClock)
	require.NoError(t, err)
	defer c.Close()
	res, err := c.Initialize(ctx)
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", res.ProtocolVersion, "the host speaks the dialect the client offers")
	root, err := c.Root()
	require.NoError(t, err)
	require.Len(t, root.Agents, 1)

	uri := client.NewSessionURI()
	require.NoError(t, c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri, Provider: wire.Ptr("echo"), WorkingDirectories: []string{"file:///work"}}))
	_, err = c.Subscribe(ctx, uri)
	require.NoError(t, err)
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Lifecycle == wire.SessionLifecycleReady })
	require.NoError(t, err)
	assert.Equal(t, []string{"file:///work"}, st.WorkingDirectories)
	require.NotNil(t, st.DefaultChat)
	chat, err := c.DefaultChat(uri)
	require.NoError(t, err)
	assert.Equal(t, *st.DefaultChat, chat)

	turn := runTurn(t, c, uri, "t1", "hello")
	assert.Equal(t, "echo: hello", markdown(turn.ResponseParts))

	_, err = c.StartTurn(ctx, uri, "t2", client.UserMessage("tool please"))
	require.NoError(t, err)
	var conf client.Confirmation
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool {
		if cs := client.PendingConfirmations(s); len(cs) > 0 {
			conf = cs[0]
			return true
		}
		return false
	})
	require.NoError(t, err)
	assert.Equal(t, client.Confirmation{Chat: chat, TurnID: "t2", ToolCallID: "tc-1", ToolCall: conf.ToolCall}, conf)
	_, err = c.ApproveToolCall(ctx, conf.Chat, conf.TurnID, conf.ToolCallID, "ok")
	require.NoError(t, err)
	turn, err = c.WaitForTurn(ctx, uri, "t2")
	require.NoError(t, err)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "read it", markdown(turn.ResponseParts))
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.InputNeeded) == 0 })
	require.NoError(t, err, "the answered confirmation leaves the session's inputNeeded")

	// A rejected action comes back as a RejectedError.
	_, err = c.CancelTurn(ctx, uri, "t2")
	var rej *client.RejectedError
	assert.ErrorAs(t, err, &rej)

	// A queued message becomes the next turn.
	_, err = c.SetPendingMessage(ctx, uri, wire.PendingMessageKindQueued, "q-1", client.UserMessage("queued"))
	require.NoError(t, err)
	cs, err := c.WaitForChat(ctx, uri, func(s *wire.ChatState) bool { return len(s.Turns) == 3 })
	require.NoError(t, err)
	assert.Equal(t, "echo: queued", markdown(cs.Turns[2].ResponseParts))

	_, err = c.SelectModel(ctx, uri, &wire.ModelSelection{ID: "m-1"})
	require.NoError(t, err)

	items, err := c.Completions(ctx, wire.CompletionsParams{Channel: uri, Kind: wire.CompletionItemKindUserMessage, Text: "/de", Offset: 3})
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, "/deploy", items[0].InsertText)
	assert.Contains(t, jsonOf(t, items[0].Attachment), chat, "completions run on the chat")

	cfg, err := c.ResolveSessionConfig(ctx, wire.ResolveSessionConfigParams{Provider: wire.Ptr("echo")})
	require.NoError(t, err)
	assert.Equal(t, "ask", cfg.Values["mode"])
	assert.Contains(t, cfg.Schema.Properties, "mode")

	assertSameState(t, h, c, uri)
}

func TestFetchTurnsPagesInHistory(t *testing.T) {
	h, url := startRealHost(t, 0)
	a, uri := realSession(t, url)
	for _, id := range []string{"t1", "t2", "t3"} {
		runTurn(t, a, uri, id, "turn "+id)
	}
	ctx := testCtx(t)

	b := joinSession(t, url, uri, client.LastTurns(1))
	st, err := b.Chat(uri)
	require.NoError(t, err)
	require.Len(t, st.Turns, 1, "the view holds the last turn only")
	assert.Equal(t, "t3", st.Turns[0].ID)
	require.NotNil(t, st.TurnsNextCursor)

	more, err := b.FetchTurns(ctx, uri)
	require.NoError(t, err)
	assert.False(t, more, "one page holds the rest")
	st, err = b.Chat(uri)
	require.NoError(t, err)
	var ids []string
	for _, tr := range st.Turns {
		ids = append(ids, tr.ID)
	}
	assert.Equal(t, []string{"t1", "t2", "t3"}, ids)
	assert.Nil(t, st.TurnsNextCursor)
	assertSameState(t, h, b, uri)

	more, err = b.FetchTurns(ctx, uri)
	require.NoError(t, err)
	assert.False(t, more, "nothing older: nothing asked")
}

func TestChatsOnRealHost(t *testing.T) {
	h, url := startRealHost(t, 0)
	c, uri := realSession(t, url)
	ctx := testCtx(t)
	side := client.NewChatURI()
	require.NoError(t, c.CreateChat(ctx, wire.CreateChatParams{Channel: uri, Chat: side}))
	st, err := c.Session(uri)
	require.NoError(t, err)
	require.Len(t, st.Chats, 2, "the catalogue has the chat once createChat is answered")
	_, err = c.Subscribe(ctx, side)
	require.NoError(t, err)
	turn := runTurn(t, c, side, "s1", "aside")
	assert.Equal(t, "echo: aside", markdown(turn.ResponseParts))
	var chatJSON string
	require.True(t, h.ReadChat(side, func(s *wire.ChatState) { chatJSON = jsonOf(t, s) }))
	got, err := c.Chat(side)
	require.NoError(t, err)
	assert.JSONEq(t, chatJSON, jsonOf(t, got))

	require.NoError(t, c.DisposeChat(ctx, side))
	_, err = c.Chat(side)
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Chats) == 1 })
	require.NoError(t, err)
}

func TestListSessionsPagingOnRealHost(t *testing.T) {
	_, url := startRealHost(t, 0)
	c, first := realSession(t, url)
	ctx := testCtx(t)
	want := map[string]bool{first: true}
	for range 2 {
		uri := client.NewSessionURI()
		require.NoError(t, c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri}))
		want[uri] = true
	}
	got := map[string]bool{}
	items, next, err := c.ListSessionsPage(ctx, 2, "")
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.NotEmpty(t, next)
	for _, s := range items {
		got[s.Resource] = true
	}
	items, next, err = c.ListSessionsPage(ctx, 2, next)
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Empty(t, next)
	got[items[0].Resource] = true
	assert.Equal(t, want, got)

	_, _, err = c.ListSessionsPage(ctx, 2, "not-a-cursor")
	var rpcErr *client.RPCError
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, wire.CodeInvalidParams, rpcErr.Code)
}

func TestReconnectReplaysMissedEnvelopes(t *testing.T) {
	h, url := startRealHost(t, 0)
	ctx := testCtx(t)
	a, uri := realSession(t, url)
	chat, err := a.DefaultChat(uri)
	require.NoError(t, err)
	first, err := a.StartTurn(ctx, uri, "t1", client.UserMessage("one"))
	require.NoError(t, err)
	_, err = a.WaitForTurn(ctx, uri, "t1")
	require.NoError(t, err)
	require.NoError(t, a.Close())

	b := joinSession(t, url, uri)
	runTurn(t, b, uri, "t2", "two")

	a2, res, err := client.Reconnect(ctx, url, a, fixedClock)
	require.NoError(t, err)
	defer a2.Close()
	assert.Equal(t, a.ClientID(), a2.ClientID())
	assert.NoError(t, a2.ReconnectRefused())
	replay, ok := res.Value.(*wire.ReconnectReplayResult)
	require.True(t, ok, "got %T", res.Value)
	assert.Empty(t, replay.Missing)
	assertSameState(t, h, a2, uri)

	// The missed envelopes of the chat come through Next first, in order.
	var types []string
	for len(types) == 0 || types[len(types)-1] != "chat/turnComplete" {
		ev, err := a2.Next(ctx)
		require.NoError(t, err)
		if ev.Channel == chat {
			assert.Equal(t, uri, ev.Session)
			types = append(types, ev.Envelope.Action.Type())
		}
	}
	assert.Equal(t, []string{"chat/turnStarted", "chat/responsePart", "chat/delta", "chat/turnComplete"}, types)

	// clientSeq numbering continues after the old connection's.
	env, err := a2.Confirm(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "back"}))
	require.NoError(t, err)
	assert.Greater(t, env.Origin.ClientSeq, first.Origin.ClientSeq)
}

func TestReconnectFallsBackToSnapshots(t *testing.T) {
	h, url := startRealHost(t, 2) // too small to replay a whole turn
	ctx := testCtx(t)
	a, uri := realSession(t, url)
	require.NoError(t, a.Close())
	b := joinSession(t, url, uri)
	runTurn(t, b, uri, "t1", "while away")

	a2, res, err := client.Reconnect(ctx, url, a, fixedClock)
	require.NoError(t, err)
	defer a2.Close()
	_, ok := res.Value.(*wire.ReconnectSnapshotResult)
	require.True(t, ok, "got %T", res.Value)
	assertSameState(t, h, a2, uri)
	_, err = a2.Root()
	assert.NoError(t, err)
	runTurn(t, a2, uri, "t2", "back")
	assertSameState(t, h, a2, uri)
}

func TestReconnectForgetsMissingChannels(t *testing.T) {
	_, url := startRealHost(t, 0)
	ctx := testCtx(t)
	a, uri := realSession(t, url)
	chat, err := a.DefaultChat(uri)
	require.NoError(t, err)
	require.NoError(t, a.Close())
	b := joinSession(t, url, uri)
	require.NoError(t, b.DisposeSession(ctx, uri))

	a2, res, err := client.Reconnect(ctx, url, a, fixedClock)
	require.NoError(t, err)
	defer a2.Close()
	switch r := res.Value.(type) {
	case *wire.ReconnectReplayResult:
		assert.ElementsMatch(t, []string{uri, chat}, r.Missing)
	case *wire.ReconnectSnapshotResult:
	default:
		t.Fatalf("unexpected result %T", res.Value)
	}
	_, err = a2.Session(uri)
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = a2.Chat(chat)
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = a2.Root()
	assert.NoError(t, err)
}

func TestReconnectAfterHostRestart(t *testing.T) {
	_, url := startRealHost(t, 0)
	ctx := testCtx(t)
	a, uri := realSession(t, url)
	runTurn(t, a, uri, "t1", "before the restart")
	require.NoError(t, a.Close())

	// A new host knows neither the client nor its session.
	h2, url2 := startRealHost(t, 0)
	a2, res, err := client.Reconnect(ctx, url2, a, fixedClock)
	require.NoError(t, err)
	defer a2.Close()
	var refusal *client.RPCError
	require.ErrorAs(t, a2.ReconnectRefused(), &refusal)
	assert.Contains(t, refusal.Message, "not known")
	snap, ok := res.Value.(*wire.ReconnectSnapshotResult)
	require.True(t, ok, "got %T", res.Value)
	require.Len(t, snap.Snapshots, 1)
	assert.Equal(t, client.RootChannel, snap.Snapshots[0].Resource)
	_, err = a2.Session(uri)
	assert.ErrorIs(t, err, client.ErrNoState)

	// The client carries on with the new host.
	uri2 := client.NewSessionURI()
	require.NoError(t, a2.CreateSession(ctx, wire.CreateSessionParams{Channel: uri2}))
	_, err = a2.Subscribe(ctx, uri2)
	require.NoError(t, err)
	_, err = a2.WaitFor(ctx, uri2, func(s *wire.SessionState) bool { return s.Lifecycle == wire.SessionLifecycleReady })
	require.NoError(t, err)
	runTurn(t, a2, uri2, "t1", "after the restart")
	assertSameState(t, h2, a2, uri2)
}
