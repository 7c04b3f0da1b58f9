package acp

import (
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file replay what Claude's ACP agents sent (issue 15),
// from testdata/replay.

// TestTerminalsOfTwoSessionsStayApart: two sessions of one claude-code-acp
// process run commands at once. Their bridge session ids share a long
// prefix, as AHP session URIs do; terminal ids made from a prefix of it
// collided, so one session's output landed in the other's tool call and
// releasing one killed the other's.
func TestTerminalsOfTwoSessionsStayApart(t *testing.T) {
	p := replayProvider(t, "terminals_two_sessions", nil)
	sa, reca := openReplaySession(t, p, "ahp-session:/1f0c2d4e-aaaa-4000-8000-000000000001", t.TempDir(), "")
	sb, recb := openReplaySession(t, p, "ahp-session:/1f0c2d4e-aaaa-4000-8000-000000000002", t.TempDir(), "")
	doneA := startPrompt(t, sa, "run marker A")
	doneB := startPrompt(t, sb, "run marker B")
	for _, r := range []promptResult{waitPrompt(t, doneA), waitPrompt(t, doneB)} {
		require.NoError(t, r.err)
		assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
	}

	startedA := eventsOf[backend.TerminalStarted](reca)
	startedB := eventsOf[backend.TerminalStarted](recb)
	require.Len(t, startedA, 1)
	require.Len(t, startedB, 1)
	idA, idB := startedA[0].TerminalID, startedB[0].TerminalID
	assert.NotEqual(t, idA, idB, "two sessions' terminals share an id")
	assert.NotEqual(t, idA, newTerminalID(), "a terminal id is handed out again")

	// Each session sees its own terminal's output, and only that.
	output := func(rec *recorder, id string) string {
		var b strings.Builder
		for _, o := range eventsOf[backend.TerminalOutput](rec) {
			assert.Equal(t, id, o.TerminalID, "output of another terminal")
			b.WriteString(o.Data)
		}
		return b.String()
	}
	assert.Equal(t, "from-session-a\n", output(reca, idA))
	assert.Equal(t, "from-session-b\n", output(recb, idB))
	assert.Equal(t, "A saw: from-session-a\n", reca.text())
	// Releasing A's terminal left B's running (no exit status yet), and B
	// cannot reach A's terminal; B's ends when the agent kills it.
	assert.Equal(t, "B after A's release: exit=null; A's terminal from B: -32002\nB saw: from-session-b\n", recb.text())

	released := eventsOf[backend.TerminalReleased](reca)
	require.Len(t, released, 1)
	assert.Equal(t, idA, released[0].TerminalID)
	exitedB := eventsOf[backend.TerminalExited](recb)
	require.Len(t, exitedB, 1)
	assert.Equal(t, "killed", exitedB[0].Signal, "B's command ran until the agent killed it")

	// The tool call shows the session's own terminal.
	var shown []string
	for _, tc := range eventsOf[backend.ToolCall](reca) {
		for _, c := range tc.Content {
			if c.Type == "terminal" {
				shown = append(shown, c.TerminalID)
			}
		}
	}
	assert.Equal(t, []string{idA}, shown)
}
