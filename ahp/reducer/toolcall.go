package reducer

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// toolCallBase holds what a tool call keeps through every status.
type toolCallBase struct {
	ToolCallID  string
	ToolName    string
	DisplayName string
	Intention   *string
	Contributor *wire.ToolCallContributor
	Meta        map[string]any
}

// toolCallRaw is how the shared members of a tool call in a status this
// package does not know are read.
type toolCallRaw struct {
	ToolCallID        string                    `json:"toolCallId"`
	ToolName          string                    `json:"toolName"`
	DisplayName       string                    `json:"displayName"`
	Intention         *string                   `json:"intention"`
	Contributor       *wire.ToolCallContributor `json:"contributor"`
	Meta              map[string]any            `json:"_meta"`
	InvocationMessage *wire.StringOrMarkdown    `json:"invocationMessage"`
	ToolInput         *wire.ToolInput           `json:"toolInput"`
}

// toolCallCommon returns the shared fields of tc, its invocation message
// (nil when a streaming call has none yet) and its tool input (always nil
// while streaming: partial input is not input). ok is false when tc holds
// no tool call, or raw JSON that does not read as one.
func toolCallCommon(tc wire.ToolCallState) (b toolCallBase, inv *wire.StringOrMarkdown, input *wire.ToolInput, ok bool) {
	switch v := wire.NewToolCallState(tc.Value).Value.(type) {
	case *wire.ToolCallStreamingState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Intention, v.Contributor, v.Meta}, v.InvocationMessage, nil, true
		}
	case *wire.ToolCallPendingConfirmationState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Intention, v.Contributor, v.Meta}, &v.InvocationMessage, v.ToolInput, true
		}
	case *wire.ToolCallRunningState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Intention, v.Contributor, v.Meta}, &v.InvocationMessage, v.ToolInput, true
		}
	case *wire.ToolCallAuthRequiredState:
		if v != nil {
			c := wire.NewToolCallContributor(v.Contributor)
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Intention, &c, v.Meta}, &v.InvocationMessage, v.ToolInput, true
		}
	case *wire.ToolCallPendingResultConfirmationState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Intention, v.Contributor, v.Meta}, &v.InvocationMessage, v.ToolInput, true
		}
	case *wire.ToolCallCompletedState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Intention, v.Contributor, v.Meta}, &v.InvocationMessage, v.ToolInput, true
		}
	case *wire.ToolCallCancelledState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Intention, v.Contributor, v.Meta}, &v.InvocationMessage, v.ToolInput, true
		}
	case json.RawMessage:
		var r toolCallRaw
		if json.Unmarshal(v, &r) != nil {
			return toolCallBase{}, nil, nil, false
		}
		return toolCallBase{r.ToolCallID, r.ToolName, r.DisplayName, r.Intention, r.Contributor, r.Meta}, r.InvocationMessage, r.ToolInput, true
	}
	return toolCallBase{}, nil, nil, false
}

// withMeta returns b with its _meta replaced by meta when the action
// carried one (an action without _meta keeps the tool call's).
func (b toolCallBase) withMeta(meta map[string]any) toolCallBase {
	if meta != nil {
		b.Meta = clone(meta)
	}
	return b
}

// ToolCallID returns the id of a tool call in any status, including one
// this package does not know (read from its raw JSON). ok is false when tc
// holds no tool call or an unknown one without a toolCallId.
func ToolCallID(tc wire.ToolCallState) (string, bool) {
	switch v := tc.Value.(type) {
	case nil:
		return "", false
	case json.RawMessage:
		return chatRawString(v, "toolCallId")
	}
	if tc.Status() == "" {
		return "", false // a nil variant pointer, or not a variant at all
	}
	return tc.ToolCallID(), true
}

// ToolCallDisplayName returns the display name of a tool call in any
// status ("" when it has none).
func ToolCallDisplayName(tc wire.ToolCallState) string { return tc.DisplayName() }

// ToolCallClientID returns the client that contributed the tool call, and
// so executes it once it runs (it alone may complete it or change its
// content). ok is false for tool calls the server or an MCP server runs.
func ToolCallClientID(tc wire.ToolCallState) (string, bool) {
	b, _, _, ok := toolCallCommon(tc)
	if !ok {
		return "", false
	}
	return toolCallContributorClient(b.Contributor)
}

