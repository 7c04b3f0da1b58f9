package reducer030

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

type jsonRaw = json.RawMessage

// rawString returns the string member prop of the raw JSON object b.
func rawString(b json.RawMessage, prop string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(m[prop], &s) != nil {
		return "", false
	}
	return s, true
}

// toolCallBase holds the fields every tool call state shares.
type toolCallBase struct {
	ToolCallID, ToolName, DisplayName string
	Contributor                       *wire.ToolCallContributor
	Meta                              map[string]any
}

// baseOf returns the shared fields of a known tool call state.
func baseOf(tc wire.ToolCallState) (toolCallBase, bool) {
	switch v := tc.Value.(type) {
	case *wire.ToolCallStreamingState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Contributor, v.Meta}, true
		}
	case *wire.ToolCallPendingConfirmationState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Contributor, v.Meta}, true
		}
	case *wire.ToolCallRunningState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Contributor, v.Meta}, true
		}
	case *wire.ToolCallPendingResultConfirmationState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Contributor, v.Meta}, true
		}
	case *wire.ToolCallCompletedState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Contributor, v.Meta}, true
		}
	case *wire.ToolCallCancelledState:
		if v != nil {
			return toolCallBase{v.ToolCallID, v.ToolName, v.DisplayName, v.Contributor, v.Meta}, true
		}
	}
	return toolCallBase{}, false
}

// ToolCallID returns the id of a tool call in any state, including a state
// this package does not know (read from its raw JSON).
func ToolCallID(tc wire.ToolCallState) (string, bool) {
	if b, ok := baseOf(tc); ok {
		return b.ToolCallID, true
	}
	if raw, ok := tc.Value.(json.RawMessage); ok {
		return rawString(raw, "toolCallId")
	}
	return "", false
}

// ToolCallDisplayName returns the display name of a tool call in any known
// state ("" for a state this package does not know).
func ToolCallDisplayName(tc wire.ToolCallState) string {
	b, _ := baseOf(tc)
	return b.DisplayName
}

// FindToolCall returns the tool call toolCallID of the active turn turnID
// and its status, for validating client actions (e.g. a confirmation must
// target a pending-confirmation tool call of the active turn). ok is false
// when there is no such active turn or tool call.
func FindToolCall(s *wire.SessionState, turnID, toolCallID string) (tc wire.ToolCallState, status wire.ToolCallStatus, ok bool) {
	if s == nil {
		return wire.ToolCallState{}, "", false
	}
	t := activeTurn(s, turnID)
	if t == nil {
		return wire.ToolCallState{}, "", false
	}
	for _, p := range t.ResponseParts {
		tp, isTool := p.Value.(*wire.ToolCallResponsePart)
		if !isTool || tp == nil {
			continue
		}
		if id, idOK := ToolCallID(tp.ToolCall); idOK && id == toolCallID {
			return tp.ToolCall, wire.ToolCallStatus(tp.ToolCall.Status()), true
		}
	}
	return wire.ToolCallState{}, "", false
}

// invocationAndInput returns the invocation message and tool input of a
// tool call past streaming.
func invocationAndInput(tc wire.ToolCallState) (wire.StringOrMarkdown, *string) {
	switch v := tc.Value.(type) {
	case *wire.ToolCallPendingConfirmationState:
		return v.InvocationMessage, v.ToolInput
	case *wire.ToolCallRunningState:
		return v.InvocationMessage, v.ToolInput
	case *wire.ToolCallPendingResultConfirmationState:
		return v.InvocationMessage, v.ToolInput
	case *wire.ToolCallCompletedState:
		return v.InvocationMessage, v.ToolInput
	case *wire.ToolCallCancelledState:
		return v.InvocationMessage, v.ToolInput
	}
	return wire.StringOrMarkdown{}, nil
}

func toolCallDelta(tc wire.ToolCallState, a *wire.SessionToolCallDeltaAction) (wire.ToolCallState, bool) {
	st, ok := tc.Value.(*wire.ToolCallStreamingState)
	if !ok || st == nil {
		return tc, false
	}
	partial := a.Content
	if st.PartialInput != nil {
		partial = *st.PartialInput + a.Content
	}
	st.PartialInput = &partial
	if a.InvocationMessage != nil {
		st.InvocationMessage = wire.Ptr(*a.InvocationMessage)
	}
	return tc, true
}

