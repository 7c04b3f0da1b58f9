package reducer

import (
	"encoding/json"
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Chat applies a to the chat state s.
//
// Where the reference reducer is looser than the protocol text, Chat does
// what the reference does, so that the host and every client reducing the
// same actions reach the same state. In particular the tool call actions
// that can enter or leave a waiting state (ready, confirmed, complete,
// result confirmed, auth required/resolved) recompute status even when
// their turn or tool call is not found, as the 0.7.0 reference does.
//
// What 1.0.0 changed (docs/protocol-versions.md §11–§12):
//
//   - a turn's error is its last response part: chat/error appends its
//     ErrorResponsePart and ends the turn in state "error", and
//     chat/responsePart ignores error parts, so that adding the part and
//     ending the turn stay one transition;
//   - chat/turnResume reopens the last turn when it ended on a resumable
//     error, with everything it had (chatTurnResume);
//   - modifiedAt follows the turn actions' own timestamps, never the clock
//     of whoever reduces (chatTurnStarted, chatEndTurn); actions without a
//     timestamp (truncation, input requests) leave it alone;
//   - the chat keeps its own IsRead and IsArchived bits, its movable flag,
//     its changeset catalogue, its background work and its canvases.
func Chat(s *wire.ChatState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	// Turn lifecycle.
	case *wire.ChatTurnStartedAction:
		chatTurnStarted(s, a, clock)
	case *wire.ChatDeltaAction:
		chatUpdatePart(s, a.TurnID, a.PartID, func(p any) {
			if m, ok := p.(*wire.MarkdownResponsePart); ok {
				m.Content += a.Content
			}
		})
	case *wire.ChatReasoningAction:
		chatUpdatePart(s, a.TurnID, a.PartID, func(p any) {
			if r, ok := p.(*wire.ReasoningResponsePart); ok {
				r.Content += a.Content
			}
		})
	case *wire.ChatResponsePartAction:
		// A null part adds nothing a reader could use; the reference would
		// store it and then fail on it at the next delta. An error part
		// only comes with chat/error, which also ends the turn: one here
		// would leave a running turn that looks failed.
		if _, isErr := chatPartValue(a.Part).(*wire.ErrorResponsePart); isErr {
			return
		}
		if t := chatActiveTurn(s, a.TurnID); t != nil && a.Part.Value != nil {
			t.ResponseParts = append(t.ResponseParts, clone(a.Part))
		}
	case *wire.ChatUsageAction:
		if t := chatActiveTurn(s, a.TurnID); t != nil {
			t.Usage = wire.Ptr(clone(a.Usage))
		}
	case *wire.ChatTurnCompleteAction:
		chatEndTurn(s, a.TurnID, wire.TurnStateComplete, a.Duration, nil, clock)
	case *wire.ChatTurnCancelledAction:
		chatEndTurn(s, a.TurnID, wire.TurnStateCancelled, a.Duration, nil, clock)
	case *wire.ChatErrorAction:
		part := clone(a.Part)
		part.Kind = wire.ResponsePartKindError
		chatEndTurn(s, a.TurnID, wire.TurnStateError, a.Duration, &part, clock)
	case *wire.ChatTurnResumeAction:
		chatTurnResume(s, a.TurnID)
	case *wire.ChatActivityChangedAction:
		s.Activity = clone(a.Activity)

	// The chat's own flags and catalogues (1.0.0). The read and archived
	// bits are this chat's only: its session's and sibling chats' stay.
	case *wire.ChatIsReadChangedAction:
		s.Status = setSessionFlag(s.Status, wire.SessionStatusIsRead, a.IsRead)
	case *wire.ChatIsArchivedChangedAction:
		s.Status = setSessionFlag(s.Status, wire.SessionStatusIsArchived, a.IsArchived)
	case *wire.ChatMovableChangedAction:
		s.Movable = wire.Ptr(a.Movable)
	case *wire.ChatChangesetsChangedAction:
		s.Changesets = clone(a.Changesets)
	case *wire.ChatCanvasesChangedAction:
		s.Canvases = clone(a.Canvases)
	case *wire.ChatBackgroundWorkSetAction:
		chatBackgroundWorkSet(s, a.Work)
	case *wire.ChatBackgroundWorkRemovedAction:
		chatBackgroundWorkRemoved(s, a.ID)

	// Tool calls (toolcall.go).
	case *wire.ChatToolCallStartAction:
		if t := chatActiveTurn(s, a.TurnID); t != nil {
			t.ResponseParts = append(t.ResponseParts, wire.NewResponsePart(&wire.ToolCallResponsePart{
				Kind: wire.ResponsePartKindToolCall,
				ToolCall: wire.NewToolCallState(&wire.ToolCallStreamingState{
					ToolCallID:  a.ToolCallID,
					ToolName:    a.ToolName,
					DisplayName: a.DisplayName,
					Intention:   clone(a.Intention),
					Contributor: clone(a.Contributor),
					Meta:        clone(a.Meta),
					Status:      wire.ToolCallStatusStreaming,
				}),
			}))
		}
	case *wire.ChatToolCallDeltaAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallDelta(tc, a, chatConcat)
		})
	case *wire.ChatToolCallReadyAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallReady(tc, a)
		})
		chatRefreshStatus(s)
	case *wire.ChatToolCallApprovedAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallApproved(tc, a)
		})
		chatRefreshStatus(s)
	case *wire.ChatToolCallDeniedAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallDenied(tc, a)
		})
		chatRefreshStatus(s)
	case *wire.ChatToolCallCompleteAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallComplete(tc, a)
		})
		chatRefreshStatus(s)
	case *wire.ChatToolCallResultConfirmedAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallResultConfirmed(tc, a)
		})
		chatRefreshStatus(s)
	case *wire.ChatToolCallContentChangedAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallContentChanged(tc, a)
		})
	case *wire.ChatToolCallAuthRequiredAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallAuthRequired(tc, a)
		})
		chatRefreshStatus(s)
	case *wire.ChatToolCallAuthResolvedAction:
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallAuthResolved(tc, a)
		})
		chatRefreshStatus(s)

	// History.
	case *wire.ChatTruncatedAction:
		chatTruncate(s, a.TurnID)
	case *wire.ChatTurnsLoadedAction:
		chatTurnsLoaded(s, a)

	// Input requests, kept as response parts of the active turn.
	case *wire.ChatInputRequestedAction:
		chatInputRequested(s, a)
	case *wire.ChatInputAnswerChangedAction:
		chatInputAnswerChanged(s, a)
	case *wire.ChatInputCompletedAction:
		chatInputCompleted(s, a)

	// Pending messages and draft.
	case *wire.ChatPendingMessageSetAction:
		entry := wire.PendingMessage{ID: a.ID, Message: clone(a.Message)}
		if a.Kind == wire.PendingMessageKindSteering {
			s.SteeringMessage = &entry
			return
		}
		// Any other kind is a queued message, as in the reference.
		for i := range s.QueuedMessages {
			if s.QueuedMessages[i].ID == a.ID {
				s.QueuedMessages[i] = entry
				return
			}
		}
		s.QueuedMessages = append(s.QueuedMessages, entry)
	case *wire.ChatPendingMessageRemovedAction:
		if a.Kind == wire.PendingMessageKindSteering {
			if s.SteeringMessage != nil && s.SteeringMessage.ID == a.ID {
				s.SteeringMessage = nil
			}
			return
		}
		if s.QueuedMessages != nil {
			s.QueuedMessages = chatRemovePending(s.QueuedMessages, a.ID)
		}
	case *wire.ChatQueuedMessagesReorderedAction:
		if s.QueuedMessages != nil {
			s.QueuedMessages = chatReorderPending(s.QueuedMessages, a.Order)
		}
	case *wire.ChatDraftChangedAction:
		s.Draft = clone(a.Draft)

	// Working directories: a set kept in insertion order.
	case *wire.ChatWorkingDirectorySetAction:
		for _, d := range s.WorkingDirectories {
			if d == a.Directory {
				return
			}
		}
		dirs := make([]string, 0, len(s.WorkingDirectories)+1)
		s.WorkingDirectories = append(append(dirs, s.WorkingDirectories...), a.Directory)
	case *wire.ChatWorkingDirectoryRemovedAction:
		for i, d := range s.WorkingDirectories {
			if d == a.Directory {
				// A new slice, never nil: removing the last directory
				// leaves an empty set, which is not the same as no subset.
				dirs := make([]string, 0, len(s.WorkingDirectories)-1)
				dirs = append(dirs, s.WorkingDirectories[:i]...)
				s.WorkingDirectories = append(dirs, s.WorkingDirectories[i+1:]...)
				return
			}
		}
	}
}