// toolCallContributorClient returns the client id of a client contributor.
func toolCallContributorClient(c *wire.ToolCallContributor) (string, bool) {
	if c == nil {
		return "", false
	}
	switch v := wire.NewToolCallContributor(c.Value).Value.(type) {
	case *wire.ToolCallClientContributor:
		if v != nil {
			return v.ClientID, true
		}
	}
	return "", false
}

// FindToolCall returns the tool call toolCallID of the chat's active turn
// turnID and its status, e.g. to validate a client's action (a
// confirmation must target a pending-confirmation tool call of the active
// turn). ok is false when there is no such active turn or tool call. The
// tool call is the state's own, not a copy, and must not be changed.
func FindToolCall(s *wire.ChatState, turnID, toolCallID string) (tc wire.ToolCallState, status wire.ToolCallStatus, ok bool) {
	if s == nil || s.ActiveTurn == nil || s.ActiveTurn.ID != turnID {
		return wire.ToolCallState{}, "", false
	}
	for _, part := range s.ActiveTurn.ResponseParts {
		tp, isTool := chatPartValue(part).(*wire.ToolCallResponsePart)
		if !isTool {
			continue
		}
		tc := wire.NewToolCallState(tp.ToolCall.Value)
		if id, idOK := ToolCallID(tc); idOK && id == toolCallID {
			return tc, wire.ToolCallStatus(tc.Status()), true
		}
	}
	return wire.ToolCallState{}, "", false
}

// toolCallRefineContributor returns the contributor after chat/toolCallReady
// offered next. Execution ownership is settled at chat/toolCallStart: a
// client's tool call stays that client's, and a call that was not a
// client's cannot become one; anything else may be refined.
func toolCallRefineContributor(cur, next *wire.ToolCallContributor) *wire.ToolCallContributor {
	if next == nil || next.Value == nil {
		return cur
	}
	nextClient, nextIsClient := toolCallContributorClient(next)
	if curClient, ok := toolCallContributorClient(cur); ok {
		if nextIsClient && nextClient == curClient {
			return clone(next)
		}
		return cur
	}
	if nextIsClient {
		return cur
	}
	return clone(next)
}

// toolCallDelta appends streamed parameters to a streaming tool call.
// appendText joins the partial input and the new text (Streaming passes
// an amortised O(1) one).
func toolCallDelta(tc wire.ToolCallState, a *wire.ChatToolCallDeltaAction, appendText func(cur, add string) string) (wire.ToolCallState, bool) {
	st, ok := tc.Value.(*wire.ToolCallStreamingState)
	if !ok || st == nil {
		return tc, false
	}
	if a.Meta != nil {
		st.Meta = clone(a.Meta)
	}
	if a.Content != nil {
		cur := ""
		if st.PartialInput != nil {
			cur = *st.PartialInput
		}
		st.PartialInput = wire.Ptr(appendText(cur, *a.Content))
	}
	if a.InvocationMessage != nil {
		st.InvocationMessage = wire.Ptr(*a.InvocationMessage)
	}
	return tc, true
}

