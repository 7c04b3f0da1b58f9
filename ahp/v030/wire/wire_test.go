package wire

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, b))
	return buf.String()
}

// TestActionsRoundTrip decodes one sample of every action type and checks
// that each decodes to its struct and encodes back to the same JSON.
func TestActionsRoundTrip(t *testing.T) {
	var samples []json.RawMessage
	require.NoError(t, json.Unmarshal(readTestdata(t, "actions.json"), &samples))

	covered := map[ActionType]bool{}
	for _, raw := range samples {
		var probe struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(raw, &probe))
		t.Run(probe.Type, func(t *testing.T) {
			var a StateAction
			require.NoError(t, json.Unmarshal(raw, &a))
			require.NotNil(t, a.Value)
			_, isRaw := a.Value.(json.RawMessage)
			require.False(t, isRaw, "known action type %s decoded as raw JSON", probe.Type)
			assert.Equal(t, probe.Type, a.Type())
			covered[ActionType(a.Type())] = true

			out, err := json.Marshal(a)
			require.NoError(t, err)
			assert.JSONEq(t, string(raw), string(out))

			// Re-wrapping the variant value (not the pointer) encodes the same.
			out2, err := json.Marshal(Action(derefValue(a.Value)))
			require.NoError(t, err)
			assert.JSONEq(t, string(raw), string(out2))
		})
	}
	for _, at := range actionTypeValues {
		assert.True(t, covered[at], "testdata/actions.json has no %s sample", at)
	}
}