// chatTurnStarted opens a turn. A turn id the chat already knows, active or
// completed, is a no-op: a start delivered twice (a replay, an optimistic
// client action echoed back) must not reset a turn that is streaming, nor
// open a second turn with a completed one's id. This is the upstream fix of
// 2026-09-02 (docs/.changes/20260902-idempotent-chat-turnstarted.json at
// ad36856). The 1.0.0 client CHANGELOGs do not list it, so a 1.0.0 client
// may reset instead: the host must neither emit such a start nor accept one
// from a client, and then the two agree on every stream the host sends.
//
// modifiedAt becomes the turn's startedAt, as every 0.9+ reducer does, so
// that the host and its clients agree on it. A startedAt that is not a
// timestamp would leave modifiedAt unsortable (LatestModifiedAt), so the
// clock stands in for it.
func chatTurnStarted(s *wire.ChatState, a *wire.ChatTurnStartedAction, clock Clock) {
	if s.ActiveTurn != nil && s.ActiveTurn.ID == a.TurnID {
		return
	}
	for i := range s.Turns {
		if s.Turns[i].ID == a.TurnID {
			return
		}
	}
	s.ActiveTurn = &wire.ActiveTurn{
		ID:            a.TurnID,
		StartedAt:     a.StartedAt,
		Message:       clone(a.Message),
		ResponseParts: []wire.ResponsePart{},
	}
	s.Status = chatSummaryStatus(s, 0).Without(wire.SessionStatusIsRead)
	if _, ok := ParseTime(a.StartedAt); ok {
		s.ModifiedAt = a.StartedAt
	} else {
		s.ModifiedAt = clock.iso()
	}
	if a.QueuedMessageID == nil {
		return
	}
	id := *a.QueuedMessageID
	if s.SteeringMessage != nil && s.SteeringMessage.ID == id {
		s.SteeringMessage = nil
	}
	if s.QueuedMessages != nil {
		s.QueuedMessages = chatRemovePending(s.QueuedMessages, id)
		if len(s.QueuedMessages) == 0 {
			s.QueuedMessages = nil
		}
	}
}

