package tui

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/fakehost"
)

// geminiLikeEdit asks to edit a file offering "allow always" first, as
// Gemini CLI does, and fails the edit when "always" is chosen (Gemini
// refuses it in an untrusted folder); the approval without a named option
// (or naming the once option) makes the edit.
func geminiLikeEdit(ctx context.Context, t *fakehost.Turn) {
	t.Emit(&wire.ChatToolCallStartAction{TurnID: t.ID, ToolCallID: "edit", ToolName: "replace", DisplayName: "Edit"})
	t.Emit(&wire.ChatToolCallReadyAction{TurnID: t.ID, ToolCallID: "edit", InvocationMessage: wire.PlainText("Edit a.txt"),
		Options: []wire.ConfirmationOption{
			{ID: "proceed_always", Label: "Allow always", Kind: wire.ConfirmationOptionKindApprove},
			{ID: "proceed_once", Label: "Allow once", Kind: wire.ConfirmationOptionKindApprove},
			{ID: "cancel", Label: "Reject", Kind: wire.ConfirmationOptionKindDeny},
		}})
	a, err := t.Await(ctx, func(a wire.StateAction) bool {
		v, ok := a.Value.(*wire.ChatToolCallApprovedAction)
		return ok && v.ToolCallID == "edit"
	})
	if err != nil {
		return
	}
	approved := a.Value.(*wire.ChatToolCallApprovedAction)
	ok := approved.SelectedOptionID == nil || *approved.SelectedOptionID == "proceed_once"
	result := wire.ToolCallResult{Success: ok, PastTenseMessage: wire.PlainText("Edited a.txt")}
	if !ok {
		result.Error = &wire.ToolCallError{Message: "'Allow always' is not available in an untrusted folder"}
	}
	t.Emit(&wire.ChatToolCallCompleteAction{TurnID: t.ID, ToolCallID: "edit", Result: result})
	t.Say("done")
	t.Complete()
}

// TestApproveAllApprovesOnce: --approve-all approves the call at hand, not
// every call to come, when the agent lists "allow always" first (issue 26,
// finding 3).
func TestApproveAllApprovesOnce(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{Script: geminiLikeEdit})
	r := runOn(t, h, Options{ApproveAll: true}, "edit")
	assert.Equal(t, ExitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.NotContains(t, r.stdout, "Allow always")

	// Interactively, "y" is the same answer; the number still picks "always".
	pending := &wire.ToolCallPendingConfirmationState{ToolCallID: "edit", DisplayName: "Edit", Options: []wire.ConfirmationOption{
		{ID: "proceed_always", Label: "Allow always", Kind: wire.ConfirmationOptionKindApprove},
		{ID: "proceed_once", Label: "Allow once", Kind: wire.ConfirmationOptionKindApprove},
		{ID: "cancel", Label: "Reject", Kind: wire.ConfirmationOptionKindDeny},
	}}
	a := newApprovalAsker(need{}, "t", pending)
	act, done, _ := a.answer("y")
	assert.True(t, done)
	assert.Nil(t, act.(*wire.ChatToolCallApprovedAction).SelectedOptionID, "y names no option among several approving ones")
	act, _, _ = a.answer("1")
	assert.Equal(t, "proceed_always", *act.(*wire.ChatToolCallApprovedAction).SelectedOptionID)
	act, _ = a.auto(false, true)
	assert.Equal(t, "cancel", *act.(*wire.ChatToolCallDeniedAction).SelectedOptionID, "the one denying option is named")
}

// TestFailedToolCallExitsNonZero: a turn whose tool call failed is not a
// success for `client` (issue 26, finding 3).
func TestFailedToolCallExitsNonZero(t *testing.T) {
	h := newFakeHost(t, fakehost.Options{Script: func(ctx context.Context, t *fakehost.Turn) {
		t.Emit(&wire.ChatToolCallStartAction{TurnID: t.ID, ToolCallID: "sh", ToolName: "shell", DisplayName: "Shell"})
		t.Emit(&wire.ChatToolCallReadyAction{TurnID: t.ID, ToolCallID: "sh", InvocationMessage: wire.PlainText("ls"),
			Confirmed: wire.Ptr(wire.ToolCallConfirmationReasonNotNeeded)})
		t.Emit(&wire.ChatToolCallCompleteAction{TurnID: t.ID, ToolCallID: "sh", Result: wire.ToolCallResult{Success: false,
			PastTenseMessage: wire.PlainText("Ran ls"), Error: &wire.ToolCallError{Message: "sandbox failed"}}})
		t.Complete()
	}})
	r := runOn(t, h, Options{}, "ls")
	assert.Equal(t, ExitToolFailed, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
}
