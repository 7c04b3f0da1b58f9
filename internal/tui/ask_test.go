package tui

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

func TestQuestionParse(t *testing.T) {
	opts := []wire.ChatInputOption{{ID: "red", Label: "Red"}, {ID: "blue", Label: "Blue"}}
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name    string
		q       question
		in      string
		want    string // JSON of the answer
		problem string
	}{
		{"bool yes", question{kind: wire.ChatInputQuestionKindBoolean}, "y",
			`{"state":"submitted","value":{"kind":"boolean","value":true}}`, ""},
		{"bool no", question{kind: wire.ChatInputQuestionKindBoolean}, "No",
			`{"state":"submitted","value":{"kind":"boolean","value":false}}`, ""},
		{"bool default", question{kind: wire.ChatInputQuestionKindBoolean, defBool: wire.Ptr(true)}, "",
			`{"state":"submitted","value":{"kind":"boolean","value":true}}`, ""},
		{"bool junk", question{kind: wire.ChatInputQuestionKindBoolean}, "maybe", "", `"maybe" is not an answer: type y or n`},
		{"required empty", question{kind: wire.ChatInputQuestionKindText, required: true}, "", "", "an answer is required"},
		{"optional empty skips", question{kind: wire.ChatInputQuestionKindText}, "", `{"state":"skipped"}`, ""},
		{"text", question{kind: wire.ChatInputQuestionKindText}, "hi there",
			`{"state":"submitted","value":{"kind":"text","value":"hi there"}}`, ""},
		{"text default", question{kind: wire.ChatInputQuestionKindText, defText: wire.Ptr("main")}, "",
			`{"state":"submitted","value":{"kind":"text","value":"main"}}`, ""},
		{"text too long", question{kind: wire.ChatInputQuestionKindText, max: f(3)}, "abcd", "", "the answer must have (at most 3) characters"},
		{"number", question{kind: wire.ChatInputQuestionKindNumber}, "3.5",
			`{"state":"submitted","value":{"kind":"number","value":3.5}}`, ""},
		{"number default", question{kind: wire.ChatInputQuestionKindNumber, defNumber: f(7)}, "",
			`{"state":"submitted","value":{"kind":"number","value":7}}`, ""},
		{"integer not whole", question{kind: wire.ChatInputQuestionKindInteger}, "3.5", "", `"3.5" is not a whole number`},
		{"not a number", question{kind: wire.ChatInputQuestionKindNumber}, "many", "", `"many" is not a number`},
		{"number out of range", question{kind: wire.ChatInputQuestionKindNumber, min: f(1), max: f(5)}, "9", "", "9 is out of range (between 1 and 5)"},
		{"select by number", question{kind: wire.ChatInputQuestionKindSingleSelect, options: opts}, "2",
			`{"state":"submitted","value":{"kind":"selected","value":"blue"}}`, ""},
		{"select by label", question{kind: wire.ChatInputQuestionKindSingleSelect, options: opts}, "red",
			`{"state":"submitted","value":{"kind":"selected","value":"red"}}`, ""},
		{"select freeform", question{kind: wire.ChatInputQuestionKindSingleSelect, options: opts, freeform: true}, "green",
			`{"state":"submitted","value":{"kind":"selected","value":"green","freeformValues":["green"]}}`, ""},
		{"select unknown", question{kind: wire.ChatInputQuestionKindSingleSelect, options: opts}, "3", "", `"3" is not one of the choices: type a number from 1 to 2`},
		{"select recommended default", question{kind: wire.ChatInputQuestionKindSingleSelect, required: true,
			options: []wire.ChatInputOption{{ID: "a", Label: "A"}, {ID: "b", Label: "B", Recommended: wire.Ptr(true)}}}, "",
			`{"state":"submitted","value":{"kind":"selected","value":"b"}}`, ""},
		{"multi", question{kind: wire.ChatInputQuestionKindMultiSelect, options: opts}, "1, blue",
			`{"state":"submitted","value":{"kind":"selected-many","value":["red","blue"]}}`, ""},
		{"multi freeform", question{kind: wire.ChatInputQuestionKindMultiSelect, options: opts, freeform: true}, "2,teal",
			`{"state":"submitted","value":{"kind":"selected-many","value":["blue"],"freeformValues":["teal"]}}`, ""},
		{"multi unknown", question{kind: wire.ChatInputQuestionKindMultiSelect, options: opts}, "1,9", "", `"9" is not one of the choices: type numbers from 1 to 2`},
		{"multi too many", question{kind: wire.ChatInputQuestionKindMultiSelect, options: opts, max: f(1)}, "1,2", "", "choose (at most 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := tc.q.parse(tc.in)
			assert.Equal(t, tc.problem, problem)
			if tc.problem != "" {
				return
			}
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(b))
		})
	}
}