// chatEndTurn finalizes the active turn turnID into a completed turn. Tool
// calls that have not finished are cancelled (reason "skipped"); input
// requests stay as they are, answered or not, as part of the transcript.
// errPart, when not nil, is appended after them as the turn's last part: the
// part chat/turnResume looks for.
//
// modifiedAt becomes the turn's startedAt plus its duration, the time the
// turn ended on the producer's clock (the 0.9 rule: derived from the turn's
// action data, not from the reducer's clock). Only a turn without a usable
// startedAt falls back to the clock.
func chatEndTurn(s *wire.ChatState, turnID string, state wire.TurnState, duration int64, errPart *wire.ErrorResponsePart, clock Clock) {
	active := chatActiveTurn(s, turnID)
	if active == nil {
		return
	}
	for i := range active.ResponseParts {
		tp, ok := chatPart(active, i).(*wire.ToolCallResponsePart)
		if !ok {
			continue
		}
		if c, ok := CancelUnfinishedToolCall(tp.ToolCall); ok {
			active.ResponseParts[i] = wire.NewResponsePart(&wire.ToolCallResponsePart{Kind: wire.ResponsePartKindToolCall, ToolCall: c})
		}
	}
	parts := active.ResponseParts
	if parts == nil {
		parts = []wire.ResponsePart{}
	}
	if errPart != nil {
		parts = append(parts, wire.NewResponsePart(errPart))
	}
	turn := wire.Turn{
		ID: active.ID,
		// The producer measured the duration on its own clock; a negative
		// one is nonsense to show, so it is clamped.
		Duration:      wire.Ptr(max(0, duration)),
		Message:       active.Message,
		ResponseParts: parts,
		Usage:         active.Usage,
		State:         state,
	}
	// The active turn's startedAt is a required string, so "" is all an
	// absent one can be; the turn's is optional and stays absent then.
	if active.StartedAt != "" {
		turn.StartedAt = wire.Ptr(active.StartedAt)
	}
	s.Turns = append(s.Turns, turn)
	s.ActiveTurn = nil
	if start, ok := ParseTime(active.StartedAt); ok {
		s.ModifiedAt = FormatTime(start + *turn.Duration)
	} else {
		s.ModifiedAt = clock.iso()
	}
	var terminal wire.SessionStatus
	if state == wire.TurnStateError {
		terminal = wire.SessionStatusError
	}
	s.Status = chatSummaryStatus(s, terminal)
}

