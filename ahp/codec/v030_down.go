package codec

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// chatToSession maps every 0.7.0 chat action that 0.3.0 has a session
// action for (same payload, minus what 0.3.0 does not declare). Chat
// actions missing here and from the special cases of downAction are
// dropped for 0.3.0 (docs/protocol-versions.md §3.3.2).
var chatToSession = map[wire.ActionType]w3.ActionType{
	wire.ActionTypeChatTurnStarted:             w3.ActionTypeSessionTurnStarted,
	wire.ActionTypeChatDelta:                   w3.ActionTypeSessionDelta,
	wire.ActionTypeChatResponsePart:            w3.ActionTypeSessionResponsePart,
	wire.ActionTypeChatToolCallStart:           w3.ActionTypeSessionToolCallStart,
	wire.ActionTypeChatToolCallDelta:           w3.ActionTypeSessionToolCallDelta,
	wire.ActionTypeChatToolCallReady:           w3.ActionTypeSessionToolCallReady,
	wire.ActionTypeChatToolCallConfirmed:       w3.ActionTypeSessionToolCallConfirmed,
	wire.ActionTypeChatToolCallComplete:        w3.ActionTypeSessionToolCallComplete,
	wire.ActionTypeChatToolCallResultConfirmed: w3.ActionTypeSessionToolCallResultConfirmed,
	wire.ActionTypeChatToolCallContentChanged:  w3.ActionTypeSessionToolCallContentChanged,
	wire.ActionTypeChatTurnComplete:            w3.ActionTypeSessionTurnComplete,
	wire.ActionTypeChatTurnCancelled:           w3.ActionTypeSessionTurnCancelled,
	wire.ActionTypeChatError:                   w3.ActionTypeSessionError,
	wire.ActionTypeChatUsage:                   w3.ActionTypeSessionUsage,
	wire.ActionTypeChatReasoning:               w3.ActionTypeSessionReasoning,
	wire.ActionTypeChatPendingMessageSet:       w3.ActionTypeSessionPendingMessageSet,
	wire.ActionTypeChatPendingMessageRemoved:   w3.ActionTypeSessionPendingMessageRemoved,
	wire.ActionTypeChatQueuedMessagesReordered: w3.ActionTypeSessionQueuedMessagesReordered,
	wire.ActionTypeChatInputRequested:          w3.ActionTypeSessionInputRequested,
	wire.ActionTypeChatInputAnswerChanged:      w3.ActionTypeSessionInputAnswerChanged,
	wire.ActionTypeChatInputCompleted:          w3.ActionTypeSessionInputCompleted,
	wire.ActionTypeChatTruncated:               w3.ActionTypeSessionTruncated,
	// A 0.3.0 session shows its default chat's activity (see
	// projectSession), which changes with the chat's own action.
	wire.ActionTypeChatActivityChanged: w3.ActionTypeSessionActivityChanged,
}

// sameIn030 lists the 0.7.0 actions that 0.3.0 knows under the same name,
// on the same channel (nested types still get projected).
var sameIn030 = map[wire.ActionType]bool{
	wire.ActionTypeRootAgentsChanged:                 true,
	wire.ActionTypeRootActiveSessionsChanged:         true,
	wire.ActionTypeRootTerminalsChanged:              true,
	wire.ActionTypeRootConfigChanged:                 true,
	wire.ActionTypeSessionReady:                      true,
	wire.ActionTypeSessionCreationFailed:             true,
	wire.ActionTypeSessionTitleChanged:               true,
	wire.ActionTypeSessionServerToolsChanged:         true,
	wire.ActionTypeSessionCustomizationsChanged:      true,
	wire.ActionTypeSessionCustomizationToggled:       true,
	wire.ActionTypeSessionCustomizationUpdated:       true,
	wire.ActionTypeSessionCustomizationRemoved:       true,
	wire.ActionTypeSessionMcpServerStateChanged:      true,
	wire.ActionTypeSessionIsReadChanged:              true,
	wire.ActionTypeSessionIsArchivedChanged:          true,
	wire.ActionTypeSessionActivityChanged:            true,
	wire.ActionTypeSessionChangesetsChanged:          true,
	wire.ActionTypeSessionConfigChanged:              true,
	wire.ActionTypeSessionMetaChanged:                true,
	wire.ActionTypeChangesetStatusChanged:            true,
	wire.ActionTypeChangesetFileSet:                  true,
	wire.ActionTypeChangesetFileRemoved:              true,
	wire.ActionTypeChangesetOperationsChanged:        true,
	wire.ActionTypeChangesetOperationStatusChanged:   true,
	wire.ActionTypeChangesetCleared:                  true,
	wire.ActionTypeTerminalData:                      true,
	wire.ActionTypeTerminalInput:                     true,
	wire.ActionTypeTerminalResized:                   true,
	wire.ActionTypeTerminalClaimed:                   true,
	wire.ActionTypeTerminalTitleChanged:              true,
	wire.ActionTypeTerminalCwdChanged:                true,
	wire.ActionTypeTerminalExited:                    true,
	wire.ActionTypeTerminalCleared:                   true,
	wire.ActionTypeTerminalCommandDetectionAvailable: true,
	wire.ActionTypeTerminalCommandExecuted:           true,
	wire.ActionTypeTerminalCommandFinished:           true,
	wire.ActionTypeResourceWatchChanged:              true,
}

