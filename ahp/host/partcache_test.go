package host

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// A streaming turn's snapshot keeps its data while only texts grow, and
// encodes it again after any other action of the chat (issue 28).
func TestTurnSnapshotDataKeptWhileOnlyTextsGrow(t *testing.T) {
	hs, _ := storedHarness(t, stateFile(t), Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "kept")
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
		&wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: "one"},
	)
	ch := hs.h.lookup(s.chat)
	ch.mu.Lock()
	snapshot := ch.chat.snapshot
	ch.mu.Unlock()
	require.NotNil(t, snapshot)
	first, err := snapshot(nil)
	require.NoError(t, err)

	hs.dispatch(t, s.chat, &wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: " two"})
	again, err := snapshot(nil)
	require.NoError(t, err)
	assert.Same(t, &first.Data[0], &again.Data[0], "only the text grew: the data is kept")
	assert.Equal(t, "one two", joinTexts(again.Texts))

	hs.dispatch(t, s.chat, &wire.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "tc1", ToolName: "read", DisplayName: "Read"})
	after, err := snapshot(nil)
	require.NoError(t, err)
	assert.Contains(t, string(after.Data), `"tc1"`, "a tool call came: the data is encoded again")
	plain, err := persist.TurnSnapshot(persist.CopyActiveTurn(hs.readChat(t, s.chat).ActiveTurn))
	require.NoError(t, err)
	assert.Equal(t, string(plain.Data), string(after.Data))
}

func joinTexts(ts []store.CheckpointText) string {
	var b strings.Builder
	for _, x := range ts {
		b.WriteString(x.Text)
	}
	return b.String()
}
