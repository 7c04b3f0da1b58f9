package fakehost

import (
	"context"
	"fmt"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// DefaultScript picks a behaviour from the first word of the prompt:
//
//   - "tool": reasons, asks to run a tool ("Read file") with two options
//     ("Allow once", "Reject"), runs it when approved, then answers;
//   - "fail": ends the turn with chat/error;
//   - "ask": asks a single-select and a text question, then repeats the answers;
//   - "result": runs a tool without asking, then asks whether its result
//     may be used;
//   - "wait": streams "working…" and waits until a client cancels the turn;
//   - anything else: answers "echo: PROMPT".
func DefaultScript(ctx context.Context, t *Turn) {
	word, _, _ := strings.Cut(strings.TrimSpace(t.Text), " ")
	switch word {
	case "tool":
		ToolScript(ctx, t)
	case "fail":
		t.Emit(&wire.ChatErrorAction{TurnID: t.ID, Duration: t.Duration(), Part: wire.ErrorResponsePart{Error: wire.ErrorInfo{ErrorType: "agentError", Message: "the agent crashed"}}})
	case "ask":
		AskScript(ctx, t)
	case "result":
		ResultScript(ctx, t)
	case "wait":
		t.Say("working…")
		_, _ = t.Await(ctx, func(wire.StateAction) bool { return false })
	default:
		EchoScript(ctx, t)
	}
}

// EchoScript answers "echo: PROMPT" in two deltas.
func EchoScript(_ context.Context, t *Turn) {
	t.Emit(&wire.ChatResponsePartAction{TurnID: t.ID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "md-1", Content: ""})})
	t.Emit(&wire.ChatDeltaAction{TurnID: t.ID, PartID: "md-1", Content: "echo: "})
	t.Emit(&wire.ChatDeltaAction{TurnID: t.ID, PartID: "md-1", Content: t.Text})
	t.Complete()
}

// Say adds a markdown part with text.
func (t *Turn) Say(text string) {
	t.said++
	id := fmt.Sprintf("say-%d", t.said)
	t.Emit(&wire.ChatResponsePartAction{TurnID: t.ID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: id, Content: text})})
}

// ToolScript asks for permission to run a tool and acts on the answer.
func ToolScript(ctx context.Context, t *Turn) {
	t.Emit(&wire.ChatResponsePartAction{TurnID: t.ID, Part: wire.NewResponsePart(&wire.ReasoningResponsePart{ID: "think-1", Content: ""})})
	t.Emit(&wire.ChatReasoningAction{TurnID: t.ID, PartID: "think-1", Content: "I should read\nthe file."})
	t.Emit(&wire.ChatToolCallStartAction{TurnID: t.ID, ToolCallID: "tc-1", ToolName: "read", DisplayName: "Read file"})
	t.Emit(&wire.ChatToolCallReadyAction{
		TurnID:            t.ID,
		ToolCallID:        "tc-1",
		InvocationMessage: wire.PlainText("Read README.md"),
		ConfirmationTitle: wire.Ptr(wire.PlainText("Allow reading README.md?")),
		Options: []wire.ConfirmationOption{
			{ID: "allow-once", Label: "Allow once", Kind: wire.ConfirmationOptionKindApprove},
			{ID: "reject", Label: "Reject", Kind: wire.ConfirmationOptionKindDeny},
		},
	})
	a, err := t.Await(ctx, func(a wire.StateAction) bool {
		switch v := a.Value.(type) {
		case *wire.ChatToolCallApprovedAction:
			return v.ToolCallID == "tc-1"
		case *wire.ChatToolCallDeniedAction:
			return v.ToolCallID == "tc-1"
		}
		return false
	})
	if err != nil {
		return
	}
	if _, approved := a.Value.(*wire.ChatToolCallApprovedAction); !approved {
		t.Emit(&wire.ChatResponsePartAction{TurnID: t.ID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "md-2", Content: "Not reading it, then."})})
		t.Complete()
		return
	}
	t.Emit(&wire.ChatToolCallCompleteAction{
		TurnID:     t.ID,
		ToolCallID: "tc-1",
		Result: wire.ToolCallResult{
			Success:          true,
			PastTenseMessage: wire.PlainText("Read README.md"),
			Content:          []wire.ToolResultContent{wire.NewToolResultContent(&wire.ToolResultTextContent{Text: "# Title\nSome text."})},
		},
	})
	t.Emit(&wire.ChatResponsePartAction{TurnID: t.ID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "md-2", Content: "The README has a title."})})
	t.Complete()
}

// AskScript asks two questions and repeats the answers.
func AskScript(ctx context.Context, t *Turn) {
	t.Emit(&wire.ChatInputRequestedAction{Request: wire.ChatInputRequest{
		ID:      "in-1",
		Message: wire.Ptr("A few questions"),
		Questions: []wire.ChatInputQuestion{
			wire.NewChatInputQuestion(&wire.ChatInputSingleSelectQuestion{
				ID: "color", Message: "Favourite colour?", Required: wire.Ptr(true),
				Options: []wire.ChatInputOption{
					{ID: "red", Label: "Red"},
					{ID: "blue", Label: "Blue", Recommended: wire.Ptr(true)},
				},
			}),
			wire.NewChatInputQuestion(&wire.ChatInputTextQuestion{ID: "name", Message: "Your name?"}),
		},
	}})
	a, err := t.Await(ctx, func(a wire.StateAction) bool {
		v, ok := a.Value.(*wire.ChatInputCompletedAction)
		return ok && v.RequestID == "in-1"
	})
	if err != nil {
		return
	}
	done := a.Value.(*wire.ChatInputCompletedAction)
	var parts []string
	for _, q := range []string{"color", "name"} {
		ans, ok := done.Answers[q]
		if !ok {
			continue
		}
		switch v := ans.Value.(type) {
		case *wire.ChatInputAnswered:
			switch x := v.Value.Value.(type) {
			case *wire.ChatInputSelectedAnswerValue:
				parts = append(parts, q+"="+x.Value)
			case *wire.ChatInputTextAnswerValue:
				parts = append(parts, q+"="+x.Value)
			}
		case *wire.ChatInputSkipped:
			parts = append(parts, q+" skipped")
		}
	}
	t.Emit(&wire.ChatResponsePartAction{TurnID: t.ID, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{
		ID: "md-2", Content: fmt.Sprintf("%s: %s", done.Response, strings.Join(parts, ", "))})})
	t.Complete()
}

// ResultScript runs a tool that needs its result confirmed.
func ResultScript(ctx context.Context, t *Turn) {
	t.Emit(&wire.ChatToolCallStartAction{TurnID: t.ID, ToolCallID: "tc-r", ToolName: "search", DisplayName: "Search"})
	t.Emit(&wire.ChatToolCallReadyAction{TurnID: t.ID, ToolCallID: "tc-r", InvocationMessage: wire.PlainText("Search the web"),
		Confirmed: wire.Ptr(wire.ToolCallConfirmationReasonNotNeeded)})
	t.Emit(&wire.ChatToolCallCompleteAction{TurnID: t.ID, ToolCallID: "tc-r", RequiresResultConfirmation: wire.Ptr(true),
		Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("Searched the web")}})
	a, err := t.Await(ctx, func(a wire.StateAction) bool {
		v, ok := a.Value.(*wire.ChatToolCallResultConfirmedAction)
		return ok && v.ToolCallID == "tc-r"
	})
	if err != nil {
		return
	}
	verdict := "result rejected"
	if a.Value.(*wire.ChatToolCallResultConfirmedAction).Approved {
		verdict = "result accepted"
	}
	t.Say(verdict)
	t.Complete()
}
