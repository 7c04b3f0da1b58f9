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
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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
func startRealHost(t *testing.T) (*host.Host, string) {
	const clock = 1_700_000_000_000
	h := host.New(host.Options{
		Clock:  func() int64 { return clock },
		Agents: []wire.AgentInfo{{Provider: "echo", DisplayName: "Echo", Description: "test", Models: []wire.SessionModelInfo{}}},
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
	h, url := startRealHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := client.Options{Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }}
	c, err := client.Dial(ctx, url, opts)
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

	// The client's confirmed state is exactly the host's.
	var hostJSON []byte
	require.True(t, h.ReadSession(uri, func(s *wire.SessionState) {
		hostJSON, err = json.Marshal(s)
	}))
	require.NoError(t, err)
	st, err = c.Session(uri)
	require.NoError(t, err)
	clientJSON, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, string(hostJSON), string(clientJSON))
}
