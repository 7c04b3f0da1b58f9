package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// actionSamples returns the examples of testdata/actions.json.
func actionSamples(t *testing.T) []json.RawMessage {
	t.Helper()
	var samples []json.RawMessage
	require.NoError(t, json.Unmarshal(readTestdata(t, "actions.json"), &samples))
	return samples
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, b))
	return buf.String()
}

func sampleType(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var probe struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.Unmarshal(raw, &probe))
	return probe.Type
}

// TestActionsRoundTrip decodes the hand-written example of every 1.0.0
// action type, checks that each decodes to its variant struct (not raw
// JSON) and encodes back to the same bytes (the file holds them in the
// encoder's member order, indented), also when rebuilt from the variant
// value and with its discriminator cleared. An ActionType constant without
// an example fails, so a regeneration that adds an action type cannot pass
// unnoticed.
func TestActionsRoundTrip(t *testing.T) {
	covered := map[string]bool{}
	for i, raw := range actionSamples(t) {
		typ := sampleType(t, raw)
		t.Run(typ, func(t *testing.T) {
			assert.False(t, covered[typ], "two examples of %s", typ)
			covered[typ] = true
			var a StateAction
			require.NoError(t, json.Unmarshal(raw, &a))
			require.NotNil(t, a.Value)
			_, isRaw := a.Value.(json.RawMessage)
			require.False(t, isRaw, "example %d: known action type %s decoded as raw JSON", i, typ)
			assert.Equal(t, reflect.Pointer, reflect.TypeOf(a.Value).Kind(), "variants are held by pointer")
			assert.Equal(t, typ, a.Type())
			assert.True(t, ActionType(typ).Known())

			want := compact(t, raw)
			out, err := Marshal(a)
			require.NoError(t, err)
			assert.Equal(t, want, string(out))

			val := reflect.ValueOf(a.Value).Elem().Interface()
			out2, err := Marshal(Action(val))
			require.NoError(t, err)
			assert.Equal(t, want, string(out2), "wrapping the variant value, not the pointer, encodes the same")

			reflect.ValueOf(a.Value).Elem().FieldByName("Type").SetString("")
			out3, err := Marshal(a)
			require.NoError(t, err)
			assert.Equal(t, want, string(out3), "the discriminator is filled in on encode")
		})
	}
	for _, at := range actionTypeValues {
		assert.True(t, covered[string(at)], "testdata/actions.json has no %s example", at)
	}
	assert.Len(t, covered, len(actionTypeValues), "examples of types ActionType does not name")
	assert.Len(t, actionTypeValues, 106, "AHP 1.0.0 has 106 action types: the 85 of 0.7.0 and 21 added by 0.8.0-1.0.0")
}

// TestClientDispatchable checks the 1.0.0 table: it classifies every
// action type, and the types 0.8.0-1.0.0 added as docs/protocol-versions.md
// §11.1 lists them.
func TestClientDispatchable(t *testing.T) {
	for _, at := range actionTypeValues {
		_, ok := clientDispatchable[at]
		assert.True(t, ok, "%s is not classified as client-dispatchable or not", at)
	}
	assert.Len(t, clientDispatchable, len(actionTypeValues))

	for _, typ := range []string{
		"chat/turnStarted", "chat/toolCallConfirmed", "annotations/entrySet", "terminal/input", "terminal/claimed",
		"session/customizationToggled", "annotations/updated",
		"chat/turnResume", "chat/isReadChanged", "chat/isArchivedChanged", "session/mcpServerBackgroundRequested",
		"session/workingDirectoryReplaced", "automation/createRequested", "automation/updateRequested",
		"automation/removed", "automationRun/cancelRequested",
	} {
		assert.True(t, ClientDispatchable(typ), "%s is a client's", typ)
	}
	for _, typ := range []string{
		"chat/delta", "chat/error", "session/chatAdded", "resourceWatch/changed",
		"session/chatsReordered", "chat/movableChanged", "chat/changesetsChanged", "chat/backgroundWorkSet",
		"chat/backgroundWorkRemoved", "chat/canvasesChanged", "canvas/stateChanged", "automation/set",
		"automationRun/lifecycleChanged", "automationRun/sessionSet", "automationRun/sessionRemoved",
		"automationRun/primarySessionChanged",
		"chat/fromTheFuture", "channel/frame", "",
	} {
		assert.False(t, ClientDispatchable(typ), "%s is the server's alone", typ)
	}
}

