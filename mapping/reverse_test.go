package mapping

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

var acpOptions = []backend.PermissionOption{
	{ID: "o-allow", Name: "Allow", Kind: backend.AllowOnce},
	{ID: "o-always", Name: "Always", Kind: backend.AllowAlways},
	{ID: "o-reject", Name: "Reject", Kind: backend.RejectOnce},
	{ID: "o-never", Name: "Never", Kind: backend.RejectAlways},
}

// decodeConfirmed decodes a client's toolCallConfirmed action the way the
// host receives it.
func decodeConfirmed(t *testing.T, js string) *wire.ChatToolCallConfirmedAction {
	t.Helper()
	var a wire.StateAction
	require.NoError(t, json.Unmarshal([]byte(js), &a))
	c := wire.NewChatToolCallConfirmedAction(a.Value)
	return &c
}

func TestPermissionOutcome(t *testing.T) {
	approve := `{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":true,"confirmed":"user-action"%s}`
	deny := `{"type":"chat/toolCallConfirmed","turnId":"t1","toolCallId":"c1","approved":false,"reason":"%s"%s}`
	sel := func(id string) string { return `,"selectedOptionId":"` + id + `"` }
	cases := []struct {
		name    string
		options []backend.PermissionOption
		action  string // "" for nil
		want    backend.PermissionOutcome
	}{
		{"selected option wins over approval", acpOptions, fmt.Sprintf(deny, "denied", sel("o-always")), backend.PermissionOutcome{OptionID: "o-always"}},
		{"selected reject option", acpOptions, fmt.Sprintf(deny, "denied", sel("o-never")), backend.PermissionOutcome{OptionID: "o-never"}},
		{"approve without option", acpOptions, fmt.Sprintf(approve, ""), backend.PermissionOutcome{OptionID: "o-allow"}},
		{"approve falls back to allow_always", acpOptions[1:], fmt.Sprintf(approve, ""), backend.PermissionOutcome{OptionID: "o-always"}},
		{"approve with unknown option id", acpOptions, fmt.Sprintf(approve, sel("nope")), backend.PermissionOutcome{OptionID: "o-allow"}},
		{"deny", acpOptions, fmt.Sprintf(deny, "denied", ""), backend.PermissionOutcome{OptionID: "o-reject"}},
		{"skip", acpOptions, fmt.Sprintf(deny, "skipped", ""), backend.PermissionOutcome{OptionID: "o-reject"}},
		{"deny falls back to reject_always", []backend.PermissionOption{acpOptions[0], acpOptions[3]}, fmt.Sprintf(deny, "denied", ""), backend.PermissionOutcome{OptionID: "o-never"}},
		{"approve with only reject options", acpOptions[2:], fmt.Sprintf(approve, ""), backend.PermissionOutcome{Cancelled: true}},
		{"deny with only allow options", acpOptions[:2], fmt.Sprintf(deny, "denied", ""), backend.PermissionOutcome{Cancelled: true}},
		{"no options", nil, fmt.Sprintf(approve, ""), backend.PermissionOutcome{Cancelled: true}},
		{"nil action", acpOptions, "", backend.PermissionOutcome{Cancelled: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var a *wire.ChatToolCallConfirmedAction
			if tc.action != "" {
				a = decodeConfirmed(t, tc.action)
			}
			require.Equal(t, tc.want, PermissionOutcome(tc.options, a))
		})
	}
	// ConfirmationOf reads both variants as the host hands them over.
	var a wire.StateAction
	require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(deny, "skipped", sel("o-never"))), &a))
	c, ok := ConfirmationOf(a)
	require.True(t, ok)
	require.Equal(t, "c1", c.ToolCallID)
	require.Equal(t, "t1", c.TurnID)
	require.False(t, c.Approved)
	require.Equal(t, "o-never", c.SelectedOptionID)
	require.Equal(t, backend.PermissionOutcome{OptionID: "o-never"}, PermissionOutcome(acpOptions, c.Action))
	require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(approve, "")), &a))
	c, ok = ConfirmationOf(a)
	require.True(t, ok)
	require.True(t, c.Approved)
	require.Equal(t, backend.PermissionOutcome{OptionID: "o-allow"}, PermissionOutcome(acpOptions, c.Action))
	_, ok = ConfirmationOf(wire.Action(&wire.SessionTitleChangedAction{Title: "x"}))
	require.False(t, ok)

	// An unknown variant (a raw value the wire package kept) cancels.
	require.Equal(t, backend.PermissionOutcome{Cancelled: true},
		PermissionOutcome(acpOptions, &wire.ChatToolCallConfirmedAction{Value: json.RawMessage(`{"approved":"maybe"}`)}))
}