// derefValue returns the struct a variant pointer points at.
func derefValue(v any) any {
	switch x := v.(type) {
	case *SessionToolCallApprovedAction:
		return *x
	case *SessionTitleChangedAction:
		return *x
	}
	return v
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
		{"approved", Action(&SessionToolCallApprovedAction{TurnID: "t", ToolCallID: "c", Confirmed: ToolCallConfirmationReasonUserAction}),
			`{"type":"session/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":true,"confirmed":"user-action"}`},
		{"denied", Action(&SessionToolCallDeniedAction{TurnID: "t", ToolCallID: "c", Reason: ToolCallCancellationReasonDenied}),
			`{"type":"session/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":false,"reason":"denied"}`},
		{"nested union variant", Action(&SessionResponsePartAction{TurnID: "t", Part: NewResponsePart(&MarkdownResponsePart{ID: "p", Content: "hi"})}),
			`{"type":"session/responsePart","turnId":"t","part":{"kind":"markdown","id":"p","content":"hi"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := json.Marshal(tt.action)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(out))
		})
	}
	assert.Equal(t, "session/toolCallConfirmed", Action(&SessionToolCallDeniedAction{}).Type())
}

// TestUnknownVariantsRoundTrip checks that variants this package does not
// know survive decode → encode unchanged (modulo whitespace), at top level
// and nested inside known structs.
func TestUnknownVariantsRoundTrip(t *testing.T) {
	var cases map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(readTestdata(t, "unknown_variants.json"), &cases))
	require.NotEmpty(t, cases)
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			typeName, _, _ := strings.Cut(name, " ")
			v := newByName(t, typeName)
			require.NoError(t, json.Unmarshal(raw, v))
			out, err := json.Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, compact(t, raw), compact(t, out))
		})
	}
}

// newByName returns a pointer to a new value of the named wire type.
func newByName(t *testing.T, name string) any {
	t.Helper()
	switch name {
	case "StateAction":
		return new(StateAction)
	case "ActionEnvelope":
		return new(ActionEnvelope)
	case "ResponsePart":
		return new(ResponsePart)
	case "ToolCallState":
		return new(ToolCallState)
	case "ToolResultContent":
		return new(ToolResultContent)
	case "Customization":
		return new(Customization)
	case "SessionState":
		return new(SessionState)
	case "TerminalState":
		return new(TerminalState)
	case "ReconnectResult":
		return new(ReconnectResult)
	case "SessionInputAnswer":
		return new(SessionInputAnswer)
	}
	t.Fatalf("newByName: unknown type %q", name)
	return nil
}

// TestMarshalKeepsRawBytes checks that wire.Marshal writes unknown variants
// back exactly, HTML-significant characters and escapes included.
func TestMarshalKeepsRawBytes(t *testing.T) {
	in := `{"type":"session/fromTheFuture","html":"<b>&amp;</b>","esc":"\u00e9\n","n":1.50}`
	var a StateAction
	require.NoError(t, json.Unmarshal([]byte(in), &a))
	out, err := Marshal(ActionEnvelope{Channel: "c", ServerSeq: 1, Action: a})
	require.NoError(t, err)
	assert.Equal(t, `{"channel":"c","action":`+in+`,"serverSeq":1}`, string(out))

	std, err := json.Marshal(a)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(std), "json.Marshal escapes <, > and & but means the same")
}

func TestUnknownVariantIsRaw(t *testing.T) {
	var a StateAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"session/fromTheFuture","x":[1,{"y":null}]}`), &a))
	raw, ok := a.Value.(json.RawMessage)
	require.True(t, ok, "got %T", a.Value)
	assert.Equal(t, "session/fromTheFuture", a.Type())
	assert.JSONEq(t, `{"type":"session/fromTheFuture","x":[1,{"y":null}]}`, string(raw))

	var p ResponsePart
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"hologram","id":"h1"}`), &p))
	assert.Equal(t, "hologram", p.Kind())
	_, ok = p.Value.(json.RawMessage)
	assert.True(t, ok)

	// A variant without any discriminator is unknown too, not an error.
	var c ToolResultContent
	require.NoError(t, json.Unmarshal([]byte(`{"text":"no type"}`), &c))
	assert.Equal(t, "", c.Type())
}

// TestKnownVariants checks that each union decodes its variants into the
// right structs.
func TestKnownVariants(t *testing.T) {
	tests := []struct {
		name string
		json string
		into any
		want any
	}{
		{"markdown part", `{"kind":"markdown","id":"p1","content":"hi"}`, new(ResponsePart),
			&MarkdownResponsePart{Kind: ResponsePartKindMarkdown, ID: "p1", Content: "hi"}},
		{"running tool call", `{"status":"running","toolCallId":"c","toolName":"bash","displayName":"Bash","invocationMessage":{"markdown":"**ls**"},"confirmed":"setting"}`, new(ToolCallState),
			&ToolCallRunningState{Status: ToolCallStatusRunning, ToolCallID: "c", ToolName: "bash", DisplayName: "Bash", InvocationMessage: MarkdownText("**ls**"), Confirmed: ToolCallConfirmationReasonSetting}},
		{"text result", `{"type":"text","text":"out"}`, new(ToolResultContent),
			&ToolResultTextContent{Type: ToolResultContentTypeText, Text: "out"}},
		{"denied action", `{"type":"session/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":false,"reason":"skipped"}`, new(StateAction),
			&SessionToolCallDeniedAction{Type: ActionTypeSessionToolCallConfirmed, TurnID: "t", ToolCallID: "c", Reason: ToolCallCancellationReasonSkipped}},
		{"approved action", `{"type":"session/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":true,"confirmed":"user-action"}`, new(StateAction),
			&SessionToolCallApprovedAction{Type: ActionTypeSessionToolCallConfirmed, TurnID: "t", ToolCallID: "c", Approved: true, Confirmed: ToolCallConfirmationReasonUserAction}},
		{"integer question", `{"kind":"integer","id":"q","message":"How many?"}`, new(SessionInputQuestion),
			&SessionInputNumberQuestion{Kind: SessionInputQuestionKindInteger, ID: "q", Message: "How many?"}},
		{"skipped answer", `{"state":"skipped"}`, new(SessionInputAnswer),
			&SessionInputSkipped{State: SessionInputAnswerStateSkipped}},
		{"command part", `{"type":"command","commandId":"1","commandLine":"ls","output":"","timestamp":5,"isComplete":false}`, new(TerminalContentPart),
			&TerminalCommandPart{Type: "command", CommandID: "1", CommandLine: "ls", Timestamp: 5}},
		{"snapshot reconnect", `{"type":"snapshot","snapshots":[]}`, new(ReconnectResult),
			&ReconnectSnapshotResult{Type: ReconnectResultTypeSnapshot, Snapshots: []Snapshot{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, json.Unmarshal([]byte(tt.json), tt.into))
			got := unionValue(tt.into)
			assert.Equal(t, tt.want, got)
			out, err := json.Marshal(tt.into)
			require.NoError(t, err)
			assert.JSONEq(t, tt.json, string(out))
		})
	}
}

func unionValue(u any) any {
	switch x := u.(type) {
	case *ResponsePart:
		return x.Value
	case *ToolCallState:
		return x.Value
	case *ToolResultContent:
		return x.Value
	case *StateAction:
		return x.Value
	case *SessionInputQuestion:
		return x.Value
	case *SessionInputAnswer:
		return x.Value
	case *TerminalContentPart:
		return x.Value
	case *ReconnectResult:
		return x.Value
	}
	return nil
}

// TestNullAndAbsent checks that null decodes like an absent member, and
// that absent optional members are not written.
func TestNullAndAbsent(t *testing.T) {
	withNulls := `{
		"summary": {"resource": "s:/1", "provider": "p", "title": "T", "status": 1, "createdAt": 1, "modifiedAt": 2,
		            "activity": null, "model": null},
		"lifecycle": "ready",
		"turns": [],
		"activeTurn": {"id": "t", "message": {"text": "hi", "origin": {"kind": "user"}}, "responseParts": [null], "usage": null},
		"activeClient": null,
		"queuedMessages": null,
		"_meta": null
	}`
	absent := `{
		"summary": {"resource": "s:/1", "provider": "p", "title": "T", "status": 1, "createdAt": 1, "modifiedAt": 2},
		"lifecycle": "ready",
		"turns": [],
		"activeTurn": {"id": "t", "message": {"text": "hi", "origin": {"kind": "user"}}, "responseParts": [null]}
	}`
	var a, b SessionState
	require.NoError(t, json.Unmarshal([]byte(withNulls), &a))
	require.NoError(t, json.Unmarshal([]byte(absent), &b))
	assert.Equal(t, b, a)
	assert.Nil(t, a.ActiveTurn.Usage)
	assert.Nil(t, a.QueuedMessages)
	assert.Nil(t, a.ActiveTurn.ResponseParts[0].Value)

	out, err := json.Marshal(a)
	require.NoError(t, err)
	assert.JSONEq(t, absent, string(out))
}

// TestRequiredListsNeverNull checks that nil required lists encode as [].
func TestRequiredListsNeverNull(t *testing.T) {
	out, err := json.Marshal(SessionState{Lifecycle: SessionLifecycleCreating})
	require.NoError(t, err)
	assert.Contains(t, string(out), `"turns":[]`)
	assert.NotContains(t, string(out), `null`)

	// An optional list: nil is absent, empty is [].
	out, err = json.Marshal(RootState{Terminals: []TerminalInfo{}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"agents":[],"terminals":[]}`, string(out))
	out, err = json.Marshal(RootState{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"agents":[]}`, string(out))
}

func TestStringOrMarkdown(t *testing.T) {
	tests := []struct {
		name, in, out string
		want          StringOrMarkdown
	}{
		{"plain", `"ls -la"`, `"ls -la"`, PlainText("ls -la")},
		{"markdown", `{"markdown":"**bold**"}`, `{"markdown":"**bold**"}`, MarkdownText("**bold**")},
		{"empty plain", `""`, `""`, PlainText("")},
		{"empty markdown", `{"markdown":""}`, `{"markdown":""}`, MarkdownText("")},
		{"null", `null`, `""`, StringOrMarkdown{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s StringOrMarkdown
			require.NoError(t, json.Unmarshal([]byte(tt.in), &s))
			assert.Equal(t, tt.want, s)
			out, err := json.Marshal(s)
			require.NoError(t, err)
			assert.JSONEq(t, tt.out, string(out))
		})
	}
	for _, bad := range []string{`42`, `{"text":"x"}`, `{"markdown":7}`, `["x"]`, `true`} {
		var s StringOrMarkdown
		assert.Error(t, json.Unmarshal([]byte(bad), &s), bad)
	}
	// Optional StringOrMarkdown fields are pointers: absent stays nil.
	var d SessionToolCallDeltaAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"session/toolCallDelta","turnId":"t","toolCallId":"c","content":"x"}`), &d))
	assert.Nil(t, d.InvocationMessage)
	assert.Equal(t, "hi", PlainText("hi").String())
}

