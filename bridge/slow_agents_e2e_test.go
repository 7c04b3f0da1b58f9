//go:build slowagents

// The slow tier: Claude's ACP agents (claude_*_e2e_test.go), Gemini CLI,
// Codex, claude-agent-acp's own sessions and VS Code's model-backed
// scenarios (vscode_*_slow_test.go). Real agents under
// -race do not fit in the two minutes `go test -race ./...` may take on two
// cores, so these files build only with the slowagents tag, and .ci/run runs
// them in steps of their own (go test -tags slowagents), checking that each
// scenario passed.

package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// Helpers shared by the slow tier's Gemini CLI and Codex tests
// (gemini_agent_e2e_test.go, codex_agent_e2e_test.go): what a client does
// with a turn of a real agent, and what it checks.

// slowCancelChunks and slowCancelDelay shape the reply a cancel test
// interrupts: long enough (20 s) that the cancel lands mid-stream even on
// a loaded machine, though a passing test only waits for its first piece
// (the agents stop reading when the turn is cancelled, and the mocks stop
// sending then).
const (
	slowCancelChunks = 80
	slowCancelDelay  = 250 * time.Millisecond
)

// slowCancelText is the reply a cancel test streams.
func slowCancelText() string {
	var b strings.Builder
	for i := range slowCancelChunks {
		b.WriteString("piece-")
		b.WriteString(strings.Repeat(string(rune('a'+i%26)), 4))
		b.WriteString(" ")
	}
	return b.String()
}

// approveWith answers every confirmation of a turn with the option whose
// id is option (the agent's "allow once": Gemini CLI refuses "allow
// always" in a folder the user has not trusted), until the turn ends. It
// returns the turn and the confirmations the client saw, in order.
func approveWith(t *testing.T, r *acpRig, ch, turnID, option string) (wire.Turn, []wire.ToolCallPendingConfirmationState) {
	t.Helper()
	chat := r.chat(r.c, ch)
	var seen []wire.ToolCallPendingConfirmationState
	approved := map[string]bool{}
	for {
		var pending *wire.ToolCallPendingConfirmationState
		var ended *wire.Turn
		_, err := r.c.WaitForChat(r.ctx(), chat, func(s *wire.ChatState) bool {
			for i := range s.Turns {
				if s.Turns[i].ID == turnID {
					ended = &s.Turns[i]
					return true
				}
			}
			if p := acpPendingIn(activeParts(s)); p != nil && !approved[p.ToolCallID] {
				pending = p
				return true
			}
			return false
		})
		require.NoError(t, err, "turn %s neither ended nor asked", turnID)
		if ended != nil {
			return *ended, seen
		}
		approved[pending.ToolCallID] = true
		seen = append(seen, *pending)
		var ids []string
		for _, o := range pending.Options {
			ids = append(ids, o.ID)
		}
		require.Contains(t, ids, option, "the confirmation offers the agent's allow-once option")
		require.NoError(t, r.confirm(r.c, ch, acpApprove(turnID, pending.ToolCallID, option)))
	}
}

// completedTools returns the turn's tool calls, each of which must have
// completed.
func completedTools(t *testing.T, turn wire.Turn) []*wire.ToolCallCompletedState {
	t.Helper()
	var out []*wire.ToolCallCompletedState
	for _, tc := range acpPartsOf[wire.ToolCallResponsePart](turn.ResponseParts) {
		done, ok := tc.ToolCall.Value.(*wire.ToolCallCompletedState)
		require.Truef(t, ok, "tool call %s ended %T, not completed", acpToolCallID(tc.ToolCall), tc.ToolCall.Value)
		out = append(out, done)
	}
	return out
}

// toolText is the text a client shows as a tool call's result.
func toolText(tc *wire.ToolCallCompletedState) string {
	var b strings.Builder
	for _, c := range tc.Content {
		if x, ok := c.Value.(*wire.ToolResultTextContent); ok {
			b.WriteString(x.Text)
		}
	}
	return b.String()
}

// assertSessionIdle checks that, once the turns of session ch ended, a
// client that subscribes afresh sees the session idle (issue 26, finding
// 1: after a permission prompt it stayed "in progress").
func assertSessionIdle(t *testing.T, r *acpRig, ch string) {
	t.Helper()
	// Give the first client's copy the chance to settle first, so that a
	// slow status update is not mistaken for a stuck one.
	ctx := bridgetest.Context(t, 5*time.Second)
	_, _ = r.c.WaitFor(ctx, ch, func(s *wire.SessionState) bool { return s.Status&wire.SessionStatusInProgress == 0 })
	fresh := r.env.Client(t)
	_, err := fresh.Subscribe(r.ctx(), ch)
	require.NoError(t, err)
	st, err := fresh.Session(ch)
	require.NoError(t, err)
	assert.Zero(t, st.Status&wire.SessionStatusInProgress, "a fresh snapshot of the session shows status %d, not idle", st.Status)
}

// cancelMidStream starts a turn whose reply streams slowly, cancels it
// once the client saw the first piece, and checks what the client kept:
// a cancelled turn whose text is a proper prefix of what the model was
// sending. It returns how long the cancel took to reach the client.
func cancelMidStream(t *testing.T, r *acpRig, ch, prompt string) time.Duration {
	t.Helper()
	full := slowCancelText()
	turnID := bridgetest.StartTurn(t, r.c, ch, prompt)
	r.activeText(r.chat(r.c, ch), "piece-")
	start := time.Now()
	require.NoError(t, r.confirm(r.c, ch, &wire.ChatTurnCancelledAction{TurnID: turnID}))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)
	took := time.Since(start)
	require.Equal(t, wire.TurnStateCancelled, turn.State, "error: %+v", client.TurnError(&turn))
	got := acpTurnText(turn.ResponseParts)
	assert.True(t, strings.HasPrefix(full, got), "the client's text %q is what the model sent, in order", got)
	assert.Less(t, len(got), len(full), "the turn ended before the model's reply did")
	return took
}

// agentScenario is one scenario of a slow-tier agent, played against the
// mock M of its model's API.
type agentScenario[M any] struct {
	name string
	run  func(*testing.T, *acpRig, M)
}

// runAgentScenarios runs the scenarios at the same time, each in sessions
// of its own on one rig (one agent process), as a client that uses several
// sessions would.
func runAgentScenarios[M any](t *testing.T, r *acpRig, llm M, scenarios []agentScenario[M]) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, r.forTest(t), llm)
		})
	}
}

// forTest is the rig as seen from test t (a subtest sharing the rig's
// bridge, client and agent).
func (r *acpRig) forTest(t *testing.T) *acpRig { return &acpRig{t: t, env: r.env, c: r.c} }

// valueOf is *p, or zero for nil.
func valueOf[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
