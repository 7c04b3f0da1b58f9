package host

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// validateClient returns why a client action must be rejected, or "" (the
// validation tables of the session and chat channel specifications, and
// what this bridge cannot do). raw is the action as the client sent it
// (some checks need to know which members were present). Called with
// ch.mu held.
func validateClient(ch *channel, a wire.StateAction, raw []byte, clientID string) string {
	t := a.Type()
	if _, unknown := a.Value.(json.RawMessage); unknown || t == "" {
		return "unknown action type; this server does not understand it"
	}
	if !wire.ClientDispatchable(t) {
		return fmt.Sprintf("%s is a server-only action and cannot be dispatched by clients", t)
	}
	if err := checkScope(ch, a); err != nil {
		return fmt.Sprintf("%s cannot be dispatched on the %s channel %s", t, ch.kind, ch.uri)
	}
	switch ch.kind {
	case chanSession:
		return validateSession(ch.session, a, clientID, ch.group != nil && ch.group.settingsUnknown)
	case chanChat:
		return validateChat(ch, a, raw, clientID)
	}
	return ""
}

func validateSession(st *wire.SessionState, a wire.StateAction, clientID string, settingsUnknown bool) string {
	switch x := a.Value.(type) {
	case *wire.SessionActiveClientSetAction:
		if x.ActiveClient.ClientID != clientID {
			return "a client can only make itself an active client"
		}
	case *wire.SessionActiveClientRemovedAction:
		if x.ClientID != clientID {
			return "a client can only remove itself from the active clients"
		}
	case *wire.SessionWorkingDirectorySetAction, *wire.SessionWorkingDirectoryRemovedAction, *wire.SessionWorkingDirectoryReplacedAction:
		return "this session's agent works in the working directories it was created with; they cannot change"
	case *wire.SessionMcpServerBackgroundRequestedAction:
		return fmt.Sprintf("no MCP server %s is starting in this session", x.ID)
	case *wire.SessionConfigChangedAction:
		// Only properties the schema marks sessionMutable may change.
		if st.Config == nil {
			return "this session has no configuration to change"
		}
		for _, k := range sortedKeys(x.Config) {
			prop, ok := st.Config.Schema.Properties[k]
			if !ok && settingsUnknown {
				// The agent's settings were not known when the session was
				// made: the handler applies the change once the agent
				// session exists, or refuses it with a reason (issue 26).
				continue
			}
			if !ok {
				return fmt.Sprintf("config property %q does not exist", k)
			}
			if prop.SessionMutable == nil || !*prop.SessionMutable {
				return fmt.Sprintf("config property %q cannot be changed during a session", k)
			}
		}
	}
	return ""
}