// toolCallReady finishes a streaming tool call's parameters, or asks again
// for confirmation of a running or pending one. Confirmation details the
// action leaves out are kept from a pending call.
func toolCallReady(tc wire.ToolCallState, a *wire.ChatToolCallReadyAction) (wire.ToolCallState, bool) {
	status := wire.ToolCallStatus(tc.Status())
	switch status {
	case wire.ToolCallStatusStreaming, wire.ToolCallStatusRunning, wire.ToolCallStatusPendingConfirmation:
	default:
		return tc, false
	}
	b, _, input, ok := toolCallCommon(tc)
	if !ok {
		return tc, false
	}
	b = b.withMeta(a.Meta)
	b.Contributor = toolCallRefineContributor(b.Contributor, a.Contributor)
	if a.Intention != nil {
		b.Intention = wire.Ptr(*a.Intention)
	}
	if a.ToolInput != nil {
		input = clone(a.ToolInput)
	}
	if a.Confirmed != nil && *a.Confirmed != "" {
		return wire.NewToolCallState(&wire.ToolCallRunningState{
			ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
			Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
			Status:            wire.ToolCallStatusRunning,
			InvocationMessage: a.InvocationMessage,
			ToolInput:         input,
			Confirmed:         *a.Confirmed,
		}), true
	}
	p := &wire.ToolCallPendingConfirmationState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusPendingConfirmation,
		InvocationMessage: a.InvocationMessage,
		ToolInput:         input,
		ConfirmationTitle: clone(a.ConfirmationTitle),
		RiskAssessment:    clone(a.RiskAssessment),
		Edits:             clone(a.Edits),
		Editable:          clone(a.Editable),
		Options:           clone(a.Options),
	}
	if prev, ok := tc.Value.(*wire.ToolCallPendingConfirmationState); ok {
		if p.ConfirmationTitle == nil {
			p.ConfirmationTitle = prev.ConfirmationTitle
		}
		if p.RiskAssessment == nil {
			p.RiskAssessment = prev.RiskAssessment
		}
		if p.Edits == nil {
			p.Edits = prev.Edits
		}
		if p.Editable == nil {
			p.Editable = prev.Editable
		}
		if p.Options == nil {
			p.Options = prev.Options
		}
	}
	return wire.NewToolCallState(p), true
}

// toolCallSelectedOption returns a copy of the offered option id, or nil.
func toolCallSelectedOption(options []wire.ConfirmationOption, id *string) *wire.ConfirmationOption {
	if id == nil || *id == "" {
		return nil
	}
	for _, o := range options {
		if o.ID == *id {
			return wire.Ptr(clone(o))
		}
	}
	return nil
}

func toolCallApproved(tc wire.ToolCallState, a *wire.ChatToolCallApprovedAction) (wire.ToolCallState, bool) {
	p, ok := tc.Value.(*wire.ToolCallPendingConfirmationState)
	if !ok || p == nil {
		return tc, false
	}
	b, _, _, _ := toolCallCommon(tc)
	b = b.withMeta(a.Meta)
	input := p.ToolInput
	// Only inline input can be edited: referenced input is replaced by the
	// host in the referenced content, so the reference itself stays.
	if a.EditedToolInput != nil && input != nil && input.Ref == nil {
		input = wire.Ptr(wire.ToolInputText(*a.EditedToolInput))
	}
	return wire.NewToolCallState(&wire.ToolCallRunningState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusRunning,
		InvocationMessage: p.InvocationMessage,
		ToolInput:         input,
		Confirmed:         a.Confirmed,
		SelectedOption:    toolCallSelectedOption(p.Options, a.SelectedOptionID),
	}), true
}

func toolCallDenied(tc wire.ToolCallState, a *wire.ChatToolCallDeniedAction) (wire.ToolCallState, bool) {
	p, ok := tc.Value.(*wire.ToolCallPendingConfirmationState)
	if !ok || p == nil {
		return tc, false
	}
	b, _, _, _ := toolCallCommon(tc)
	b = b.withMeta(a.Meta)
	return wire.NewToolCallState(&wire.ToolCallCancelledState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusCancelled,
		InvocationMessage: p.InvocationMessage,
		ToolInput:         p.ToolInput,
		Reason:            a.Reason,
		ReasonMessage:     clone(a.ReasonMessage),
		UserSuggestion:    clone(a.UserSuggestion),
		SelectedOption:    toolCallSelectedOption(p.Options, a.SelectedOptionID),
	}), true
}

