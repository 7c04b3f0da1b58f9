package bridge_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// The tests in this file run the scripted ACP agent (internal/scriptagent,
// as `ahp-bridge demo-agent`) as a real subprocess behind a real bridge and
// drive it over AHP WebSocket with package client, asserting the session
// state a client ends up with.

const readmeText = "# E2E project\nThe marker is 7f3a.\n"

// projectDir returns a temporary working directory holding README.md.
func projectDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte(readmeText), 0o644))
	return dir
}

func TestACPDemoTurnApproved(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	cwd := projectDir(t)
	ch := r.session("script", cwd)

	turnID := bridgetest.StartTurn(t, r.c, ch, "demo please")
	pc := r.pendingTool(r.c, ch)
	assert.Equal(t, "read-1", pc.ToolCallID)
	assert.Equal(t, "read", pc.ToolName)
	require.NotNil(t, pc.ConfirmationTitle)
	assert.Equal(t, "Read file", pc.ConfirmationTitle.Text)
	require.Len(t, pc.Options, 2)
	assert.Equal(t, "allow", pc.Options[0].ID)
	assert.Equal(t, "reject", pc.Options[1].ID)

	require.NoError(t, r.confirm(r.c, ch, approve(turnID, pc.ToolCallID, "")))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)

	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "Hello from the script agent. I read README.md. Done.", turnText(partsOf2Markdown(turn.ResponseParts)))
	reasoning := partsOf[wire.ReasoningResponsePart](turn.ResponseParts)
	require.Len(t, reasoning, 1)
	assert.Equal(t, "Thinking about: demo please", reasoning[0].Content)

	done, ok := toolCall(t, turn.ResponseParts, "read-1").(*wire.ToolCallCompletedState)
	require.True(t, ok, "read-1 should be completed, is %T", toolCall(t, turn.ResponseParts, "read-1"))
	assert.True(t, done.Success)
	assert.Equal(t, wire.ToolCallConfirmationReasonUserAction, done.Confirmed)
	require.Len(t, done.Content, 1)
	text, ok := done.Content[0].Value.(*wire.ToolResultTextContent)
	require.True(t, ok, "tool result content is %T", done.Content[0].Value)
	assert.Equal(t, readmeText, text.Text, "the tool result shows README.md read from the session's cwd")

	// The plan is visible per docs/mapping.md: session _meta.plan, and the
	// final plan as a checklist part of the transcript.
	st, err := r.c.Session(ch)
	require.NoError(t, err)
	plan, ok := st.Meta["plan"].(map[string]any)
	require.True(t, ok, "session _meta.plan: %v", st.Meta)
	entries, _ := plan["entries"].([]any)
	require.Len(t, entries, 2)
	first, _ := entries[0].(map[string]any)
	assert.Equal(t, "Read README.md", first["content"])
	assert.Equal(t, "completed", first["status"])
	assert.Contains(t, allMarkdown(turn.ResponseParts), "Read README.md")

	require.NotNil(t, turn.Usage, "usage of the prompt response")
	assert.Equal(t, int64(10), deref(turn.Usage.InputTokens))
	assert.Equal(t, int64(20), deref(turn.Usage.OutputTokens))
	assert.Equal(t, int64(5), deref(turn.Usage.CacheReadTokens))
}

func TestACPDemoTurnDenied(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	ch := r.session("script", projectDir(t))

	turnID := bridgetest.StartTurn(t, r.c, ch, "demo")
	pc := r.pendingTool(r.c, ch)
	require.NoError(t, r.confirm(r.c, ch, deny(turnID, pc.ToolCallID, "")))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)

	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Contains(t, turnText(turn.ResponseParts), "You did not let me read README.md.")
	assert.NotContains(t, turnText(turn.ResponseParts), "7f3a")
	cancelled, ok := toolCall(t, turn.ResponseParts, "read-1").(*wire.ToolCallCancelledState)
	require.True(t, ok, "read-1 should be cancelled, is %T", toolCall(t, turn.ResponseParts, "read-1"))
	assert.Equal(t, wire.ToolCallCancellationReasonDenied, cancelled.Reason)
}

func TestACPCancelWhilePermissionPending(t *testing.T) {
	// A long cancel grace: the next turn can only start in time if the
	// agent really got "cancelled" for its permission request and ended
	// its prompt, not because the bridge gave up on it and restarted it.
	r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) { c.CancelGrace = 10 * time.Minute }})
	ch := r.session("script", projectDir(t))

	turnID := bridgetest.StartTurn(t, r.c, ch, "permission")
	pc := r.pendingTool(r.c, ch)
	require.NoError(t, r.confirm(r.c, ch, &wire.SessionTurnCancelledAction{TurnID: turnID}))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)
	assert.Equal(t, wire.TurnStateCancelled, turn.State)
	cancelled, ok := toolCall(t, turn.ResponseParts, pc.ToolCallID).(*wire.ToolCallCancelledState)
	require.True(t, ok, "the pending tool call ends cancelled, is %T", toolCall(t, turn.ResponseParts, pc.ToolCallID))
	assert.Equal(t, wire.ToolCallCancellationReasonSkipped, cancelled.Reason)

	next := r.turn(ch, "echo after cancel")
	assert.Equal(t, wire.TurnStateComplete, next.State)
	assert.Equal(t, "text:echo after cancel", turnText(next.ResponseParts))
}