func validateChat(ch *channel, a wire.StateAction, raw []byte, clientID string) string {
	st := ch.chat.st
	switch x := a.Value.(type) {
	case *wire.ChatTurnStartedAction:
		// A turn may start while the session is still being created (AHP's
		// provisional sessions; ahpx sends its first prompt then): the
		// handler holds it until its agent is ready. A session that failed
		// to start takes none.
		if sess := ch.group.session; sess.session.Lifecycle == wire.SessionLifecycleFailed {
			return fmt.Sprintf("the session is %s; it takes no turns", sess.session.Lifecycle)
		}
		if ch.group.detached {
			return "this session was restored from the state file, and this server cannot re-attach its agent; it keeps its history but takes no new turns"
		}
		if ch.group.releasing {
			return "this session is being archived (disposeSession) and its agent released; send the turn again in a moment"
		}
		if st.ActiveTurn != nil {
			return fmt.Sprintf("turn %s is still active; cancel it or queue the message instead", st.ActiveTurn.ID)
		}
		if x.TurnID == "" {
			return "turnId must not be empty"
		}
		if slices.ContainsFunc(st.Turns, func(t wire.Turn) bool { return t.ID == x.TurnID }) {
			// 1.0 reducers ignore a start of a known turn; refusing it keeps
			// the client from waiting for a turn that never runs.
			return fmt.Sprintf("turn %s already happened in this chat; a new turn needs a new id", x.TurnID)
		}
		if x.Message.Origin.Kind != wire.MessageKindUser {
			return "clients may only send user messages"
		}
	case *wire.ChatTurnCancelledAction:
		if st.ActiveTurn == nil {
			return "no active turn to cancel"
		}
		if st.ActiveTurn.ID != x.TurnID {
			return fmt.Sprintf("turn %s is not the active turn (%s)", x.TurnID, st.ActiveTurn.ID)
		}
	case *wire.ChatToolCallApprovedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, "", wire.ToolCallStatusPendingConfirmation)
	case *wire.ChatToolCallDeniedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, "", wire.ToolCallStatusPendingConfirmation)
	case *wire.ChatToolCallResultConfirmedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, "", wire.ToolCallStatusPendingResultConfirmation)
	case *wire.ChatToolCallCompleteAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, clientID, wire.ToolCallStatusRunning, wire.ToolCallStatusAuthRequired)
	case *wire.ChatToolCallContentChangedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, clientID, wire.ToolCallStatusRunning)
	case *wire.ChatPendingMessageSetAction:
		if x.ID == "" {
			return "a pending message needs an id"
		}
		if x.Kind != wire.PendingMessageKindQueued && x.Kind != wire.PendingMessageKindSteering {
			return fmt.Sprintf("unknown pending message kind %q", x.Kind)
		}
		if x.Message.Origin.Kind != wire.MessageKindUser {
			return "clients may only send user messages"
		}
	case *wire.ChatPendingMessageRemovedAction:
		if !hasPending(st, x.Kind, x.ID) {
			return fmt.Sprintf("no %s pending message with id %s", x.Kind, x.ID)
		}
	case *wire.ChatInputAnswerChangedAction:
		if openInput(st, x.RequestID) == nil {
			return fmt.Sprintf("no open input request with id %s", x.RequestID)
		}
		if reason := checkAnswerShape(raw); reason != "" {
			return reason
		}
	case *wire.ChatInputCompletedAction:
		req := openInput(st, x.RequestID)
		if req == nil {
			return fmt.Sprintf("no open input request with id %s", x.RequestID)
		}
		if x.Response == wire.ChatInputResponseKindAccept {
			if missing := unansweredRequired(req, x.Answers); missing != "" {
				return fmt.Sprintf("question %s is required but has no submitted answer", missing)
			}
		}
	case *wire.ChatWorkingDirectorySetAction:
		if !slices.Contains(ch.group.session.session.WorkingDirectories, x.Directory) {
			return fmt.Sprintf("%s is not one of the session's working directories", x.Directory)
		}
	case *wire.ChatWorkingDirectoryRemovedAction:
		// Accepting it would tell the client its removal happened while
		// nothing changed (VS Code's conformance suite: rejected rather
		// than silently dropped).
		if !slices.Contains(st.WorkingDirectories, x.Directory) {
			return fmt.Sprintf("%s is not one of the chat's working directories", x.Directory)
		}
	case *wire.ChatTurnResumeAction:
		// The bridge never marks an error resumable: ACP has no way to let an
		// agent continue a turn it failed, and sending the prompt again could
		// repeat what the agent already did.
		return "this agent cannot resume a failed turn; start a new one"
	case *wire.ChatTruncatedAction:
		return "the agent keeps its whole conversation; this server cannot make it forget turns"
	}
	return ""
}

// sortedKeys returns the keys of m in order, so the first offending key
// reported is deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requireToolStatus checks that the tool call of the active turn is in one
// of the statuses want and, when owner is set, that the client owner
// contributed it (it is that client's to run).
func requireToolStatus(st *wire.ChatState, turnID, toolCallID, owner string, want ...wire.ToolCallStatus) string {
	t := st.ActiveTurn
	if t == nil {
		return "no active turn"
	}
	if t.ID != turnID {
		return fmt.Sprintf("turn %s is not the active turn", turnID)
	}
	for _, p := range t.ResponseParts {
		tp, ok := p.Value.(*wire.ToolCallResponsePart)
		if !ok || tp == nil || tp.ToolCall.ToolCallID() != toolCallID {
			continue
		}
		status := wire.ToolCallStatus(tp.ToolCall.Status())
		if !slices.Contains(want, status) {
			return fmt.Sprintf("tool call %s is %s, not %s", toolCallID, status, want[0])
		}
		if owner != "" {
			c, ok := contributorOf(tp.ToolCall).(*wire.ToolCallClientContributor)
			if !ok || c == nil {
				return fmt.Sprintf("tool call %s is executed by the server, not by a client", toolCallID)
			}
			if c.ClientID != owner {
				return fmt.Sprintf("tool call %s belongs to client %s", toolCallID, c.ClientID)
			}
		}
		return ""
	}
	return fmt.Sprintf("no tool call %s in turn %s", toolCallID, turnID)
}