// toolCallComplete records a tool call's result. A call still pending
// confirmation completes as not needing one. A call waiting for MCP
// authentication can only be completed as failed (the client gave up on
// the challenge; nothing ran that could have succeeded), and then always
// terminally, keeping what it produced before it paused.
func toolCallComplete(tc wire.ToolCallState, a *wire.ChatToolCallCompleteAction) (wire.ToolCallState, bool) {
	var confirmed wire.ToolCallConfirmationReason
	var selected *wire.ConfirmationOption
	var preAuth []wire.ToolResultContent
	needsReview := a.RequiresResultConfirmation != nil && *a.RequiresResultConfirmation
	switch v := tc.Value.(type) {
	case *wire.ToolCallRunningState:
		if v == nil {
			return tc, false
		}
		confirmed, selected = v.Confirmed, v.SelectedOption
	case *wire.ToolCallPendingConfirmationState:
		if v == nil {
			return tc, false
		}
		confirmed = wire.ToolCallConfirmationReasonNotNeeded
	case *wire.ToolCallAuthRequiredState:
		if v == nil || a.Result.Success {
			return tc, false
		}
		confirmed, selected, preAuth = v.Confirmed, v.SelectedOption, v.Content
		needsReview = false
	default:
		return tc, false
	}
	b, inv, input, _ := toolCallCommon(tc)
	b = b.withMeta(a.Meta)
	r := clone(a.Result)
	if r.Content == nil {
		r.Content = preAuth
	}
	if needsReview {
		return wire.NewToolCallState(&wire.ToolCallPendingResultConfirmationState{
			ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
			Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
			Status:            wire.ToolCallStatusPendingResultConfirmation,
			InvocationMessage: *inv,
			ToolInput:         input,
			Confirmed:         confirmed,
			SelectedOption:    selected,
			Success:           r.Success,
			PastTenseMessage:  r.PastTenseMessage,
			Content:           r.Content,
			StructuredContent: r.StructuredContent,
			Error:             r.Error,
		}), true
	}
	return wire.NewToolCallState(&wire.ToolCallCompletedState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusCompleted,
		InvocationMessage: *inv,
		ToolInput:         input,
		Confirmed:         confirmed,
		SelectedOption:    selected,
		Success:           r.Success,
		PastTenseMessage:  r.PastTenseMessage,
		Content:           r.Content,
		StructuredContent: r.StructuredContent,
		Error:             r.Error,
	}), true
}

// toolCallResultConfirmed completes a call whose result the user approved,
// or cancels it (reason result-denied) when they did not.
func toolCallResultConfirmed(tc wire.ToolCallState, a *wire.ChatToolCallResultConfirmedAction) (wire.ToolCallState, bool) {
	p, ok := tc.Value.(*wire.ToolCallPendingResultConfirmationState)
	if !ok || p == nil {
		return tc, false
	}
	b, _, _, _ := toolCallCommon(tc)
	b = b.withMeta(a.Meta)
	if a.Approved {
		return wire.NewToolCallState(&wire.ToolCallCompletedState{
			ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
			Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
			Status:            wire.ToolCallStatusCompleted,
			InvocationMessage: p.InvocationMessage,
			ToolInput:         p.ToolInput,
			Confirmed:         p.Confirmed,
			SelectedOption:    p.SelectedOption,
			Success:           p.Success,
			PastTenseMessage:  p.PastTenseMessage,
			Content:           p.Content,
			StructuredContent: p.StructuredContent,
			Error:             p.Error,
		}), true
	}
	return wire.NewToolCallState(&wire.ToolCallCancelledState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusCancelled,
		InvocationMessage: p.InvocationMessage,
		ToolInput:         p.ToolInput,
		Reason:            wire.ToolCallCancellationReasonResultDenied,
		SelectedOption:    p.SelectedOption,
	}), true
}

// toolCallContentChanged replaces the partial content of a running call.
func toolCallContentChanged(tc wire.ToolCallState, a *wire.ChatToolCallContentChangedAction) (wire.ToolCallState, bool) {
	r, ok := tc.Value.(*wire.ToolCallRunningState)
	if !ok || r == nil {
		return tc, false
	}
	if a.Meta != nil {
		r.Meta = clone(a.Meta)
	}
	r.Content = clone(a.Content)
	return tc, true
}

