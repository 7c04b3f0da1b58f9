package mapping

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// This file builds wire values; the rules live in turn.go, tools.go and
// content.go. Keeping construction here keeps the rules readable and ties
// the package to the generated types in one place.

func act(v any) wire.StateAction { return wire.NewStateAction(v) }

func responsePartAction(turnID string, part wire.ResponsePart) wire.StateAction {
	return act(&wire.SessionResponsePartAction{Type: wire.ActionTypeSessionResponsePart, TurnID: turnID, Part: part})
}

func markdownPart(id, content string) wire.ResponsePart {
	return wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: id, Content: content})
}

func reasoningPart(id, content string) wire.ResponsePart {
	return wire.NewResponsePart(&wire.ReasoningResponsePart{Kind: wire.ResponsePartKindReasoning, ID: id, Content: content})
}

func contentRefPart(uri, contentType string, size int64) wire.ResponsePart {
	return wire.NewResponsePart(&wire.ResourceReponsePart{
		Kind: wire.ResponsePartKindContentRef, URI: uri, ContentType: wire.Ptr(contentType), SizeHint: wire.Ptr(size),
	})
}

func systemNotificationPart(markdown string) wire.ResponsePart {
	return wire.NewResponsePart(&wire.SystemNotificationResponsePart{
		Kind: wire.ResponsePartKindSystemNotification, Content: wire.MarkdownText(markdown),
	})
}

func deltaAction(turnID, partID, content string) wire.StateAction {
	return act(&wire.SessionDeltaAction{Type: wire.ActionTypeSessionDelta, TurnID: turnID, PartID: partID, Content: content})
}

func reasoningAction(turnID, partID, content string) wire.StateAction {
	return act(&wire.SessionReasoningAction{Type: wire.ActionTypeSessionReasoning, TurnID: turnID, PartID: partID, Content: content})
}

func toolCallStartAction(turnID, toolCallID, toolName, displayName string, meta map[string]any) wire.StateAction {
	return act(&wire.SessionToolCallStartAction{
		Type: wire.ActionTypeSessionToolCallStart, TurnID: turnID, ToolCallID: toolCallID,
		ToolName: toolName, DisplayName: displayName, Meta: meta,
	})
}

func toolCallDeltaAction(turnID, toolCallID, content string) wire.StateAction {
	return act(&wire.SessionToolCallDeltaAction{
		Type: wire.ActionTypeSessionToolCallDelta, TurnID: turnID, ToolCallID: toolCallID, Content: content,
	})
}

// toolCallProgressAction updates the progress message of a streaming tool
// call without adding input.
func toolCallProgressAction(turnID, toolCallID, message string) wire.StateAction {
	return act(&wire.SessionToolCallDeltaAction{
		Type: wire.ActionTypeSessionToolCallDelta, TurnID: turnID, ToolCallID: toolCallID,
		InvocationMessage: wire.Ptr(wire.PlainText(message)),
	})
}

// readyFields are the parts of a toolCallReady action.
type readyFields struct {
	invocation        string
	toolInput         string
	confirmationTitle string
	edits             []fileEditFields
	options           []wire.ConfirmationOption
	confirmed         wire.ToolCallConfirmationReason // "" for a pending confirmation
}

func toolCallReadyAction(turnID, toolCallID string, f readyFields) wire.StateAction {
	a := &wire.SessionToolCallReadyAction{
		Type: wire.ActionTypeSessionToolCallReady, TurnID: turnID, ToolCallID: toolCallID,
		InvocationMessage: wire.PlainText(f.invocation),
		Options:           f.options,
	}
	if f.toolInput != "" {
		a.ToolInput = wire.Ptr(f.toolInput)
	}
	if f.confirmationTitle != "" {
		a.ConfirmationTitle = wire.Ptr(wire.PlainText(f.confirmationTitle))
	}
	if len(f.edits) > 0 {
		items := make([]wire.FileEdit, 0, len(f.edits))
		for _, e := range f.edits {
			before, after, diff := e.wire()
			items = append(items, wire.FileEdit{Before: before, After: after, Diff: diff})
		}
		a.Edits = &wire.FileEditList{Items: items}
	}
	if f.confirmed != "" {
		a.Confirmed = wire.Ptr(f.confirmed)
	}
	return act(a)
}

