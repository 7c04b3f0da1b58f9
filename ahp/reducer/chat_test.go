package reducer

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
)

// chatTestClock is 2023-11-14T22:13:20.000Z.
func chatTestClock() int64 { return 1700000000000 }

// chatActive is a chat state with an active turn t1, whose response parts
// are parts (a JSON array), and the given status.
func chatActive(status int, parts string) string {
	return `{"resource": "ahp-chat:/s/c", "title": "T", "status": ` + jsonInt(status) + `, "modifiedAt": "2020-01-01T00:00:00.000Z",
	  "turns": [],
	  "activeTurn": {"id": "t1", "startedAt": "2020-01-01T00:00:00.000Z", "message": {"text": "hi", "origin": {"kind": "user"}}, "responseParts": ` + parts + `}}`
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// reduceChatJSON applies the JSON actions to the JSON state with Chat.
func reduceChatJSON(t *testing.T, initial string, actions ...string) *wire.ChatState {
	t.Helper()
	var s wire.ChatState
	require.NoError(t, json.Unmarshal([]byte(initial), &s))
	for i, raw := range actions {
		var a wire.StateAction
		require.NoError(t, json.Unmarshal([]byte(raw), &a), "action %d", i)
		Chat(&s, a, chatTestClock)
	}
	return &s
}

func requireChatJSON(t *testing.T, want string, s *wire.ChatState) {
	t.Helper()
	got, err := wire.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, want, string(got))
}

// TestChatDecisions pins down behaviour the official fixtures leave out,
// decided here: each case (testdata/chat-decisions, in the fixtures' form)
// says why it is so. The 0.7.0 oracle runs the same cases.
func TestChatDecisions(t *testing.T) {
	names, cases := fixtures.Load(t, filepath.Join("testdata", "chat-decisions"), 14)
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			var actions []string
			for _, a := range c.Actions {
				actions = append(actions, string(a))
			}
			s := reduceChatJSON(t, string(c.Initial), actions...)
			requireChatJSON(t, string(c.Expected), s)
			// Streaming decides the same.
			var st Streaming
			var fast wire.ChatState
			require.NoError(t, json.Unmarshal(c.Initial, &fast))
			for _, raw := range c.Actions {
				var a wire.StateAction
				require.NoError(t, json.Unmarshal(raw, &a))
				st.Chat(&fast, a, chatTestClock)
			}
			requireChatJSON(t, string(c.Expected), &fast)
		})
	}
}

// Nothing the reducer stores may alias the action: actions are kept (in a
// replay buffer) and encoded later, and states are changed in place.
func TestChatCopiesActionValues(t *testing.T) {
	s := &wire.ChatState{Resource: "r", Turns: []wire.Turn{}}
	msg := wire.Message{Text: "hi", Meta: map[string]any{"k": "v"}}
	started := &wire.ChatTurnStartedAction{TurnID: "t1", Message: msg}
	start := &wire.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "c1", Meta: map[string]any{"k": "v"}, Intention: wire.Ptr("i")}
	ready := &wire.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", Options: []wire.ConfirmationOption{{ID: "o", Label: "L"}},
		ToolInput: wire.Ptr(wire.ToolInputText("{}")), Meta: map[string]any{"k": "v"}}
	part := &wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p", Content: "x"})}
	req := &wire.ChatInputRequestedAction{Request: wire.ChatInputRequest{ID: "q", Answers: map[string]wire.ChatInputAnswer{}}}
	queued := &wire.ChatPendingMessageSetAction{Kind: wire.PendingMessageKindQueued, ID: "m", Message: msg}
	work := &wire.ChatBackgroundWorkSetAction{Work: wire.NewBackgroundWork(&wire.BackgroundShellWork{ID: "w", Command: "make", Meta: map[string]any{"k": "v"}})}
	changesets := &wire.ChatChangesetsChangedAction{Changesets: []wire.Changeset{{Label: "All"}}}
	canvases := &wire.ChatCanvasesChangedAction{Canvases: []wire.CanvasReference{{Resource: "ahp-canvas:/1"}}}
	failed := &wire.ChatErrorAction{TurnID: "t1", Part: wire.ErrorResponsePart{Error: wire.ErrorInfo{Message: "m", Meta: map[string]any{"k": "v"}}, Resumable: wire.Ptr(true)}}
	for _, a := range []any{started, start, ready, part, req, queued, work, changesets, canvases, failed} {
		Chat(s, wire.Action(a), chatTestClock)
	}
	before, err := wire.Marshal(s)
	require.NoError(t, err)

	msg.Meta["k"] = "changed"
	start.Meta["k"] = "changed"
	*start.Intention = "changed"
	ready.Options[0].Label = "changed"
	ready.ToolInput.Text = "changed"
	ready.Meta["k"] = "changed"
	part.Part.Value.(*wire.MarkdownResponsePart).Content = "changed"
	req.Request.Answers["q1"] = wire.ChatInputAnswer{}
	work.Work.Value.(*wire.BackgroundShellWork).Meta["k"] = "changed"
	changesets.Changesets[0].Label = "changed"
	canvases.Canvases[0].Resource = "changed"
	failed.Part.Error.Meta["k"] = "changed"
	*failed.Part.Resumable = false

	after, err := wire.Marshal(s)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

// A state built in Go may hold variants by value rather than by pointer;
// the reducer must change the state all the same.
func TestChatHandlesVariantsStoredByValue(t *testing.T) {
	s := &wire.ChatState{Resource: "r", Turns: []wire.Turn{}, ActiveTurn: &wire.ActiveTurn{ID: "t1", ResponseParts: []wire.ResponsePart{
		{Value: wire.MarkdownResponsePart{ID: "p", Content: "a"}},
		{Value: wire.ToolCallResponsePart{ToolCall: wire.ToolCallState{Value: wire.ToolCallStreamingState{ToolCallID: "c1"}}}},
		{Value: (*wire.MarkdownResponsePart)(nil)},
		{Value: nil},
	}}}
	Chat(s, wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p", Content: "b"}), chatTestClock)
	Chat(s, wire.Action(&wire.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: wire.PlainText("X")}), chatTestClock)

	assert.Equal(t, "ab", s.ActiveTurn.ResponseParts[0].Value.(*wire.MarkdownResponsePart).Content)
	tc, status, ok := FindToolCall(s, "t1", "c1")
	require.True(t, ok)
	assert.Equal(t, wire.ToolCallStatusPendingConfirmation, status)
	assert.Equal(t, "X", tc.Value.(*wire.ToolCallPendingConfirmationState).InvocationMessage.Text)
	assert.True(t, s.Status.Has(wire.SessionStatusInputNeeded))
}

func TestChatNilAndEmptyInputs(t *testing.T) {
	assert.NotPanics(t, func() {
		Chat(nil, wire.Action(&wire.ChatTurnStartedAction{TurnID: "t1"}), chatTestClock)
		Chat(new(wire.ChatState), wire.StateAction{}, chatTestClock)
		Chat(new(wire.ChatState), wire.StateAction{Value: (*wire.ChatDeltaAction)(nil)}, chatTestClock)
		Chat(new(wire.ChatState), wire.StateAction{Value: json.RawMessage(`{"type":"chat/later"}`)}, chatTestClock)
	})
	// A nil clock is the wall clock, not a crash.
	s := new(wire.ChatState)
	Chat(s, wire.Action(&wire.ChatTurnStartedAction{TurnID: "t1"}), nil)
	_, ok := ParseTime(s.ModifiedAt)
	assert.True(t, ok, "modifiedAt %q", s.ModifiedAt)
}
