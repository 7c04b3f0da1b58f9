package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnknownVariantsRoundTrip checks that variants and enum values this
// package does not know survive decode → encode unchanged, at top level and
// nested inside known structs (where the known members around them come back
// in the struct's order).
func TestUnknownVariantsRoundTrip(t *testing.T) {
	var cases map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(readTestdata(t, "unknown_variants.json"), &cases))
	require.NotEmpty(t, cases)
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			typeName, _, _ := strings.Cut(name, " ")
			v := newByName(t, typeName)
			require.NoError(t, json.Unmarshal(raw, v))
			out, err := Marshal(v)
			require.NoError(t, err)
			assert.Equal(t, jsonValue(t, raw), jsonValue(t, out), "%s", out)
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
	case "ChatState":
		return new(ChatState)
	case "ReconnectResult":
		return new(ReconnectResult)
	case "TerminalContentPart":
		return new(TerminalContentPart)
	case "ChangesetOperationTarget":
		return new(ChangesetOperationTarget)
	case "ChatSource":
		return new(ChatSource)
	}
	t.Fatalf("newByName: unknown type %q", name)
	return nil
}

func TestUnknownVariantIsRaw(t *testing.T) {
	in := `{"type":"chat/fromTheFuture","x":[1,{"y":null}]}`
	var a StateAction
	require.NoError(t, json.Unmarshal([]byte(in), &a))
	raw, ok := a.Value.(json.RawMessage)
	require.True(t, ok, "got %T", a.Value)
	assert.Equal(t, "chat/fromTheFuture", a.Type())
	assert.False(t, ActionType(a.Type()).Known())
	assert.JSONEq(t, in, string(raw))

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

// TestMarshalKeepsRawBytes checks that Marshal writes unknown variants back
// exactly, HTML-significant characters and escapes included.
func TestMarshalKeepsRawBytes(t *testing.T) {
	in := `{"type":"chat/fromTheFuture","html":"<b>&amp;</b>","esc":"\u00e9\n","n":1.50}`
	var a StateAction
	require.NoError(t, json.Unmarshal([]byte(in), &a))
	out, err := Marshal(a)
	require.NoError(t, err)
	assert.Equal(t, in, string(out))

	std, err := json.Marshal(a)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(std), "json.Marshal escapes <, > and & but means the same")
}

