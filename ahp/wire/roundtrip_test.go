package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTripCase is one case of testdata/roundtrips.json: input decodes into
// the Go type named by type and encodes again as output, or as input when
// there is no output. The cases are ours, written for the shapes 0.8.0-1.0.0
// changed (docs/protocol-versions.md §11.2); the release's own round-trip
// corpus runs beside them in corpus_test.go.
type roundTripCase struct {
	Name   string          `json:"name"`
	Note   string          `json:"note"`
	Type   string          `json:"type"`
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
}

// roundTripTypes maps the cases' type names to the Go types they decode into.
var roundTripTypes = map[string]func() any{
	"ActionEnvelope":              func() any { return new(ActionEnvelope) },
	"BackgroundWork":              func() any { return new(BackgroundWork) },
	"ChangesetState":              func() any { return new(ChangesetState) },
	"ChatState":                   func() any { return new(ChatState) },
	"ClientPluginCustomization":   func() any { return new(ClientPluginCustomization) },
	"Customization":               func() any { return new(Customization) },
	"CustomizationEnablement":     func() any { return new(CustomizationEnablement) },
	"McpServerCustomization":      func() any { return new(McpServerCustomization) },
	"ResponsePart":                func() any { return new(ResponsePart) },
	"SessionChatSummary":          func() any { return new(SessionChatSummary) },
	"SessionState":                func() any { return new(SessionState) },
	"SessionSummary":              func() any { return new(SessionSummary) },
	"SessionSummaryChangedParams": func() any { return new(SessionSummaryChangedParams) },
	"TerminalClaim":               func() any { return new(TerminalClaim) },
	"TerminalInfo":                func() any { return new(TerminalInfo) },
	"TerminalState":               func() any { return new(TerminalState) },
	"Turn":                        func() any { return new(Turn) },
}

