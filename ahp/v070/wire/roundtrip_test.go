package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// minRoundTripFixtures is how many fixtures the AHP 0.7.0 round-trip corpus
// holds: 39 files numbered 001–040, with 021–023 unused and 030 and 031
// used twice. Fewer means the corpus was not found whole.
const minRoundTripFixtures = 39

// roundTripTypes maps the fixtures' "type" names to the Go types they decode
// into.
var roundTripTypes = map[string]func() any{
	"ActionEnvelope":           func() any { return new(ActionEnvelope) },
	"StateAction":              func() any { return new(StateAction) },
	"Customization":            func() any { return new(Customization) },
	"SessionStatus":            func() any { return new(SessionStatus) },
	"StringOrMarkdown":         func() any { return new(StringOrMarkdown) },
	"JsonRpcMessage":           func() any { return new(JsonRpcMessage) },
	"ChangesetOperationTarget": func() any { return new(ChangesetOperationTarget) },
	"ChatInputQuestion":        func() any { return new(ChatInputQuestion) },
	"SessionSummary":           func() any { return new(SessionSummary) },
	"SessionAddedParams":       func() any { return new(SessionAddedParams) },
	"PartialSessionSummary":    func() any { return new(PartialSessionSummary) },
	"Implementation":           func() any { return new(Implementation) },
	"InitializeResult":         func() any { return new(InitializeResult) },
	"ChatSource":               func() any { return new(ChatSource) },
}

type roundTripFixture struct {
	Name              string            `json:"name"`
	Group             string            `json:"group"`
	Type              string            `json:"type"`
	Input             json.RawMessage   `json:"input"`
	AcceptableOutputs []json.RawMessage `json:"acceptableOutputs"`
}

// TestRoundTripCorpus decodes every fixture's input into the type it names,
// encodes it again and compares with the single acceptable output: key
// order does not matter, but a null is not an absent member, and a member
// the output lacks (Group B: keys our typed structs do not declare) must be
// gone. See KNOWN-FIDELITY-GAPS.md beside the fixtures.
func TestRoundTripCorpus(t *testing.T) {
	dir := testenv.SpecDir(t, "0.7.0", "test-cases", "round-trips")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), minRoundTripFixtures, "round-trip fixtures in %s", dir)

	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			var fx roundTripFixture
			require.NoError(t, json.Unmarshal(b, &fx))
			require.Len(t, fx.AcceptableOutputs, 1, "a fixture has exactly one canonical output")
			newValue, ok := roundTripTypes[fx.Type]
			require.True(t, ok, "fixture type %q has no Go type in roundTripTypes", fx.Type)

			v := newValue()
			require.NoError(t, json.Unmarshal(fx.Input, v))
			out, err := Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, jsonValue(t, fx.AcceptableOutputs[0]), jsonValue(t, out),
				"%s (group %s)\n got: %s", fx.Name, fx.Group, out)
		})
	}
}

// jsonValue decodes b for comparison: maps make key order irrelevant while
// keeping absent and null apart, and json.Number keeps numbers exact.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "%s", b)
	return v
}