func TestAutoApprove(t *testing.T) {
	cases := []struct {
		policy          Policy
		kind            string
		decide, approve bool
	}{
		{PolicyAsk, "read", false, false},
		{PolicyAll, "execute", true, true},
		{PolicyAll, "", true, true},
		{PolicyNone, "read", true, false},
		{PolicyReads, "read", true, true},
		{PolicyReads, "search", true, true},
		{PolicyReads, "think", true, true},
		{PolicyReads, "fetch", true, true},
		{PolicyReads, "edit", false, false},
		{PolicyReads, "execute", false, false},
		{PolicyReads, "_acme_read", false, false},
		{PolicyReads, "", false, false},
		{Policy(42), "read", false, false},
	}
	for _, tc := range cases {
		decide, approve := AutoApprove(tc.policy, tc.kind)
		require.Equal(t, tc.decide, decide, "%s/%s decide", tc.policy, tc.kind)
		require.Equal(t, tc.approve, approve, "%s/%s approve", tc.policy, tc.kind)
	}
	require.Equal(t, backend.PermissionOutcome{OptionID: "o-allow"}, AutoOutcome(acpOptions, true))
	require.Equal(t, backend.PermissionOutcome{OptionID: "o-reject"}, AutoOutcome(acpOptions, false))
	require.Equal(t, backend.PermissionOutcome{Cancelled: true}, AutoOutcome(nil, true))
}

func TestInputAnswers(t *testing.T) {
	turn := newTestTurn()
	id, _ := turn.AskQuestion(backend.Question{Questions: []string{"Branch?", "Remote?", "Count?", "Sure?", "Pick", "Many", "Skip"}})
	pq, ok := turn.QuestionFor(id)
	require.True(t, ok)
	qids := make([]string, 0, len(pq.Request.Questions))
	for _, q := range pq.Request.Questions {
		qids = append(qids, q.ID())
	}
	require.Len(t, qids, 7)

	completed := func(js string) *wire.ChatInputCompletedAction {
		var a wire.StateAction
		require.NoError(t, json.Unmarshal([]byte(js), &a))
		c, ok := a.Value.(*wire.ChatInputCompletedAction)
		require.True(t, ok, "decoded %T", a.Value)
		return c
	}
	answers := `{"type":"chat/inputCompleted","requestId":"` + id + `","response":"accept","answers":{` +
		`"` + qids[0] + `":{"state":"submitted","value":{"kind":"text","value":"main"}},` +
		`"` + qids[2] + `":{"state":"submitted","value":{"kind":"number","value":2.5}},` +
		`"` + qids[3] + `":{"state":"draft","value":{"kind":"boolean","value":true}},` +
		`"` + qids[4] + `":{"state":"submitted","value":{"kind":"selected","value":"a","freeformValues":["extra"]}},` +
		`"` + qids[5] + `":{"state":"submitted","value":{"kind":"selected-many","value":["x","y"]}},` +
		`"` + qids[6] + `":{"state":"skipped","freeformValues":["later"]}}}`
	got, declined := InputAnswers(pq.Request, completed(answers))
	require.False(t, declined)
	require.Equal(t, []string{"main", "", "2.5", "true", "a, extra", "x, y", "later"}, got)

	// Without answers in the action, the request's own (state) answers count.
	req := pq.Request
	req.Answers = map[string]wire.ChatInputAnswer{
		qids[1]: wire.NewChatInputAnswer(&wire.ChatInputAnswered{
			State: "submitted", Value: wire.NewChatInputAnswerValue(&wire.ChatInputTextAnswerValue{Kind: "text", Value: "origin"}),
		}),
	}
	got, declined = InputAnswers(req, completed(`{"type":"chat/inputCompleted","requestId":"`+id+`","response":"accept"}`))
	require.False(t, declined)
	require.Equal(t, []string{"", "origin", "", "", "", "", ""}, got)

	for _, resp := range []string{"decline", "cancel"} {
		got, declined = InputAnswers(pq.Request, completed(`{"type":"chat/inputCompleted","requestId":"`+id+`","response":"`+resp+`"}`))
		require.True(t, declined, resp)
		require.Nil(t, got)
	}
	got, declined = InputAnswers(pq.Request, nil)
	require.True(t, declined)
	require.Nil(t, got)

	// TakeQuestion hands the question out once.
	_, ok = turn.TakeQuestion(id)
	require.True(t, ok)
	_, ok = turn.TakeQuestion(id)
	require.False(t, ok)
	require.Empty(t, turn.PendingQuestions())
}