func toolCallContentChangedAction(turnID, toolCallID string, content []wire.ToolResultContent) wire.StateAction {
	if content == nil {
		content = []wire.ToolResultContent{}
	}
	return act(&wire.SessionToolCallContentChangedAction{
		Type: wire.ActionTypeSessionToolCallContentChanged, TurnID: turnID, ToolCallID: toolCallID, Content: content,
	})
}

// resultFields are the parts of a toolCallComplete result.
type resultFields struct {
	success    bool
	pastTense  string
	content    []wire.ToolResultContent
	structured map[string]any
	errMsg     string
}

func toolCallCompleteAction(turnID, toolCallID string, meta map[string]any, f resultFields) wire.StateAction {
	r := wire.ToolCallResult{
		Success:           f.success,
		PastTenseMessage:  wire.PlainText(f.pastTense),
		Content:           f.content,
		StructuredContent: f.structured,
	}
	if f.errMsg != "" {
		r.Error = &wire.ToolCallError{Message: f.errMsg}
	}
	return act(&wire.SessionToolCallCompleteAction{
		Type: wire.ActionTypeSessionToolCallComplete, TurnID: turnID, ToolCallID: toolCallID, Meta: meta, Result: r,
	})
}

// toolCallConfirmedAction is the server-side confirmation the approval
// policy dispatches.
func toolCallConfirmedAction(turnID, toolCallID string, approve bool) wire.StateAction {
	if approve {
		return act(&wire.SessionToolCallApprovedAction{
			Type: wire.ActionTypeSessionToolCallConfirmed, TurnID: turnID, ToolCallID: toolCallID,
			Approved: true, Confirmed: wire.ToolCallConfirmationReasonSetting,
		})
	}
	return act(&wire.SessionToolCallDeniedAction{
		Type: wire.ActionTypeSessionToolCallConfirmed, TurnID: turnID, ToolCallID: toolCallID,
		Approved: false, Reason: wire.ToolCallCancellationReasonDenied,
		ReasonMessage: wire.Ptr(wire.PlainText("Denied by the bridge's approval policy")),
	})
}

// fileSide is one side of a file edit: the file and the resource holding
// its text.
type fileSide struct {
	uri  string
	ref  string
	size int64
}

func (f *fileSide) contentRef() wire.ContentRef {
	return wire.ContentRef{URI: f.ref, ContentType: wire.Ptr("text/plain"), SizeHint: wire.Ptr(f.size)}
}

// fileEditFields describe a diff independently of where it goes (edits
// preview or tool result).
type fileEditFields struct {
	before, after  *fileSide
	added, removed int
}

func (e fileEditFields) wire() (before, after *wire.FileSnapshot, diff *wire.DiffStat) {
	if e.before != nil {
		before = &wire.FileSnapshot{URI: e.before.uri, Content: e.before.contentRef()}
	}
	if e.after != nil {
		after = &wire.FileSnapshot{URI: e.after.uri, Content: e.after.contentRef()}
	}
	return before, after, &wire.DiffStat{Added: wire.Ptr(e.added), Removed: wire.Ptr(e.removed)}
}

func textContent(s string) wire.ToolResultContent {
	return wire.NewToolResultContent(&wire.ToolResultTextContent{Type: wire.ToolResultContentTypeText, Text: s})
}

func embeddedContent(data, contentType string) wire.ToolResultContent {
	return wire.NewToolResultContent(&wire.ToolResultEmbeddedResourceContent{
		Type: wire.ToolResultContentTypeEmbeddedResource, Data: data, ContentType: contentType,
	})
}

func resourceContent(uri, contentType string) wire.ToolResultContent {
	c := &wire.ToolResultResourceContent{Type: wire.ToolResultContentTypeResource, URI: uri}
	if contentType != "" {
		c.ContentType = wire.Ptr(contentType)
	}
	return wire.NewToolResultContent(c)
}

func fileEditContent(e fileEditFields) wire.ToolResultContent {
	before, after, diff := e.wire()
	return wire.NewToolResultContent(&wire.ToolResultFileEditContent{
		Type: wire.ToolResultContentTypeFileEdit, Before: before, After: after, Diff: diff,
	})
}

