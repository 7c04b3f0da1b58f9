package reducer070

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
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
// decided here: each case says why it is so.
func TestChatDecisions(t *testing.T) {
	const user = `{"text": "hi", "origin": {"kind": "user"}}`
	for _, tc := range []struct {
		name    string
		initial string
		actions []string
		want    string
	}{{
		// The reference recomputes the status on these tool call actions
		// whether or not they find their tool call; clients reducing with it
		// do the same, so the host must too.
		name:    "tool call actions recompute status even when nothing matches",
		initial: `{"resource": "r", "title": "T", "status": 42, "modifiedAt": "m", "turns": []}`,
		actions: []string{`{"type": "chat/toolCallComplete", "turnId": "gone", "toolCallId": "x", "result": {"success": true, "pastTenseMessage": "ok"}}`},
		want:    `{"resource": "r", "title": "T", "status": 33, "modifiedAt": "m", "turns": []}`,
	}, {
		// Deltas and the like are not status-changing: a wrong turn leaves
		// even an inconsistent status alone.
		name:    "a delta to another turn changes nothing",
		initial: chatActive(2, `[{"kind": "markdown", "id": "p", "content": "a"}]`),
		actions: []string{`{"type": "chat/delta", "turnId": "t2", "partId": "p", "content": "b"}`},
		want:    chatActive(2, `[{"kind": "markdown", "id": "p", "content": "a"}]`),
	}, {
		// A null part would be stored by the reference, which then fails on
		// it at the next delta; there is nothing in it to keep.
		name:    "a null response part is not added",
		initial: chatActive(8, `[]`),
		actions: []string{`{"type": "chat/responsePart", "turnId": "t1", "part": null}`},
		want:    chatActive(8, `[]`),
	}, {
		// Parts of kinds from a later protocol version are kept and can be
		// targeted by their id like markdown is (the reference does the
		// same: it matches any part that has an id).
		name:    "an unknown part kind is kept and its id shadows later parts",
		initial: chatActive(8, `[]`),
		actions: []string{
			`{"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "hologram", "id": "p", "beams": 3}}`,
			`{"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "markdown", "id": "p", "content": ""}}`,
			`{"type": "chat/delta", "turnId": "t1", "partId": "p", "content": "lost"}`,
		},
		want: chatActive(8, `[{"kind": "hologram", "id": "p", "beams": 3}, {"kind": "markdown", "id": "p", "content": ""}]`),
	}, {
		// A tool call whose status this package does not know cannot still
		// be going once its turn is over: it is cancelled like any other
		// unfinished call (the reference cancels everything not completed
		// or cancelled), keeping the members every tool call has.
		name: "an unknown tool call status is cancelled at the end of the turn",
		initial: chatActive(8, `[{"kind": "toolCall", "toolCall": {"status": "paused", "toolCallId": "c1", "toolName": "x", "displayName": "X",
			"intention": "i", "contributor": {"kind": "client", "clientId": "k"}, "_meta": {"m": 1}, "invocationMessage": "Doing X", "toolInput": "{}", "pausedAt": 3}}]`),
		actions: []string{`{"type": "chat/turnComplete", "turnId": "t1", "duration": 5}`},
		want: `{"resource": "ahp-chat:/s/c", "title": "T", "status": 1, "modifiedAt": "2023-11-14T22:13:20.000Z", "turns": [
			{"id": "t1", "startedAt": "2020-01-01T00:00:00.000Z", "duration": 5, "message": ` + user + `, "state": "complete", "responseParts": [
				{"kind": "toolCall", "toolCall": {"status": "cancelled", "reason": "skipped", "toolCallId": "c1", "toolName": "x", "displayName": "X",
				 "intention": "i", "contributor": {"kind": "client", "clientId": "k"}, "_meta": {"m": 1}, "invocationMessage": "Doing X", "toolInput": "{}"}}]}]}`,
	}, {
		// ActiveTurn.startedAt is required, so "" is all a state without one
		// can hold; the turn's is optional and is left out rather than
		// carrying an empty timestamp.
		name: "a turn started at an unknown time has no startedAt",
		initial: `{"resource": "r", "title": "T", "status": 8, "modifiedAt": "m", "turns": [],
			"activeTurn": {"id": "t1", "message": ` + user + `, "responseParts": []}}`,
		actions: []string{`{"type": "chat/turnCancelled", "turnId": "t1", "duration": -4}`},
		want: `{"resource": "r", "title": "T", "status": 1, "modifiedAt": "2023-11-14T22:13:20.000Z", "turns": [
			{"id": "t1", "duration": 0, "message": ` + user + `, "state": "cancelled", "responseParts": []}]}`,
	}, {
		// The reference replaces a still active turn; the host must not let
		// that happen (it validates chat/turnStarted), but a reducer only
		// reduces.
		name:    "a turn started over an active one replaces it",
		initial: chatActive(8|32, `[{"kind": "markdown", "id": "p", "content": "a"}]`),
		actions: []string{`{"type": "chat/turnStarted", "turnId": "t2", "startedAt": "s2", "message": ` + user + `}`},
		want: `{"resource": "ahp-chat:/s/c", "title": "T", "status": 8, "modifiedAt": "2023-11-14T22:13:20.000Z", "turns": [],
			"activeTurn": {"id": "t2", "startedAt": "s2", "message": ` + user + `, "responseParts": []}}`,
	}, {
		// Referenced tool input is edited by the host in the referenced
		// content, so an edit never replaces the reference (reference
		// reducer: only string input is replaced).
		name: "an edited tool input does not replace referenced input",
		initial: chatActive(24, `[{"kind": "toolCall", "toolCall": {"status": "pending-confirmation", "toolCallId": "c1", "toolName": "x", "displayName": "X",
			"invocationMessage": "X", "toolInput": {"uri": "ahp-content:/1"}}}]`),
		actions: []string{`{"type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "c1", "approved": true, "confirmed": "user-action", "editedToolInput": "{\"a\":1}"}`},
		want: chatActive(8, `[{"kind": "toolCall", "toolCall": {"status": "running", "toolCallId": "c1", "toolName": "x", "displayName": "X",
			"invocationMessage": "X", "toolInput": {"uri": "ahp-content:/1"}, "confirmed": "user-action"}}]`),
	}, {
		// An empty confirmation reason is no reason (the reference tests it
		// for truthiness): the call waits for confirmation.
		name:    "toolCallReady with an empty confirmed waits for confirmation",
		initial: chatActive(8, `[{"kind": "toolCall", "toolCall": {"status": "streaming", "toolCallId": "c1", "toolName": "x", "displayName": "X", "partialInput": "{"}}]`),
		actions: []string{`{"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1", "invocationMessage": "X", "confirmed": ""}`},
		want:    chatActive(24, `[{"kind": "toolCall", "toolCall": {"status": "pending-confirmation", "toolCallId": "c1", "toolName": "x", "displayName": "X", "invocationMessage": "X"}}]`),
	}, {
		// Like the reference, a pending message of a kind this package does
		// not know is a queued one.
		name:    "a pending message of an unknown kind is queued",
		initial: `{"resource": "r", "title": "T", "status": 1, "modifiedAt": "m", "turns": []}`,
		actions: []string{`{"type": "chat/pendingMessageSet", "kind": "whisper", "id": "m1", "message": ` + user + `}`},
		want:    `{"resource": "r", "title": "T", "status": 1, "modifiedAt": "m", "turns": [], "queuedMessages": [{"id": "m1", "message": ` + user + `}]}`,
	}, {
		// Duplicate ids cannot arise through the reducer, only in a state
		// built elsewhere; the reference then places the last message with a
		// named id and drops the others, and so do we.
		name: "reordering messages that share an id keeps the last of them",
		initial: `{"resource": "r", "title": "T", "status": 1, "modifiedAt": "m", "turns": [], "queuedMessages": [
			{"id": "a", "message": {"text": "a1", "origin": {"kind": "user"}}},
			{"id": "b", "message": {"text": "b", "origin": {"kind": "user"}}},
			{"id": "a", "message": {"text": "a2", "origin": {"kind": "user"}}}]}`,
		actions: []string{`{"type": "chat/queuedMessagesReordered", "order": ["a", "a", "zz"]}`},
		want: `{"resource": "r", "title": "T", "status": 1, "modifiedAt": "m", "turns": [], "queuedMessages": [
			{"id": "a", "message": {"text": "a2", "origin": {"kind": "user"}}},
			{"id": "b", "message": {"text": "b", "origin": {"kind": "user"}}}]}`,
	}, {
		// turnsLoaded only skips turns the chat already has; a page that
		// repeats a turn is the host's bug, and the reference keeps both.
		name:    "turnsLoaded dedupes against the chat, not within the page",
		initial: `{"resource": "r", "title": "T", "status": 1, "modifiedAt": "m", "turns": [{"id": "t2", "message": ` + user + `, "responseParts": [], "state": "complete"}], "turnsNextCursor": "c1"}`,
		actions: []string{`{"type": "chat/turnsLoaded", "turns": [
			{"id": "t1", "message": ` + user + `, "responseParts": [], "state": "complete"},
			{"id": "t1", "message": ` + user + `, "responseParts": [], "state": "error"},
			{"id": "t2", "message": ` + user + `, "responseParts": [], "state": "cancelled"}]}`},
		want: `{"resource": "r", "title": "T", "status": 1, "modifiedAt": "m", "turns": [
			{"id": "t1", "message": ` + user + `, "responseParts": [], "state": "complete"},
			{"id": "t1", "message": ` + user + `, "responseParts": [], "state": "error"},
			{"id": "t2", "message": ` + user + `, "responseParts": [], "state": "complete"}]}`,
	}, {
		// An input request waiting for an answer makes the chat InputNeeded;
		// answering it returns the chat to InProgress, while a tool call
		// still waiting for its confirmation keeps it InputNeeded.
		name:    "input needed lasts while anything waits",
		initial: chatActive(8, `[{"kind": "toolCall", "toolCall": {"status": "streaming", "toolCallId": "c1", "toolName": "x", "displayName": "X"}}]`),
		actions: []string{
			`{"type": "chat/inputRequested", "request": {"id": "q"}}`,
			`{"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1", "invocationMessage": "X"}`,
			`{"type": "chat/inputCompleted", "requestId": "q", "response": "decline"}`,
		},
		want: `{"resource": "ahp-chat:/s/c", "title": "T", "status": 24, "modifiedAt": "2023-11-14T22:13:20.000Z", "turns": [],
			"activeTurn": {"id": "t1", "startedAt": "2020-01-01T00:00:00.000Z", "message": ` + user + `, "responseParts": [
				{"kind": "toolCall", "toolCall": {"status": "pending-confirmation", "toolCallId": "c1", "toolName": "x", "displayName": "X", "invocationMessage": "X"}},
				{"kind": "inputRequest", "request": {"id": "q"}, "response": "decline"}]}}`,
	}, {
		// Unknown actions, and known ones from other channels, are no-ops.
		name:    "actions of other channels and unknown actions change nothing",
		initial: chatActive(8, `[]`),
		actions: []string{
			`{"type": "session/titleChanged", "title": "nope"}`,
			`{"type": "chat/teleported", "turnId": "t1"}`,
			`{"type": "terminal/data", "data": "x"}`,
		},
		want: chatActive(8, `[]`),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := reduceChatJSON(t, tc.initial, tc.actions...)
			requireChatJSON(t, tc.want, s)
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
