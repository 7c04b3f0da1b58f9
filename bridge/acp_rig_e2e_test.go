package bridge_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// acpTimeout bounds every wait of the ACP end-to-end tests. It is generous
// because the tests run under -race on a loaded two-core machine; a passing
// test never waits for it.
const acpTimeout = 90 * time.Second

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

// acpScriptProvider returns an ACP provider running the scripted agent as a
// real subprocess (the agent of `ahp-bridge demo-agent`) under the id
// "script".
func acpScriptProvider(t *testing.T, configure func(*acp.Config)) *acp.Provider {
	t.Helper()
	// CoalesceText as `ahp-bridge serve` sets it: without it a flood is one
	// envelope per chunk, and a test client that reduces more slowly than
	// the bridge sequences is dropped as a slow reader (docs/performance.md).
	cfg := acp.Config{ID: "script", DisplayName: "Script agent", Command: []string{bridgetest.ScriptAgent(t)}, CoalesceText: true}
	if configure != nil {
		configure(&cfg)
	}
	return acp.NewProvider(cfg, testLogger(t).With().Str("component", "acp").Logger())
}

// testLogger logs to the test's output (reliability_test.go uses it too).
func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

func newACPRig(t *testing.T, o acpRigOptions) *acpRig {
	t.Helper()
	providers := o.providers
	if providers == nil {
		providers = []backend.Provider{acpScriptProvider(t, o.configure)}
	}
	env := bridgetest.Start(t, providers, bridgetest.Options{Approve: o.approve})
	return &acpRig{t: t, env: env, c: env.Client(t)}
}

// ctx returns the context of one wait: it ends after acpTimeout or with
// the test.
func (r *acpRig) ctx() context.Context { return bridgetest.Context(r.t, acpTimeout) }

// session creates a ready session of provider in cwd ("" = the test
// process's directory). The session URI it returns stands for the
// session's default chat wherever the client takes a chat.
func (r *acpRig) session(provider, cwd string) string {
	r.t.Helper()
	return bridgetest.CreateSession(r.t, r.c, provider, cwd)
}

// chat is the chat a URI stands for in c: a session's default chat, or
// the chat itself.
func (r *acpRig) chat(c *client.Client, uri string) string {
	r.t.Helper()
	if !strings.HasPrefix(uri, "ahp-session:") {
		return uri
	}
	chat, err := c.DefaultChat(uri)
	require.NoError(r.t, err)
	return chat
}

// turn runs a turn that needs no confirmation on a chat (a session: its
// default chat) and returns it once ended.
func (r *acpRig) turn(ch, text string) wire.Turn {
	r.t.Helper()
	id := bridgetest.StartTurn(r.t, r.c, ch, text)
	return bridgetest.WaitTurnEnd(r.t, r.c, ch, id, acpTimeout)
}

// confirm dispatches a chat action (a tool call confirmation, a
// cancellation) on a chat (a session: its default chat) and waits for its
// echo.
func (r *acpRig) confirm(c *client.Client, ch string, a any) error {
	r.t.Helper()
	_, err := c.Confirm(r.ctx(), r.chat(c, ch), wire.Action(a))
	return err
}

func acpApprove(turnID, acpToolCallID, option string) *wire.ChatToolCallApprovedAction {
	a := &wire.ChatToolCallApprovedAction{TurnID: turnID, ToolCallID: acpToolCallID, Approved: true,
		Confirmed: wire.ToolCallConfirmationReasonUserAction}
	if option != "" {
		a.SelectedOptionID = wire.Ptr(option)
	}
	return a
}

func acpDeny(turnID, acpToolCallID, option string) *wire.ChatToolCallDeniedAction {
	a := &wire.ChatToolCallDeniedAction{TurnID: turnID, ToolCallID: acpToolCallID, Reason: wire.ToolCallCancellationReasonDenied}
	if option != "" {
		a.SelectedOptionID = wire.Ptr(option)
	}
	return a
}

