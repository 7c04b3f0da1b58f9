package host

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// validateClient returns why a client action must be rejected, or "".
// raw is the action as the client sent it (some checks need to know which
// members were present). Called with ch.mu held.
func validateClient(ch *channel, a wire.StateAction, raw []byte, clientID string) string {
	t := a.Type()
	if _, unknown := a.Value.(json.RawMessage); unknown || t == "" {
		return "unknown action type; this server does not understand it"
	}
	if !reducer.ClientDispatchable(t) {
		return fmt.Sprintf("%s is a server-only action and cannot be dispatched by clients", t)
	}
	if err := checkScope(ch, a); err != nil {
		return fmt.Sprintf("%s cannot be dispatched on the %s channel %s", t, ch.kind, ch.uri)
	}
	if ch.kind != chanSession {
		return ""
	}
	st := ch.session
	switch x := a.Value.(type) {
	case *wire.SessionTurnStartedAction:
		if st.Lifecycle != wire.SessionLifecycleReady {
			return fmt.Sprintf("the session is %s, not ready; turns can start once it is ready", st.Lifecycle)
		}
		if st.ActiveTurn != nil {
			return fmt.Sprintf("turn %s is still active; cancel it or queue the message instead", st.ActiveTurn.ID)
		}
		if x.TurnID == "" {
			return "turnId must not be empty"
		}
		if x.Message.Origin.Kind != wire.MessageKindUser {
			return "clients may only send user messages"
		}
	case *wire.SessionTurnCancelledAction:
		if st.ActiveTurn == nil {
			return "no active turn to cancel"
		}
		if st.ActiveTurn.ID != x.TurnID {
			return fmt.Sprintf("turn %s is not the active turn (%s)", x.TurnID, st.ActiveTurn.ID)
		}
	case *wire.SessionToolCallApprovedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusPendingConfirmation, "")
	case *wire.SessionToolCallDeniedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusPendingConfirmation, "")
	case *wire.SessionToolCallResultConfirmedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusPendingResultConfirmation, "")
	case *wire.SessionToolCallCompleteAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusRunning, clientID)
	case *wire.SessionToolCallContentChangedAction:
		return requireToolStatus(st, x.TurnID, x.ToolCallID, wire.ToolCallStatusRunning, clientID)
	case *wire.SessionPendingMessageSetAction:
		if x.ID == "" {
			return "a pending message needs an id"
		}
		if x.Kind != wire.PendingMessageKindQueued && x.Kind != wire.PendingMessageKindSteering {
			return fmt.Sprintf("unknown pending message kind %q", x.Kind)
		}
		if x.Message.Origin.Kind != wire.MessageKindUser {
			return "clients may only send user messages"
		}
	case *wire.SessionPendingMessageRemovedAction:
		if !hasPending(st, x.Kind, x.ID) {
			return fmt.Sprintf("no %s pending message with id %s", x.Kind, x.ID)
		}
	case *wire.SessionInputAnswerChangedAction:
		req := findInput(st, x.RequestID)
		if req == nil {
			return fmt.Sprintf("no input request with id %s", x.RequestID)
		}
		if reason := checkAnswerShape(raw); reason != "" {
			return reason
		}
	case *wire.SessionInputCompletedAction:
		req := findInput(st, x.RequestID)
		if req == nil {
			return fmt.Sprintf("no input request with id %s", x.RequestID)
		}
		if x.Response == wire.SessionInputResponseKindAccept {
			if missing := unansweredRequired(req, x.Answers); missing != "" {
				return fmt.Sprintf("question %s is required but has no submitted answer", missing)
			}
		}
	case *wire.SessionActiveClientChangedAction:
		cur := st.ActiveClient
		if x.ActiveClient == nil {
			if cur != nil && cur.ClientID != clientID {
				return fmt.Sprintf("client %s is the active client; only it can release the role", cur.ClientID)
			}
			return ""
		}
		if x.ActiveClient.ClientID != clientID {
			return "a client can only claim the active role for itself"
		}
		if cur != nil && cur.ClientID != clientID {
			return fmt.Sprintf("client %s is already the active client", cur.ClientID)
		}
	case *wire.SessionConfigChangedAction:
		// Only properties the schema marks sessionMutable may change.
		if st.Config == nil {
			return "this session has no configuration to change"
		}
		for _, k := range sortedKeys(x.Config) {
			prop, ok := st.Config.Schema.Properties[k]
			if !ok {
				return fmt.Sprintf("config property %q does not exist", k)
			}
			if prop.SessionMutable == nil || !*prop.SessionMutable {
				return fmt.Sprintf("config property %q cannot be changed during a session", k)
			}
		}
	case *wire.SessionActiveClientToolsChangedAction:
		if st.ActiveClient == nil || st.ActiveClient.ClientID != clientID {
			return "only the active client can change its tools"
		}
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