func terminalContent(resource, title string) wire.ToolResultContent {
	return wire.NewToolResultContent(&wire.ToolResultTerminalContent{
		Type: wire.ToolResultContentTypeTerminal, Resource: resource, Title: title,
	})
}

func usageAction(turnID string, u backend.Usage) wire.StateAction {
	info := wire.UsageInfo{InputTokens: wire.Ptr(u.InputTokens), OutputTokens: wire.Ptr(u.OutputTokens)}
	if u.CachedInputTokens != 0 {
		info.CacheReadTokens = wire.Ptr(u.CachedInputTokens)
	}
	if u.Model != "" {
		info.Model = wire.Ptr(u.Model)
	}
	return act(&wire.SessionUsageAction{Type: wire.ActionTypeSessionUsage, TurnID: turnID, Usage: info})
}

func errorAction(turnID, errType, msg string) wire.StateAction {
	return act(&wire.SessionErrorAction{
		Type: wire.ActionTypeSessionError, TurnID: turnID, Error: wire.ErrorInfo{ErrorType: errType, Message: msg},
	})
}

func turnCompleteAction(turnID string) wire.StateAction {
	return act(&wire.SessionTurnCompleteAction{Type: wire.ActionTypeSessionTurnComplete, TurnID: turnID})
}

func turnCancelledAction(turnID string) wire.StateAction {
	return act(&wire.SessionTurnCancelledAction{Type: wire.ActionTypeSessionTurnCancelled, TurnID: turnID})
}

func titleChangedAction(title string) wire.StateAction {
	return act(&wire.SessionTitleChangedAction{Type: wire.ActionTypeSessionTitleChanged, Title: title})
}

func configChangedAction(values map[string]any) wire.StateAction {
	if values == nil {
		values = map[string]any{}
	}
	return act(&wire.SessionConfigChangedAction{Type: wire.ActionTypeSessionConfigChanged, Config: values})
}

func metaChangedAction(meta map[string]any) wire.StateAction {
	return act(&wire.SessionMetaChangedAction{Type: wire.ActionTypeSessionMetaChanged, Meta: meta})
}

// activityAction sets the session's activity; "" clears it.
func activityAction(activity string) wire.StateAction {
	a := &wire.SessionActivityChangedAction{Type: wire.ActionTypeSessionActivityChanged}
	if activity != "" {
		a.Activity = wire.Ptr(activity)
	}
	return act(a)
}

// inputRequest builds an input request with one required text question
// per string.
func inputRequest(id string, questions []string, ids func() string) wire.SessionInputRequest {
	req := wire.SessionInputRequest{ID: id, Questions: make([]wire.SessionInputQuestion, 0, len(questions))}
	for _, q := range questions {
		req.Questions = append(req.Questions, wire.NewSessionInputQuestion(&wire.SessionInputTextQuestion{
			Kind: wire.SessionInputQuestionKindText, ID: ids(), Message: q, Required: wire.Ptr(true),
		}))
	}
	return req
}

func inputRequestID(req wire.SessionInputRequest) string { return req.ID }

func inputRequestedAction(req wire.SessionInputRequest) wire.StateAction {
	return act(&wire.SessionInputRequestedAction{Type: wire.ActionTypeSessionInputRequested, Request: req})
}

// questionID returns the id of any question variant.
func questionID(q wire.SessionInputQuestion) string {
	switch v := q.Value.(type) {
	case *wire.SessionInputTextQuestion:
		return v.ID
	case *wire.SessionInputNumberQuestion:
		return v.ID
	case *wire.SessionInputBooleanQuestion:
		return v.ID
	case *wire.SessionInputSingleSelectQuestion:
		return v.ID
	case *wire.SessionInputMultiSelectQuestion:
		return v.ID
	}
	return ""
}

// commandItem is the completion item of one slash command.
func commandItem(name string, start, end int, meta map[string]any) wire.CompletionItem {
	return wire.CompletionItem{
		InsertText: "/" + name + " ",
		RangeStart: wire.Ptr(start),
		RangeEnd:   wire.Ptr(end),
		Attachment: wire.NewMessageAttachment(&wire.SimpleMessageAttachment{
			Type: wire.MessageAttachmentKindSimple, Label: "/" + name, DisplayKind: wire.Ptr("command"), Meta: meta,
		}),
	}
}
