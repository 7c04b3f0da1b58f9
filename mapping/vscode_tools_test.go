package mapping

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// vscodeToolCase is an ACP tool call as an agent reports it, and the tool
// call state clients end up with (testdata/vscode_tools.golden.json).
type vscodeToolCase struct {
	Name   string          `json:"name"`
	Events []backend.Event `json:"-"`
	// Confirm answers the pending confirmation (approve) before the last
	// event, as a client does.
	Confirm bool `json:"-"`
	// States are the tool call's state after each event that changed it.
	States []json.RawMessage `json:"states"`
}

// toolCallStates returns the tool calls of the chat's active or last turn,
// as clients see them.
func toolCallStates(t *testing.T, s *wire.ChatState) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, p := range finalParts(t, s) {
		if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			b, err := json.Marshal(tc.ToolCall)
			require.NoError(t, err)
			out = append(out, b)
		}
	}
	return out
}

// TestToolCallsForVSCode pins what VS Code's Agents window renders of ACP
// tool calls, through the reducer: toolName and displayName, the
// invocation message, the past-tense message of a completed call, toolInput
// as a JSON string, a pending confirmation's title and options, and
// `_meta.toolKind` (terminal for shell commands, search, subagent for
// Claude's Task tool).
func TestToolCallsForVSCode(t *testing.T) {
	allowReject := []backend.PermissionOption{
		{ID: "allow", Name: "Allow", Kind: backend.AllowOnce},
		{ID: "always", Name: "Always allow", Kind: backend.AllowAlways},
		{ID: "reject", Name: "Reject", Kind: backend.RejectOnce},
	}
	cases := []vscodeToolCase{
		{Name: "shell command with confirmation (ACP kind execute → terminal)", Confirm: true, Events: []backend.Event{
			backend.ToolCall{ID: "b1", Title: "`go test ./...`", Kind: "execute", Status: backend.ToolPending, RawInput: json.RawMessage(`{}`),
				Meta: map[string]any{"claudeCode": map[string]any{"toolName": "Bash"}}},
			backend.PermissionRequest{ToolCall: backend.ToolCall{ID: "b1", Update: true, RawInput: json.RawMessage(`{"command":"go test ./...","description":"Run the tests"}`)}, Options: allowReject},
			backend.ToolCall{ID: "b1", Update: true, Status: backend.ToolCompleted, ContentMode: backend.ContentReplace,
				Content: []backend.ToolContent{{Type: "content", Text: "ok  \texample.com/p\t0.1s"}}},
		}},
		{Name: "search run without confirmation", Events: []backend.Event{
			backend.ToolCall{ID: "g1", Title: "grep \"TODO\"", Kind: "search", Status: backend.ToolPending, RawInput: json.RawMessage(`{"pattern":"TODO"}`)},
			backend.ToolCall{ID: "g1", Update: true, Status: backend.ToolInProgress},
			backend.ToolCall{ID: "g1", Update: true, Status: backend.ToolCompleted, ContentMode: backend.ContentReplace,
				Content: []backend.ToolContent{{Type: "content", Text: "main.go:3: TODO"}}},
		}},
		{Name: "Claude's Task tool (subagent)", Events: []backend.Event{
			backend.ToolCall{ID: "k1", Title: "Find the flaky test", Kind: "think", Status: backend.ToolInProgress,
				RawInput: json.RawMessage(`{"description":"Find the flaky test","prompt":"Look at ./...","subagent_type":"general-purpose"}`),
				Meta:     map[string]any{"claudeCode": map[string]any{"toolName": "Task"}}},
			backend.ToolCall{ID: "k1", Update: true, Status: backend.ToolCompleted},
		}},
		{Name: "read with a location, no rendering hint", Events: []backend.Event{
			backend.ToolCall{ID: "r1", Title: "Read README.md", Kind: "read", Status: backend.ToolPending,
				RawInput: json.RawMessage(`{"file_path":"/w/README.md"}`), Locations: []backend.Location{{Path: "/w/README.md"}}},
			backend.ToolCall{ID: "r1", Update: true, Status: backend.ToolFailed, ContentMode: backend.ContentReplace,
				Content: []backend.ToolContent{{Type: "content", Text: "no such file"}}},
		}},
		{Name: "edit asked with a diff", Events: []backend.Event{
			backend.ToolCall{ID: "e1", Title: "Edit main.go", Kind: "edit", Status: backend.ToolPending, RawInput: json.RawMessage(`{"file_path":"/w/main.go"}`),
				Content: []backend.ToolContent{{Type: "diff", Path: "/w/main.go", OldText: new(string), NewText: "package main\n"}}},
			backend.PermissionRequest{ToolCall: backend.ToolCall{ID: "e1", Update: true}, Options: allowReject},
		}},
		{Name: "a tool without title or kind", Events: []backend.Event{
			backend.ToolCall{ID: "x1", Status: backend.ToolInProgress, RawInput: json.RawMessage(`["a",1]`)},
		}},
	}
	for i, tc := range cases {
		turn := newTestTurn()
		r := newReplay(t)
		for j, ev := range tc.Events {
			if tc.Confirm && j == len(tc.Events)-1 {
				id := "b1"
				r.apply(act(&wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: id, Approved: true,
					Confirmed: wire.ToolCallConfirmationReasonUserAction}))
				turn.ToolConfirmed(id, true)
			}
			for _, a := range turn.Apply(ev) {
				r.apply(a)
			}
			// What clients see once the bridge's hold of a running call
			// ends with nothing else from the agent (bridge/chat.go).
			for _, a := range turn.Flush() {
				r.apply(a)
			}
			states := toolCallStates(t, r.chat)
			require.Len(t, states, 1, tc.Name)
			cases[i].States = append(cases[i].States, states[0])
		}

		// What VS Code relies on, whatever the golden says.
		for _, raw := range cases[i].States {
			var st struct {
				Status            string                    `json:"status"`
				ToolName          string                    `json:"toolName"`
				DisplayName       string                    `json:"displayName"`
				InvocationMessage any                       `json:"invocationMessage"`
				PastTenseMessage  any                       `json:"pastTenseMessage"`
				ToolInput         *string                   `json:"toolInput"`
				ConfirmationTitle any                       `json:"confirmationTitle"`
				Options           []wire.ConfirmationOption `json:"options"`
			}
			require.NoError(t, json.Unmarshal(raw, &st))
			assert.NotEmpty(t, st.ToolName, tc.Name)
			assert.NotEmpty(t, st.DisplayName, tc.Name)
			if st.Status != "streaming" { // a streaming call shows its displayName
				assert.NotNil(t, st.InvocationMessage, tc.Name)
			}
			if st.ToolInput != nil {
				assert.True(t, json.Valid([]byte(*st.ToolInput)), "%s: toolInput is the raw input encoded: %q", tc.Name, *st.ToolInput)
			}
			switch st.Status {
			case "pending-confirmation":
				assert.NotNil(t, st.ConfirmationTitle, tc.Name)
				assert.NotEmpty(t, st.Options, tc.Name)
				assert.NotNil(t, st.ToolInput, tc.Name)
			case "completed":
				assert.NotNil(t, st.PastTenseMessage, tc.Name)
			}
		}
	}
	checkGolden(t, filepath.Join("testdata", "vscode_tools.golden.json"), cases)
}