// TestActionTypeFilledOnEncode checks that callers never set discriminators
// by hand, on the shapes 1.0.0 added as well.
func TestActionTypeFilledOnEncode(t *testing.T) {
	tests := []struct {
		name   string
		action StateAction
		want   string
	}{
		{"pointer", Action(&SessionTitleChangedAction{Title: "Fix the build"}), `{"type":"session/titleChanged","title":"Fix the build"}`},
		{"wrong type overwritten", Action(&SessionReadyAction{Type: "bogus"}), `{"type":"session/ready"}`},
		{"approved", Action(&ChatToolCallApprovedAction{TurnID: "t", ToolCallID: "c", Confirmed: ToolCallConfirmationReasonUserAction}),
			`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":true,"confirmed":"user-action"}`},
		{"denied", Action(&ChatToolCallDeniedAction{TurnID: "t", ToolCallID: "c", Reason: ToolCallCancellationReasonDenied}),
			`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":false,"reason":"denied"}`},
		{"error part inside chat/error", Action(&ChatErrorAction{TurnID: "t", Duration: 5, Part: ErrorResponsePart{Error: ErrorInfo{ErrorType: "x", Message: "m"}}}),
			`{"type":"chat/error","turnId":"t","duration":5,"part":{"kind":"error","error":{"errorType":"x","message":"m"}}}`},
		{"turn resume", Action(&ChatTurnResumeAction{TurnID: "t1"}), `{"type":"chat/turnResume","turnId":"t1"}`},
		{"background work", Action(&ChatBackgroundWorkSetAction{Work: NewBackgroundWork(&BackgroundSubagentWork{ID: "w", Label: "L", StartedAt: "2026-01-01T00:00:00Z", Chat: "ahp-chat:/w"})}),
			`{"type":"chat/backgroundWorkSet","work":{"id":"w","label":"L","startedAt":"2026-01-01T00:00:00Z","kind":"subagent","chat":"ahp-chat:/w"}}`},
		{"terminal lifecycle", Action(&RootTerminalsChangedAction{Terminals: []TerminalInfo{{Resource: "ahp-terminal:/t", Title: "T",
			Claim:     NewTerminalClaim(&TerminalSessionClaim{Session: "ahp-session:/s", Chat: "ahp-chat:/c"}),
			Lifecycle: NewTerminalLifecycleState(&TerminalExitedLifecycleState{ExitCode: Ptr(int64(2))})}}}),
			`{"type":"root/terminalsChanged","terminals":[{"resource":"ahp-terminal:/t","title":"T","claim":{"kind":"session","session":"ahp-session:/s","chat":"ahp-chat:/c"},"lifecycle":{"status":"exited","exitCode":2}}]}`},
		{"enablement", Action(&SessionCustomizationToggledAction{ID: "p", Enablement: []CustomizationEnablement{
			NewCustomizationEnablement(&CustomizationEnablementWorkspace{URI: "file:///r", Enabled: true})}}),
			`{"type":"session/customizationToggled","id":"p","enablement":[{"kind":"workspace","uri":"file:///r","enabled":true}]}`},
		{"required enablement list never null", Action(&SessionCustomizationToggledAction{ID: "p"}),
			`{"type":"session/customizationToggled","id":"p","enablement":[]}`},
		{"turn without error", Action(&ChatTurnsLoadedAction{Turns: []Turn{{ID: "t0", Message: Message{Text: "hi", Origin: MessageOrigin{Kind: MessageKindAutomation}}, State: TurnStateError}}}),
			`{"type":"chat/turnsLoaded","turns":[{"id":"t0","message":{"text":"hi","origin":{"kind":"automation"}},"responseParts":[],"state":"error"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.action)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(out))
		})
	}
	assert.Equal(t, "chat/turnResume", Action(&ChatTurnResumeAction{}).Type())
	assert.Equal(t, "", StateAction{}.Type())
}

// TestApprovedDenied checks that the two chat/toolCallConfirmed variants
// are told apart by "approved".
func TestApprovedDenied(t *testing.T) {
	var a StateAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":false,"reason":"skipped"}`), &a))
	d, ok := a.Value.(*ChatToolCallDeniedAction)
	require.True(t, ok, "got %T", a.Value)
	assert.Equal(t, ToolCallCancellationReasonSkipped, d.Reason)

	require.NoError(t, json.Unmarshal([]byte(`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":true,"confirmed":"setting"}`), &a))
	ap, ok := a.Value.(*ChatToolCallApprovedAction)
	require.True(t, ok, "got %T", a.Value)
	assert.Equal(t, ToolCallConfirmationReasonSetting, ap.Confirmed)

	require.NoError(t, json.Unmarshal([]byte(`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c"}`), &a))
	_, isRaw := a.Value.(json.RawMessage)
	assert.True(t, isRaw, "neither true nor false: a variant this package does not know; got %T", a.Value)
}
