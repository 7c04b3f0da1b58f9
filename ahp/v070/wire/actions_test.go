package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"

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

// TestActionsRoundTrip decodes the examples of every action type, checks
// that each decodes to its variant struct (not raw JSON) and encodes back to
// the same bytes (the file holds them in the encoder's member order,
// indented), also when rebuilt from the variant value.
func TestActionsRoundTrip(t *testing.T) {
	covered := map[string]bool{}
	for i, raw := range actionSamples(t) {
		typ := sampleType(t, raw)
		t.Run(typ, func(t *testing.T) {
			var a StateAction
			require.NoError(t, json.Unmarshal(raw, &a))
			require.NotNil(t, a.Value)
			_, isRaw := a.Value.(json.RawMessage)
			require.False(t, isRaw, "example %d: known action type %s decoded as raw JSON", i, typ)
			assert.Equal(t, reflect.Pointer, reflect.TypeOf(a.Value).Kind(), "variants are held by pointer")
			assert.Equal(t, typ, a.Type())
			assert.True(t, ActionType(typ).Known())
			covered[typ] = true

			want := compact(t, raw)
			out, err := Marshal(a)
			require.NoError(t, err)
			assert.Equal(t, want, string(out))

			// Wrapping the variant value, not the pointer, encodes the same.
			val := reflect.ValueOf(a.Value).Elem().Interface()
			out2, err := Marshal(Action(val))
			require.NoError(t, err)
			assert.Equal(t, want, string(out2))

			// The discriminator is filled in on encode even when cleared.
			reflect.ValueOf(a.Value).Elem().FieldByName("Type").SetString("")
			out3, err := Marshal(a)
			require.NoError(t, err)
			assert.Equal(t, want, string(out3))
		})
	}
	for _, at := range actionTypeValues {
		assert.True(t, covered[string(at)], "testdata/actions.json has no %s example", at)
	}
}

