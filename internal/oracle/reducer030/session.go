package reducer030

import (
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// statusActivityMask covers the mutually exclusive activity bits 0–4 of
// SessionStatus; the bits above are flags (IsRead, IsArchived, …) that the
// activity computation keeps.
const statusActivityMask wire.SessionStatus = 1<<5 - 1

// Session applies a to the session state s.
func Session(s *wire.SessionState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	// Lifecycle. session/ready must not touch summary.status: a provisional
	// session's first turn may already be running when it arrives.
	case *wire.SessionReadyAction:
		s.Lifecycle = wire.SessionLifecycleReady
	case *wire.SessionCreationFailedAction:
		s.Lifecycle = wire.SessionLifecycleCreationFailed
		s.CreationError = wire.Ptr(clone(a.Error))

	// Turns.
	case *wire.SessionTurnStartedAction:
		s.ActiveTurn = &wire.ActiveTurn{ID: a.TurnID, Message: clone(a.Message), ResponseParts: []wire.ResponsePart{}}
		s.Summary.Status = summaryStatus(s, 0).Without(wire.SessionStatusIsRead)
		s.Summary.ModifiedAt = clock.now()
		if a.QueuedMessageID != nil {
			id := *a.QueuedMessageID
			if s.SteeringMessage != nil && s.SteeringMessage.ID == id {
				s.SteeringMessage = nil
			}
			if s.QueuedMessages != nil {
				s.QueuedMessages = removePending(s.QueuedMessages, id)
				if len(s.QueuedMessages) == 0 {
					s.QueuedMessages = nil
				}
			}
		}
	case *wire.SessionDeltaAction:
		updateResponsePart(s, a.TurnID, a.PartID, func(p wire.ResponsePart) {
			if m, ok := p.Value.(*wire.MarkdownResponsePart); ok {
				m.Content += a.Content
			}
		})
	case *wire.SessionReasoningAction:
		updateResponsePart(s, a.TurnID, a.PartID, func(p wire.ResponsePart) {
			if r, ok := p.Value.(*wire.ReasoningResponsePart); ok {
				r.Content += a.Content
			}
		})
	case *wire.SessionResponsePartAction:
		if t := activeTurn(s, a.TurnID); t != nil {
			t.ResponseParts = append(t.ResponseParts, clone(a.Part))
		}
	case *wire.SessionTurnCompleteAction:
		endTurn(s, a.TurnID, wire.TurnStateComplete, nil, clock)
	case *wire.SessionTurnCancelledAction:
		endTurn(s, a.TurnID, wire.TurnStateCancelled, nil, clock)
	case *wire.SessionErrorAction:
		endTurn(s, a.TurnID, wire.TurnStateError, wire.Ptr(clone(a.Error)), clock)
	case *wire.SessionUsageAction:
		if t := activeTurn(s, a.TurnID); t != nil {
			t.Usage = wire.Ptr(clone(a.Usage))
		}

	// Tool calls.
	case *wire.SessionToolCallStartAction:
		if t := activeTurn(s, a.TurnID); t != nil {
			tc := &wire.ToolCallStreamingState{
				ToolCallID:  a.ToolCallID,
				ToolName:    a.ToolName,
				DisplayName: a.DisplayName,
				Contributor: clone(a.Contributor),
				Meta:        clone(a.Meta),
				Status:      wire.ToolCallStatusStreaming,
			}
			t.ResponseParts = append(t.ResponseParts, wire.NewResponsePart(&wire.ToolCallResponsePart{
				Kind:     wire.ResponsePartKindToolCall,
				ToolCall: wire.NewToolCallState(tc),
			}))
		}
	case *wire.SessionToolCallDeltaAction:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallDelta(tc, a)
		})
	case *wire.SessionToolCallReadyAction:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallReady(tc, a)
		})
		refreshSummaryStatus(s)
	case *wire.SessionToolCallApprovedAction:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallApproved(tc, a)
		})
		refreshSummaryStatus(s)
	case *wire.SessionToolCallDeniedAction:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallDenied(tc, a)
		})
		refreshSummaryStatus(s)
	case *wire.SessionToolCallCompleteAction:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallComplete(tc, a)
		})
		refreshSummaryStatus(s)
	case *wire.SessionToolCallResultConfirmedAction:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallResultConfirmed(tc, a.Approved)
		})
		refreshSummaryStatus(s)
	case *wire.SessionToolCallContentChangedAction:
		updateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			r, ok := tc.Value.(*wire.ToolCallRunningState)
			if !ok || r == nil {
				return tc, false
			}
			r.Content = clone(a.Content)
			return tc, true
		})

	// Metadata.
	case *wire.SessionTitleChangedAction:
		s.Summary.Title = a.Title
		s.Summary.ModifiedAt = clock.now()
	case *wire.SessionModelChangedAction:
		s.Summary.Model = wire.Ptr(clone(a.Model))
		s.Summary.ModifiedAt = clock.now()
	case *wire.SessionAgentChangedAction:
		s.Summary.Agent = clone(a.Agent)
		s.Summary.ModifiedAt = clock.now()
	case *wire.SessionIsReadChangedAction:
		s.Summary.Status = withFlag(s.Summary.Status, wire.SessionStatusIsRead, a.IsRead)
	case *wire.SessionIsArchivedChangedAction:
		s.Summary.Status = withFlag(s.Summary.Status, wire.SessionStatusIsArchived, a.IsArchived)
	case *wire.SessionActivityChangedAction:
		s.Summary.Activity = clone(a.Activity)
	case *wire.SessionChangesetsChangedAction:
		s.Changesets = clone(a.Changesets)
	case *wire.SessionConfigChangedAction:
		if s.Config == nil {
			return
		}
		s.Config.Values = mergeValues(s.Config.Values, a.Config, a.Replace != nil && *a.Replace)
		s.Summary.ModifiedAt = clock.now()
	case *wire.SessionMetaChangedAction:
		s.Meta = clone(a.Meta)
	case *wire.SessionServerToolsChangedAction:
		s.ServerTools = clone(a.Tools)
	case *wire.SessionActiveClientChangedAction:
		s.ActiveClient = clone(a.ActiveClient)
	case *wire.SessionActiveClientToolsChangedAction:
		if s.ActiveClient != nil {
			s.ActiveClient.Tools = clone(a.Tools)
		}

	// Customizations.
	case *wire.SessionCustomizationsChangedAction:
		s.Customizations = clone(a.Customizations)
	case *wire.SessionCustomizationToggledAction:
		toggleCustomization(s, a.ID, a.Enabled)
	case *wire.SessionCustomizationUpdatedAction:
		c := clone(a.Customization)
		id := customizationID(c)
		for i := range s.Customizations {
			if customizationID(s.Customizations[i]) == id {
				s.Customizations[i] = c
				return
			}
		}
		if s.Customizations == nil {
			s.Customizations = []wire.Customization{}
		}
		s.Customizations = append(s.Customizations, c)
	case *wire.SessionCustomizationRemovedAction:
		removeCustomization(s, a.ID)
	case *wire.SessionMcpServerStateChangedAction:
		setMcpServerState(s, a)

	// Truncation.
	case *wire.SessionTruncatedAction:
		if a.TurnID == nil {
			s.Turns = []wire.Turn{}
		} else {
			idx := -1
			for i := range s.Turns {
				if s.Turns[i].ID == *a.TurnID {
					idx = i
					break
				}
			}
			if idx < 0 {
				return
			}
			s.Turns = s.Turns[: idx+1 : idx+1]
		}
		s.ActiveTurn = nil
		s.InputRequests = nil
		s.Summary.ModifiedAt = clock.now()
		s.Summary.Status = summaryStatus(s, 0)

	// Input requests.
	case *wire.SessionInputRequestedAction:
		req := clone(a.Request)
		replaced := false
		for i := range s.InputRequests {
			if s.InputRequests[i].ID == req.ID {
				if req.Answers == nil {
					req.Answers = s.InputRequests[i].Answers
				}
				s.InputRequests[i] = req
				replaced = true
				break
			}
		}
		if !replaced {
			s.InputRequests = append(s.InputRequests, req)
		}
		s.Summary.Status = summaryStatus(s, 0).Without(wire.SessionStatusIsRead)
		s.Summary.ModifiedAt = clock.now()
	case *wire.SessionInputAnswerChangedAction:
		for i := range s.InputRequests {
			req := &s.InputRequests[i]
			if req.ID != a.RequestID {
				continue
			}
			answers := make(map[string]wire.SessionInputAnswer, len(req.Answers)+1)
			for k, v := range req.Answers {
				answers[k] = v
			}
			if a.Answer == nil {
				delete(answers, a.QuestionID)
			} else {
				answers[a.QuestionID] = clone(*a.Answer)
			}
			req.Answers = answers
			if len(answers) == 0 {
				req.Answers = nil
			}
			s.Summary.ModifiedAt = clock.now()
			return
		}
	case *wire.SessionInputCompletedAction:
		kept := make([]wire.SessionInputRequest, 0, len(s.InputRequests))
		for _, r := range s.InputRequests {
			if r.ID != a.RequestID {
				kept = append(kept, r)
			}
		}
		if len(kept) == len(s.InputRequests) {
			return
		}
		s.InputRequests = kept
		if len(kept) == 0 {
			s.InputRequests = nil
		}
		s.Summary.Status = summaryStatus(s, 0)
		s.Summary.ModifiedAt = clock.now()

	// Pending messages.
	case *wire.SessionPendingMessageSetAction:
		entry := wire.PendingMessage{ID: a.ID, Message: clone(a.Message)}
		if a.Kind == wire.PendingMessageKindSteering {
			s.SteeringMessage = &entry
			return
		}
		for i := range s.QueuedMessages {
			if s.QueuedMessages[i].ID == a.ID {
				s.QueuedMessages[i] = entry
				return
			}
		}
		s.QueuedMessages = append(s.QueuedMessages, entry)
	case *wire.SessionPendingMessageRemovedAction:
		if a.Kind == wire.PendingMessageKindSteering {
			if s.SteeringMessage != nil && s.SteeringMessage.ID == a.ID {
				s.SteeringMessage = nil
			}
			return
		}
		if s.QueuedMessages != nil {
			s.QueuedMessages = removePending(s.QueuedMessages, a.ID)
		}
	case *wire.SessionQueuedMessagesReorderedAction:
		if s.QueuedMessages == nil {
			return
		}
		s.QueuedMessages = reorderPending(s.QueuedMessages, a.Order)
	}
}

