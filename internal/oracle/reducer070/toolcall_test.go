package reducer070

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	wire100 "github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// TestToolCallJSONIsTheSame checks the premise of toolcall.go: a 0.7.0
// tool call in every status, and every tool call action, reads as 1.0.0
// and back without losing or changing anything, so applying the 1.0.0
// rules to it is applying them to the 0.7.0 value.
func TestToolCallJSONIsTheSame(t *testing.T) {
	const common = `"toolCallId": "c1", "toolName": "edit", "displayName": "Edit", "intention": "fix it",
		"contributor": {"kind": "mcp", "customizationId": "m"}, "_meta": {"k": [1, "v"]}`
	const edits = `"edits": {"items": [{"before": {"uri": "file:///a", "content": {"uri": "ahp-content:/1"}},
		"after": {"uri": "file:///a", "content": {"uri": "ahp-content:/2"}}, "diff": {"added": 2, "removed": 1}}]}`
	const input = `"invocationMessage": {"markdown": "**go**"}, "toolInput": {"uri": "file:///in.json"}`
	states := []string{
		`{"status": "streaming", ` + common + `, "partialInput": "{\"a\"", "invocationMessage": "so far"}`,
		`{"status": "pending-confirmation", ` + common + `, ` + input + `, "confirmationTitle": "Allow?", ` + edits + `,
			"options": [{"id": "o", "label": "Once", "kind": "approve", "group": 1}]}`,
		`{"status": "running", ` + common + `, ` + input + `, "confirmed": "user-action"}`,
		`{"status": "auth-required", ` + common + `, ` + input + `, "confirmed": "not-needed",
			"authRequest": {"resource": "https://mcp.example", "authorizationServers": ["https://auth.example"]}}`,
		`{"status": "pending-result-confirmation", ` + common + `, ` + input + `, "confirmed": "setting",
			"success": true, "pastTenseMessage": "Edited", "content": [{"type": "text", "text": "ok"}]}`,
		`{"status": "completed", ` + common + `, ` + input + `, "confirmed": "user-action", "success": false,
			"pastTenseMessage": "Failed", "error": {"message": "no", "code": "E"},
			"content": [{"type": "fileEdit", "before": {"uri": "file:///a", "content": {"uri": "ahp-content:/1"}}}]}`,
		`{"status": "cancelled", ` + common + `, ` + input + `, "reason": "denied", "reasonMessage": "no"}`,
		`{"status": "later-status", "toolCallId": "c1", "somethingNew": {"x": 1}}`,
	}
	for _, s := range states {
		var tc wire.ToolCallState
		require.NoError(t, json.Unmarshal([]byte(s), &tc), s)
		requireSameThrough100[wire100.ToolCallState](t, tc)
	}

	actions := []string{
		`{"type": "chat/toolCallDelta", "turnId": "t", "toolCallId": "c1", "content": "{", "invocationMessage": "m", "_meta": {"k": 1}}`,
		`{"type": "chat/toolCallReady", "turnId": "t", "toolCallId": "c1", ` + input + `, "confirmed": "not-needed", ` + edits + `,
			"confirmationTitle": "T", "options": [{"id": "o", "label": "L", "kind": "deny"}], "_meta": {"k": 1}}`,
		`{"type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "c1", "approved": true, "confirmed": "user-action", "selectedOptionId": "o"}`,
		`{"type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "c1", "approved": false, "reason": "denied", "userSuggestion": {"text": "no"}}`,
		`{"type": "chat/toolCallComplete", "turnId": "t", "toolCallId": "c1", "requiresResultConfirmation": true,
			"result": {"success": true, "pastTenseMessage": "Did", "content": [{"type": "text", "text": "x"}], "structuredContent": {"a": 1}}}`,
		`{"type": "chat/toolCallResultConfirmed", "turnId": "t", "toolCallId": "c1", "approved": false}`,
		`{"type": "chat/toolCallContentChanged", "turnId": "t", "toolCallId": "c1", "content": [{"type": "text", "text": "y"}]}`,
		`{"type": "chat/toolCallAuthRequired", "turnId": "t", "toolCallId": "c1", "authRequest": {"resource": "https://mcp.example"}}`,
		`{"type": "chat/toolCallAuthResolved", "turnId": "t", "toolCallId": "c1", "_meta": {"k": 1}}`,
	}
	for _, s := range actions {
		var a wire.StateAction
		require.NoError(t, json.Unmarshal([]byte(s), &a), s)
		_, unknown := a.Value.(json.RawMessage)
		require.False(t, unknown, "0.7.0 knows %s", s)
		requireSameThrough100[wire100.StateAction](t, a)
	}
}

// requireSameThrough100 checks that v, a 0.7.0 value, encodes the same
// after a trip through the 1.0.0 type T and back.
func requireSameThrough100[T any](t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	require.NoError(t, err)
	var mid T
	require.True(t, through(v, &mid), "%s reads as 1.0.0", want)
	back := v
	switch v.(type) {
	case wire.ToolCallState:
		var tc wire.ToolCallState
		require.True(t, through(mid, &tc))
		back = tc
	case wire.StateAction:
		var a wire.StateAction
		require.True(t, through(mid, &a))
		back = a
	}
	got, err := json.Marshal(back)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}