// TestActionsCoverSchema reads the StateAction union of the 0.7.0 schema
// and fails for an action type that testdata/actions.json has no example
// of, or that the generated ActionType does not name.
func TestActionsCoverSchema(t *testing.T) {
	dir := testenv.SpecDir(t, "0.7.0", "schema")
	b, err := os.ReadFile(filepath.Join(dir, "actions.schema.json"))
	require.NoError(t, err)
	var schema struct {
		Defs map[string]struct {
			OneOf []struct {
				Ref string `json:"$ref"`
			} `json:"oneOf"`
			Properties map[string]struct {
				Const string `json:"const"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(b, &schema))

	var types []string
	var walk func(name string)
	walk = func(name string) {
		def, ok := schema.Defs[name]
		require.True(t, ok, "the schema's StateAction refers to %s, which it does not define", name)
		if len(def.OneOf) > 0 {
			for _, m := range def.OneOf {
				if n := strings.TrimPrefix(m.Ref, "#/$defs/"); n != "" {
					walk(n)
				}
			}
			return
		}
		typ := def.Properties["type"].Const
		require.NotEmpty(t, typ, "%s has no fixed type", name)
		types = append(types, typ)
	}
	walk("StateAction")
	require.Greater(t, len(types), 80, "the 0.7.0 StateAction union lists some 85 action types")

	examples := map[string]bool{}
	for _, raw := range actionSamples(t) {
		examples[sampleType(t, raw)] = true
	}
	known := map[string]bool{}
	for _, at := range actionTypeValues {
		known[string(at)] = true
	}
	for _, typ := range types {
		assert.True(t, examples[typ], "testdata/actions.json has no example of %s", typ)
		assert.True(t, known[typ], "ActionType has no constant for %s", typ)
	}
	assert.Equal(t, len(known), len(examples), "ActionType and the examples name as many types")
}

// TestClientDispatchable checks the table transcribed from
// IS_CLIENT_DISPATCHABLE: it classifies every action type, and a few
// well-known ones each way.
func TestClientDispatchable(t *testing.T) {
	for _, at := range actionTypeValues {
		_, ok := clientDispatchable[at]
		assert.True(t, ok, "%s is not classified as client-dispatchable or not", at)
	}
	assert.Len(t, clientDispatchable, len(actionTypeValues))

	assert.True(t, ClientDispatchable(string(ActionTypeChatTurnStarted)))
	assert.True(t, ClientDispatchable("chat/toolCallConfirmed"))
	assert.True(t, ClientDispatchable("annotations/entrySet"))
	assert.True(t, ClientDispatchable("terminal/input"))
	assert.False(t, ClientDispatchable(string(ActionTypeChatDelta)))
	assert.False(t, ClientDispatchable("session/chatAdded"))
	assert.False(t, ClientDispatchable("resourceWatch/changed"))
	assert.False(t, ClientDispatchable("chat/fromTheFuture"))
	assert.False(t, ClientDispatchable(""))
}

// TestActionTypeFilledOnEncode checks that callers never set Type by hand.
func TestActionTypeFilledOnEncode(t *testing.T) {
	tests := []struct {
		name   string
		action StateAction
		want   string
	}{
		{"pointer", Action(&SessionTitleChangedAction{Title: "Fix the build"}), `{"type":"session/titleChanged","title":"Fix the build"}`},
		{"value", Action(SessionTitleChangedAction{Title: "x"}), `{"type":"session/titleChanged","title":"x"}`},
		{"wrong type overwritten", Action(&SessionReadyAction{Type: "bogus"}), `{"type":"session/ready"}`},
		{"approved", Action(&ChatToolCallApprovedAction{TurnID: "t", ToolCallID: "c", Confirmed: ToolCallConfirmationReasonUserAction}),
			`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":true,"confirmed":"user-action"}`},
		{"denied", Action(&ChatToolCallDeniedAction{TurnID: "t", ToolCallID: "c", Reason: ToolCallCancellationReasonDenied}),
			`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":false,"reason":"denied"}`},
		{"nested union variant", Action(&ChatResponsePartAction{TurnID: "t", Part: NewResponsePart(&MarkdownResponsePart{ID: "p", Content: "hi"})}),
			`{"type":"chat/responsePart","turnId":"t","part":{"kind":"markdown","id":"p","content":"hi"}}`},
		{"inline-named variant", Action(&SessionChatAddedAction{Summary: ChatSummary{Resource: "ahp-chat:/c", Title: "T", Status: SessionStatusIdle, ModifiedAt: "2026-01-01T00:00:00Z",
			Origin: Ptr(NewChatOrigin(&ChatOriginFork{Chat: "ahp-chat:/main", TurnID: "t1"}))}}),
			`{"type":"session/chatAdded","summary":{"resource":"ahp-chat:/c","title":"T","status":1,"modifiedAt":"2026-01-01T00:00:00Z","origin":{"kind":"fork","chat":"ahp-chat:/main","turnId":"t1"}}}`},
		{"turn with required lists", Action(&ChatTurnsLoadedAction{Turns: []Turn{{ID: "t0", Message: Message{Text: "hi", Origin: MessageOrigin{Kind: MessageKindUser}}, State: TurnStateComplete}}}),
			`{"type":"chat/turnsLoaded","turns":[{"id":"t0","message":{"text":"hi","origin":{"kind":"user"}},"responseParts":[],"state":"complete"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.action)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(out))
		})
	}
	assert.Equal(t, "chat/toolCallConfirmed", Action(&ChatToolCallDeniedAction{}).Type())
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

	// Neither true nor false: a variant this package does not know.
	require.NoError(t, json.Unmarshal([]byte(`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c"}`), &a))
	_, isRaw := a.Value.(json.RawMessage)
	assert.True(t, isRaw, "got %T", a.Value)
	assert.Equal(t, "chat/toolCallConfirmed", a.Type())
}