// roundTripChecks look into the decoded value of the named cases: the right
// variant, the right enum, a value kept apart from an absence.
var roundTripChecks = map[string]func(t *testing.T, v any){
	"error part, resumable": func(t *testing.T, v any) {
		p := requireAs[*ErrorResponsePart](t, v.(*ResponsePart).Value)
		assert.Equal(t, ResponsePartKindError, p.Kind)
		assert.True(t, *p.Resumable)
		assert.Equal(t, "rateLimited", p.Error.ErrorType)
	},
	"error part, resumable false is kept": func(t *testing.T, v any) {
		p := requireAs[*ErrorResponsePart](t, v.(*ResponsePart).Value)
		require.NotNil(t, p.Resumable)
		assert.False(t, *p.Resumable)
	},
	"error part, resumable absent": func(t *testing.T, v any) {
		assert.Nil(t, requireAs[*ErrorResponsePart](t, v.(*ResponsePart).Value).Resumable)
	},
	"turn that ended at an error part": func(t *testing.T, v any) {
		turn := v.(*Turn)
		assert.Equal(t, TurnStateError, turn.State)
		require.Len(t, turn.ResponseParts, 4)
		last := requireAs[*ErrorResponsePart](t, turn.ResponseParts[3].Value)
		assert.Equal(t, "second attempt failed", last.Error.Message)
	},
	"chat/error envelope": func(t *testing.T, v any) {
		a := requireAs[*ChatErrorAction](t, v.(*ActionEnvelope).Action.Value)
		assert.Equal(t, "crash", a.Part.Error.ErrorType)
	},
	"session lifecycle failed": func(t *testing.T, v any) {
		s := v.(*SessionState)
		assert.Equal(t, SessionLifecycleFailed, s.Lifecycle)
		assert.True(t, s.Lifecycle.Known())
	},
	"0.7.0 lifecycle creationFailed is kept as an unknown value": func(t *testing.T, v any) {
		l := v.(*SessionState).Lifecycle
		assert.Equal(t, SessionLifecycle("creationFailed"), l)
		assert.False(t, l.Known())
		assert.True(t, l.Open(), "an unknown value of an open enum is valid")
	},
	"terminal running": func(t *testing.T, v any) {
		requireAs[*TerminalRunningLifecycleState](t, v.(*TerminalState).Lifecycle.Value)
		assert.Equal(t, "running", v.(*TerminalState).Lifecycle.Status())
	},
	"terminal exited without an exit code": func(t *testing.T, v any) {
		assert.Nil(t, requireAs[*TerminalExitedLifecycleState](t, v.(*TerminalState).Lifecycle.Value).ExitCode)
		c := requireAs[*TerminalSessionClaim](t, v.(*TerminalState).Claim.Value)
		assert.Equal(t, "ahp-chat:/c3", c.Chat)
	},
	"terminal exited with code 0": func(t *testing.T, v any) {
		e := requireAs[*TerminalExitedLifecycleState](t, v.(*TerminalInfo).Lifecycle.Value)
		require.NotNil(t, e.ExitCode)
		assert.Equal(t, int64(0), *e.ExitCode)
	},
	"terminal lifecycle of an unknown status": func(t *testing.T, v any) {
		l := v.(*TerminalInfo).Lifecycle
		requireAs[json.RawMessage](t, l.Value)
		assert.Equal(t, "suspended", l.Status())
		assert.False(t, TerminalLifecycleStatus(l.Status()).Open(), "closed: a host may reject it, but decoding keeps it")
	},
	"session terminal claim names its chat": func(t *testing.T, v any) {
		c := requireAs[*TerminalSessionClaim](t, v.(*TerminalClaim).Value)
		assert.Equal(t, "ahp-chat:/c3", c.Chat)
		assert.Equal(t, "call-9", *c.ToolCallID)
	},
	"session summary with its chat catalogue": func(t *testing.T, v any) {
		s := v.(*SessionSummary)
		require.Len(t, s.Chats, 3)
		assert.Equal(t, "ahp-chat:/c3", *s.DefaultChat)
		assert.Equal(t, SessionStatusInProgress|SessionStatusIsRead, *s.Chats[0].Status)
		assert.True(t, s.Chats[1].Status.Has(SessionStatusIsArchived))
		assert.Equal(t, ChatInteractivityReadOnly, *s.Chats[1].Interactivity)
		requireAs[*ChatOriginSideChat](t, s.Chats[1].Origin.Value)
		assert.Nil(t, s.Chats[2].Status, "absent status means unknown, not unread")
	},
	"session summary from an automation run": func(t *testing.T, v any) {
		o := requireAs[*AutomationSessionOrigin](t, v.(*SessionSummary).Origin.Value)
		assert.Equal(t, SessionOriginKindAutomation, o.Kind)
	},
	"session origin of an unknown kind": func(t *testing.T, v any) {
		o := v.(*SessionSummary).Origin
		requireAs[json.RawMessage](t, o.Value)
		assert.Equal(t, "import", o.Kind())
	},
	"chat summary with unknown status bits": func(t *testing.T, v any) {
		s := v.(*SessionChatSummary)
		assert.Equal(t, SessionStatus(1<<31), s.Status.Unknown())
		assert.True(t, s.Status.Has(SessionStatusIsRead))
	},
	"chat summary status 0 is not absent": func(t *testing.T, v any) {
		s := v.(*SessionChatSummary)
		require.NotNil(t, s.Status)
		assert.Equal(t, SessionStatus(0), *s.Status)
	},
	"catalogue replaced by an empty one": func(t *testing.T, v any) {
		c := v.(*SessionSummaryChangedParams).Changes.Chats
		assert.NotNil(t, c)
		assert.Empty(t, c)
	},
	"catalogue left alone": func(t *testing.T, v any) {
		assert.Nil(t, v.(*SessionSummaryChangedParams).Changes.Chats)
	},
	"MCP server enablement, most specific first": func(t *testing.T, v any) {
		m := v.(*McpServerCustomization)
		require.Len(t, m.Enablement, 3)
		s := requireAs[*CustomizationEnablementSession](t, m.Enablement[0].Value)
		assert.False(t, s.Enabled)
		w := requireAs[*CustomizationEnablementWorkspace](t, m.Enablement[1].Value)
		assert.Equal(t, "file:///w", w.URI)
		requireAs[*CustomizationEnablementGlobal](t, m.Enablement[2].Value)
		st := requireAs[*McpServerStartingState](t, m.State.Value)
		assert.True(t, *st.Blocking)
	},
	"plugin without enablement decisions": func(t *testing.T, v any) {
		assert.Nil(t, requireAs[*PluginCustomization](t, v.(*Customization).Value).Enablement)
	},
	"client plugin with child enablement": func(t *testing.T, v any) {
		c := v.(*ClientPluginCustomization)
		require.Len(t, c.ChildEnablement["search"], 1)
		assert.Equal(t, "global", c.ChildEnablement["search"][0].Kind())
		assert.NotNil(t, c.ChildEnablement["docs"], "an empty decision list is not an absent one")
	},
	"enablement of an unknown scope": func(t *testing.T, v any) {
		e := v.(*CustomizationEnablement)
		requireAs[json.RawMessage](t, e.Value)
		assert.True(t, CustomizationEnablementKind(e.Kind()).Open())
	},
	"open enum values survive: message kind and turn state": func(t *testing.T, v any) {
		turn := v.(*Turn)
		assert.Equal(t, MessageKind("webhook"), turn.Message.Origin.Kind)
		assert.False(t, turn.Message.Origin.Kind.Known())
		assert.True(t, turn.Message.Origin.Kind.Open())
		assert.Equal(t, TurnState("suspended"), turn.State)
		assert.False(t, turn.State.Known())
		assert.False(t, turn.State.Open())
	},
	"open enum values survive: response part kind": func(t *testing.T, v any) {
		p := v.(*ResponsePart)
		requireAs[json.RawMessage](t, p.Value)
		assert.Equal(t, "canvasSnapshot", p.Kind())
	},
	"open enum values survive: changeset status": func(t *testing.T, v any) {
		s := v.(*ChangesetState).Status
		assert.False(t, s.Known())
		assert.True(t, s.Open())
	},
	"open enum values survive: background work kind": func(t *testing.T, v any) {
		w := v.(*BackgroundWork)
		requireAs[json.RawMessage](t, w.Value)
		assert.Equal(t, "bg-2", w.ID(), "read from the raw JSON")
	},
	"background shell work": func(t *testing.T, v any) {
		w := requireAs[*BackgroundShellWork](t, v.(*BackgroundWork).Value)
		assert.Equal(t, "npm run dev", w.Command)
		assert.Nil(t, w.Terminal)
	},
	"nulls are absences": func(t *testing.T, v any) {
		c := v.(*ChatState)
		assert.Nil(t, c.Changesets)
		assert.Nil(t, c.BackgroundWork)
		assert.Nil(t, c.Movable)
		assert.Nil(t, requireAs[*ErrorResponsePart](t, c.ActiveTurn.ResponseParts[0].Value).Resumable)
	},
	"empty lists are not absences": func(t *testing.T, v any) {
		c := v.(*ChatState)
		assert.NotNil(t, c.Changesets)
		assert.NotNil(t, c.BackgroundWork)
		assert.NotNil(t, c.Canvases)
	},
}