// chatTurnResume reopens the chat's last turn turnID as its active turn,
// when nothing is active and that turn ended in state "error" with a
// resumable error part last (resumable: true; absent is not resumable). The
// turn comes back whole: same id, message, usage and every response part,
// the error part included, so a turn that failed and resumed twice holds
// two error parts. Its tool calls stay as the end of the turn left them
// (cancelled or finished). startedAt is the turn's own, else the chat's
// modifiedAt (the 0.9 .NET port's rule; ActiveTurn.startedAt is required).
// Like a turn start it marks the chat unread; modifiedAt stays, as the
// action carries no time.
func chatTurnResume(s *wire.ChatState, turnID string) {
	n := len(s.Turns)
	if s.ActiveTurn != nil || n == 0 {
		return
	}
	last := &s.Turns[n-1]
	if last.ID != turnID || last.State != wire.TurnStateError || len(last.ResponseParts) == 0 {
		return
	}
	ep, ok := chatPartValue(last.ResponseParts[len(last.ResponseParts)-1]).(*wire.ErrorResponsePart)
	if !ok || ep.Resumable == nil || !*ep.Resumable {
		return
	}
	// A copy: the completed turn may still be held by a snapshot being
	// sent, and the reopened one is about to be streamed into.
	t := clone(*last)
	startedAt := s.ModifiedAt
	if t.StartedAt != nil {
		startedAt = *t.StartedAt
	}
	if t.ResponseParts == nil {
		t.ResponseParts = []wire.ResponsePart{}
	}
	// Capped, so that the next completed turn cannot overwrite the
	// reopened one in a slice someone may still hold.
	s.Turns = s.Turns[: n-1 : n-1]
	s.ActiveTurn = &wire.ActiveTurn{
		ID:            t.ID,
		StartedAt:     startedAt,
		Message:       t.Message,
		ResponseParts: t.ResponseParts,
		Usage:         t.Usage,
	}
	s.Status = chatSummaryStatus(s, 0).Without(wire.SessionStatusIsRead)
}

// chatBackgroundWorkSet adds the entry, or replaces the one with its id in
// place. A null entry carries nothing to show and is ignored, as a null
// response part is.
func chatBackgroundWorkSet(s *wire.ChatState, w wire.BackgroundWork) {
	if w.Value == nil {
		return
	}
	id := w.ID()
	w = clone(w)
	for i := range s.BackgroundWork {
		if s.BackgroundWork[i].ID() == id {
			// A new slice: the old one may be held by a snapshot being sent.
			work := slices.Clone(s.BackgroundWork)
			work[i] = w
			s.BackgroundWork = work
			return
		}
	}
	work := make([]wire.BackgroundWork, 0, len(s.BackgroundWork)+1)
	s.BackgroundWork = append(append(work, s.BackgroundWork...), w)
}

// chatBackgroundWorkRemoved drops the entry id; an unknown id is a no-op.
// A list that loses its last entry becomes absent, as the pending messages
// do: both mean "nothing running".
func chatBackgroundWorkRemoved(s *wire.ChatState, id string) {
	i := slices.IndexFunc(s.BackgroundWork, func(w wire.BackgroundWork) bool { return w.ID() == id })
	if i < 0 {
		return
	}
	if len(s.BackgroundWork) == 1 {
		s.BackgroundWork = nil
		return
	}
	work := make([]wire.BackgroundWork, 0, len(s.BackgroundWork)-1)
	work = append(work, s.BackgroundWork[:i]...)
	s.BackgroundWork = append(work, s.BackgroundWork[i+1:]...)
}