// contributorOf returns the contributor variant of a running tool call.
func contributorOf(tc wire.ToolCallState) any {
	if r, ok := tc.Value.(*wire.ToolCallRunningState); ok && r != nil && r.Contributor != nil {
		return r.Contributor.Value
	}
	return nil
}

func hasPending(st *wire.ChatState, kind wire.PendingMessageKind, id string) bool {
	switch kind {
	case wire.PendingMessageKindSteering:
		return st.SteeringMessage != nil && st.SteeringMessage.ID == id
	case wire.PendingMessageKindQueued:
		return slices.ContainsFunc(st.QueuedMessages, func(q wire.PendingMessage) bool { return q.ID == id })
	}
	return false
}

// openInput returns the unanswered input request id of the active turn.
func openInput(st *wire.ChatState, id string) *wire.ChatInputRequest {
	if st.ActiveTurn == nil {
		return nil
	}
	for _, p := range st.ActiveTurn.ResponseParts {
		if ip, ok := p.Value.(*wire.InputRequestResponsePart); ok && ip != nil && ip.Response == nil && ip.Request.ID == id {
			return &ip.Request
		}
	}
	return nil
}

// checkAnswerShape validates a chat/inputAnswerChanged answer: draft and
// submitted answers need a value whose kind carries its payload.
func checkAnswerShape(raw []byte) string {
	var a struct {
		Answer *struct {
			State string `json:"state"`
			Value *struct {
				Kind  string           `json:"kind"`
				Value *json.RawMessage `json:"value"`
			} `json:"value"`
		} `json:"answer"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "malformed answer: " + err.Error()
	}
	if a.Answer == nil {
		return "" // clearing a draft
	}
	switch wire.ChatInputAnswerState(a.Answer.State) {
	case wire.ChatInputAnswerStateSkipped:
		return ""
	case wire.ChatInputAnswerStateDraft, wire.ChatInputAnswerStateSubmitted:
	default:
		return fmt.Sprintf("unknown answer state %q", a.Answer.State)
	}
	if a.Answer.Value == nil {
		return fmt.Sprintf("a %s answer needs a value", a.Answer.State)
	}
	switch wire.ChatInputAnswerValueKind(a.Answer.Value.Kind) {
	case wire.ChatInputAnswerValueKindText, wire.ChatInputAnswerValueKindNumber,
		wire.ChatInputAnswerValueKindBoolean, wire.ChatInputAnswerValueKindSelected,
		wire.ChatInputAnswerValueKindSelectedMany:
	default:
		return fmt.Sprintf("unknown answer value kind %q", a.Answer.Value.Kind)
	}
	if a.Answer.Value.Value == nil {
		return fmt.Sprintf("a %s answer value needs its value", a.Answer.Value.Kind)
	}
	return ""
}

// unansweredRequired returns the id of a required question that has no
// submitted answer (in the request's synced answers or the final ones).
func unansweredRequired(req *wire.ChatInputRequest, final map[string]wire.ChatInputAnswer) string {
	for _, q := range req.Questions {
		if r := q.Required(); r == nil || !*r {
			continue
		}
		id := q.ID()
		ans, ok := final[id]
		if !ok {
			ans, ok = req.Answers[id]
		}
		if !ok || ans.State() != string(wire.ChatInputAnswerStateSubmitted) {
			return id
		}
	}
	return ""
}