// TestKnownVariants checks that each union decodes its variants into the
// right structs, with typed discriminators.
func TestKnownVariants(t *testing.T) {
	tests := []struct {
		name string
		json string
		into any
		want any
	}{
		{"markdown part", `{"kind":"markdown","id":"p1","content":"hi"}`, new(ResponsePart),
			&MarkdownResponsePart{Kind: ResponsePartKindMarkdown, ID: "p1", Content: "hi"}},
		{"running tool call", `{"toolCallId":"c","toolName":"bash","displayName":"Bash","invocationMessage":{"markdown":"**ls**"},"toolInput":"ls","confirmed":"setting","status":"running"}`, new(ToolCallState),
			&ToolCallRunningState{Status: ToolCallStatusRunning, ToolCallID: "c", ToolName: "bash", DisplayName: "Bash", InvocationMessage: MarkdownText("**ls**"), ToolInput: Ptr(ToolInputText("ls")), Confirmed: ToolCallConfirmationReasonSetting}},
		{"auth-required tool call", `{"toolCallId":"c","toolName":"t","displayName":"T","contributor":{"kind":"mcp","customizationId":"m"},"invocationMessage":"x","confirmed":"not-needed","status":"auth-required","auth":{"reason":"expired","resource":{"resource":"https://r"}}}`, new(ToolCallState),
			&ToolCallAuthRequiredState{Status: ToolCallStatusAuthRequired, ToolCallID: "c", ToolName: "t", DisplayName: "T", Contributor: ToolCallMcpContributor{Kind: ToolCallContributorKindMCP, CustomizationID: "m"},
				InvocationMessage: PlainText("x"), Confirmed: ToolCallConfirmationReasonNotNeeded, Auth: McpAuthRequirement{Reason: McpAuthRequiredReasonExpired, Resource: ProtectedResourceMetadata{Resource: "https://r"}}}},
		{"text result", `{"type":"text","text":"out"}`, new(ToolResultContent),
			&ToolResultTextContent{Type: ToolResultContentTypeText, Text: "out"}},
		{"integer question", `{"id":"q","message":"How many?","kind":"integer"}`, new(ChatInputQuestion),
			&ChatInputNumberQuestion{Kind: ChatInputQuestionKindInteger, ID: "q", Message: "How many?"}},
		{"skipped answer", `{"state":"skipped"}`, new(ChatInputAnswer),
			&ChatInputSkipped{State: ChatInputAnswerStateSkipped}},
		{"draft answer", `{"state":"draft","value":{"kind":"number","value":0.5}}`, new(ChatInputAnswer),
			&ChatInputAnswered{State: ChatInputAnswerStateDraft, Value: NewChatInputAnswerValue(&ChatInputNumberAnswerValue{Kind: ChatInputAnswerValueKindNumber, Value: 0.5})}},
		{"command part", `{"type":"command","commandId":"1","commandLine":"ls","output":"","timestamp":1767323045006,"isComplete":false}`, new(TerminalContentPart),
			&TerminalCommandPart{Type: "command", CommandID: "1", CommandLine: "ls", Timestamp: 1767323045006}},
		{"snapshot reconnect", `{"type":"snapshot","snapshots":[]}`, new(ReconnectResult),
			&ReconnectSnapshotResult{Type: ReconnectResultTypeSnapshot, Snapshots: []Snapshot{}}},
		{"user origin", `{"kind":"user"}`, new(ChatOrigin), &ChatOriginUser{Kind: ChatOriginKindUser}},
		{"tool origin", `{"kind":"tool","chat":"ahp-chat:/p","toolCallId":"c"}`, new(ChatOrigin),
			&ChatOriginTool{Kind: ChatOriginKindTool, Chat: "ahp-chat:/p", ToolCallID: "c"}},
		{"range target", `{"kind":"range","resource":"file:///a","side":"after","range":{"start":{"line":1,"character":2},"end":{"line":3,"character":4}}}`, new(ChangesetOperationTarget),
			&ChangesetOperationTargetRange{Kind: ChangesetOperationTargetKindRange, Resource: "file:///a", Side: Ptr("after"), Range: TextRange{Start: TextPosition{Line: 1, Character: 2}, End: TextPosition{Line: 3, Character: 4}}}},
		{"session claim", `{"kind":"session","session":"ahp-session:/s"}`, new(TerminalClaim),
			&TerminalSessionClaim{Kind: TerminalClaimKindSession, Session: "ahp-session:/s"}},
		{"loading assessment", `{"kind":"judge","status":"loading"}`, new(ToolCallRiskAssessment),
			&ToolCallRiskAssessmentLoadingState{Kind: ToolCallRiskAssessmentKindJudge, Status: ToolCallRiskAssessmentStatusLoading}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, json.Unmarshal([]byte(tt.json), tt.into))
			assert.Equal(t, tt.want, reflectValue(t, tt.into))
			out, err := json.Marshal(tt.into)
			require.NoError(t, err)
			assert.JSONEq(t, tt.json, string(out))
		})
	}
}

// reflectValue returns the Value of a pointer to a union.
func reflectValue(t *testing.T, u any) any {
	t.Helper()
	switch x := u.(type) {
	case *ResponsePart:
		return x.Value
	case *ToolCallState:
		return x.Value
	case *ToolResultContent:
		return x.Value
	case *ChatInputQuestion:
		return x.Value
	case *ChatInputAnswer:
		return x.Value
	case *TerminalContentPart:
		return x.Value
	case *ReconnectResult:
		return x.Value
	case *ChatOrigin:
		return x.Value
	case *ChangesetOperationTarget:
		return x.Value
	case *TerminalClaim:
		return x.Value
	case *ToolCallRiskAssessment:
		return x.Value
	}
	t.Fatalf("reflectValue: %T", u)
	return nil
}

