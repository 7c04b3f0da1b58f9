package wire

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnknownVariantIsRaw(t *testing.T) {
	in := `{"type":"chat/fromTheFuture","x":[1,{"y":null}]}`
	var a StateAction
	require.NoError(t, json.Unmarshal([]byte(in), &a))
	raw, ok := a.Value.(json.RawMessage)
	require.True(t, ok, "got %T", a.Value)
	assert.Equal(t, "chat/fromTheFuture", a.Type())
	assert.False(t, ActionType(a.Type()).Known())
	assert.True(t, ActionType(a.Type()).Open(), "an action type a later version adds is valid")
	assert.JSONEq(t, in, string(raw))

	// A 1.1.0 notification's action-like payload is just as unknown.
	var c ChatAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"channel/frame","channel":"ahp-chat:/c","seq":1}`), &c))
	_, ok = c.Value.(json.RawMessage)
	assert.True(t, ok, "got %T", c.Value)

	// A variant without any discriminator is unknown too, not an error.
	var w BackgroundWork
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x"}`), &w))
	assert.Equal(t, "", w.Kind())
}

// TestMarshalKeepsRawBytes checks that Marshal writes unknown variants back
// exactly, HTML-significant characters and escapes included.
func TestMarshalKeepsRawBytes(t *testing.T) {
	in := `{"type":"automation/fromTheFuture","html":"<b>&amp;</b>","esc":"\u00e9\n","n":1.50}`
	var a StateAction
	require.NoError(t, json.Unmarshal([]byte(in), &a))
	out, err := Marshal(a)
	require.NoError(t, err)
	assert.Equal(t, in, string(out))
}

// TestKnownVariants checks that the unions 0.8.0-1.0.0 added decode their
// variants into the right structs, with typed discriminators.
func TestKnownVariants(t *testing.T) {
	tests := []struct {
		name string
		json string
		into any
		want any
	}{
		{"error part", `{"kind":"error","error":{"errorType":"e","message":"m"},"resumable":true}`, new(ResponsePart),
			&ErrorResponsePart{Kind: ResponsePartKindError, Error: ErrorInfo{ErrorType: "e", Message: "m"}, Resumable: Ptr(true)}},
		{"running terminal", `{"status":"running"}`, new(TerminalLifecycleState),
			&TerminalRunningLifecycleState{Status: TerminalLifecycleStatusRunning}},
		{"exited terminal", `{"status":"exited","exitCode":137}`, new(TerminalLifecycleState),
			&TerminalExitedLifecycleState{Status: TerminalLifecycleStatusExited, ExitCode: Ptr(int64(137))}},
		{"subagent work", `{"id":"w","label":"L","startedAt":"s","kind":"subagent","chat":"ahp-chat:/w"}`, new(BackgroundWork),
			&BackgroundSubagentWork{Kind: BackgroundWorkKindSubagent, ID: "w", Label: "L", StartedAt: "s", Chat: "ahp-chat:/w"}},
		{"global enablement", `{"kind":"global","enabled":true}`, new(CustomizationEnablement),
			&CustomizationEnablementGlobal{Kind: CustomizationEnablementKindGlobal, Enabled: true}},
		{"move into a session", `{"kind":"session","session":"ahp-session:/s","after":"ahp-chat:/a"}`, new(ChatMoveDestination),
			&ChatMoveToSessionDestination{Kind: ChatMoveDestinationKindSession, Session: "ahp-session:/s", After: Ptr("ahp-chat:/a")}},
		{"move into a new session", `{"kind":"newSession"}`, new(ChatMoveDestination),
			&ChatMoveToNewSessionDestination{Kind: ChatMoveDestinationKindNewSession}},
		{"schedule trigger", `{"id":"t","kind":"schedule","schedule":{"expression":"0 * * * *","timeZone":"UTC"}}`, new(AutomationTrigger),
			&AutomationScheduleTrigger{Kind: AutomationTriggerKindSchedule, ID: "t", Schedule: AutomationSchedule{Expression: "0 * * * *", TimeZone: "UTC"}}},
		{"after-runs condition", `{"kind":"afterRuns","max":3}`, new(AutomationDisableCondition),
			&AutomationAfterRunsCondition{Kind: AutomationDisableConditionKindAfterRuns, Max: 3}},
		{"pending run", `{"status":"pending","createdAt":"c"}`, new(AutomationRunLifecycle),
			&AutomationPendingRunLifecycle{Status: AutomationRunStatusPending, CreatedAt: "c"}},
		{"manual run", `{"kind":"manual"}`, new(AutomationRunOrigin),
			&AutomationManualRunOrigin{Kind: AutomationRunOriginKindManual}},
		{"automation origin", `{"kind":"automation","automation":"ahp-automation:/a","run":"ahp-automation-run:/r"}`, new(SessionOrigin),
			&AutomationSessionOrigin{Kind: SessionOriginKindAutomation, Automation: "ahp-automation:/a", Run: "ahp-automation-run:/r"}},
		{"turn resume in the chat union", `{"type":"chat/turnResume","turnId":"t"}`, new(ChatAction),
			&ChatTurnResumeAction{Type: ActionTypeChatTurnResume, TurnID: "t"}},
		{"snapshot reconnect", `{"type":"snapshot","snapshots":[]}`, new(ReconnectResult),
			&ReconnectSnapshotResult{Type: ReconnectResultTypeSnapshot, Snapshots: []Snapshot{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, json.Unmarshal([]byte(tt.json), tt.into))
			assert.Equal(t, tt.want, reflect.ValueOf(tt.into).Elem().FieldByName("Value").Interface())
			out, err := json.Marshal(tt.into)
			require.NoError(t, err)
			assert.JSONEq(t, tt.json, string(out))
		})
	}
}