// chatTruncate keeps the turns up to and including turnID (all of them are
// dropped when turnID is nil) and drops the active turn. An unknown turn
// id leaves the chat as it is, active turn included. modifiedAt stays: the
// action carries no time (0.7.0 stamped the reducer's clock).
func chatTruncate(s *wire.ChatState, turnID *string) {
	if turnID == nil {
		s.Turns = []wire.Turn{}
		s.TurnsNextCursor = nil
	} else {
		idx := -1
		for i := range s.Turns {
			if s.Turns[i].ID == *turnID {
				idx = i
				break
			}
		}
		if idx < 0 {
			return
		}
		// Capped, so that a later turn appended here cannot overwrite the
		// dropped turns in a slice someone may still hold.
		s.Turns = s.Turns[: idx+1 : idx+1]
	}
	s.ActiveTurn = nil
	s.Status = chatSummaryStatus(s, 0)
}

// chatTurnsLoaded prepends the loaded turns that the chat does not have yet
// and takes the action's cursor, absent meaning there is nothing older.
func chatTurnsLoaded(s *wire.ChatState, a *wire.ChatTurnsLoadedAction) {
	have := make(map[string]bool, len(s.Turns))
	for i := range s.Turns {
		have[s.Turns[i].ID] = true
	}
	turns := make([]wire.Turn, 0, len(a.Turns)+len(s.Turns))
	for _, t := range a.Turns {
		if !have[t.ID] {
			turns = append(turns, clone(t))
		}
	}
	s.Turns = append(turns, s.Turns...)
	s.TurnsNextCursor = clone(a.TurnsNextCursor)
}

// chatInputRequested adds an input request to the active turn, or replaces
// the open request with the same id, keeping its answer drafts unless the
// new request brings answers of its own. The input actions leave
// modifiedAt alone: they carry no time (0.7.0 stamped the reducer's clock).
func chatInputRequested(s *wire.ChatState, a *wire.ChatInputRequestedAction) {
	t := s.ActiveTurn
	if t == nil {
		return
	}
	part := &wire.InputRequestResponsePart{Kind: wire.ResponsePartKindInputRequest, Request: clone(a.Request)}
	if i, old := chatOpenInputRequest(t, a.Request.ID); old != nil {
		if part.Request.Answers == nil {
			part.Request.Answers = old.Request.Answers
		}
		t.ResponseParts[i] = wire.NewResponsePart(part)
	} else {
		t.ResponseParts = append(t.ResponseParts, wire.NewResponsePart(part))
	}
	s.Status = chatSummaryStatus(s, 0).Without(wire.SessionStatusIsRead)
}

func chatInputAnswerChanged(s *wire.ChatState, a *wire.ChatInputAnswerChangedAction) {
	if s.ActiveTurn == nil {
		return
	}
	_, req := chatOpenInputRequest(s.ActiveTurn, a.RequestID)
	if req == nil {
		return
	}
	// A new map: the old one may be held by a snapshot being sent.
	answers := make(map[string]wire.ChatInputAnswer, len(req.Request.Answers)+1)
	for k, v := range req.Request.Answers {
		answers[k] = v
	}
	if a.Answer == nil {
		delete(answers, a.QuestionID)
	} else {
		answers[a.QuestionID] = clone(*a.Answer)
	}
	if len(answers) == 0 {
		answers = nil
	}
	req.Request.Answers = answers
}