// toolCallAuthRequired pauses a running call on an MCP authentication
// challenge. Only an MCP server's tool call can be paused so: the
// challenge is answered with the authenticate command for that server.
func toolCallAuthRequired(tc wire.ToolCallState, a *wire.ChatToolCallAuthRequiredAction) (wire.ToolCallState, bool) {
	r, ok := tc.Value.(*wire.ToolCallRunningState)
	if !ok || r == nil || r.Contributor == nil {
		return tc, false
	}
	mcp, ok := wire.NewToolCallContributor(r.Contributor.Value).Value.(*wire.ToolCallMcpContributor)
	if !ok || mcp == nil {
		return tc, false
	}
	b, _, _, _ := toolCallCommon(tc)
	b = b.withMeta(a.Meta)
	return wire.NewToolCallState(&wire.ToolCallAuthRequiredState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: *mcp, Meta: b.Meta,
		Status:            wire.ToolCallStatusAuthRequired,
		InvocationMessage: r.InvocationMessage,
		ToolInput:         r.ToolInput,
		Confirmed:         r.Confirmed,
		SelectedOption:    r.SelectedOption,
		Content:           r.Content,
		Auth:              clone(a.Auth),
	}), true
}

// toolCallAuthResolved resumes a call paused on authentication.
func toolCallAuthResolved(tc wire.ToolCallState, a *wire.ChatToolCallAuthResolvedAction) (wire.ToolCallState, bool) {
	p, ok := tc.Value.(*wire.ToolCallAuthRequiredState)
	if !ok || p == nil {
		return tc, false
	}
	b, _, _, _ := toolCallCommon(tc)
	b = b.withMeta(a.Meta)
	return wire.NewToolCallState(&wire.ToolCallRunningState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusRunning,
		InvocationMessage: p.InvocationMessage,
		ToolInput:         p.ToolInput,
		Confirmed:         p.Confirmed,
		SelectedOption:    p.SelectedOption,
		Content:           p.Content,
	}), true
}

// CancelUnfinishedToolCall cancels (reason skipped) a tool call that has
// not finished when its turn ends, whatever its status, one this package
// does not know included: the turn is over, so the call cannot still be
// going. Completed and cancelled calls, and null ones, are left alone; ok
// reports whether tc was cancelled. Chat does this to every tool call of a
// turn it ends, and so does the 0.7.0 test oracle, whose rule it is too.
func CancelUnfinishedToolCall(tc wire.ToolCallState) (wire.ToolCallState, bool) {
	switch tc.Value.(type) {
	case *wire.ToolCallCompletedState, *wire.ToolCallCancelledState:
		return tc, false
	}
	b, inv, input, ok := toolCallCommon(tc)
	if !ok {
		return tc, false
	}
	c := &wire.ToolCallCancelledState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		Status:    wire.ToolCallStatusCancelled,
		ToolInput: input,
		Reason:    wire.ToolCallCancellationReasonSkipped,
	}
	if inv != nil {
		c.InvocationMessage = *inv
	}
	return wire.NewToolCallState(c), true
}

// ToolCall applies a tool call action (chat/toolCallDelta, toolCallReady,
// toolCallConfirmed, toolCallComplete, toolCallResultConfirmed,
// toolCallContentChanged, toolCallAuthRequired, toolCallAuthResolved) to
// the one tool call tc, by the rules Chat applies to the tool call the
// action names, and reports whether it changed tc. Any other action, and
// an action a tool call in tc's status ignores, leave tc as it is. tc may
// be changed in place; use the tool call returned.
//
// AHP 0.7.0 has the same tool call rules, and the 0.7.0 test oracle
// (internal/oracle/reducer070) applies them with this function.
func ToolCall(tc wire.ToolCallState, a wire.StateAction) (wire.ToolCallState, bool) {
	switch a := actionValue(a).(type) {
	case *wire.ChatToolCallDeltaAction:
		return toolCallDelta(tc, a, chatConcat)
	case *wire.ChatToolCallReadyAction:
		return toolCallReady(tc, a)
	case *wire.ChatToolCallApprovedAction:
		return toolCallApproved(tc, a)
	case *wire.ChatToolCallDeniedAction:
		return toolCallDenied(tc, a)
	case *wire.ChatToolCallCompleteAction:
		return toolCallComplete(tc, a)
	case *wire.ChatToolCallResultConfirmedAction:
		return toolCallResultConfirmed(tc, a)
	case *wire.ChatToolCallContentChangedAction:
		return toolCallContentChanged(tc, a)
	case *wire.ChatToolCallAuthRequiredAction:
		return toolCallAuthRequired(tc, a)
	case *wire.ChatToolCallAuthResolvedAction:
		return toolCallAuthResolved(tc, a)
	}
	return tc, false
}
