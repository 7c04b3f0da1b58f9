package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// The tests of this file replay what Codex (codex-acp) and Gemini CLI sent
// in the issue 26 runs (acp/testdata/replay) and check what AHP clients get.

// TestReplayToolCallsOfCodexACP: codex-acp reports `ls` running, then asks
// to run it again without its sandbox; the command's output is only in the
// end's rawOutput; `cat` is never closed; the usage_update repeats.
// Clients must see `ls` waiting for confirmation from the start (never
// running first), the approval text as the confirmation's description and
// not as the command's result, the command's real output, `cat` failed
// because no result came (not a success), and the context window sent
// once per change.
func TestReplayToolCallsOfCodexACP(t *testing.T) {
	r := replayRig(t, "tools_codex_acp")
	dir := projectDir(t)
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{WorkingDirectories: []string{"file://" + dir}}, nil))
	r.host.startTurn(r.b, chat1, "t1", "list the files", "")

	var pending *wire.ToolCallPendingConfirmationState
	r.host.waitFor("ls to wait for confirmation", func() bool {
		tc, _, ok := reducer.FindToolCall(r.host.chats[chat1], "t1", "call_ls")
		if !ok {
			return false
		}
		pending, ok = tc.Value.(*wire.ToolCallPendingConfirmationState)
		return ok
	})
	// Finding 5(d): no toolCallReady that made it run before the request.
	var readies []*wire.ChatToolCallReadyAction
	for _, a := range toolActions(r.host.actionsOf(chat1), "call_ls") {
		if rd, ok := a.Value.(*wire.ChatToolCallReadyAction); ok {
			readies = append(readies, rd)
		}
	}
	require.Len(t, readies, 1, "ls is shown pending confirmation from the start, not running first")
	assert.Nil(t, readies[0].Confirmed)
	// Finding 5(c): the request's text describes the confirmation.
	assert.Contains(t, pending.InvocationMessage.Text, "command failed; retry without sandbox?")

	r.host.client(r.b, chat1, wire.Action(&wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "call_ls", Approved: true,
		Confirmed: wire.ToolCallConfirmationReasonUserAction}))
	turn := r.host.turn(chat1, "t1")
	require.Equal(t, wire.TurnStateComplete, turn.State)

	done, ok := toolCallState(t, turn, "call_ls").Value.(*wire.ToolCallCompletedState)
	require.True(t, ok)
	assert.True(t, done.Success)
	var texts []string
	for _, c := range done.Content {
		if v, ok := c.Value.(*wire.ToolResultTextContent); ok {
			texts = append(texts, v.Text)
		}
	}
	joined := strings.Join(texts, "\n")
	assert.Contains(t, joined, "README.md\nnotes", "the command's output is shown")
	assert.NotContains(t, joined, "retry without sandbox", "the approval text is not the command's result")

	// Finding 4: the call the agent never closed did not succeed.
	cat, ok := toolCallState(t, turn, "call_cat").Value.(*wire.ToolCallCompletedState)
	require.True(t, ok, "cat ends with the turn")
	assert.False(t, cat.Success)
	require.NotNil(t, cat.Error)
	assert.Equal(t, mapping.NoResultError, cat.Error.Message)

	// Finding 5(a): one session/metaChanged per change of the figures.
	var windows []string
	for _, a := range r.host.actionsOf(sess1) {
		if m, ok := a.Value.(*wire.SessionMetaChangedAction); ok {
			b, err := json.Marshal(m.Meta[mapping.MetaContextWindow])
			require.NoError(t, err)
			windows = append(windows, string(b))
		}
	}
	var changes []string
	for i, w := range windows {
		if w != "null" && (i == 0 || w != windows[i-1]) {
			changes = append(changes, w)
		}
	}
	assert.Len(t, changes, 2, "two different figures: %v", changes)
	n := 0
	for _, w := range windows {
		if w != "null" {
			n++
		}
	}
	assert.Equal(t, len(changes), n, "a repeated usage_update sends the session's _meta again: %v", windows)
}

// TestReplayUsageOfGeminiCLI: Gemini CLI reports a turn's tokens only in
// its prompt result's _meta.quota; clients get them as the turn's usage.
func TestReplayUsageOfGeminiCLI(t *testing.T) {
	r := replayRig(t, "usage_gemini_cli")
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))
	r.host.startTurn(r.b, chat1, "t1", "hi", "")
	turn := r.host.turn(chat1, "t1")
	require.NotNil(t, turn.Usage, "the quota's tokens are the turn's usage")
	b, err := json.Marshal(turn.Usage)
	require.NoError(t, err)
	assert.JSONEq(t, `{"inputTokens":812,"outputTokens":34,"model":"gemini-2.5-flash"}`, string(b))
}