// chatInputCompleted records the response on the open request, merging the
// final answers over the drafts, and leaves the part where it is.
func chatInputCompleted(s *wire.ChatState, a *wire.ChatInputCompletedAction) {
	if s.ActiveTurn == nil {
		return
	}
	_, req := chatOpenInputRequest(s.ActiveTurn, a.RequestID)
	if req == nil {
		return
	}
	answers := make(map[string]wire.ChatInputAnswer, len(req.Request.Answers)+len(a.Answers))
	for k, v := range req.Request.Answers {
		answers[k] = v
	}
	for k, v := range clone(a.Answers) {
		answers[k] = v
	}
	if len(answers) == 0 {
		answers = nil
	}
	req.Request.Answers = answers
	req.Response = wire.Ptr(a.Response)
	s.Status = chatSummaryStatus(s, 0)
}

// chatOpenInputRequest returns the index and part of the unanswered input
// request id in t, or nil.
func chatOpenInputRequest(t *wire.ActiveTurn, id string) (int, *wire.InputRequestResponsePart) {
	for i := range t.ResponseParts {
		p := chatPart(t, i)
		if r, ok := p.(*wire.InputRequestResponsePart); ok && r.Response == nil && r.Request.ID == id {
			return i, r
		}
	}
	return -1, nil
}

// FindInputRequest returns the unanswered input request requestID of the
// chat's active turn, e.g. to validate a client's chat/inputAnswerChanged
// or chat/inputCompleted. The part is the state's own, not a copy, and must
// not be changed; FindInputRequest itself changes nothing.
func FindInputRequest(s *wire.ChatState, requestID string) (*wire.InputRequestResponsePart, bool) {
	if s == nil || s.ActiveTurn == nil {
		return nil, false
	}
	for _, part := range s.ActiveTurn.ResponseParts {
		if r, ok := chatPartValue(part).(*wire.InputRequestResponsePart); ok && r.Response == nil && r.Request.ID == requestID {
			return r, true
		}
	}
	return nil, false
}

// chatRemovePending drops the messages with the given id; a list that
// loses its last message becomes nil (absent), as in the reference.
func chatRemovePending(list []wire.PendingMessage, id string) []wire.PendingMessage {
	kept := make([]wire.PendingMessage, 0, len(list))
	for _, m := range list {
		if m.ID != id {
			kept = append(kept, m)
		}
	}
	switch {
	case len(kept) == len(list):
		return list
	case len(kept) == 0:
		return nil
	}
	return kept
}