func toolCallReady(tc wire.ToolCallState, a *wire.SessionToolCallReadyAction) (wire.ToolCallState, bool) {
	status := wire.ToolCallStatus(tc.Status())
	if status != wire.ToolCallStatusStreaming && status != wire.ToolCallStatusRunning {
		return tc, false
	}
	b, ok := baseOf(tc)
	if !ok {
		return tc, false
	}
	if a.Confirmed != nil && *a.Confirmed != "" {
		return wire.NewToolCallState(&wire.ToolCallRunningState{
			ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
			Contributor: b.Contributor, Meta: b.Meta,
			Status:            wire.ToolCallStatusRunning,
			InvocationMessage: a.InvocationMessage,
			ToolInput:         clone(a.ToolInput),
			Confirmed:         *a.Confirmed,
		}), true
	}
	return wire.NewToolCallState(&wire.ToolCallPendingConfirmationState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusPendingConfirmation,
		InvocationMessage: a.InvocationMessage,
		ToolInput:         clone(a.ToolInput),
		ConfirmationTitle: clone(a.ConfirmationTitle),
		Edits:             clone(a.Edits),
		Editable:          clone(a.Editable),
		Options:           clone(a.Options),
	}), true
}

// selectedOption finds the option id among the offered options.
func selectedOption(options []wire.ConfirmationOption, id *string) *wire.ConfirmationOption {
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

func toolCallApproved(tc wire.ToolCallState, a *wire.SessionToolCallApprovedAction) (wire.ToolCallState, bool) {
	p, ok := tc.Value.(*wire.ToolCallPendingConfirmationState)
	if !ok || p == nil {
		return tc, false
	}
	input := p.ToolInput
	if a.EditedToolInput != nil {
		input = wire.Ptr(*a.EditedToolInput)
	}
	return wire.NewToolCallState(&wire.ToolCallRunningState{
		ToolCallID: p.ToolCallID, ToolName: p.ToolName, DisplayName: p.DisplayName,
		Contributor: p.Contributor, Meta: p.Meta,
		Status:            wire.ToolCallStatusRunning,
		InvocationMessage: p.InvocationMessage,
		ToolInput:         input,
		Confirmed:         a.Confirmed,
		SelectedOption:    selectedOption(p.Options, a.SelectedOptionID),
	}), true
}

func toolCallDenied(tc wire.ToolCallState, a *wire.SessionToolCallDeniedAction) (wire.ToolCallState, bool) {
	p, ok := tc.Value.(*wire.ToolCallPendingConfirmationState)
	if !ok || p == nil {
		return tc, false
	}
	return wire.NewToolCallState(&wire.ToolCallCancelledState{
		ToolCallID: p.ToolCallID, ToolName: p.ToolName, DisplayName: p.DisplayName,
		Contributor: p.Contributor, Meta: p.Meta,
		Status:            wire.ToolCallStatusCancelled,
		InvocationMessage: p.InvocationMessage,
		ToolInput:         p.ToolInput,
		Reason:            a.Reason,
		ReasonMessage:     clone(a.ReasonMessage),
		UserSuggestion:    clone(a.UserSuggestion),
		SelectedOption:    selectedOption(p.Options, a.SelectedOptionID),
	}), true
}

func toolCallComplete(tc wire.ToolCallState, a *wire.SessionToolCallCompleteAction) (wire.ToolCallState, bool) {
	b, ok := baseOf(tc)
	if !ok {
		return tc, false
	}
	var confirmed wire.ToolCallConfirmationReason
	var selected *wire.ConfirmationOption
	switch v := tc.Value.(type) {
	case *wire.ToolCallRunningState:
		confirmed, selected = v.Confirmed, v.SelectedOption
	case *wire.ToolCallPendingConfirmationState:
		confirmed = wire.ToolCallConfirmationReasonNotNeeded
	default:
		return tc, false
	}
	inv, input := invocationAndInput(tc)
	r := clone(a.Result)
	if a.RequiresResultConfirmation != nil && *a.RequiresResultConfirmation {
		return wire.NewToolCallState(&wire.ToolCallPendingResultConfirmationState{
			ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
			Contributor: b.Contributor, Meta: b.Meta,
			Status:            wire.ToolCallStatusPendingResultConfirmation,
			InvocationMessage: inv,
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
		Contributor: b.Contributor, Meta: b.Meta,
		Status:            wire.ToolCallStatusCompleted,
		InvocationMessage: inv,
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

func toolCallResultConfirmed(tc wire.ToolCallState, approved bool) (wire.ToolCallState, bool) {
	p, ok := tc.Value.(*wire.ToolCallPendingResultConfirmationState)
	if !ok || p == nil {
		return tc, false
	}
	if approved {
		return wire.NewToolCallState(&wire.ToolCallCompletedState{
			ToolCallID: p.ToolCallID, ToolName: p.ToolName, DisplayName: p.DisplayName,
			Contributor: p.Contributor, Meta: p.Meta,
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
		ToolCallID: p.ToolCallID, ToolName: p.ToolName, DisplayName: p.DisplayName,
		Contributor: p.Contributor, Meta: p.Meta,
		Status:            wire.ToolCallStatusCancelled,
		InvocationMessage: p.InvocationMessage,
		ToolInput:         p.ToolInput,
		Reason:            wire.ToolCallCancellationReasonResultDenied,
		SelectedOption:    p.SelectedOption,
	}), true
}

// forceCancel turns a tool call that is still in progress into a cancelled
// one (reason "skipped"); completed, cancelled and unknown states are left
// alone.
func forceCancel(tc wire.ToolCallState) (wire.ToolCallState, bool) {
	b, ok := baseOf(tc)
	if !ok {
		return tc, false
	}
	c := &wire.ToolCallCancelledState{
		ToolCallID: b.ToolCallID, ToolName: b.ToolName, DisplayName: b.DisplayName,
		Contributor: b.Contributor, Meta: b.Meta,
		Status: wire.ToolCallStatusCancelled,
		Reason: wire.ToolCallCancellationReasonSkipped,
	}
	switch v := tc.Value.(type) {
	case *wire.ToolCallCompletedState, *wire.ToolCallCancelledState:
		return tc, false
	case *wire.ToolCallStreamingState:
		if v.InvocationMessage != nil {
			c.InvocationMessage = *v.InvocationMessage
		}
	default:
		c.InvocationMessage, c.ToolInput = invocationAndInput(tc)
	}
	return wire.NewToolCallState(c), true
}

// clientDispatchable lists the action types a client may dispatch; the
// server originates all others.
var clientDispatchable = map[wire.ActionType]bool{
	wire.ActionTypeRootConfigChanged:               true,
	wire.ActionTypeSessionTurnStarted:              true,
	wire.ActionTypeSessionToolCallConfirmed:        true,
	wire.ActionTypeSessionToolCallComplete:         true,
	wire.ActionTypeSessionToolCallResultConfirmed:  true,
	wire.ActionTypeSessionToolCallContentChanged:   true,
	wire.ActionTypeSessionTurnCancelled:            true,
	wire.ActionTypeSessionTitleChanged:             true,
	wire.ActionTypeSessionModelChanged:             true,
	wire.ActionTypeSessionAgentChanged:             true,
	wire.ActionTypeSessionActiveClientChanged:      true,
	wire.ActionTypeSessionActiveClientToolsChanged: true,
	wire.ActionTypeSessionPendingMessageSet:        true,
	wire.ActionTypeSessionPendingMessageRemoved:    true,
	wire.ActionTypeSessionQueuedMessagesReordered:  true,
	wire.ActionTypeSessionInputAnswerChanged:       true,
	wire.ActionTypeSessionInputCompleted:           true,
	wire.ActionTypeSessionCustomizationToggled:     true,
	wire.ActionTypeSessionTruncated:                true,
	wire.ActionTypeSessionIsReadChanged:            true,
	wire.ActionTypeSessionIsArchivedChanged:        true,
	wire.ActionTypeSessionConfigChanged:            true,
	wire.ActionTypeTerminalInput:                   true,
	wire.ActionTypeTerminalResized:                 true,
	wire.ActionTypeTerminalClaimed:                 true,
	wire.ActionTypeTerminalTitleChanged:            true,
	wire.ActionTypeTerminalCleared:                 true,
}

// ClientDispatchable reports whether a client may dispatch an action of the
// given type (dispatchAction); unknown types are not dispatchable.
func ClientDispatchable(actionType string) bool {
	return clientDispatchable[wire.ActionType(actionType)]
}
