package client_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/transport/ws"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// echoBackend is a host.Backend whose sessions are ready at once and whose
// turns answer "echo: PROMPT"; a prompt starting with "tool" first asks to
// run a tool and waits for the confirmation.
type echoBackend struct {
	h  *host.Host
	wg sync.WaitGroup // turn goroutines
}

func (b *echoBackend) CreateSession(_ context.Context, channel string, _ wire.CreateSessionParams) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_, _ = b.h.Dispatch(channel, wire.Action(&wire.SessionReadyAction{}))
	}()
}

func (b *echoBackend) DisposeSession(context.Context, string) {}

func (b *echoBackend) ClientAction(_ context.Context, channel string, action wire.StateAction, _ wire.ActionOrigin) {
	emit := func(a any) { _, _ = b.h.Dispatch(channel, wire.Action(a)) }
	switch a := action.Value.(type) {
	case *wire.SessionTurnStartedAction:
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if strings.HasPrefix(a.Message.Text, "tool") {
				emit(&wire.SessionToolCallStartAction{TurnID: a.TurnID, ToolCallID: "tc-1", ToolName: "read", DisplayName: "Read"})
				emit(&wire.SessionToolCallReadyAction{TurnID: a.TurnID, ToolCallID: "tc-1", InvocationMessage: wire.PlainText("Read x"),
					Options: []wire.ConfirmationOption{{ID: "ok", Label: "Allow", Kind: wire.ConfirmationOptionKindApprove}}})
				return // continues when the confirmation arrives
			}
			b.answer(channel, a.TurnID, "echo: "+a.Message.Text)
		}()
	case *wire.SessionToolCallApprovedAction:
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			emit(&wire.SessionToolCallCompleteAction{TurnID: a.TurnID, ToolCallID: a.ToolCallID,
				Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("Read x")}})
			b.answer(channel, a.TurnID, "read it")
		}()
	}
}

func (b *echoBackend) answer(channel, turnID, text string) {
	emit := func(a any) { _, _ = b.h.Dispatch(channel, wire.Action(a)) }
	emit(&wire.SessionResponsePartAction{TurnID: turnID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "md-" + turnID, Content: ""})})
	emit(&wire.SessionDeltaAction{TurnID: turnID, PartID: "md-" + turnID, Content: text})
	emit(&wire.SessionTurnCompleteAction{TurnID: turnID})
}

func (b *echoBackend) Completions(context.Context, wire.CompletionsParams) (wire.CompletionsResult, error) {
	return wire.CompletionsResult{}, nil
}

func (b *echoBackend) ResourceRead(context.Context, wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	return wire.ResourceReadResult{}, nil
}

// startRealHost serves the real host over the real WebSocket transport.
func startRealHost(t *testing.T, replayBuffer int) (*host.Host, string) {
	const clock = 1_700_000_000_000
	h := host.New(host.Options{
		Clock:        func() int64 { return clock },
		Agents:       []wire.AgentInfo{{Provider: "echo", DisplayName: "Echo", Description: "test", Models: []wire.SessionModelInfo{}}},
		ReplayBuffer: replayBuffer,
	})
	b := &echoBackend{h: h}
	h.SetBackend(b)
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

func TestAgainstRealHost(t *testing.T) {
	h, url := startRealHost(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, fixedClock)
	require.NoError(t, err)
	defer c.Close()
	res, err := c.Initialize(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0.3.0", res.ProtocolVersion)
	root, err := c.Root()
	require.NoError(t, err)
	require.Len(t, root.Agents, 1)

	uri := client.NewSessionURI()
	require.NoError(t, c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri, Provider: wire.Ptr("echo")}))
	_, err = c.Subscribe(ctx, uri)
	require.NoError(t, err)
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return s.Lifecycle == wire.SessionLifecycleReady })
	require.NoError(t, err)

	_, err = c.Confirm(ctx, uri, turnStarted("t1", "hello"))
	require.NoError(t, err)
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Turns) == 1 })
	require.NoError(t, err)

	_, err = c.Confirm(ctx, uri, turnStarted("t2", "tool please"))
	require.NoError(t, err)
	_, err = c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return pendingTool(s) == "tc-1" })
	require.NoError(t, err)
	_, err = c.Confirm(ctx, uri, wire.Action(&wire.SessionToolCallApprovedAction{
		TurnID: "t2", ToolCallID: "tc-1", Approved: true, Confirmed: wire.ToolCallConfirmationReasonUserAction, SelectedOptionID: wire.Ptr("ok"),
	}))
	require.NoError(t, err)
	st, err := c.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Turns) == 2 })
	require.NoError(t, err)
	assert.Equal(t, wire.TurnStateComplete, st.Turns[1].State)

	// A rejected action comes back as a RejectedError.
	_, err = c.Confirm(ctx, uri, wire.Action(&wire.SessionTurnCancelledAction{TurnID: "t2"}))
	var rej *client.RejectedError
	assert.ErrorAs(t, err, &rej)

	assertSameState(t, h, c, uri)
}