// Envelope translates one host envelope for 0.3.0 connections. Chat
// envelopes of a session's default chat move onto the session channel;
// those of other chats are dropped (0.3.0 cannot name them). When one
// action becomes several, only the first carries the origin: it is the
// echo the sender reconciles its pending action with, the others are
// plain state changes to it.
func (c *v030) Envelope(e Envelope) []Envelope {
	if action, ok := streamedText030(e.Action); ok {
		session, ok := c.dir.SessionOfDefaultChat(e.Channel)
		if !ok {
			return nil
		}
		return []Envelope{{Channel: session, Action: action, ServerSeq: e.ServerSeq, Origin: e.Origin}}
	}
	return c.envelope(e)
}

// envelope is Envelope's general path: decode the 0.7.0 action, project
// it, encode the 0.3.0 actions.
func (c *v030) envelope(e Envelope) []Envelope {
	channel := e.Channel
	if strings.HasPrefix(typeOf030(e.Action), "chat/") {
		session, ok := c.dir.SessionOfDefaultChat(e.Channel)
		if !ok {
			return nil
		}
		channel = session
	}
	actions, err := downAction(e.Action)
	if err != nil || len(actions) == 0 {
		// A host action that does not decode as 0.7.0 cannot be projected;
		// the connection misses it rather than receiving something its
		// reducer may not survive.
		return nil
	}
	out := make([]Envelope, len(actions))
	for i, a := range actions {
		out[i] = Envelope{Channel: channel, Action: a, ServerSeq: e.ServerSeq}
		if i == 0 {
			out[i].Origin = e.Origin
		}
	}
	return out
}