func TestSessionStatus(t *testing.T) {
	var s SessionSummary
	// 4096 and 4 are bits AHP 0.3.0 does not name; they must survive.
	in := `{"resource":"r","provider":"p","title":"t","status":4140,"createdAt":1,"modifiedAt":2}`
	require.NoError(t, json.Unmarshal([]byte(in), &s))
	assert.Equal(t, SessionStatus(4096|4|SessionStatusInProgress|SessionStatusIsRead), s.Status)
	assert.True(t, s.Status.Has(SessionStatusInProgress))
	assert.False(t, s.Status.Has(SessionStatusInputNeeded))
	assert.True(t, s.Status.Has(SessionStatusIsRead))
	assert.Equal(t, SessionStatus(4096|4), s.Status.Unknown())
	assert.Equal(t, SessionStatus(4|SessionStatusInProgress), s.Status.Activity())
	out, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))

	st := SessionStatusIdle.With(SessionStatusIsArchived)
	st = st.WithActivity(SessionStatusInputNeeded)
	assert.Equal(t, SessionStatusInputNeeded|SessionStatusIsArchived, st)
	assert.True(t, st.Has(SessionStatusInProgress), "InputNeeded includes the InProgress bit")
	assert.Equal(t, SessionStatusInputNeeded, st.Without(SessionStatusIsArchived))
}