var fixedClock = client.Options{Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }}

// assertSameState checks that the client's confirmed state of a session is
// exactly the host's.
func assertSameState(t *testing.T, h *host.Host, c *client.Client, uri string) {
	t.Helper()
	var hostJSON []byte
	var err error
	require.True(t, h.ReadSession(uri, func(s *wire.SessionState) {
		hostJSON, err = json.Marshal(s)
	}))
	require.NoError(t, err)
	st, err := c.Session(uri)
	require.NoError(t, err)
	clientJSON, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, string(hostJSON), string(clientJSON))
}

// realSession connects a client to the real host and opens a ready session.
func realSession(t *testing.T, url string) (*client.Client, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
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

// joinSession connects a second client to the session.
func joinSession(t *testing.T, url, uri string) *client.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, fixedClock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(ctx, client.RootChannel, uri)
	require.NoError(t, err)
	_, err = c.Session(uri)
	require.NoError(t, err, "initialSubscriptions installs the session snapshot")
	return c
}

func TestReconnectReplaysMissedEnvelopes(t *testing.T) {
	h, url := startRealHost(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, uri := realSession(t, url)
	first, err := a.Confirm(ctx, uri, turnStarted("t1", "one"))
	require.NoError(t, err)
	_, err = a.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Turns) == 1 })
	require.NoError(t, err)
	for { // drain a's queue so that only replayed events remain afterwards
		c2, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := a.Next(c2)
		cancel2()
		if err != nil {
			break
		}
	}
	require.NoError(t, a.Close())

	b := joinSession(t, url, uri)
	_, err = b.Confirm(ctx, uri, turnStarted("t2", "two"))
	require.NoError(t, err)
	_, err = b.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Turns) == 2 })
	require.NoError(t, err)

	a2, res, err := client.Reconnect(ctx, url, a, fixedClock)
	require.NoError(t, err)
	defer a2.Close()
	assert.Equal(t, a.ClientID(), a2.ClientID())
	replay, ok := res.Value.(*wire.ReconnectReplayResult)
	require.True(t, ok, "got %T", res.Value)
	assert.Empty(t, replay.Missing)
	assertSameState(t, h, a2, uri)

	// The missed envelopes come through Next first, in order.
	var types []string
	for len(types) == 0 || types[len(types)-1] != "session/turnComplete" {
		ev, err := a2.Next(ctx)
		require.NoError(t, err)
		if ev.Channel == uri {
			types = append(types, ev.Envelope.Action.Type())
		}
	}
	assert.Equal(t, []string{"session/turnStarted", "session/responsePart", "session/delta", "session/turnComplete"}, types)

	// clientSeq numbering continues after the old connection's.
	env, err := a2.Confirm(ctx, uri, wire.Action(&wire.SessionTitleChangedAction{Title: "back"}))
	require.NoError(t, err)
	assert.Greater(t, env.Origin.ClientSeq, first.Origin.ClientSeq)
}

func TestReconnectFallsBackToSnapshots(t *testing.T) {
	h, url := startRealHost(t, 2) // too small to replay a whole turn
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, uri := realSession(t, url)
	require.NoError(t, a.Close())
	b := joinSession(t, url, uri)
	_, err := b.Confirm(ctx, uri, turnStarted("t1", "while away"))
	require.NoError(t, err)
	_, err = b.WaitFor(ctx, uri, func(s *wire.SessionState) bool { return len(s.Turns) == 1 })
	require.NoError(t, err)

	a2, res, err := client.Reconnect(ctx, url, a, fixedClock)
	require.NoError(t, err)
	defer a2.Close()
	_, ok := res.Value.(*wire.ReconnectSnapshotResult)
	require.True(t, ok, "got %T", res.Value)
	assertSameState(t, h, a2, uri)
	_, err = a2.Root()
	assert.NoError(t, err)
}

func TestReconnectForgetsMissingChannels(t *testing.T) {
	_, url := startRealHost(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, uri := realSession(t, url)
	require.NoError(t, a.Close())
	b := joinSession(t, url, uri)
	require.NoError(t, b.DisposeSession(ctx, uri))

	a2, res, err := client.Reconnect(ctx, url, a, fixedClock)
	require.NoError(t, err)
	defer a2.Close()
	switch r := res.Value.(type) {
	case *wire.ReconnectReplayResult:
		assert.Equal(t, []string{uri}, r.Missing)
	case *wire.ReconnectSnapshotResult:
	default:
		t.Fatalf("unexpected result %T", res.Value)
	}
	_, err = a2.Session(uri)
	assert.ErrorIs(t, err, client.ErrNoState)
	_, err = a2.Root()
	assert.NoError(t, err)
}
