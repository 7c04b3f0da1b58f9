package mapping

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// This file builds wire values; the rules live in turn.go, tools.go and
// content.go. Keeping construction here keeps the rules readable and ties
// the package to the generated types in one place. Variant structs fill in
// their discriminators (type, kind) when encoded, so none is set here.

func act(v any) wire.StateAction { return wire.NewStateAction(v) }

func responsePartAction(turnID string, part wire.ResponsePart) wire.StateAction {
	return act(&wire.ChatResponsePartAction{TurnID: turnID, Part: part})
}

func markdownPart(id, content string) wire.ResponsePart {
	return wire.NewResponsePart(&wire.MarkdownResponsePart{ID: id, Content: content})
}

func reasoningPart(id, content string) wire.ResponsePart {
	return wire.NewResponsePart(&wire.ReasoningResponsePart{ID: id, Content: content})
}

func contentRefPart(uri, contentType string, size int64) wire.ResponsePart {
	return wire.NewResponsePart(&wire.ResourceResponsePart{URI: uri, ContentType: wire.Ptr(contentType), SizeHint: wire.Ptr(size)})
}

func systemNotificationPart(markdown string) wire.ResponsePart {
	return wire.NewResponsePart(&wire.SystemNotificationResponsePart{Content: wire.MarkdownText(markdown)})
}

func deltaAction(turnID, partID, content string) wire.StateAction {
	return act(&wire.ChatDeltaAction{TurnID: turnID, PartID: partID, Content: content})
}

func reasoningAction(turnID, partID, content string) wire.StateAction {
	return act(&wire.ChatReasoningAction{TurnID: turnID, PartID: partID, Content: content})
}

func toolCallStartAction(turnID, toolCallID, toolName, displayName, intention string, meta map[string]any) wire.StateAction {
	a := &wire.ChatToolCallStartAction{TurnID: turnID, ToolCallID: toolCallID, ToolName: toolName, DisplayName: displayName, Meta: meta}
	if intention != "" {
		a.Intention = wire.Ptr(intention)
	}
	return act(a)
}

// deltaFields are the parts of a toolCallDelta action; nil ones are left
// out.
type deltaFields struct {
	content    *string // input to append
	invocation *string
	meta       map[string]any
}

func toolCallDeltaAction(turnID, toolCallID string, f deltaFields) wire.StateAction {
	a := &wire.ChatToolCallDeltaAction{TurnID: turnID, ToolCallID: toolCallID, Content: f.content, Meta: f.meta}
	if f.invocation != nil {
		a.InvocationMessage = wire.Ptr(wire.PlainText(*f.invocation))
	}
	return act(a)
}

// readyFields are the parts of a toolCallReady action.
type readyFields struct {
	invocation        string
	intention         string // "" when unchanged since toolCallStart
	toolInput         string
	confirmationTitle string
	edits             []fileEditFields
	options           []wire.ConfirmationOption
	confirmed         wire.ToolCallConfirmationReason // "" for a pending confirmation
	meta              map[string]any                  // nil when unchanged
}

func toolCallReadyAction(turnID, toolCallID string, f readyFields) wire.StateAction {
	a := &wire.ChatToolCallReadyAction{
		TurnID: turnID, ToolCallID: toolCallID,
		InvocationMessage: wire.PlainText(f.invocation),
		Options:           f.options,
		Meta:              f.meta,
	}
	if f.intention != "" {
		a.Intention = wire.Ptr(f.intention)
	}
	if f.toolInput != "" {
		a.ToolInput = wire.Ptr(wire.ToolInputText(f.toolInput))
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
		a.Edits = &wire.FileEditCollection{Items: items}
	}
	if f.confirmed != "" {
		a.Confirmed = wire.Ptr(f.confirmed)
	}
	return act(a)
}

func toolCallContentChangedAction(turnID, toolCallID string, content []wire.ToolResultContent, meta map[string]any) wire.StateAction {
	if content == nil {
		content = []wire.ToolResultContent{}
	}
	return act(&wire.ChatToolCallContentChangedAction{TurnID: turnID, ToolCallID: toolCallID, Content: content, Meta: meta})
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
	return act(&wire.ChatToolCallCompleteAction{TurnID: turnID, ToolCallID: toolCallID, Meta: meta, Result: r})
}

