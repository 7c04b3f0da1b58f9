package reducer030

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

func sampleSession(t *testing.T) *wire.SessionState {
	t.Helper()
	var s wire.SessionState
	require.NoError(t, json.Unmarshal([]byte(fuzzSessionState), &s))
	return &s
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestNoOps checks inputs that must leave the state exactly as it was.
func TestNoOps(t *testing.T) {
	tests := []struct {
		name   string
		action wire.StateAction
	}{
		{"zero action", wire.StateAction{}},
		{"nil pointer action", wire.StateAction{Value: (*wire.SessionDeltaAction)(nil)}},
		{"foreign value", wire.StateAction{Value: 42}},
		{"unknown raw action", wire.StateAction{Value: json.RawMessage(`{"type":"session/fromTheFuture"}`)}},
		{"delta to a missing turn", wire.Action(&wire.SessionDeltaAction{TurnID: "nope", PartID: "p1", Content: "x"})},
		{"delta to a missing part", wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "nope", Content: "x"})},
		{"delta to an unknown part kind", wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "h1", Content: "x"})},
		{"confirm a running tool", wire.Action(&wire.SessionToolCallApprovedAction{TurnID: "t1", ToolCallID: "c3", Confirmed: wire.ToolCallConfirmationReasonUserAction})},
		{"ready on an unknown tool state", wire.Action(&wire.SessionToolCallReadyAction{TurnID: "t1", ToolCallID: "c5"})},
		{"complete a missing tool", wire.Action(&wire.SessionToolCallCompleteAction{TurnID: "t1", ToolCallID: "zz"})},
		{"end another turn", wire.Action(&wire.SessionTurnCompleteAction{TurnID: "t9"})},
		{"truncate at a missing turn", wire.Action(&wire.SessionTruncatedAction{TurnID: wire.Ptr("t9")})},
		{"answer a missing request", wire.Action(&wire.SessionInputAnswerChangedAction{RequestID: "nope", QuestionID: "q"})},
		{"terminal action on a session", wire.Action(&wire.TerminalDataAction{Data: "x"})},
		{"root action on a session", wire.Action(&wire.RootAgentsChangedAction{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sampleSession(t)
			before := encode(t, s)
			Session(s, tt.action, fixedClock)
			assert.JSONEq(t, before, encode(t, s))
		})
	}
}

// TestNilAndEmptyStates checks that no reducer panics on nil or zero states.
func TestNilAndEmptyStates(t *testing.T) {
	var samples []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(`[
		{"type":"session/turnStarted","turnId":"t","message":{"text":"x","origin":{"kind":"user"}},"queuedMessageId":"m"},
		{"type":"session/delta","turnId":"t","partId":"p","content":"x"},
		{"type":"session/toolCallStart","turnId":"t","toolCallId":"c","toolName":"n","displayName":"d"},
		{"type":"session/turnComplete","turnId":"t"},
		{"type":"session/customizationRemoved","id":"x"},
		{"type":"session/customizationUpdated","customization":{"type":"plugin","id":"p","uri":"u","name":"n","enabled":true}},
		{"type":"session/pendingMessageRemoved","kind":"queued","id":"m"},
		{"type":"session/queuedMessagesReordered","order":["a"]},
		{"type":"session/inputCompleted","requestId":"r"},
		{"type":"session/configChanged","config":{"a":1}},
		{"type":"terminal/data","data":"x"},
		{"type":"terminal/commandFinished","commandId":"1"},
		{"type":"changeset/fileRemoved","fileId":"f"},
		{"type":"changeset/operationStatusChanged","operationId":"o","status":"running"},
		{"type":"root/configChanged","config":{"a":1}}
	]`), &samples))
	for _, raw := range samples {
		var a wire.StateAction
		require.NoError(t, json.Unmarshal(raw, &a))
		t.Run(a.Type(), func(t *testing.T) {
			assert.NotPanics(t, func() {
				Session(nil, a, nil)
				Session(&wire.SessionState{}, a, nil)
				Terminal(nil, a, nil)
				Terminal(&wire.TerminalState{}, a, nil)
				Changeset(nil, a, nil)
				Changeset(&wire.ChangesetState{}, a, nil)
				Root(nil, a, nil)
				Root(&wire.RootState{}, a, nil)
				ResourceWatch(nil, a, nil)
			})
		})
	}
}

// TestStateDoesNotAliasAction checks that changing an action after it was
// applied does not change the state (actions are kept for replay).
func TestStateDoesNotAliasAction(t *testing.T) {
	s := sampleSession(t)
	part := &wire.MarkdownResponsePart{ID: "p9", Content: "a"}
	Session(s, wire.Action(&wire.SessionResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(part)}), fixedClock)
	part.Content = "changed"
	Session(s, wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p9", Content: "b"}), fixedClock)
	last := s.ActiveTurn.ResponseParts[len(s.ActiveTurn.ResponseParts)-1].Value.(*wire.MarkdownResponsePart)
	assert.Equal(t, "ab", last.Content)
	assert.Equal(t, "changed", part.Content, "the action must not see the delta")
}

