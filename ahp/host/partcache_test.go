package host

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// TestTurnSnapshotCachedIsTurnSnapshot: a snapshot that takes its tool
// calls' encodings from the turn's cache is byte for byte the uncached
// one, as the turn goes on: tool calls added, a tool call's state replaced
// (as the reducer does: a new state, never the old one changed), text
// grown, parts of other kinds.
func TestTurnSnapshotCachedIsTurnSnapshot(t *testing.T) {
	tool := func(id, status string) wire.ResponsePart {
		var st any = &wire.ToolCallRunningState{Status: wire.ToolCallStatusRunning, ToolCallID: id, ToolName: "read", DisplayName: "Read " + id}
		if status == "done" {
			st = &wire.ToolCallCompletedState{Status: wire.ToolCallStatusCompleted, ToolCallID: id, ToolName: "read", DisplayName: "Read " + id,
				Success: true, PastTenseMessage: wire.PlainText("read " + id)}
		}
		return wire.NewResponsePart(&wire.ToolCallResponsePart{Kind: wire.ResponsePartKindToolCall, ToolCall: wire.ToolCallState{Value: st}})
	}
	md := func(text string) wire.ResponsePart {
		return wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: text})
	}
	active := wire.ActiveTurn{ID: "a", StartedAt: "2026-01-01T00:00:00.000Z", Message: userMsg("q")}
	cache := new(partCache)
	check := func(step string) {
		t.Helper()
		want, err := turnSnapshot(copyActiveTurn(&active))
		require.NoError(t, err)
		got, err := turnSnapshotCached(copyActiveTurn(&active), cache)
		require.NoError(t, err)
		assert.Equal(t, string(want.Data), string(got.Data), step)
		assert.Equal(t, want.Texts, got.Texts, step)
		plain, err := json.Marshal(&active)
		require.NoError(t, err)
		assert.JSONEq(t, string(plain), string(placedSnapshot(t, got)), step)
	}
	check("no parts")
	active.ResponseParts = []wire.ResponsePart{md("hello"), tool("tc1", "running")}
	check("a running tool call")
	check("the same again, from the cache")
	active.ResponseParts[1] = tool("tc1", "done")
	check("its state replaced")
	active.ResponseParts = append(active.ResponseParts, md("more"), tool("tc2", "running"),
		wire.NewResponsePart(&wire.SystemNotificationResponsePart{Kind: wire.ResponsePartKindSystemNotification, Content: wire.PlainText("note")}))
	check("more parts")
	active.ResponseParts[0] = md("hello, world")
	check("text grown")
	assert.Len(t, cache.prev, 2, "the cache holds the turn's tool calls, no more")
}

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
	plain, err := turnSnapshot(copyActiveTurn(hs.readChat(t, s.chat).ActiveTurn))
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