// TestAccessors checks the accessors of the unions every variant of which
// has the property, on known and unknown variants.
func TestAccessors(t *testing.T) {
	w := NewBackgroundWork(&BackgroundShellWork{ID: "w1", Label: "watch", StartedAt: "s", Command: "npm run watch"})
	assert.Equal(t, "w1", w.ID())
	assert.Equal(t, "watch", w.Label())
	assert.Equal(t, "shell", w.Kind())

	var unknown BackgroundWork
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"cron","id":"w2","label":7}`), &unknown))
	assert.Equal(t, "w2", unknown.ID(), "read from the raw JSON")
	assert.Equal(t, "", unknown.Label(), "a member of another type reads as the zero value")

	c := NewCustomization(&McpServerCustomization{ID: "m", Name: "GitHub"})
	assert.Equal(t, "m", c.ID())
	assert.Equal(t, "mcpServer", c.Type())
}

// TestRequiredListsNeverNull checks that nil required lists encode as [],
// among them the ones 0.8.0-1.0.0 added.
func TestRequiredListsNeverNull(t *testing.T) {
	for _, v := range []any{
		ChatState{Resource: "ahp-chat:/c"},
		SessionState{},
		SessionChatsReorderedAction{},
		AutomationEntry{},
		AutomationState{},
	} {
		out, err := json.Marshal(v)
		require.NoError(t, err)
		assert.NotContains(t, string(out), "null", "%T: %s", v, out)
	}
	out, err := json.Marshal(SessionSummary{Chats: []SessionChatSummary{}})
	require.NoError(t, err)
	assert.Contains(t, string(out), `"chats":[]`, "an empty catalogue is not an absent one")
	out, err = json.Marshal(SessionSummary{})
	require.NoError(t, err)
	assert.NotContains(t, string(out), `"chats"`)
}

// TestNumbers checks the number shapes: counts and durations are int64,
// whether the schemas say "number" or "integer"; the @format float fields
// are float64.
func TestNumbers(t *testing.T) {
	var e ActionEnvelope
	require.NoError(t, json.Unmarshal([]byte(`{"channel":"ahp-chat:/c","serverSeq":9007199254740993,
		"action":{"type":"chat/error","turnId":"t","duration":86400000123,"part":{"kind":"error","error":{"errorType":"e","message":"m"}}}}`), &e))
	assert.Equal(t, int64(9007199254740993), e.ServerSeq, "beyond float64's exact integers")
	assert.Equal(t, int64(86400000123), requireAs[*ChatErrorAction](t, e.Action.Value).Duration)

	var p AuthenticateParams
	require.NoError(t, json.Unmarshal([]byte(`{"channel":"ahp-root://","resource":"https://r","token":"x","expiresIn":3600}`), &p))
	assert.Equal(t, int64(3600), *p.ExpiresIn)
	var s ConfigPropertySchema
	require.NoError(t, json.Unmarshal([]byte(`{"type":"array","title":"t","minItems":1,"maxItems":4}`), &s))
	assert.Equal(t, int64(4), *s.MaxItems)
	var r AutomationEntry
	require.NoError(t, json.Unmarshal([]byte(`{"resource":"a","definition":{"title":"t","message":{"text":"x","origin":{"kind":"automation"}},"session":{},"enabled":true,"triggers":[]},"runCount":12,"runs":[],"operations":[],"createdAt":"c","modifiedAt":"m"}`), &r))
	assert.Equal(t, int64(12), *r.RunCount)

	var q ChatInputNumberQuestion
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"number","id":"q","message":"m","min":-0.5,"max":2.75}`), &q))
	assert.Equal(t, 2.75, *q.Max)
	var d ChatTurnCompleteAction
	assert.Error(t, json.Unmarshal([]byte(`{"type":"chat/turnComplete","turnId":"t","duration":1.5}`), &d), "durations are whole milliseconds")
	var c AutomationAfterRunsCondition
	assert.Error(t, json.Unmarshal([]byte(`{"kind":"afterRuns","max":2.5}`), &c), "the schemas say integer")
}