func TestEnvelope(t *testing.T) {
	var cases map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(readTestdata(t, "envelopes.json"), &cases))

	var withOrigin ActionEnvelope
	require.NoError(t, json.Unmarshal(cases["with origin"], &withOrigin))
	require.NotNil(t, withOrigin.Origin)
	assert.Equal(t, ActionOrigin{ClientID: "client-1", ClientSeq: 7}, *withOrigin.Origin)
	assert.Equal(t, int64(9007199254740991), withOrigin.ServerSeq)
	assert.Equal(t, "session/turnStarted", withOrigin.Action.Type())

	var without ActionEnvelope
	require.NoError(t, json.Unmarshal(cases["without origin"], &without))
	assert.Nil(t, without.Origin)
	assert.Equal(t, "session/delta", without.Action.Type())

	var rejected ActionEnvelope
	require.NoError(t, json.Unmarshal(cases["rejected"], &rejected))
	require.NotNil(t, rejected.RejectionReason)

	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			var e ActionEnvelope
			require.NoError(t, json.Unmarshal(raw, &e))
			out, err := json.Marshal(e)
			require.NoError(t, err)
			assert.JSONEq(t, string(raw), string(out))
		})
	}

	// Building an envelope in code.
	out, err := json.Marshal(ActionEnvelope{
		Channel:   "copilot:/s1",
		ServerSeq: 3,
		Action:    Action(&SessionDeltaAction{TurnID: "t", PartID: "p", Content: "x"}),
	})
	require.NoError(t, err)
	assert.JSONEq(t, `{"channel":"copilot:/s1","serverSeq":3,"action":{"type":"session/delta","turnId":"t","partId":"p","content":"x"}}`, string(out))
}

// TestBadInput checks that malformed input gives errors, not panics or
// silently lost data.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		json string
		into any
	}{
		{"action is a string", `"session/ready"`, new(StateAction)},
		{"action is an array", `[1]`, new(StateAction)},
		{"known action with a bad field", `{"type":"session/titleChanged","title":42}`, new(StateAction)},
		{"part with bad content", `{"kind":"markdown","id":"p","content":{}}`, new(ResponsePart)},
		{"envelope with bad seq", `{"channel":"c","serverSeq":"1","action":{"type":"session/ready"}}`, new(ActionEnvelope)},
		{"untagged union not an object", `3`, new(SnapshotState)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Error(t, json.Unmarshal([]byte(tt.json), tt.into))
		})
	}
	_, err := json.Marshal(StateAction{Value: 42})
	assert.Error(t, err, "a union holding a foreign type must not encode")
}

func TestEnumKnown(t *testing.T) {
	assert.True(t, ActionTypeSessionReady.Known())
	assert.False(t, ActionType("session/fromTheFuture").Known())
	assert.True(t, ToolCallStatusPendingResultConfirmation.Known())
	assert.Equal(t, "pending-result-confirmation", string(ToolCallStatusPendingResultConfirmation))
}

func TestPtr(t *testing.T) {
	p := Ptr(3)
	*p = 4
	assert.Equal(t, 4, *p)
	assert.Equal(t, "x", *Ptr("x"))
}

func TestSnapshotStateAs(t *testing.T) {
	var snap Snapshot
	require.NoError(t, json.Unmarshal([]byte(`{"resource":"ahp-root://","fromSeq":3,"state":{"agents":[{"provider":"p","displayName":"P","description":"d","models":[]}]}}`), &snap))
	var root RootState
	require.NoError(t, snap.State.As(&root))
	require.Len(t, root.Agents, 1)
	assert.Equal(t, "p", root.Agents[0].Provider)

	// Built in code, the state holds a pointer and encodes as that state.
	built := Snapshot{Resource: "ahp-root://", State: NewSnapshotState(RootState{}), FromSeq: 1}
	out, err := json.Marshal(built)
	require.NoError(t, err)
	assert.JSONEq(t, `{"resource":"ahp-root://","state":{"agents":[]},"fromSeq":1}`, string(out))

	var term TerminalState
	assert.Error(t, SnapshotState{Value: json.RawMessage(`[1]`)}.As(&term))
	assert.Error(t, json.Unmarshal([]byte(`{"resource":"x","fromSeq":1,"state":"oops"}`), &snap))
}