// chatReorderPending puts the messages named in order first, ignoring
// unknown and repeated ids, then the others in their original order. Like
// the reference, a named id that several messages share stands for the
// last of them, and the others with that id are dropped.
func chatReorderPending(list []wire.PendingMessage, order []string) []wire.PendingMessage {
	byID := make(map[string]wire.PendingMessage, len(list))
	for _, m := range list {
		byID[m.ID] = m
	}
	placed := make(map[string]bool, len(order))
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

// chatActiveTurn returns the active turn if its id is turnID.
func chatActiveTurn(s *wire.ChatState, turnID string) *wire.ActiveTurn {
	if s.ActiveTurn == nil || s.ActiveTurn.ID != turnID {
		return nil
	}
	return s.ActiveTurn
}

// chatPart returns part i of t as a non-nil pointer to its variant (or
// the raw JSON of an unknown one), or nil for a null part. A variant stored
// by value (a state built in Go rather than decoded) is turned into a
// pointer in place, so that changes made through the result land in the
// state.
func chatPart(t *wire.ActiveTurn, i int) any {
	p := wire.NewResponsePart(t.ResponseParts[i].Value)
	t.ResponseParts[i] = p
	v := chatPartValue(p)
	if tp, ok := v.(*wire.ToolCallResponsePart); ok {
		tp.ToolCall = wire.NewToolCallState(tp.ToolCall.Value)
	}
	return v
}

// chatPartValue returns the variant p holds as a non-nil pointer (or the
// raw JSON of an unknown one), or nil. It does not change p: a variant held
// by value comes back as a pointer to a copy.
func chatPartValue(p wire.ResponsePart) any {
	switch v := wire.NewResponsePart(p.Value).Value.(type) {
	case *wire.MarkdownResponsePart:
		if v != nil {
			return v
		}
	case *wire.ReasoningResponsePart:
		if v != nil {
			return v
		}
	case *wire.ToolCallResponsePart:
		if v != nil {
			return v
		}
	case *wire.ResourceResponsePart:
		if v != nil {
			return v
		}
	case *wire.ErrorResponsePart:
		if v != nil {
			return v
		}
	case *wire.SystemNotificationResponsePart:
		if v != nil {
			return v
		}
	case *wire.InputRequestResponsePart:
		if v != nil {
			return v
		}
	case json.RawMessage:
		return v
	}
	return nil
}

// chatPartID returns the id chat/delta and chat/reasoning target a part
// by: the tool call id of a tool call part, else the part's own id member
// (markdown, reasoning, and unknown parts that have one).
func chatPartID(p any) (string, bool) {
	switch v := p.(type) {
	case *wire.MarkdownResponsePart:
		return v.ID, true
	case *wire.ReasoningResponsePart:
		return v.ID, true
	case *wire.ToolCallResponsePart:
		return ToolCallID(v.ToolCall)
	case json.RawMessage:
		return chatRawString(v, "id")
	}
	return "", false
}

// chatUpdatePart calls f on the first part of the active turn turnID whose
// id is partID. f gets a non-nil pointer to the part's variant, and does
// nothing when it is not the kind it is for: the first part with the id
// is the target even if it is of another kind.
func chatUpdatePart(s *wire.ChatState, turnID, partID string, f func(part any)) {
	t := chatActiveTurn(s, turnID)
	if t == nil {
		return
	}
	for i := range t.ResponseParts {
		p := chatPart(t, i)
		if id, ok := chatPartID(p); ok && id == partID {
			f(p)
			return
		}
	}
}

// chatUpdateToolCall replaces every tool call toolCallID of the active turn
// turnID with f's result when f reports a change.
func chatUpdateToolCall(s *wire.ChatState, turnID, toolCallID string, f func(wire.ToolCallState) (wire.ToolCallState, bool)) {
	t := chatActiveTurn(s, turnID)
	if t == nil {
		return
	}
	for i := range t.ResponseParts {
		tp, ok := chatPart(t, i).(*wire.ToolCallResponsePart)
		if !ok {
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

// chatSummaryStatus derives the activity bits of the chat's status from its
// live work, keeping the other bits (IsRead, IsArchived, unknown ones).
// terminal, when not 0, is the activity to report instead (Error after
// chat/error).
func chatSummaryStatus(s *wire.ChatState, terminal wire.SessionStatus) wire.SessionStatus {
	var activity wire.SessionStatus
	switch {
	case terminal != 0:
		activity = terminal
	case chatWaitsForUser(s):
		activity = wire.SessionStatusInputNeeded
	case s.ActiveTurn != nil:
		activity = wire.SessionStatusInProgress
	default:
		activity = wire.SessionStatusIdle
	}
	return s.Status.WithActivity(activity)
}

// chatRefreshStatus recomputes the status after a change that may enter or
// leave a state waiting for the user.
func chatRefreshStatus(s *wire.ChatState) { s.Status = chatSummaryStatus(s, 0) }

// chatWaitsForUser reports whether the active turn is blocked on something
// outside it: an unanswered input request, or a tool call waiting for a
// confirmation, a result confirmation or MCP authentication.
func chatWaitsForUser(s *wire.ChatState) bool {
	if s.ActiveTurn == nil {
		return false
	}
	for _, part := range s.ActiveTurn.ResponseParts {
		switch p := chatPartValue(part).(type) {
		case *wire.InputRequestResponsePart:
			if p.Response == nil {
				return true
			}
		case *wire.ToolCallResponsePart:
			switch wire.ToolCallStatus(p.ToolCall.Status()) {
			case wire.ToolCallStatusPendingConfirmation, wire.ToolCallStatusPendingResultConfirmation,
				wire.ToolCallStatusAuthRequired:
				return true
			}
		}
	}
	return false
}

// chatConcat is the plain way to append streamed text.
func chatConcat(cur, add string) string { return cur + add }

// chatRawString returns the string member prop of the raw JSON object b;
// ok is false when b is not an object or prop is absent or not a string.
func chatRawString(b json.RawMessage, prop string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return "", false
	}
	v, ok := m[prop]
	var s string
	if !ok || string(v) == "null" || json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}