// TestRoundTripCorpusVariants checks that the corpus's union inputs decode
// into the variant structs, not into raw JSON, except where the fixture is
// about an unknown variant.
func TestRoundTripCorpusVariants(t *testing.T) {
	dir := testenv.SpecDir(t, "0.7.0", "test-cases", "round-trips")
	tests := []struct {
		file, part string
		want       any
	}{
		{"001-action-envelope-session-title-changed.json", "", &SessionTitleChangedAction{}},
		{"002-state-action-unknown-variant-preserved.json", "", json.RawMessage{}},
		{"003-customization-unknown-type-preserved.json", "", json.RawMessage{}},
		{"008-jsonrpc-request.json", "", &JsonRpcRequest{}},
		{"009-jsonrpc-notification.json", "", &JsonRpcNotification{}},
		{"010-jsonrpc-success.json", "", &JsonRpcSuccessResponse{}},
		{"011-jsonrpc-error.json", "", &JsonRpcErrorResponse{}},
		{"012-changeset-target-resource.json", "", &ChangesetOperationTargetResource{}},
		{"013-changeset-target-range.json", "", &ChangesetOperationTargetRange{}},
		{"014-session-input-question-number.json", "", &ChatInputNumberQuestion{}},
		{"015-session-input-question-integer.json", "", &ChatInputNumberQuestion{}},
		{"016-long-above-int32-max-preserved.json", "", &SessionTitleChangedAction{}},
		{"024-changeset-changekind-known-and-unknown.json", "", &SessionChangesetsChangedAction{}},
		{"025-action-envelope-origin-absent.json", "", &SessionTitleChangedAction{}},
		{"026-action-envelope-origin-present.json", "", &SessionTitleChangedAction{}},
		{"027-agent-customization-model-and-tools.json", "", &PluginCustomization{}},
		{"030-terminal-content-ispty.json", "", &ChatToolCallContentChangedAction{}},
		{"031-side-chat-origin.json", "", &SessionChatAddedAction{}},
		{"031-terminal-content-completed.json", "", &ChatToolCallContentChangedAction{}},
		{"031-terminal-content-completed.json", "content", &ToolResultTerminalContent{}},
		{"032-chat-transcript-attachment.json", "", &ChatTurnStartedAction{}},
		{"032-chat-transcript-attachment.json", "attachment", &MessageChatAttachment{}},
		{"033-chat-source-side-chat.json", "", &SideChatSource{}},
		{"034-side-chat-origin-active.json", "", &SessionChatAddedAction{}},
		{"035-chat-source-side-chat-active.json", "", &SideChatSource{}},
		{"036-chat-source-fork.json", "", &ForkChatSource{}},
		{"037-chat-origin-fork.json", "", &SessionChatAddedAction{}},
		{"037-chat-origin-fork.json", "origin", &ChatOriginFork{}},
		{"038-chat-source-side-chat-selection.json", "", &SideChatSource{}},
		{"039-side-chat-origin-selection.json", "", &SessionChatAddedAction{}},
		{"039-side-chat-origin-selection.json", "origin", &ChatOriginSideChat{}},
		{"040-chat-transcript-attachment-latest-turn.json", "", &ChatTurnStartedAction{}},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.part, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, tt.file))
			require.NoError(t, err)
			var fx roundTripFixture
			require.NoError(t, json.Unmarshal(b, &fx))
			v := roundTripTypes[fx.Type]()
			require.NoError(t, json.Unmarshal(fx.Input, v))
			assert.IsType(t, tt.want, variantOf(t, v, tt.part))
		})
	}
}

// variantOf digs the variant out of a decoded fixture: the union's value,
// the envelope's action, or a named part further down.
func variantOf(t *testing.T, v any, part string) any {
	t.Helper()
	switch x := v.(type) {
	case *ActionEnvelope:
		return variantOf(t, &x.Action, part)
	case *StateAction:
		switch part {
		case "origin":
			a, ok := x.Value.(*SessionChatAddedAction)
			require.True(t, ok, "got %T", x.Value)
			require.NotNil(t, a.Summary.Origin)
			return a.Summary.Origin.Value
		case "attachment":
			a, ok := x.Value.(*ChatTurnStartedAction)
			require.True(t, ok, "got %T", x.Value)
			require.NotEmpty(t, a.Message.Attachments)
			return a.Message.Attachments[0].Value
		case "content":
			a, ok := x.Value.(*ChatToolCallContentChangedAction)
			require.True(t, ok, "got %T", x.Value)
			require.NotEmpty(t, a.Content)
			return a.Content[0].Value
		}
		return x.Value
	case *Customization:
		return x.Value
	case *JsonRpcMessage:
		return x.Value
	case *ChangesetOperationTarget:
		return x.Value
	case *ChatInputQuestion:
		return x.Value
	case *ChatSource:
		return x.Value
	}
	t.Fatalf("variantOf: %T is not a union", v)
	return nil
}