func TestAskersAuto(t *testing.T) {
	pending := &wire.ToolCallPendingConfirmationState{ToolCallID: "tc", DisplayName: "Tool", InvocationMessage: wire.PlainText("x"),
		Options: []wire.ConfirmationOption{
			{ID: "always", Label: "Always", Kind: wire.ConfirmationOptionKindApprove},
			{ID: "no", Label: "No", Kind: wire.ConfirmationOptionKindDeny},
		}}
	a := newApprovalAsker(need{id: "need-1", chatURI: "ahp-chat:/c"}, "t", pending)
	assert.Equal(t, "need-1", a.key(), "the session's inputNeeded entry")
	assert.Equal(t, "ahp-chat:/c", a.chat(), "where the answer goes")
	act, ok := a.auto(false, false)
	assert.False(t, ok)
	assert.Nil(t, act)
	act, ok = a.auto(true, false)
	require.True(t, ok)
	assert.Equal(t, "always", *act.(*wire.ChatToolCallApprovedAction).SelectedOptionID)
	act, ok = a.auto(false, true)
	require.True(t, ok)
	denied := act.(*wire.ChatToolCallDeniedAction)
	assert.Equal(t, wire.ToolCallCancellationReasonDenied, denied.Reason)
	assert.Equal(t, "no", *denied.SelectedOptionID)

	// Without options: y/n only, no selectedOptionId.
	bare := newApprovalAsker(need{}, "t", &wire.ToolCallPendingConfirmationState{ToolCallID: "tc", DisplayName: "Tool"})
	assert.Equal(t, "  Allow Tool? [y/n]", bare.prompt())
	act, done, problem := bare.answer("1")
	assert.False(t, done)
	assert.Nil(t, act)
	assert.Equal(t, `"1" is not an answer: type y or n`, problem)
	act, done, _ = bare.answer("yes")
	require.True(t, done)
	assert.Nil(t, act.(*wire.ChatToolCallApprovedAction).SelectedOptionID)

	req := func(qs ...wire.ChatInputQuestion) *wire.ChatInputRequest {
		return &wire.ChatInputRequest{ID: "in", Questions: qs}
	}
	withDefault := wire.NewChatInputQuestion(&wire.ChatInputBooleanQuestion{ID: "b", Message: "ok?", Kind: wire.ChatInputQuestionKindBoolean, Required: wire.Ptr(true), DefaultValue: wire.Ptr(false)})
	noDefault := wire.NewChatInputQuestion(&wire.ChatInputTextQuestion{ID: "t", Message: "name?", Kind: wire.ChatInputQuestionKindText, Required: wire.Ptr(true)})

	act, ok = newInputAsker(need{}, req(withDefault)).auto(true, false)
	require.True(t, ok)
	b, err := json.Marshal(act)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"chat/inputCompleted","requestId":"in","response":"accept","answers":{"b":{"state":"submitted","value":{"kind":"boolean","value":false}}}}`, string(b))

	_, ok = newInputAsker(need{}, req(withDefault, noDefault)).auto(true, false)
	assert.False(t, ok, "a required question without a default needs a person")
	act, ok = newInputAsker(need{}, req(noDefault)).auto(false, true)
	require.True(t, ok)
	assert.Equal(t, wire.ChatInputResponseKindDecline, act.(*wire.ChatInputCompletedAction).Response)
	assert.Nil(t, act.(*wire.ChatInputCompletedAction).Answers)

	// A request with no questions is a yes/no.
	plain := newInputAsker(need{}, &wire.ChatInputRequest{ID: "in", Message: wire.Ptr("Open the browser?")})
	assert.Equal(t, "Open the browser?", plain.summary())
	_, done, problem = plain.answer("what")
	assert.False(t, done)
	assert.NotEmpty(t, problem)
	act, done, _ = plain.answer("n")
	require.True(t, done)
	assert.Equal(t, wire.ChatInputResponseKindDecline, act.(*wire.ChatInputCompletedAction).Response)
}
