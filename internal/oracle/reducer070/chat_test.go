package reducer070

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// chatTestClock is 2023-11-14T22:13:20.000Z.
func chatTestClock() int64 { return 1700000000000 }

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

// modifiedAt070 is the modifiedAt 0.7.0 reaches in the chat decisions
// whose 1.0.0 expectation differs: 0.7.0 stamps the reducer's clock on the
// end of a turn and on input requests, where 1.0.0 derives the end of a
// turn from its startedAt and duration and leaves modifiedAt alone on
// input actions.
var modifiedAt070 = map[string]string{
	"05-an-unknown-tool-call-status-is-cancelled-at-the-end-of-the-turn": "2023-11-14T22:13:20.000Z",
	"13-input-needed-lasts-while-anything-waits":                         "2023-11-14T22:13:20.000Z",
}

// TestChatDecisions runs ahp/reducer's chat decisions, the behaviour the
// official fixtures leave out (ahp/reducer/testdata/chat-decisions: each
// says why it is so), through the 0.7.0 chat reducer: it decides them the
// same, but for modifiedAt070.
func TestChatDecisions(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "ahp", "reducer", "testdata", "chat-decisions")
	names, cases := fixtures.Load(t, dir, 14)
	for name := range modifiedAt070 {
		require.Contains(t, names, name, "modifiedAt070 names a case that does not exist")
	}
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			want := c.Expected
			if at, ok := modifiedAt070[name]; ok {
				var m map[string]any
				require.NoError(t, json.Unmarshal(want, &m))
				require.NotEqual(t, at, m["modifiedAt"], "modifiedAt070 repeats the 1.0.0 expectation of %s", name)
				m["modifiedAt"] = at
				var err error
				want, err = json.Marshal(m)
				require.NoError(t, err)
			}
			var actions []string
			for _, a := range c.Actions {
				actions = append(actions, string(a))
			}
			requireChatJSON(t, string(want), reduceChatJSON(t, string(c.Initial), actions...))
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
	for _, a := range []any{started, start, ready, part, req, queued} {
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
	tc := s.ActiveTurn.ResponseParts[1].Value.(*wire.ToolCallResponsePart).ToolCall
	assert.Equal(t, string(wire.ToolCallStatusPendingConfirmation), tc.Status())
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