func TestStringOrMarkdown(t *testing.T) {
	for in, want := range map[string]StringOrMarkdown{`"ls"`: PlainText("ls"), `{"markdown":"**b**"}`: MarkdownText("**b**"), `null`: {}} {
		var s StringOrMarkdown
		require.NoError(t, json.Unmarshal([]byte(in), &s), in)
		assert.Equal(t, want, s)
	}
	for _, bad := range []string{`42`, `{"text":"x"}`, `{"markdown":7}`, `["x"]`} {
		var s StringOrMarkdown
		assert.Error(t, json.Unmarshal([]byte(bad), &s), bad)
	}
	out, err := json.Marshal(MarkdownText("_x_"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"markdown":"_x_"}`, string(out))
}

func TestToolInput(t *testing.T) {
	var in ToolInput
	require.NoError(t, json.Unmarshal([]byte(`{"uri":"ahp-content:/1","sizeHint":5}`), &in))
	assert.Equal(t, ToolInputRef(ContentRef{URI: "ahp-content:/1", SizeHint: Ptr(int64(5))}), in)
	require.NoError(t, json.Unmarshal([]byte(`"ls"`), &in))
	assert.Equal(t, ToolInputText("ls"), in)
	for _, bad := range []string{`42`, `["x"]`, `{"uri":3}`} {
		assert.Error(t, json.Unmarshal([]byte(bad), &in), bad)
	}
}

func TestSessionStatus(t *testing.T) {
	var s SessionChatSummary
	in := `{"resource":"r","title":"t","status":2147487788}`
	require.NoError(t, json.Unmarshal([]byte(in), &s))
	unknown := SessionStatus(1<<31 | 4096 | 4)
	assert.Equal(t, unknown|SessionStatusInProgress|SessionStatusIsRead, *s.Status)
	assert.Equal(t, unknown, s.Status.Unknown())
	assert.Equal(t, SessionStatus(4)|SessionStatusInProgress, s.Status.Activity())
	out, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, in, string(out))

	st := SessionStatusIdle.With(SessionStatusIsArchived).WithActivity(SessionStatusInputNeeded)
	assert.Equal(t, SessionStatusInputNeeded|SessionStatusIsArchived, st)
	assert.True(t, st.Has(SessionStatusInProgress), "InputNeeded includes the InProgress bit")
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
		{"request", `{"jsonrpc":"2.0","id":7,"method":"moveChat","params":{"channel":"ahp-chat:/c","destination":{"kind":"newSession"}}}`,
			&JsonRpcRequest{JSONRPC: "2.0", ID: 7, Method: MethodMoveChat, Params: json.RawMessage(`{"channel":"ahp-chat:/c","destination":{"kind":"newSession"}}`)}},
		{"notification", `{"jsonrpc":"2.0","method":"action","params":null}`,
			&JsonRpcNotification{JSONRPC: "2.0", Method: "action", Params: json.RawMessage(`null`)}},
		{"success", `{"jsonrpc":"2.0","id":3,"result":{"items":[]}}`, &JsonRpcSuccessResponse{JSONRPC: "2.0", ID: 3, Result: json.RawMessage(`{"items":[]}`)}},
		{"error", `{"jsonrpc":"2.0","id":4,"error":{"code":-32011,"message":"conflict"}}`,
			&JsonRpcErrorResponse{JSONRPC: "2.0", ID: Ptr(int64(4)), Error: JsonRpcError{Code: CodeConflict, Message: "conflict"}}},
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
	for _, bad := range []string{`[]`, `{"jsonrpc":"2.0","id":1}`, `"x"`} {
		var m JsonRpcMessage
		assert.Error(t, json.Unmarshal([]byte(bad), &m), bad)
	}
}

// TestErrorCodesAndMethods checks the hand-written constants against the
// schemas' AhpErrorCode values and the method names 1.0.0 added.
func TestErrorCodesAndMethods(t *testing.T) {
	codes := []int{CodeSessionNotFound, CodeProviderNotFound, CodeSessionAlreadyExists, CodeTurnInProgress,
		CodeUnsupportedProtocolVersion, CodeAuthRequired, CodeNotFound, CodePermissionDenied, CodeAlreadyExists, CodeConflict}
	assert.Equal(t, []int{-32001, -32002, -32003, -32004, -32005, -32007, -32008, -32009, -32010, -32011}, codes,
		"the AhpErrorCode enum of the 1.x schemas; -32006 is unassigned since 0.9.0")
	assert.Equal(t, "1.0.0", ProtocolVersion)
	assert.Equal(t, []string{"moveChat", "listAutomationTriggerDefinitions", "runAutomation", "fetchAutomationRuns"},
		[]string{MethodMoveChat, MethodListAutomationTriggerDefinitions, MethodRunAutomation, MethodFetchAutomationRuns})
	assert.Equal(t, "ahp-automations://", AutomationsChannel)
}

// TestNothingOf110 checks that the items AHP 1.1.0 added, which the 0383429
// schemas hold, were dropped: no type and no field for them.
func TestNothingOf110(t *testing.T) {
	for _, tt := range []struct {
		v     any
		field string
	}{
		{InitializeResult{}, "TcpConnections"},
		{SubscribeParams{}, "FlowControl"},
		{SubscribeResult{}, "FlowControl"},
		{ReconnectParams{}, "Windows"},
		{ReconnectReplayResult{}, "Windows"},
		{ReconnectSnapshotResult{}, "Windows"},
		{SessionModelInfo{}, "Vendor"},
	} {
		_, ok := reflect.TypeOf(tt.v).FieldByName(tt.field)
		assert.False(t, ok, "%T.%s is AHP 1.1.0", tt.v, tt.field)
	}
	src := readGenerated(t)
	for _, name := range []string{"ChannelFrameParams", "ChannelCreditParams", "ChannelReadyParams", "ChannelResetParams",
		"ChannelSnapshotParams", "ChannelRecoveryKind", "ChannelFlowControl", "ChannelReceiveLimits", "ResumedChannelSubscription",
		"ChannelDeliveryResumeParams", "ChannelDeliveryResumeOptions", "ChannelDeliveryResumeResult", "SubscriptionFlowControlOptions",
		"TcpConnectionsCapability", "CreateTcpConnectionParams", "TcpDataParams", "TcpEofParams"} {
		assert.NotContains(t, src, "type "+name+" ", "%s is AHP 1.1.0", name)
	}
	var n ProtocolNotification
	require.NoError(t, json.Unmarshal([]byte(`{"channel":"ahp-tcp:/1","data":"aGk="}`), &n))
	for _, v := range generatedUnionVariants(t, "ProtocolNotification") {
		assert.NotContains(t, v, "Tcp")
		assert.NotContains(t, v, "Channel")
	}
}

// readGenerated returns the text of every *.gen.go file.
func readGenerated(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob("*.gen.go")
	require.NoError(t, err)
	require.Len(t, files, 3)
	var b strings.Builder
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		b.Write(src)
	}
	return b.String()
}

// generatedUnionVariants lists the variants a union's documentation names.
func generatedUnionVariants(t *testing.T, union string) []string {
	t.Helper()
	src := readGenerated(t)
	i := strings.Index(src, "\n// "+union+": ")
	require.GreaterOrEqual(t, i, 0, "no union %s", union)
	doc := src[i:]
	doc = doc[:strings.Index(doc, "\ntype ")]
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		if v, ok := strings.CutPrefix(line, "//   - *"); ok {
			out = append(out, v)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestGeneratedHeader checks that every generated file names where its
// schemas came from: the commit, and that the 1.1.0 items were dropped.
func TestGeneratedHeader(t *testing.T) {
	files, err := filepath.Glob("*.gen.go")
	require.NoError(t, err)
	require.Len(t, files, 3)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		head, _, ok := strings.Cut(string(src), "\npackage wire\n")
		require.True(t, ok)
		assert.True(t, strings.HasPrefix(head, "// Code generated by ahp/internal/wiregen from the AHP 1.0.0 JSON schemas; DO NOT EDIT.\n"), f)
		assert.Contains(t, head, "commit 0383429", f)
		assert.Contains(t, head, "1.1.0 added are\n// dropped", f)
	}
}

// TestEveryEnumSaysIfOpen parses enums.gen.go and checks that every string
// enum has an Open method, so that no enum's openness was left undecided,
// and a few of them each way.
func TestEveryEnumSaysIfOpen(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "enums.gen.go", nil, 0)
	require.NoError(t, err)
	enums, open := map[string]bool{}, map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					if id, ok := ts.Type.(*ast.Ident); ok && id.Name == "string" {
						enums[ts.Name.Name] = true
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil && d.Name.Name == "Open" {
				open[d.Recv.List[0].Type.(*ast.Ident).Name] = true
			}
		}
	}
	require.Greater(t, len(enums), 45)
	for e := range enums {
		assert.True(t, open[e], "enum %s does not say whether it is open", e)
	}
	for _, o := range []interface{ Open() bool }{ActionType(""), MessageKind(""), ResponsePartKind(""), SessionLifecycle(""),
		ToolCallStatus(""), ChangesetStatus(""), CustomizationEnablementKind(""), BackgroundWorkKind(""), AuthRequiredReason("")} {
		assert.True(t, o.Open(), "%T is @nonexhaustive", o)
	}
	for _, c := range []interface{ Open() bool }{TurnState(""), ChatInteractivity(""), TerminalLifecycleStatus(""), TerminalClaimKind(""),
		ToolCallCancellationReason(""), ReconnectResultType(""), ContentEncoding(""), AutomationRunStatus("")} {
		assert.False(t, c.Open(), "%T is @exhaustive", c)
	}
}

// TestEnumNames checks member names and values that are new in 1.0.0.
func TestEnumNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{string(SessionLifecycleFailed), "failed"},
		{string(ResponsePartKindError), "error"},
		{string(ChangesetStatusRecomputing), "recomputing"},
		{string(MessageKindAutomation), "automation"},
		{string(BackgroundWorkKindShell), "shell"},
		{string(ChatMoveDestinationKindNewSession), "newSession"},
		{string(TerminalLifecycleStatusExited), "exited"},
		{string(CustomizationEnablementKindWorkspace), "workspace"},
		{string(SessionOriginKindAutomation), "automation"},
		{string(AutomationDisableConditionKindAfterDate), "afterDate"},
		{string(ActionTypeChatTurnResume), "chat/turnResume"},
		{string(ActionTypeAutomationRunCancelRequested), "automationRun/cancelRequested"},
	} {
		assert.Equal(t, tt.want, tt.got)
	}
	assert.False(t, SessionLifecycle("creationFailed").Known(), "renamed to failed in 0.9.0")
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
		{"known action with a bad field", `{"type":"chat/isReadChanged","isRead":"yes"}`, new(StateAction)},
		{"error part with a bad error", `{"kind":"error","error":"boom"}`, new(ResponsePart)},
		{"lifecycle not an object", `{"resource":"r","title":"t","claim":{"kind":"client","clientId":"c"},"lifecycle":"running"}`, new(TerminalInfo)},
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

func TestSnapshotStateAs(t *testing.T) {
	var snap Snapshot
	require.NoError(t, json.Unmarshal([]byte(`{"resource":"ahp-automations://","fromSeq":3,"state":{"entries":[]}}`), &snap))
	var a AutomationState
	require.NoError(t, snap.State.As(&a))
	assert.NotNil(t, a.Entries)

	built := Snapshot{Resource: RootChannel, State: NewSnapshotState(RootState{}), FromSeq: 1}
	out, err := json.Marshal(built)
	require.NoError(t, err)
	assert.JSONEq(t, `{"resource":"ahp-root://","state":{"agents":[]},"fromSeq":1}`, string(out))
}