// TestPromptFromTurn decodes turnStarted actions from testdata/prompt/*.in.json
// and compares the backend prompt with the golden file.
func TestPromptFromTurn(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "prompt", "*.in.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var a wire.StateAction
			require.NoError(t, json.Unmarshal(data, &a))
			started, ok := a.Value.(*wire.ChatTurnStartedAction)
			require.True(t, ok, "decoded %T", a.Value)
			checkGolden(t, file[:len(file)-len(".in.json")]+".golden.json", PromptFromTurnWith(started, promptChats))
		})
	}
	require.Equal(t, backend.Prompt{}, PromptFromTurn(nil))
}

// promptChats knows one chat, ahp-chat:/c0, with two turns: a chat
// attachment pinned to the first gets only that one.
func promptChats(uri string) *wire.ChatState {
	if uri != "ahp-chat:/c0" {
		return nil
	}
	turn := func(id, q, a string) wire.Turn {
		return wire.Turn{ID: id, Message: wire.Message{Text: q, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}},
			ResponseParts: []wire.ResponsePart{wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p-" + id, Content: a})}}
	}
	return &wire.ChatState{Turns: []wire.Turn{turn("t1", "What is 2+2?", "4."), turn("t2", "And 3+3?", "6.")}}
}

func TestSessionConfig(t *testing.T) {
	opts := []backend.ConfigOption{
		{ID: "mode", Name: "Mode", Category: "mode", Current: "code", Values: []backend.ConfigValue{
			{ID: "ask", Name: "Ask", Description: "Only answers"}, {ID: "code", Name: "Code"},
		}},
		{ID: "model", Name: "Model", Description: "The language model", Category: "model", Current: "m2", Values: []backend.ConfigValue{
			{ID: "m1"}, {ID: "m2", Name: "Model Two"},
		}},
		{ID: "effort", Category: "_acme"},
		{ID: "", Name: "ignored: no id"},
	}
	checkGolden(t, filepath.Join("testdata", "session_config.golden.json"), SessionConfig(opts))
	empty := SessionConfig(nil)
	b, err := json.Marshal(empty)
	require.NoError(t, err)
	require.JSONEq(t, `{"schema":{"type":"object","properties":{}},"values":{}}`, string(b))
}

func TestCompletionItems(t *testing.T) {
	cmds := []backend.Command{
		{Name: "web", Description: "Search the web", InputHint: "query"},
		{Name: "Web-fetch"},
		{Name: "test", Description: "Run tests"},
		{Name: ""},
	}
	params := func(text string, offset int64) wire.CompletionsParams {
		return wire.CompletionsParams{Channel: "ahp-chat:/c", Kind: wire.CompletionItemKindUserMessage, Text: text, Offset: offset}
	}
	names := func(items []wire.CompletionItem) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.InsertText)
		}
		return out
	}
	require.Equal(t, []string{"/web ", "/Web-fetch ", "/test "}, names(CompletionItems(cmds, params("/", 1))))
	require.Equal(t, []string{"/web ", "/Web-fetch "}, names(CompletionItems(cmds, params("/WE", 3))))
	require.Equal(t, []string{"/test "}, names(CompletionItems(cmds, params("  /te rest", 5))))
	require.Nil(t, CompletionItems(cmds, params("hello /we", 9)), "commands only at the start")
	require.Nil(t, CompletionItems(cmds, params("/web foo", 8)), "past the command word")
	require.Nil(t, CompletionItems(cmds, params("/we", 9)), "offset out of range")
	require.Nil(t, CompletionItems(cmds, params("/we", -1)), "negative offset")
	require.Nil(t, CompletionItems(cmds, wire.CompletionsParams{Kind: "other", Text: "/", Offset: 1}))
	// Offsets are UTF-16 code units: "😀" is two.
	items := CompletionItems(cmds, params("😀 /t", 5))
	require.Nil(t, items, "a command must start the message")
	items = CompletionItems(cmds, params(" /t😀", 3))
	require.Equal(t, []string{"/test "}, names(items))
	require.Equal(t, int64(1), *items[0].RangeStart)
	require.Equal(t, int64(3), *items[0].RangeEnd)

	checkGolden(t, filepath.Join("testdata", "completions.golden.json"), CompletionItems(cmds, params("/w", 2)))
}

// checkGolden compares v, encoded as JSON, with a golden file (rewritten
// under -update).
func checkGolden(t *testing.T, file string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, got, 0o644))
		return
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "missing golden file; run go test ./mapping -update and review it")
	require.JSONEq(t, string(want), string(got))
}