func TestACPCrashMidTurn(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	ch := r.session("script", projectDir(t))

	turn := r.turn(ch, "crash")
	assert.Equal(t, wire.TurnStateError, turn.State)
	require.NotNil(t, turn.Error)
	assert.Contains(t, turn.Error.Message, "exit status 3")
	assert.Contains(t, turn.Error.Message, "scriptagent: crashing on purpose", "the error carries the agent's stderr")
	assert.Contains(t, turnText(turn.ResponseParts), "about to crash")

	next := r.turn(ch, "echo still here")
	assert.Equal(t, wire.TurnStateComplete, next.State, "error: %+v", next.Error)
	assert.Equal(t, "text:echo still here", turnText(next.ResponseParts))
}

func TestACPPermissionOptions(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	ch := r.session("script", projectDir(t))

	tests := []struct {
		name     string
		confirm  func(turnID, toolCallID string) any
		selected string // what the agent received
		approved bool
	}{
		{"select allow_once", func(tr, tc string) any { return approve(tr, tc, "allow-once") }, "allow-once", true},
		{"select allow_always", func(tr, tc string) any { return approve(tr, tc, "allow-always") }, "allow-always", true},
		{"select reject_once", func(tr, tc string) any { return deny(tr, tc, "reject-once") }, "reject-once", false},
		{"select reject_always", func(tr, tc string) any { return deny(tr, tc, "reject-always") }, "reject-always", false},
		{"plain approve", func(tr, tc string) any { return approve(tr, tc, "") }, "allow-once", true},
		{"plain deny", func(tr, tc string) any { return deny(tr, tc, "") }, "reject-once", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turnID := bridgetest.StartTurn(t, r.c, ch, "permission")
			pc := r.pendingTool(r.c, ch)
			require.Equal(t, "perm-1", pc.ToolCallID)
			require.Len(t, pc.Options, 4)
			for i, want := range []struct {
				id   string
				kind wire.ConfirmationOptionKind
			}{
				{"allow-once", wire.ConfirmationOptionKindApprove},
				{"allow-always", wire.ConfirmationOptionKindApprove},
				{"reject-once", wire.ConfirmationOptionKindDeny},
				{"reject-always", wire.ConfirmationOptionKindDeny},
			} {
				assert.Equal(t, want.id, pc.Options[i].ID)
				assert.Equal(t, want.kind, pc.Options[i].Kind)
			}

			require.NoError(t, r.confirm(r.c, ch, tt.confirm(turnID, pc.ToolCallID)))
			turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)
			assert.Equal(t, wire.TurnStateComplete, turn.State)
			assert.Equal(t, "selected: "+tt.selected, turnText(turn.ResponseParts))
			state := toolCall(t, turn.ResponseParts, "perm-1")
			if tt.approved {
				done, ok := state.(*wire.ToolCallCompletedState)
				require.True(t, ok, "perm-1 is %T", state)
				assert.True(t, done.Success)
			} else {
				c, ok := state.(*wire.ToolCallCancelledState)
				require.True(t, ok, "perm-1 is %T", state)
				assert.Equal(t, wire.ToolCallCancellationReasonDenied, c.Reason)
			}
		})
	}
}

func TestACPPermissionBeforeToolCall(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	ch := r.session("script", projectDir(t))

	turnID := bridgetest.StartTurn(t, r.c, ch, "perm-first")
	pc := r.pendingTool(r.c, ch)
	assert.Equal(t, "early-1", pc.ToolCallID)
	assert.Equal(t, "Early tool", pc.DisplayName)
	require.NoError(t, r.confirm(r.c, ch, approve(turnID, pc.ToolCallID, "yes")))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)

	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "selected: yes", turnText(turn.ResponseParts))
	require.Len(t, partsOf[wire.ToolCallResponsePart](turn.ResponseParts), 1, "the later tool_call updates the same AHP tool call")
	done, ok := toolCall(t, turn.ResponseParts, "early-1").(*wire.ToolCallCompletedState)
	require.True(t, ok)
	assert.True(t, done.Success)
	assert.Equal(t, wire.ToolCallConfirmationReasonUserAction, done.Confirmed)
}

func TestACPV2Kinds(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	ch := r.session("script", projectDir(t))

	turn := r.turn(ch, "v2")
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "v2 done", turnText(turn.ResponseParts))
	done, ok := toolCall(t, turn.ResponseParts, "v2-1").(*wire.ToolCallCompletedState)
	require.True(t, ok, "v2-1 is %T", toolCall(t, turn.ResponseParts, "v2-1"))
	assert.True(t, done.Success)
	assert.Equal(t, "_custom_kind", done.ToolName, "a custom kind is shown generically")
	assert.Equal(t, "_custom_kind", done.Meta["kind"], "the custom kind is kept in _meta")
	assert.Equal(t, "_queued", done.Meta["status"], "the custom status is kept in _meta")
	require.Len(t, done.Content, 1, "the last content replaced the appended chunks")
	text, ok := done.Content[0].Value.(*wire.ToolResultTextContent)
	require.True(t, ok)
	assert.Contains(t, text.Text, "_custom_content", "custom content is kept as raw JSON")

	notes := partsOf[wire.SystemNotificationResponsePart](turn.ResponseParts)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0].Content.Text, "_custom_update")
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// allMarkdown is the text of every markdown part, joined by newlines.
func allMarkdown(parts []wire.ResponsePart) string {
	var out []string
	for _, m := range partsOf[wire.MarkdownResponsePart](parts) {
		out = append(out, m.Content)
	}
	return strings.Join(out, "\n")
}

// partsOf2Markdown drops the final plan checklist part so that the
// streamed answer can be compared exactly.
func partsOf2Markdown(parts []wire.ResponsePart) []wire.ResponsePart {
	var out []wire.ResponsePart
	for _, p := range parts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok && strings.Contains(m.Content, "- [") {
			continue
		}
		out = append(out, p)
	}
	return out
}

var _ = fmt.Sprint
