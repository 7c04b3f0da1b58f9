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
	"github.com/ahp-bridge/ahp-bridge/ahp/client/fakehost"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newHost(t *testing.T, opts fakehost.Options) *fakehost.Host {
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

func turnStarted(id, text string) wire.StateAction {
	return wire.Action(&wire.SessionTurnStartedAction{TurnID: id, Message: wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}})
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
}

func TestInitializeRejectsOtherVersion(t *testing.T) {
	h := newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"initialize": func(json.RawMessage) (any, *fakehost.Error) {
			return wire.InitializeResult{ProtocolVersion: "0.4.0", Snapshots: []wire.Snapshot{}}, nil
		},
	}})
	ctx := testCtx(t)
	c, err := client.Dial(ctx, h.URL(), client.Options{})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Initialize(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"0.4.0"`)
}

func TestSessionTurnEndToEnd(t *testing.T) {
	// Both sides use the same fixed clock so their states compare equal.
	h := newHost(t, fakehost.Options{Clock: func() int64 { return 1_700_000_000_000 }})
	c := connect(t, h, client.Options{Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }})
	uri := readySession(t, c)
	ctx := testCtx(t)

	env, err := c.Confirm(ctx, uri, turnStarted("t1", "hello"))
	require.NoError(t, err)
	require.NotNil(t, env.Origin)
	assert.Equal(t, c.ClientID(), env.Origin.ClientID)

	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.ActiveTurn == nil && len(s.Turns) == 1 })
	require.NoError(t, err)
	turn := st.Turns[0]
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	require.Len(t, turn.ResponseParts, 1)
	md, ok := turn.ResponseParts[0].Value.(*wire.MarkdownResponsePart)
	require.True(t, ok, "got %T", turn.ResponseParts[0].Value)
	assert.Equal(t, "echo: hello", md.Content)

	// The client's state equals the host's: both ran the same actions.
	hostState, ok := h.Session(uri)
	require.True(t, ok)
	want, _ := json.Marshal(hostState)
	got, _ := json.Marshal(st)
	assert.JSONEq(t, string(want), string(got))

	// Every envelope since the subscription also came through Next, in
	// order (session/ready came before it and is part of the snapshot).
	types := nextActions(t, c, uri, string(wire.ActionTypeSessionTurnComplete))
	assert.Equal(t, []string{
		"session/turnStarted", "session/responsePart",
		"session/delta", "session/delta", "session/turnComplete",
	}, types)
	assert.GreaterOrEqual(t, c.LastServerSeq(), env.ServerSeq)
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
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Summary.Title == "two" })
	require.NoError(t, err)
	assert.Equal(t, "two", st.Summary.Title)
}

func TestRejectedActionIsNotApplied(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	before, err := c.Session(uri)
	require.NoError(t, err)

	env, err := c.Confirm(ctx, uri, wire.Action(&wire.SessionTurnCancelledAction{TurnID: "nope"}))
	var rej *client.RejectedError
	require.ErrorAs(t, err, &rej)
	require.NotNil(t, env.RejectionReason)
	assert.Contains(t, err.Error(), "session/turnCancelled")
	assert.Contains(t, err.Error(), "no active turn")

	after, err := c.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

func TestTwoClientsShareASession(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	a := connect(t, h, client.Options{ClientID: "a"})
	b := connect(t, h, client.Options{ClientID: "b"})
	uri := readySession(t, a)
	ctx := testCtx(t)
	_, err := b.Subscribe(ctx, uri)
	require.NoError(t, err)

	_, err = a.Confirm(ctx, uri, turnStarted("t1", "tool time"))
	require.NoError(t, err)
	// b sees the permission request and answers it; a sees b's answer.
	_, err = b.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return pendingTool(s) == "tc-1" })
	require.NoError(t, err)
	_, err = b.Confirm(ctx, uri, wire.Action(&wire.SessionToolCallApprovedAction{
		TurnID: "t1", ToolCallID: "tc-1", Approved: true, Confirmed: wire.ToolCallConfirmationReasonUserAction,
	}))
	require.NoError(t, err)
	for _, c := range []*client.Client{a, b} {
		st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Turns) == 1 })
		require.NoError(t, err)
		assert.Equal(t, wire.TurnStateComplete, st.Turns[0].State)
	}
	// A second answer to the same tool call is rejected: first one wins.
	_, err = a.Confirm(ctx, uri, wire.Action(&wire.SessionToolCallDeniedAction{
		TurnID: "t1", ToolCallID: "tc-1", Reason: wire.ToolCallCancellationReasonDenied,
	}))
	var rej *client.RejectedError
	assert.ErrorAs(t, err, &rej)
}

func pendingTool(s *wire.SessionState) string {
	if s.ActiveTurn == nil {
		return ""
	}
	for _, p := range s.ActiveTurn.ResponseParts {
		if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			if pc, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok {
				return pc.ToolCallID
			}
		}
	}
	return ""
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
	assert.Equal(t, wire.SessionLifecycleCreationFailed, st.Lifecycle)
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

	require.NoError(t, c.Ping(ctx))
	sessions, err := c.ListSessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, sessions)
}

func TestCallContextCancelled(t *testing.T) {
	release := make(chan struct{})
	h := newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"slow": func(json.RawMessage) (any, *fakehost.Error) { <-release; return struct{}{}, nil },
	}})
	defer close(release)
	c := connect(t, h, client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.Call(ctx, "slow", struct{}{}, nil)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
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
	errc := make(chan error, 1)
	go func() {
		_, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Turns) > 5 })
		errc <- err
	}()
	h.DropConnections()
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
	case <-ctx.Done():
		t.Fatal("WaitFor did not return after the connection dropped")
	}
	<-c.Done()
	_, err := c.DispatchAction(ctx, uri, turnStarted("t", "x"))
	assert.Error(t, err)
}

func TestCloseIsIdempotentAndDrainsQueue(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	require.NoError(t, h.Notify("x/one", map[string]string{"channel": client.RootChannel}))
	// Wait until the notification is queued, then close.
	require.Eventually(t, func() bool {
		require.NoError(t, c.Ping(testCtx(t)))
		return true
	}, time.Second, 10*time.Millisecond)
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
	for i := 0; i < 3; i++ {
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
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	require.NoError(t, c.Unsubscribe(ctx, uri))
	_, err := c.Session(uri)
	require.ErrorIs(t, err, client.ErrNoState)

	st, ok := h.Session(uri)
	require.True(t, ok)
	st.Summary.Title = "from snapshot"
	snapshotSeq := c.LastServerSeq() + 10
	env := func(seq int64, title string) string {
		b, err := json.Marshal(wire.ActionEnvelope{Channel: uri, ServerSeq: seq, Action: wire.Action(&wire.SessionTitleChangedAction{Title: title})})
		require.NoError(t, err)
		return `{"jsonrpc":"2.0","method":"action","params":` + string(b) + `}`
	}
	var h2 *fakehost.Host
	h2 = newHost(t, fakehost.Options{Methods: map[string]func(json.RawMessage) (any, *fakehost.Error){
		"subscribe": func(json.RawMessage) (any, *fakehost.Error) {
			// An envelope newer than the snapshot overtakes the response.
			h2.SendRaw(env(snapshotSeq+1, "after snapshot"))
			return wire.SubscribeResult{Snapshot: &wire.Snapshot{Resource: uri, State: wire.NewSnapshotState(st), FromSeq: snapshotSeq}}, nil
		},
	}})
	c2 := connect(t, h2, client.Options{})
	_, err = c2.Subscribe(ctx, uri)
	require.NoError(t, err)
	st2, err := c2.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, "after snapshot", st2.Summary.Title, "the early envelope is applied on top of the snapshot")
	h2.SendRaw(env(snapshotSeq, "stale"))
	require.NoError(t, c2.Ping(ctx)) // the reply comes after the stale envelope was handled
	st2, err = c2.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, "after snapshot", st2.Summary.Title, "an envelope contained in the snapshot is not applied again")
	h2.SendRaw(env(snapshotSeq+2, "latest"))
	got, err := c2.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Summary.Title == "latest" })
	require.NoError(t, err)
	assert.Equal(t, "latest", got.Summary.Title)

	var titles []string
	for len(titles) < 3 {
		ev, err := c2.Next(ctx)
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := c.WaitFor(ctx, uri, func(*wire.SessionState) bool { return false })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = c.WaitForRoot(ctx, func(*wire.RootState) bool { return false })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestWaitForRoot(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	h.Emit(client.RootChannel, &wire.RootActiveSessionsChangedAction{ActiveSessions: 3})
	root, err := c.WaitForRoot(testCtx(t), func(r *wire.RootState) bool { return r.ActiveSessions != nil && *r.ActiveSessions == 3 })
	require.NoError(t, err)
	assert.Equal(t, 3, *root.ActiveSessions)
}

func TestNewSessionURI(t *testing.T) {
	re := regexp.MustCompile(`^ahp-session:/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := client.NewSessionURI(), client.NewSessionURI()
	assert.Regexp(t, re, a)
	assert.NotEqual(t, a, b)
}