// removePending drops the messages with the given id; an emptied list
// becomes nil (absent), as in the reference reducer.
func removePending(list []wire.PendingMessage, id string) []wire.PendingMessage {
	kept := make([]wire.PendingMessage, 0, len(list))
	for _, m := range list {
		if m.ID != id {
			kept = append(kept, m)
		}
	}
	if len(kept) == len(list) {
		return list
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// reorderPending puts the messages named in order first (ignoring unknown
// and repeated ids), then the rest in their original order.
func reorderPending(list []wire.PendingMessage, order []string) []wire.PendingMessage {
	byID := make(map[string]wire.PendingMessage, len(list))
	for _, m := range list {
		if _, dup := byID[m.ID]; !dup {
			byID[m.ID] = m
		}
	}
	placed := map[string]bool{}
	out := make([]wire.PendingMessage, 0, len(list))
	for _, id := range order {
		if m, ok := byID[id]; ok && !placed[id] {
			placed[id] = true
			out = append(out, m)
		}
	}
	for _, m := range list {
		if !placed[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

func withFlag(s, flag wire.SessionStatus, set bool) wire.SessionStatus {
	if set {
		return s.With(flag)
	}
	return s.Without(flag)
}

// activeTurn returns the active turn if its id is turnID.
func activeTurn(s *wire.SessionState, turnID string) *wire.ActiveTurn {
	if s.ActiveTurn == nil || s.ActiveTurn.ID != turnID {
		return nil
	}
	return s.ActiveTurn
}

// summaryStatus derives the activity bits of summary.status from the
// session's live work, keeping the flag bits. terminal, when not 0, is the
// activity to report instead (Error after session/error).
func summaryStatus(s *wire.SessionState, terminal wire.SessionStatus) wire.SessionStatus {
	var activity wire.SessionStatus
	switch {
	case terminal != 0:
		activity = terminal
	case len(s.InputRequests) > 0 || hasPendingConfirmation(s):
		activity = wire.SessionStatusInputNeeded
	case s.ActiveTurn != nil:
		activity = wire.SessionStatusInProgress
	default:
		activity = wire.SessionStatusIdle
	}
	return s.Summary.Status&^statusActivityMask | activity
}

// refreshSummaryStatus recomputes summary.status after a change that may
// enter or leave a state waiting for the user.
func refreshSummaryStatus(s *wire.SessionState) {
	s.Summary.Status = summaryStatus(s, 0)
}

// hasPendingConfirmation reports whether a tool call of the active turn
// waits for the user to confirm it or its result.
func hasPendingConfirmation(s *wire.SessionState) bool {
	if s.ActiveTurn == nil {
		return false
	}
	for _, p := range s.ActiveTurn.ResponseParts {
		tp, ok := p.Value.(*wire.ToolCallResponsePart)
		if !ok || tp == nil {
			continue
		}
		switch wire.ToolCallStatus(tp.ToolCall.Status()) {
		case wire.ToolCallStatusPendingConfirmation, wire.ToolCallStatusPendingResultConfirmation:
			return true
		}
	}
	return false
}

// endTurn finalizes the active turn turnID into a completed turn. Tool
// calls still in progress are cancelled (reason "skipped"), and input
// requests are dropped.
func endTurn(s *wire.SessionState, turnID string, state wire.TurnState, turnErr *wire.ErrorInfo, clock Clock) {
	active := activeTurn(s, turnID)
	if active == nil {
		return
	}
	for i, p := range active.ResponseParts {
		tp, ok := p.Value.(*wire.ToolCallResponsePart)
		if !ok || tp == nil {
			continue
		}
		if c, ok := forceCancel(tp.ToolCall); ok {
			active.ResponseParts[i] = wire.NewResponsePart(&wire.ToolCallResponsePart{Kind: wire.ResponsePartKindToolCall, ToolCall: c})
		}
	}
	parts := active.ResponseParts
	if parts == nil {
		parts = []wire.ResponsePart{}
	}
	s.Turns = append(s.Turns, wire.Turn{
		ID:            active.ID,
		Message:       active.Message,
		ResponseParts: parts,
		Usage:         active.Usage,
		State:         state,
		Error:         turnErr,
	})
	s.ActiveTurn = nil
	s.InputRequests = nil
	s.Summary.ModifiedAt = clock.now()
	var terminal wire.SessionStatus
	if state == wire.TurnStateError {
		terminal = wire.SessionStatusError
	}
	s.Summary.Status = summaryStatus(s, terminal)
}

// responsePartID returns the id session/delta and session/reasoning use to
// target a part: the tool call id for tool call parts, else the part's id.
func responsePartID(p wire.ResponsePart) (string, bool) {
	switch v := p.Value.(type) {
	case *wire.MarkdownResponsePart:
		return v.ID, v != nil
	case *wire.ReasoningResponsePart:
		return v.ID, v != nil
	case *wire.ToolCallResponsePart:
		if v == nil {
			return "", false
		}
		return ToolCallID(v.ToolCall)
	case jsonRaw:
		return rawString(v, "id")
	}
	return "", false
}

// updateResponsePart calls f on the first part of the active turn turnID
// whose id is partID.
func updateResponsePart(s *wire.SessionState, turnID, partID string, f func(wire.ResponsePart)) {
	t := activeTurn(s, turnID)
	if t == nil {
		return
	}
	for _, p := range t.ResponseParts {
		if id, ok := responsePartID(p); ok && id == partID {
			f(p)
			return
		}
	}
}

// updateToolCall replaces every tool call toolCallID of the active turn
// turnID with f's result when f reports a change.
func updateToolCall(s *wire.SessionState, turnID, toolCallID string, f func(wire.ToolCallState) (wire.ToolCallState, bool)) {
	t := activeTurn(s, turnID)
	if t == nil {
		return
	}
	for _, p := range t.ResponseParts {
		tp, ok := p.Value.(*wire.ToolCallResponsePart)
		if !ok || tp == nil {
			continue
		}
		if id, ok := ToolCallID(tp.ToolCall); !ok || id != toolCallID {
			continue
		}
		if next, changed := f(tp.ToolCall); changed {
			tp.ToolCall = next
		}
	}
}