func TestToolCallLifecycleAndStatus(t *testing.T) {
	s := sampleSession(t)
	s.InputRequests = nil
	s.Summary.Status = wire.SessionStatusInProgress

	Session(s, wire.Action(&wire.SessionToolCallReadyAction{TurnID: "t1", ToolCallID: "c1", InvocationMessage: wire.PlainText("Run ls")}), fixedClock)
	tc, status, ok := FindToolCall(s, "t1", "c1")
	require.True(t, ok)
	assert.Equal(t, wire.ToolCallStatusPendingConfirmation, status)
	assert.Equal(t, "pending-confirmation", tc.Status())
	assert.True(t, s.Summary.Status.Has(wire.SessionStatusInputNeeded))

	Session(s, wire.Action(&wire.SessionToolCallApprovedAction{TurnID: "t1", ToolCallID: "c2", Confirmed: wire.ToolCallConfirmationReasonUserAction, SelectedOptionID: wire.Ptr("o1")}), fixedClock)
	_, status, _ = FindToolCall(s, "t1", "c2")
	assert.Equal(t, wire.ToolCallStatusRunning, status)
	tc, _, _ = FindToolCall(s, "t1", "c2")
	require.NotNil(t, tc.Value.(*wire.ToolCallRunningState).SelectedOption)

	Session(s, wire.Action(&wire.SessionToolCallDeniedAction{TurnID: "t1", ToolCallID: "c1", Reason: wire.ToolCallCancellationReasonDenied}), fixedClock)
	_, status, _ = FindToolCall(s, "t1", "c1")
	assert.Equal(t, wire.ToolCallStatusCancelled, status)

	Session(s, wire.Action(&wire.SessionToolCallResultConfirmedAction{TurnID: "t1", ToolCallID: "c4", Approved: true}), fixedClock)
	_, status, _ = FindToolCall(s, "t1", "c4")
	assert.Equal(t, wire.ToolCallStatusCompleted, status)
	assert.Equal(t, wire.SessionStatusInProgress, s.Summary.Status.Activity(), "nothing waits for the user any more")

	id, ok := ToolCallID(wire.ToolCallState{Value: json.RawMessage(`{"status":"paused","toolCallId":"c5"}`)})
	assert.True(t, ok)
	assert.Equal(t, "c5", id)
	_, status, ok = FindToolCall(s, "t1", "c5")
	assert.True(t, ok)
	assert.Equal(t, wire.ToolCallStatus("paused"), status)

	_, _, ok = FindToolCall(s, "t2", "c1")
	assert.False(t, ok)
	_, _, ok = FindToolCall(nil, "t1", "c1")
	assert.False(t, ok)

	// Ending the turn cancels what is still in progress and stamps the clock.
	Session(s, wire.Action(&wire.SessionTurnCompleteAction{TurnID: "t1"}), func() int64 { return 42 })
	require.Nil(t, s.ActiveTurn)
	last := s.Turns[len(s.Turns)-1]
	assert.Equal(t, wire.TurnStateComplete, last.State)
	for _, p := range last.ResponseParts {
		if tp, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			assert.Contains(t, []string{"completed", "cancelled", "paused"}, tp.ToolCall.Status())
		}
	}
	assert.Equal(t, int64(42), s.Summary.ModifiedAt)
	assert.Equal(t, wire.SessionStatusIdle, s.Summary.Status.Activity())
}

func TestClientDispatchable(t *testing.T) {
	assert.True(t, ClientDispatchable(string(wire.ActionTypeSessionToolCallConfirmed)))
	assert.True(t, ClientDispatchable("session/turnStarted"))
	assert.False(t, ClientDispatchable(string(wire.ActionTypeSessionDelta)))
	assert.False(t, ClientDispatchable("session/fromTheFuture"))
	assert.False(t, ClientDispatchable(""))
}

func TestToolCallAccessors(t *testing.T) {
	tests := []struct {
		name        string
		state       wire.ToolCallState
		id, display string
		known       bool
	}{
		{"running", wire.NewToolCallState(&wire.ToolCallRunningState{ToolCallID: "a", DisplayName: "Run"}), "a", "Run", true},
		{"completed", wire.NewToolCallState(&wire.ToolCallCompletedState{ToolCallID: "b", DisplayName: "Done"}), "b", "Done", true},
		{"unknown variant", wire.ToolCallState{Value: json.RawMessage(`{"status":"_future","toolCallId":"c","displayName":"X"}`)}, "c", "", true},
		{"empty", wire.ToolCallState{}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := ToolCallID(tt.state)
			assert.Equal(t, tt.known, ok)
			assert.Equal(t, tt.id, id)
			assert.Equal(t, tt.display, ToolCallDisplayName(tt.state))
		})
	}
}