// TestAccessors checks the accessors for properties every variant has, on
// pointers, values, unknown variants and an empty union.
func TestAccessors(t *testing.T) {
	running := NewToolCallState(&ToolCallRunningState{ToolCallID: "c1", ToolName: "bash", DisplayName: "Bash", Intention: Ptr("list"), Meta: map[string]any{"k": "v"}})
	assert.Equal(t, "c1", running.ToolCallID())
	assert.Equal(t, "bash", running.ToolName())
	assert.Equal(t, "Bash", running.DisplayName())
	assert.Equal(t, "list", *running.Intention())
	assert.Equal(t, map[string]any{"k": "v"}, running.Meta())
	assert.Equal(t, "running", running.Status())

	byValue := ToolCallState{Value: ToolCallCancelledState{ToolCallID: "c2"}}
	assert.Equal(t, "c2", byValue.ToolCallID())
	assert.Equal(t, "cancelled", byValue.Status())

	var unknown ToolCallState
	require.NoError(t, json.Unmarshal([]byte(`{"status":"teleporting","toolCallId":"c3","toolName":7}`), &unknown))
	assert.Equal(t, "c3", unknown.ToolCallID(), "read from the raw JSON")
	assert.Equal(t, "", unknown.ToolName(), "a member of another type reads as the zero value")
	assert.Nil(t, unknown.Intention())
	assert.Equal(t, "teleporting", unknown.Status())

	assert.Equal(t, "", ToolCallState{}.ToolCallID())
	assert.Equal(t, "", ToolCallState{Value: (*ToolCallRunningState)(nil)}.ToolCallID())

	var confirmed ChatToolCallConfirmedAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"chat/toolCallConfirmed","turnId":"t","toolCallId":"c","approved":false,"reason":"denied"}`), &confirmed))
	assert.Equal(t, "t", confirmed.TurnID())
	assert.Equal(t, "c", confirmed.ToolCallID())

	c := NewCustomization(&McpServerCustomization{ID: "m", Name: "GitHub", Enabled: true})
	assert.Equal(t, "m", c.ID())
	assert.True(t, c.Enabled())
}

// TestNullAndAbsent checks the 0.7.0 policy: null decodes like an absent
// member, and absent optional members are not written (as null or
// otherwise).
func TestNullAndAbsent(t *testing.T) {
	withNulls := `{
		"resource": "ahp-chat:/c", "title": "T", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z",
		"activity": null, "origin": null, "workingDirectories": null,
		"turns": [],
		"activeTurn": {"id": "t", "startedAt": "2026-01-01T00:00:01.000Z", "message": {"text": "hi", "origin": {"kind": "user"}, "attachments": null},
		               "responseParts": [null], "usage": null},
		"steeringMessage": null,
		"queuedMessages": null,
		"draft": null,
		"_meta": null
	}`
	absent := `{
		"resource": "ahp-chat:/c", "title": "T", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z",
		"turns": [],
		"activeTurn": {"id": "t", "startedAt": "2026-01-01T00:00:01.000Z", "message": {"text": "hi", "origin": {"kind": "user"}}, "responseParts": [null]}
	}`
	var a, b ChatState
	require.NoError(t, json.Unmarshal([]byte(withNulls), &a))
	require.NoError(t, json.Unmarshal([]byte(absent), &b))
	assert.Equal(t, b, a)
	require.NotNil(t, a.ActiveTurn)
	assert.Nil(t, a.ActiveTurn.Usage)
	assert.Nil(t, a.QueuedMessages)
	assert.Nil(t, a.Origin)
	assert.Nil(t, a.ActiveTurn.ResponseParts[0].Value)

	out, err := json.Marshal(a)
	require.NoError(t, err)
	assert.JSONEq(t, absent, string(out))
}

// TestRequiredListsNeverNull checks that nil required lists encode as [],
// and that optional ones tell nil (absent) from empty ([]).
func TestRequiredListsNeverNull(t *testing.T) {
	out, err := json.Marshal(ChatState{Resource: "ahp-chat:/c"})
	require.NoError(t, err)
	assert.Contains(t, string(out), `"turns":[]`)
	assert.NotContains(t, string(out), `null`)

	out, err = json.Marshal(RootState{Terminals: []TerminalInfo{}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"agents":[],"terminals":[]}`, string(out))
	out, err = json.Marshal(RootState{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"agents":[]}`, string(out))
}

// TestNumbersAndTimestamps checks the 0.7.0 number and time shapes:
// sequence numbers and durations are int64, the @format float fields
// float64, ISO-8601 timestamps strings.
func TestNumbersAndTimestamps(t *testing.T) {
	var e ActionEnvelope
	require.NoError(t, json.Unmarshal([]byte(`{"channel":"ahp-chat:/c","serverSeq":9007199254740993,"origin":{"clientId":"c","clientSeq":4294967297},
		"action":{"type":"chat/turnComplete","turnId":"t","duration":86400000123}}`), &e))
	assert.Equal(t, int64(9007199254740993), e.ServerSeq, "beyond float64's exact integers")
	assert.Equal(t, int64(4294967297), e.Origin.ClientSeq)
	done, ok := e.Action.Value.(*ChatTurnCompleteAction)
	require.True(t, ok)
	assert.Equal(t, int64(86400000123), done.Duration)

	var started ChatTurnStartedAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"chat/turnStarted","turnId":"t","startedAt":"2026-07-13T19:01:00.000Z","message":{"text":"x","origin":{"kind":"user"}}}`), &started))
	assert.Equal(t, "2026-07-13T19:01:00.000Z", started.StartedAt)

	var s SessionSummary
	assert.Error(t, json.Unmarshal([]byte(`{"resource":"r","provider":"p","title":"t","status":1,"createdAt":1700000000000,"modifiedAt":"x"}`), &s),
		"0.7.0 timestamps are ISO-8601 strings, not the milliseconds of 0.3.0")

	var q ChatInputNumberQuestion
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"number","id":"q","message":"m","min":-0.5,"max":2.75,"defaultValue":1.25}`), &q))
	assert.Equal(t, 2.75, *q.Max)
	var r ToolCallRiskAssessmentCompleteState
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"judge","status":"complete","reason":"ok","safety":0.25}`), &r))
	assert.Equal(t, 0.25, r.Safety)

	var d ChatTurnCompleteAction
	assert.Error(t, json.Unmarshal([]byte(`{"type":"chat/turnComplete","turnId":"t","duration":1.5}`), &d), "durations are whole milliseconds")
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
	var d ChatToolCallDeltaAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"chat/toolCallDelta","turnId":"t","toolCallId":"c","content":"x"}`), &d))
	assert.Nil(t, d.InvocationMessage)
	assert.Equal(t, "hi", PlainText("hi").String())
}

func TestToolInput(t *testing.T) {
	tests := []struct {
		name, in, out string
		want          ToolInput
	}{
		{"text", `"ls -la"`, `"ls -la"`, ToolInputText("ls -la")},
		{"content reference", `{"uri":"ahp-content:/1","sizeHint":5,"contentType":"application/json"}`, `{"uri":"ahp-content:/1","sizeHint":5,"contentType":"application/json"}`,
			ToolInputRef(ContentRef{URI: "ahp-content:/1", SizeHint: Ptr(int64(5)), ContentType: Ptr("application/json")})},
		{"null", `null`, `""`, ToolInput{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in ToolInput
			require.NoError(t, json.Unmarshal([]byte(tt.in), &in))
			assert.Equal(t, tt.want, in)
			out, err := json.Marshal(in)
			require.NoError(t, err)
			assert.JSONEq(t, tt.out, string(out))
		})
	}
	for _, bad := range []string{`42`, `["x"]`, `{"uri":3}`, `false`} {
		var in ToolInput
		assert.Error(t, json.Unmarshal([]byte(bad), &in), bad)
	}
}

func TestSessionStatus(t *testing.T) {
	var s ChatSummary
	// 4096, 4 and bit 31 are bits AHP 0.7.0 does not name; they must survive.
	in := `{"resource":"r","title":"t","status":2147487788,"modifiedAt":"2026-01-01T00:00:00.000Z"}`
	require.NoError(t, json.Unmarshal([]byte(in), &s))
	unknown := SessionStatus(1<<31 | 4096 | 4)
	assert.Equal(t, unknown|SessionStatusInProgress|SessionStatusIsRead, s.Status)
	assert.True(t, s.Status.Has(SessionStatusInProgress))
	assert.False(t, s.Status.Has(SessionStatusInputNeeded))
	assert.True(t, s.Status.Has(SessionStatusIsRead))
	assert.Equal(t, unknown, s.Status.Unknown())
	assert.Equal(t, SessionStatus(4)|SessionStatusInProgress, s.Status.Activity())
	out, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))

	st := SessionStatusIdle.With(SessionStatusIsArchived)
	st = st.WithActivity(SessionStatusInputNeeded)
	assert.Equal(t, SessionStatusInputNeeded|SessionStatusIsArchived, st)
	assert.True(t, st.Has(SessionStatusInProgress), "InputNeeded includes the InProgress bit")
	assert.Equal(t, SessionStatusInputNeeded, st.Without(SessionStatusIsArchived))

	for _, bad := range []string{`4294967296`, `-1`, `1.5`} {
		var x SessionStatus
		assert.Error(t, json.Unmarshal([]byte(bad), &x), "%s is not a 32-bit bitset", bad)
	}
}

func TestJsonRpcMessage(t *testing.T) {
	tests := []struct {
		name, in string
		want     any
	}{
		{"request", `{"jsonrpc":"2.0","id":7,"method":"subscribe","params":{"channel":"ahp-chat:/c"}}`,
			&JsonRpcRequest{JSONRPC: "2.0", ID: 7, Method: "subscribe", Params: json.RawMessage(`{"channel":"ahp-chat:/c"}`)}},
		{"request without params", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, &JsonRpcRequest{JSONRPC: "2.0", ID: 1, Method: "ping"}},
		{"notification with null params", `{"jsonrpc":"2.0","method":"action","params":null}`,
			&JsonRpcNotification{JSONRPC: "2.0", Method: "action", Params: json.RawMessage(`null`)}},
		{"null result", `{"jsonrpc":"2.0","id":3,"result":null}`, &JsonRpcSuccessResponse{JSONRPC: "2.0", ID: 3, Result: json.RawMessage(`null`)}},
		{"error with data", `{"jsonrpc":"2.0","id":4,"error":{"code":-32007,"message":"auth","data":{"resources":[]}}}`,
			&JsonRpcErrorResponse{JSONRPC: "2.0", ID: Ptr(int64(4)), Error: JsonRpcError{Code: CodeAuthRequired, Message: "auth", Data: json.RawMessage(`{"resources":[]}`)}}},
		{"error without id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
			&JsonRpcErrorResponse{JSONRPC: "2.0", Error: JsonRpcError{Code: CodeParseError, Message: "parse error"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m JsonRpcMessage
			require.NoError(t, json.Unmarshal([]byte(tt.in), &m))
			assert.Equal(t, tt.want, m.Value)
			out, err := Marshal(m)
			require.NoError(t, err)
			assert.Equal(t, jsonValue(t, []byte(tt.in)), jsonValue(t, out), "%s", out)
		})
	}
	for _, bad := range []string{`[]`, `{"jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":"x","method":"m"}`, `"x"`} {
		var m JsonRpcMessage
		assert.Error(t, json.Unmarshal([]byte(bad), &m), bad)
	}
	_, err := json.Marshal(JsonRpcMessage{Value: 3})
	assert.Error(t, err)

	// Built in code, "jsonrpc" is filled in and a nil result is null.
	out, err := json.Marshal(JsonRpcMessage{Value: &JsonRpcSuccessResponse{ID: 9}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":9,"result":null}`, string(out))
	out, err = json.Marshal(JsonRpcNotification{Method: MethodAction})
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"action"}`, string(out))
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
		{"origin not an object", `{"resource":"r","title":"t","status":1,"modifiedAt":"m","origin":"fork"}`, new(ChatSummary)},
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
	assert.True(t, ActionTypeChatTurnStarted.Known())
	assert.False(t, ActionType("session/turnStarted").Known(), "a 0.3.0 action type")
	assert.True(t, ToolCallStatusAuthRequired.Known())
	assert.Equal(t, "auth-required", string(ToolCallStatusAuthRequired))
	assert.Equal(t, "read-only", string(ChatInteractivityReadOnly))
	assert.False(t, ChatInteractivity("spectator").Known())
}

func TestPtr(t *testing.T) {
	p := Ptr(3)
	*p = 4
	assert.Equal(t, 4, *p)
	assert.Equal(t, "x", *Ptr("x"))
}

func TestSnapshotStateAs(t *testing.T) {
	var snap Snapshot
	require.NoError(t, json.Unmarshal([]byte(`{"resource":"ahp-chat:/c","fromSeq":3,"state":{"resource":"ahp-chat:/c","title":"T","status":1,"modifiedAt":"2026-01-01T00:00:00.000Z","turns":[]}}`), &snap))
	var chat ChatState
	require.NoError(t, snap.State.As(&chat))
	assert.Equal(t, "T", chat.Title)

	// Built in code, the state holds a pointer and encodes as that state.
	built := Snapshot{Resource: RootChannel, State: NewSnapshotState(RootState{}), FromSeq: 1}
	out, err := json.Marshal(built)
	require.NoError(t, err)
	assert.JSONEq(t, `{"resource":"ahp-root://","state":{"agents":[]},"fromSeq":1}`, string(out))

	var term TerminalState
	assert.Error(t, SnapshotState{Value: json.RawMessage(`[1]`)}.As(&term))
	assert.Error(t, json.Unmarshal([]byte(`{"resource":"x","fromSeq":1,"state":"oops"}`), &snap))
}
