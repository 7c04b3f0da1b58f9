package bridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// acpTimeout bounds every wait of the ACP end-to-end tests. It is generous
// because the tests run under -race on a loaded two-core machine; a passing
// test never waits for it.
const acpTimeout = 60 * time.Second

// acpRig is one bridge over ACP providers with one client connected to it.
type acpRig struct {
	t   *testing.T
	env *bridgetest.Env
	c   *client.Client
}

// acpRigOptions tune newACPRig.
type acpRigOptions struct {
	approve string
	// configure adjusts the scripted agent's provider config.
	configure func(*acp.Config)
	// providers replaces the scripted agent provider.
	providers []backend.Provider
}

// scriptProvider returns an ACP provider running the scripted agent as a
// real subprocess (`ahp-bridge demo-agent`) under the id "script".
func scriptProvider(t *testing.T, configure func(*acp.Config)) *acp.Provider {
	t.Helper()
	cfg := acp.Config{ID: "script", DisplayName: "Script agent", Command: []string{bridgetest.Binary(t), "demo-agent"}}
	if configure != nil {
		configure(&cfg)
	}
	return acp.NewProvider(cfg, testLogger(t).With().Str("component", "acp").Logger())
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

func newACPRig(t *testing.T, o acpRigOptions) *acpRig {
	t.Helper()
	providers := o.providers
	if providers == nil {
		providers = []backend.Provider{scriptProvider(t, o.configure)}
	}
	env := bridgetest.Start(t, providers, bridgetest.Options{Approve: o.approve})
	return &acpRig{t: t, env: env, c: env.Client(t)}
}

func (r *acpRig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), acpTimeout)
	r.t.Cleanup(cancel)
	return ctx
}

// session creates a ready session of provider in cwd ("" = the test
// process's directory).
func (r *acpRig) session(provider, cwd string) string {
	r.t.Helper()
	return bridgetest.CreateSession(r.t, r.c, provider, cwd)
}

// turn runs a turn that needs no confirmation and returns it once ended.
func (r *acpRig) turn(ch, text string) wire.Turn {
	r.t.Helper()
	id := bridgetest.StartTurn(r.t, r.c, ch, text)
	return bridgetest.WaitTurnEnd(r.t, r.c, ch, id, acpTimeout)
}

// confirm dispatches a tool call confirmation and waits for its echo.
func (r *acpRig) confirm(c *client.Client, ch string, a any) error {
	r.t.Helper()
	_, err := c.Confirm(r.ctx(), ch, wire.Action(a))
	return err
}

func approve(turnID, toolCallID, option string) *wire.SessionToolCallApprovedAction {
	a := &wire.SessionToolCallApprovedAction{TurnID: turnID, ToolCallID: toolCallID, Approved: true,
		Confirmed: wire.ToolCallConfirmationReasonUserAction}
	if option != "" {
		a.SelectedOptionID = wire.Ptr(option)
	}
	return a
}

func deny(turnID, toolCallID, option string) *wire.SessionToolCallDeniedAction {
	a := &wire.SessionToolCallDeniedAction{TurnID: turnID, ToolCallID: toolCallID, Reason: wire.ToolCallCancellationReasonDenied}
	if option != "" {
		a.SelectedOptionID = wire.Ptr(option)
	}
	return a
}

// turnText concatenates the markdown parts of a turn, as a client shows the
// answer.
func turnText(parts []wire.ResponsePart) string {
	var b strings.Builder
	for _, p := range parts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// partsOf returns the parts of one concrete kind, in order.
func partsOf[T any](parts []wire.ResponsePart) []*T {
	var out []*T
	for _, p := range parts {
		if v, ok := p.Value.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// toolCall returns the state of tool call id in parts (a pointer to one of
// the wire.ToolCall*State variants), failing the test when it is absent.
func toolCall(t *testing.T, parts []wire.ResponsePart, id string) any {
	t.Helper()
	for _, tc := range partsOf[wire.ToolCallResponsePart](parts) {
		if toolCallID(tc.ToolCall) == id {
			return tc.ToolCall.Value
		}
	}
	require.Failf(t, "tool call missing", "no tool call %q in the response parts", id)
	return nil
}

func toolCallID(s wire.ToolCallState) string {
	switch v := s.Value.(type) {
	case *wire.ToolCallStreamingState:
		return v.ToolCallID
	case *wire.ToolCallPendingConfirmationState:
		return v.ToolCallID
	case *wire.ToolCallRunningState:
		return v.ToolCallID
	case *wire.ToolCallPendingResultConfirmationState:
		return v.ToolCallID
	case *wire.ToolCallCompletedState:
		return v.ToolCallID
	case *wire.ToolCallCancelledState:
		return v.ToolCallID
	}
	return ""
}

// pendingTool waits until the active turn has a tool call pending
// confirmation and returns its state.
func (r *acpRig) pendingTool(c *client.Client, ch string) *wire.ToolCallPendingConfirmationState {
	r.t.Helper()
	var pc *wire.ToolCallPendingConfirmationState
	st, err := c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool {
		return s.ActiveTurn != nil && pendingIn(s.ActiveTurn.ResponseParts) != nil
	})
	require.NoError(r.t, err, "no tool call became pending-confirmation")
	pc = pendingIn(st.ActiveTurn.ResponseParts)
	return pc
}

func pendingIn(parts []wire.ResponsePart) *wire.ToolCallPendingConfirmationState {
	for _, tc := range partsOf[wire.ToolCallResponsePart](parts) {
		if pc, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok {
			return pc
		}
	}
	return nil
}

// activeText waits until the active turn's text contains want.
func (r *acpRig) activeText(ch, want string) {
	r.t.Helper()
	_, err := r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool {
		return s.ActiveTurn != nil && strings.Contains(turnText(s.ActiveTurn.ResponseParts), want)
	})
	require.NoError(r.t, err, "the active turn never showed %q", want)
}

// isRejected reports whether err is the server's rejection of an action.
func isRejected(err error) bool {
	var rej *client.RejectedError
	return errors.As(err, &rej)
}