// requireAs asserts that v holds a T and returns it.
func requireAs[T any](t *testing.T, v any) T {
	t.Helper()
	x, ok := v.(T)
	require.True(t, ok, "got %T, want %T", v, *new(T))
	return x
}

// TestRoundTripCases decodes every case of testdata/roundtrips.json,
// encodes it again and compares with the expected output: key order does
// not matter, but a null is not an absent member, nor [] an absent list.
func TestRoundTripCases(t *testing.T) {
	var cases []roundTripCase
	require.NoError(t, json.Unmarshal(readTestdata(t, "roundtrips.json"), &cases))
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			require.False(t, seen[c.Name], "two cases named %q", c.Name)
			seen[c.Name] = true
			newValue, ok := roundTripTypes[c.Type]
			require.True(t, ok, "case type %q has no Go type in roundTripTypes", c.Type)
			v := newValue()
			require.NoError(t, json.Unmarshal(c.Input, v))
			out, err := Marshal(v)
			require.NoError(t, err)
			want := c.Output
			if want == nil {
				want = c.Input
			}
			assert.Equal(t, jsonValue(t, want), jsonValue(t, out), "got: %s", out)
			if check := roundTripChecks[c.Name]; check != nil {
				check(t, v)
			}
		})
	}
	for name := range roundTripChecks {
		assert.True(t, seen[name], "roundTripChecks names %q, which testdata/roundtrips.json lacks", name)
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