// acpTurnText concatenates the markdown parts of a turn, as a client shows the
// answer.
func acpTurnText(parts []wire.ResponsePart) string {
	var b strings.Builder
	for _, p := range parts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// acpPartsOf returns the parts of one concrete kind, in order.
func acpPartsOf[T any](parts []wire.ResponsePart) []*T {
	var out []*T
	for _, p := range parts {
		if v, ok := p.Value.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// acpToolCall returns the state of tool call id in parts (a pointer to one of
// the wire.ToolCall*State variants), failing the test when it is absent.
func acpToolCall(t *testing.T, parts []wire.ResponsePart, id string) any {
	t.Helper()
	for _, tc := range acpPartsOf[wire.ToolCallResponsePart](parts) {
		if acpToolCallID(tc.ToolCall) == id {
			return tc.ToolCall.Value
		}
	}
	require.Failf(t, "tool call missing", "no tool call %q in the response parts", id)
	return nil
}

func acpToolCallID(s wire.ToolCallState) string {
	id, _ := reducer.ToolCallID(s)
	return id
}

// pendingTool waits until the active turn of a chat (a session: its
// default chat) has a tool call pending confirmation and returns its state.
func (r *acpRig) pendingTool(c *client.Client, ch string) *wire.ToolCallPendingConfirmationState {
	r.t.Helper()
	var pc *wire.ToolCallPendingConfirmationState
	st, err := c.WaitForChat(r.ctx(), ch, func(s *wire.ChatState) bool {
		return s.ActiveTurn != nil && acpPendingIn(s.ActiveTurn.ResponseParts) != nil
	})
	require.NoError(r.t, err, "no tool call became pending-confirmation")
	pc = acpPendingIn(st.ActiveTurn.ResponseParts)
	return pc
}

func acpPendingIn(parts []wire.ResponsePart) *wire.ToolCallPendingConfirmationState {
	for _, tc := range acpPartsOf[wire.ToolCallResponsePart](parts) {
		if pc, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok {
			return pc
		}
	}
	return nil
}

// activeText waits until the active turn's text of a chat (a session: its
// default chat) contains want.
func (r *acpRig) activeText(ch, want string) {
	r.t.Helper()
	_, err := r.c.WaitForChat(r.ctx(), ch, func(s *wire.ChatState) bool {
		return s.ActiveTurn != nil && strings.Contains(acpTurnText(s.ActiveTurn.ResponseParts), want)
	})
	require.NoError(r.t, err, "the active turn never showed %q", want)
}

// acpIsRejected reports whether err is the server's rejection of an action.
func acpIsRejected(err error) bool {
	var rej *client.RejectedError
	return errors.As(err, &rej)
}

// acpOutcomeRecorder wraps a provider and records every answer the bridge
// gives to the backend's permission requests, by ACP tool call id, exactly
// as the backend receives them.
type acpOutcomeRecorder struct {
	backend.Provider

	mu       sync.Mutex
	outcomes map[string][]backend.PermissionOutcome
	changed  chan struct{} // closed and replaced on every record
}

func newACPOutcomeRecorder(p backend.Provider) *acpOutcomeRecorder {
	return &acpOutcomeRecorder{Provider: p, outcomes: map[string][]backend.PermissionOutcome{}, changed: make(chan struct{})}
}

// OpenSession implements backend.Provider.
func (p *acpOutcomeRecorder) OpenSession(ctx context.Context, opts backend.SessionOptions, sink backend.Sink) (backend.Session, error) {
	return p.Provider.OpenSession(ctx, opts, backend.SinkFunc(func(ev backend.Event) {
		if req, ok := ev.(backend.PermissionRequest); ok {
			id, respond := req.ToolCall.ID, req.Respond
			req.Respond = func(o backend.PermissionOutcome) {
				p.mu.Lock()
				p.outcomes[id] = append(p.outcomes[id], o)
				close(p.changed)
				p.changed = make(chan struct{})
				p.mu.Unlock()
				respond(o)
			}
			ev = req
		}
		sink.Event(ev)
	}))
}

// wait returns the outcomes recorded for toolCallID once there are at least n.
func (p *acpOutcomeRecorder) wait(t *testing.T, toolCallID string, n int) []backend.PermissionOutcome {
	t.Helper()
	ctx := bridgetest.Context(t, acpTimeout)
	for {
		p.mu.Lock()
		got := append([]backend.PermissionOutcome(nil), p.outcomes[toolCallID]...)
		changed := p.changed
		p.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-ctx.Done():
			require.Failf(t, "no permission outcome", "tool call %s: %d outcomes, want %d", toolCallID, len(got), n)
		}
	}
}

// logLines records what a logger writes, so that a test can wait for a
// line an agent wrote to its stderr (the ACP provider logs each one).
type logLines struct {
	mu      sync.Mutex
	text    strings.Builder
	changed chan struct{} // closed and replaced on every write
}

func newLogLines() *logLines { return &logLines{changed: make(chan struct{})} }

// Write implements io.Writer for zerolog.
func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// has reports whether what was logged so far contains s.
func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.text.String(), s)
}

// wait waits, up to its own deadline, until what is logged contains s.
func (l *logLines) wait(t *testing.T, s string) {
	t.Helper()
	ctx := bridgetest.Context(t, acpTimeout)
	for {
		l.mu.Lock()
		found := strings.Contains(l.text.String(), s)
		changed := l.changed
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			require.Failf(t, "not logged", "nothing logged contains %q", s)
		}
	}
}