// toolCallView is the part of any tool call state the validator needs.
type toolCallView struct {
	ToolCallID  string `json:"toolCallId"`
	Status      string `json:"status"`
	Contributor *struct {
		Kind     string `json:"kind"`
		ClientID string `json:"clientId"`
	} `json:"contributor"`
}

// findToolCall locates a tool call of the active turn.
func findToolCall(st *wire.SessionState, turnID, toolCallID string) (*toolCallView, string) {
	if st.ActiveTurn == nil {
		return nil, "no active turn"
	}
	if st.ActiveTurn.ID != turnID {
		return nil, fmt.Sprintf("turn %s is not the active turn", turnID)
	}
	for _, p := range st.ActiveTurn.ResponseParts {
		tp, ok := p.Value.(*wire.ToolCallResponsePart)
		if !ok || tp == nil {
			continue
		}
		b, err := json.Marshal(tp.ToolCall)
		if err != nil {
			continue
		}
		var v toolCallView
		if json.Unmarshal(b, &v) == nil && v.ToolCallID == toolCallID {
			return &v, ""
		}
	}
	return nil, fmt.Sprintf("no tool call %s in turn %s", toolCallID, turnID)
}

// requireToolStatus checks that the tool call is in status want and, when
// owner is set, that a client contributed it and owner is that client.
func requireToolStatus(st *wire.SessionState, turnID, toolCallID string, want wire.ToolCallStatus, owner string) string {
	tc, why := findToolCall(st, turnID, toolCallID)
	if tc == nil {
		return why
	}
	if tc.Status != string(want) {
		return fmt.Sprintf("tool call %s is %s, not %s", toolCallID, tc.Status, want)
	}
	if owner != "" {
		if tc.Contributor == nil || tc.Contributor.Kind != string(wire.ToolCallContributorKindClient) {
			return fmt.Sprintf("tool call %s is executed by the server, not by a client", toolCallID)
		}
		if tc.Contributor.ClientID != owner {
			return fmt.Sprintf("tool call %s belongs to client %s", toolCallID, tc.Contributor.ClientID)
		}
	}
	return ""
}

func hasPending(st *wire.SessionState, kind wire.PendingMessageKind, id string) bool {
	switch kind {
	case wire.PendingMessageKindSteering:
		return st.SteeringMessage != nil && st.SteeringMessage.ID == id
	case wire.PendingMessageKindQueued:
		for _, q := range st.QueuedMessages {
			if q.ID == id {
				return true
			}
		}
	}
	return false
}

func findInput(st *wire.SessionState, id string) *wire.SessionInputRequest {
	for i := range st.InputRequests {
		if st.InputRequests[i].ID == id {
			return &st.InputRequests[i]
		}
	}
	return nil
}

// checkAnswerShape validates a session/inputAnswerChanged answer: draft
// and submitted answers need a value whose kind carries its payload.
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
	switch wire.SessionInputAnswerState(a.Answer.State) {
	case wire.SessionInputAnswerStateSkipped:
		return ""
	case wire.SessionInputAnswerStateDraft, wire.SessionInputAnswerStateSubmitted:
	default:
		return fmt.Sprintf("unknown answer state %q", a.Answer.State)
	}
	if a.Answer.Value == nil {
		return fmt.Sprintf("a %s answer needs a value", a.Answer.State)
	}
	switch wire.SessionInputAnswerValueKind(a.Answer.Value.Kind) {
	case wire.SessionInputAnswerValueKindText, wire.SessionInputAnswerValueKindNumber,
		wire.SessionInputAnswerValueKindBoolean, wire.SessionInputAnswerValueKindSelected,
		wire.SessionInputAnswerValueKindSelectedMany:
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
func unansweredRequired(req *wire.SessionInputRequest, final map[string]wire.SessionInputAnswer) string {
	for _, q := range req.Questions {
		b, err := json.Marshal(q)
		if err != nil {
			continue
		}
		var v struct {
			ID       string `json:"id"`
			Required bool   `json:"required"`
		}
		if json.Unmarshal(b, &v) != nil || !v.Required {
			continue
		}
		ans, ok := final[v.ID]
		if !ok {
			ans, ok = req.Answers[v.ID]
		}
		if !ok || ans.State() != string(wire.SessionInputAnswerStateSubmitted) {
			return v.ID
		}
	}
	return ""
}