func TestRPCErrorText(t *testing.T) {
	e := &client.RPCError{Code: -32005, Message: "unsupported", Data: json.RawMessage(`{"supportedVersions":["0.3.0"]}`)}
	assert.Equal(t, `AHP error -32005: unsupported (data: {"supportedVersions":["0.3.0"]})`, e.Error())
	assert.Equal(t, "AHP error -32601: nope", (&client.RPCError{Code: -32601, Message: "nope"}).Error())
	var target *client.RPCError
	assert.True(t, errors.As(error(e), &target))
}

func TestOptimisticState(t *testing.T) {
	h := newHost(t, fakehost.Options{IgnoreActions: true})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	_, err := c.DispatchAction(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "mine"}))
	require.NoError(t, err)
	_, err = c.DispatchAction(ctx, uri, turnStarted("t1", "hi"))
	require.NoError(t, err)
	assert.Equal(t, 2, c.Pending(uri))

	opt, err := c.Optimistic(uri)
	require.NoError(t, err)
	assert.Equal(t, "mine", opt.Summary.Title)
	require.NotNil(t, opt.ActiveTurn)
	assert.Equal(t, "hi", opt.ActiveTurn.Message.Text)

	confirmed, err := c.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, "New Session", confirmed.Summary.Title, "confirmed state waits for the echo")
	assert.Nil(t, confirmed.ActiveTurn)

	_, err = c.Optimistic("ahp-session:/other")
	assert.ErrorIs(t, err, client.ErrNoState)
}

func TestEchoesClearPending(t *testing.T) {
	h := newHost(t, fakehost.Options{})
	c := connect(t, h, client.Options{})
	uri := readySession(t, c)
	ctx := testCtx(t)
	_, err := c.Confirm(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "mine"}))
	require.NoError(t, err)
	_, err = c.Confirm(ctx, uri, wire.Action(&wire.SessionTurnCancelledAction{TurnID: "none"}))
	require.Error(t, err, "rejected")
	assert.Equal(t, 0, c.Pending(uri), "accepted and rejected echoes both clear the pending list")
	opt, err := c.Optimistic(uri)
	require.NoError(t, err)
	confirmed, err := c.Session(uri)
	require.NoError(t, err)
	assert.Equal(t, confirmed, opt)
}