// downAction translates one encoded 0.7.0 action into the 0.3.0 actions
// with the same effect on the projection; none when 0.3.0 cannot show it.
func downAction(raw json.RawMessage) ([]json.RawMessage, error) {
	var a wire.StateAction
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	t := wire.ActionType(a.Type())
	var extra []json.RawMessage
	switch v := a.Value.(type) {
	case json.RawMessage:
		return nil, nil // an action type 0.7.0 does not know either
	case *wire.ChatTurnStartedAction:
		fixMessage(&v.Message)
		sel, err := selectionActions(v.Message.Model, v.Message.Agent, "")
		if err != nil {
			return nil, err
		}
		extra = sel
	case *wire.ChatResponsePartAction:
		switch p := v.Part.Value.(type) {
		case *wire.InputRequestResponsePart:
			// A live request reaches 0.3.0 as session/inputRequested (the
			// host dispatches chat/inputRequested for it), a resolved one
			// has no 0.3.0 form.
			return nil, nil
		case *wire.ToolCallResponsePart:
			fixToolCall(&p.ToolCall)
		}
	case *wire.ChatToolCallReadyAction:
		fixToolInput(&v.ToolInput)
	case *wire.ChatToolCallDeniedAction:
		fixMessage(v.UserSuggestion)
	case *wire.ChatPendingMessageSetAction:
		fixMessage(&v.Message)
	case *wire.ChatDraftChangedAction:
		if v.Draft == nil {
			return nil, nil
		}
		return selectionActions(v.Draft.Model, v.Draft.Agent, changedSelection(v.Draft))
	case *wire.SessionActiveClientSetAction:
		ac, err := via[*w3.SessionActiveClient](&v.ActiveClient)
		if err != nil {
			return nil, err
		}
		return encode030(&w3.SessionActiveClientChangedAction{ActiveClient: ac})
	case *wire.SessionActiveClientRemovedAction:
		// Stateless, the codec cannot tell whether the client leaving is
		// the one 0.3.0 shows (the last to join); with one active client,
		// the usual case, it is, and the slot empties.
		return encode030(&w3.SessionActiveClientChangedAction{})
	case *wire.SessionMcpServerStartRequestedAction:
		return encode030(&w3.SessionMcpServerStateChangedAction{ID: v.ID, State: w3.NewMcpServerState(&w3.McpServerStartingState{})})
	case *wire.SessionMcpServerStopRequestedAction:
		return encode030(&w3.SessionMcpServerStateChangedAction{ID: v.ID, State: w3.NewMcpServerState(&w3.McpServerStoppedState{})})
	case *wire.RootAgentsChangedAction:
		fixAgents(v.Agents)
	case *wire.SessionConfigChangedAction, *wire.RootConfigChangedAction:
		// Values are open JSON in both versions.
	case *wire.ChangesetOperationsChangedAction:
		v.Operations = fixOperations(v.Operations)
	case *wire.ChangesetOperationStatusChangedAction:
		if v.Status == wire.ChangesetOperationStatusDisabled {
			// 0.3.0 leaves disabled operations out of its list; a stateless
			// codec cannot rebuild the list, so the operation keeps its last
			// 0.3.0 status until the next changeset/operationsChanged.
			return nil, nil
		}
	case *wire.ChangesetContentChangedAction:
		return contentChanged(v)
	}
	var first json.RawMessage
	var err error
	switch {
	case chatToSession[t] != "":
		first, err = retype(a, chatToSession[t])
	case sameIn030[t]:
		first, err = retype(a, w3.ActionType(t))
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return append([]json.RawMessage{first}, extra...), nil
}

// selectionActions are the 0.3.0 actions that show a message's model and
// agent selection, the model first unless changed (a draft's
// SelectionMeta) says a 0.3.0 client changed the agent: the first action
// is the echo of the client's own. A missing model or agent changes
// nothing in 0.3.0, except a changed agent that is missing: a 0.3.0 agent
// clear.
func selectionActions(model *wire.ModelSelection, agent *wire.AgentSelection, changed string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	if model != nil {
		b, err := w3.Marshal(w3.Action(&w3.SessionModelChangedAction{Model: *downModel(model)}))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if agent != nil || changed == "agent" {
		b, err := w3.Marshal(w3.Action(&w3.SessionAgentChangedAction{Agent: downAgent(agent)}))
		if err != nil {
			return nil, err
		}
		if changed == "agent" {
			out = append([]json.RawMessage{b}, out...)
		} else {
			out = append(out, b)
		}
	}
	return out, nil
}

// contentChanged expands the 0.4.0 changeset/contentChanged into the
// actions 0.3.0 has for its parts. The error can only travel on
// changeset/statusChanged, which also sets the status; without an error
// the previous 0.3.0 error stays (0.7.0 clears it).
func contentChanged(v *wire.ChangesetContentChangedAction) ([]json.RawMessage, error) {
	acts := []any{&w3.ChangesetClearedAction{}}
	for _, f := range v.Files {
		file, err := via[w3.ChangesetFile](f)
		if err != nil {
			return nil, err
		}
		acts = append(acts, &w3.ChangesetFileSetAction{File: file})
	}
	if v.Operations != nil {
		ops, err := via[[]w3.ChangesetOperation](fixOperations(v.Operations))
		if err != nil {
			return nil, err
		}
		if ops == nil {
			ops = []w3.ChangesetOperation{}
		}
		acts = append(acts, &w3.ChangesetOperationsChangedAction{Operations: ops})
	}
	if v.Error != nil {
		e, err := via[w3.ErrorInfo](v.Error)
		if err != nil {
			return nil, err
		}
		acts = append(acts, &w3.ChangesetStatusChangedAction{Status: w3.ChangesetStatusError, Error: &e})
	}
	out := make([]json.RawMessage, 0, len(acts))
	for _, a := range acts {
		b, err := w3.Marshal(w3.Action(a))
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// retype re-encodes a (already projected) 0.7.0 action as the 0.3.0 action
// t: decoding it into the 0.3.0 type drops the members 0.3.0 does not
// declare, and fills a required member 0.7.0 made optional with its zero
// value (chat/toolCallDelta's content becomes "").
func retype(a wire.StateAction, t w3.ActionType) (json.RawMessage, error) {
	b, err := wire.Marshal(a)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["type"], _ = json.Marshal(t)
	if b, err = json.Marshal(m); err != nil {
		return nil, err
	}
	var out w3.StateAction
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s as %s: %w", a.Type(), t, err)
	}
	return w3.Marshal(out)
}

func encode030(v any) ([]json.RawMessage, error) {
	b, err := w3.Marshal(w3.Action(v))
	if err != nil {
		return nil, err
	}
	return []json.RawMessage{b}, nil
}

// typeOf030 reads the "type" member of an encoded action of either
// version ("" when there is none).
func typeOf030(action json.RawMessage) string {
	var t struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(action, &t) != nil {
		return ""
	}
	return t.Type
}

// The streamed-text actions as the host encodes them (host.encodeAction,
// byte-identical to json.Marshal), and their 0.3.0 names.
var streamedText = []struct{ from, to string }{
	{`{"type":"chat/delta","turnId":`, `{"type":"session/delta","turnId":`},
	{`{"type":"chat/reasoning","turnId":`, `{"type":"session/reasoning","turnId":`},
}

// streamedText030 is the fast path of Envelope for nearly every action of
// a busy session: a chat/delta or chat/reasoning with exactly the members
// turnId, partId and content in that order, each string as json.Marshal
// writes it (see canonicalJSONString), becomes its 0.3.0 session/delta or
// session/reasoning by renaming its type. These are the bytes the general
// path produces by decoding and re-encoding it twice (a test compares the
// two), at a fraction of the cost. Anything else, _meta included, takes
// the general path.
func streamedText030(raw []byte) (json.RawMessage, bool) {
	for _, st := range streamedText {
		if len(raw) < len(st.from) || string(raw[:len(st.from)]) != st.from {
			continue
		}
		i := canonicalJSONString(raw, len(st.from))
		for _, member := range []string{`,"partId":`, `,"content":`} {
			if i < 0 || len(raw)-i < len(member) || string(raw[i:i+len(member)]) != member {
				return nil, false
			}
			i = canonicalJSONString(raw, i+len(member))
		}
		if i != len(raw)-1 || raw[i] != '}' {
			return nil, false
		}
		out := make([]byte, 0, len(raw)-len(st.from)+len(st.to))
		out = append(out, st.to...)
		return append(out, raw[len(st.from):]...), true
	}
	return nil, false
}

// canonicalJSONString returns the end of the JSON string starting at b[i]
// if it is exactly what json.Marshal writes for the string it decodes to,
// else -1. json.Marshal writes valid UTF-8 as it is, except: \" and \\;
// \b \f \n \r \t; other control characters and <, > and & as \u00xx
// (lower-case hex); U+2028 and U+2029 as \u2028 and \u2029. (Invalid UTF-8
// becomes \ufffd, which decodes to a valid U+FFFD, written as it is: so a
// \ufffd is not canonical.)
func canonicalJSONString(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
				continue
			case 'u':
			default:
				return -1
			}
			if len(b)-i < 6 {
				return -1
			}
			if !canonicalUEscape(string(b[i+2 : i+6])) {
				return -1
			}
			i += 6
		case c < 0x20, c == '<', c == '>', c == '&':
			return -1
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return -1
			}
			i += size
		}
	}
	return -1
}

// canonicalUEscape says whether json.Marshal writes \u followed by the
// four hex digits u.
func canonicalUEscape(u string) bool {
	switch u {
	case "2028", "2029", "003c", "003e", "0026":
		return true
	}
	if u[:2] != "00" || u[2] != '0' && u[2] != '1' {
		return false
	}
	lo := strings.IndexByte(hexDigits, u[3])
	if lo < 0 {
		return false
	}
	switch c := (u[2]-'0')<<4 | byte(lo); c {
	case '\b', '\f', '\n', '\r', '\t':
		return false // written in their short forms
	}
	return true // another control character
}

const hexDigits = "0123456789abcdef"