// toolCallConfirmedAction is the server-side confirmation the approval
// policy dispatches.
func toolCallConfirmedAction(turnID, toolCallID string, approve bool) wire.StateAction {
	if approve {
		return act(&wire.ChatToolCallApprovedAction{
			TurnID: turnID, ToolCallID: toolCallID, Approved: true, Confirmed: wire.ToolCallConfirmationReasonSetting,
		})
	}
	return act(&wire.ChatToolCallDeniedAction{
		TurnID: turnID, ToolCallID: toolCallID, Reason: wire.ToolCallCancellationReasonDenied,
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
	added, removed int64
}

func (e fileEditFields) wire() (before, after *wire.FileEditSide, diff *wire.FileEditDiffStats) {
	if e.before != nil {
		before = &wire.FileEditSide{URI: e.before.uri, Content: e.before.contentRef()}
	}
	if e.after != nil {
		after = &wire.FileEditSide{URI: e.after.uri, Content: e.after.contentRef()}
	}
	return before, after, &wire.FileEditDiffStats{Added: wire.Ptr(e.added), Removed: wire.Ptr(e.removed)}
}

func textContent(s string) wire.ToolResultContent {
	return wire.NewToolResultContent(&wire.ToolResultTextContent{Text: s})
}

func embeddedContent(data, contentType string) wire.ToolResultContent {
	return wire.NewToolResultContent(&wire.ToolResultEmbeddedResourceContent{Data: data, ContentType: contentType})
}

func resourceContent(uri, contentType string) wire.ToolResultContent {
	c := &wire.ToolResultResourceContent{URI: uri}
	if contentType != "" {
		c.ContentType = wire.Ptr(contentType)
	}
	return wire.NewToolResultContent(c)
}

func fileEditContent(e fileEditFields) wire.ToolResultContent {
	before, after, diff := e.wire()
	return wire.NewToolResultContent(&wire.ToolResultFileEditContent{Before: before, After: after, Diff: diff})
}

// terminalContent refers to a terminal channel; result carries the
// command's exit code once the Turn has seen it exit.
func terminalContent(resource, title string, exitCode *int64) wire.ToolResultContent {
	c := &wire.ToolResultTerminalContent{Resource: resource, Title: title}
	if exitCode != nil {
		c.Result = &wire.TerminalCommandResult{ExitCode: wire.Ptr(*exitCode)}
	}
	return wire.NewToolResultContent(c)
}

// usageAction reports the tokens a turn spent: only the counts the agent
// reported (backend.Usage.Has), never a zero standing in for a count it did
// not send. The counts AHP's UsageInfo has no field for (cache writes,
// reasoning, the agent's total) go into its `_meta` under MetaUsage. There
// is no action when the agent reported no count.
func usageActions(turnID string, u backend.Usage) []wire.StateAction {
	var info wire.UsageInfo
	if u.Has(backend.UsageInput) {
		info.InputTokens = wire.Ptr(u.InputTokens)
	}
	if u.Has(backend.UsageOutput) {
		info.OutputTokens = wire.Ptr(u.OutputTokens)
	}
	if u.Has(backend.UsageCacheRead) {
		info.CacheReadTokens = wire.Ptr(u.CachedInputTokens)
	}
	extra := map[string]any{}
	if u.Has(backend.UsageCacheWrite) {
		extra["cacheWriteTokens"] = u.CacheWriteTokens
	}
	if u.Has(backend.UsageThought) {
		extra["thoughtTokens"] = u.ThoughtTokens
	}
	if u.Has(backend.UsageTotal) {
		extra["totalTokens"] = u.TotalTokens
	}
	if len(extra) > 0 {
		info.Meta = map[string]any{MetaUsage: extra}
	}
	if info.InputTokens == nil && info.OutputTokens == nil && info.CacheReadTokens == nil && info.Meta == nil {
		return nil
	}
	if u.Model != "" {
		info.Model = wire.Ptr(u.Model)
	}
	return []wire.StateAction{act(&wire.ChatUsageAction{TurnID: turnID, Usage: info})}
}

// errorAction ends a failed turn: the error is the turn's last response
// part. The bridge cannot re-drive an ACP prompt without repeating what the
// agent already did, so the part is never resumable and a chat/turnResume
// is always rejected (docs/protocol-versions.md §12).
func errorAction(turnID string, duration int64, errType, msg string) wire.StateAction {
	return act(&wire.ChatErrorAction{TurnID: turnID, Duration: duration,
		Part: wire.ErrorResponsePart{Error: wire.ErrorInfo{ErrorType: errType, Message: msg}}})
}

func turnCompleteAction(turnID string, duration int64) wire.StateAction {
	return act(&wire.ChatTurnCompleteAction{TurnID: turnID, Duration: duration})
}

func turnCancelledAction(turnID string, duration int64) wire.StateAction {
	return act(&wire.ChatTurnCancelledAction{TurnID: turnID, Duration: duration})
}

func titleChangedAction(title string) wire.StateAction {
	return act(&wire.SessionTitleChangedAction{Title: title})
}

// configChangedAction replaces the session's config values with values:
// the agent's settings are a whole list, and a setting it dropped must go.
func configChangedAction(values map[string]any) wire.StateAction {
	if values == nil {
		values = map[string]any{}
	}
	return act(&wire.SessionConfigChangedAction{Config: values, Replace: wire.Ptr(true)})
}

func metaChangedAction(meta map[string]any) wire.StateAction {
	if meta == nil {
		meta = map[string]any{}
	}
	return act(&wire.SessionMetaChangedAction{Meta: meta})
}

// activityAction sets the chat's activity; "" clears it.
func activityAction(activity string) wire.StateAction {
	a := &wire.ChatActivityChangedAction{}
	if activity != "" {
		a.Activity = wire.Ptr(activity)
	}
	return act(a)
}

// inputRequest builds an input request with one required text question
// per string.
func inputRequest(id string, questions []string, ids func() string) wire.ChatInputRequest {
	req := wire.ChatInputRequest{ID: id, Questions: make([]wire.ChatInputQuestion, 0, len(questions))}
	for _, q := range questions {
		req.Questions = append(req.Questions, wire.NewChatInputQuestion(&wire.ChatInputTextQuestion{
			ID: ids(), Message: q, Required: wire.Ptr(true),
		}))
	}
	return req
}

func inputRequestedAction(req wire.ChatInputRequest) wire.StateAction {
	return act(&wire.ChatInputRequestedAction{Request: req})
}

// commandItem is the completion item of one slash command.
func commandItem(name string, start, end int64, meta map[string]any) wire.CompletionItem {
	return wire.CompletionItem{
		InsertText: "/" + name + " ",
		RangeStart: wire.Ptr(start),
		RangeEnd:   wire.Ptr(end),
		Attachment: wire.NewMessageAttachment(&wire.SimpleMessageAttachment{
			Label: "/" + name, DisplayKind: wire.Ptr("command"), Meta: meta,
		}),
	}
}
