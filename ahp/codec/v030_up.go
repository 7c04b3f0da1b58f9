package codec

import (
	"encoding/json"
	"fmt"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// sessionToChat maps the client-dispatchable 0.3.0 session actions that
// act on the conversation to their 0.7.0 chat actions, dispatched on the
// session's default chat. The payloads are the same but for members 0.7.0
// added; the host stamps the timing members (startedAt, duration) itself.
var sessionToChat = map[w3.ActionType]wire.ActionType{
	w3.ActionTypeSessionTurnStarted:             wire.ActionTypeChatTurnStarted,
	w3.ActionTypeSessionToolCallConfirmed:       wire.ActionTypeChatToolCallConfirmed,
	w3.ActionTypeSessionToolCallComplete:        wire.ActionTypeChatToolCallComplete,
	w3.ActionTypeSessionToolCallResultConfirmed: wire.ActionTypeChatToolCallResultConfirmed,
	w3.ActionTypeSessionToolCallContentChanged:  wire.ActionTypeChatToolCallContentChanged,
	w3.ActionTypeSessionTurnCancelled:           wire.ActionTypeChatTurnCancelled,
	w3.ActionTypeSessionPendingMessageSet:       wire.ActionTypeChatPendingMessageSet,
	w3.ActionTypeSessionPendingMessageRemoved:   wire.ActionTypeChatPendingMessageRemoved,
	w3.ActionTypeSessionQueuedMessagesReordered: wire.ActionTypeChatQueuedMessagesReordered,
	w3.ActionTypeSessionInputAnswerChanged:      wire.ActionTypeChatInputAnswerChanged,
	w3.ActionTypeSessionInputCompleted:          wire.ActionTypeChatInputCompleted,
	w3.ActionTypeSessionTruncated:               wire.ActionTypeChatTruncated,
}

// sameUp lists the client-dispatchable 0.3.0 actions that 0.7.0 has under
// the same name and channel, with payloads 0.7.0 decodes unchanged.
var sameUp = map[w3.ActionType]bool{
	w3.ActionTypeRootConfigChanged:           true,
	w3.ActionTypeSessionTitleChanged:         true,
	w3.ActionTypeSessionCustomizationToggled: true,
	w3.ActionTypeSessionIsReadChanged:        true,
	w3.ActionTypeSessionIsArchivedChanged:    true,
	w3.ActionTypeSessionConfigChanged:        true,
	w3.ActionTypeTerminalInput:               true,
	w3.ActionTypeTerminalResized:             true,
	w3.ActionTypeTerminalClaimed:             true,
	w3.ActionTypeTerminalTitleChanged:        true,
	w3.ActionTypeTerminalCleared:             true,
}

// hostStamped lists, per translated chat action, the required 0.7.0
// members that a 0.3.0 action cannot supply and the host fills in from its
// own clock: they are left out rather than sent as zero values.
var hostStamped = map[wire.ActionType]string{
	wire.ActionTypeChatTurnStarted:   "startedAt",
	wire.ActionTypeChatTurnCancelled: "duration",
}

// Action translates an action a 0.3.0 client dispatched on channel. Only
// the actions 0.3.0 lets clients dispatch are accepted; the error of any
// other is the rejection reason.
func (c *v030) Action(channel string, raw json.RawMessage) (string, json.RawMessage, error) {
	var a w3.StateAction
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", nil, fmt.Errorf("malformed AHP 0.3.0 action: %v", err)
	}
	t := w3.ActionType(a.Type())
	defaultChat := func() (string, error) {
		chat, ok := c.dir.DefaultChat(channel)
		if !ok {
			return "", fmt.Errorf("%s: %s is not a session", t, channel)
		}
		return chat, nil
	}
	var out any
	switch v := a.Value.(type) {
	case *w3.SessionModelChangedAction:
		out = &wire.ChatDraftChangedAction{Draft: selectionDraft(upModel(&v.Model), nil, "model")}
	case *w3.SessionAgentChangedAction:
		out = &wire.ChatDraftChangedAction{Draft: selectionDraft(nil, upAgent(v.Agent), "agent")}
	case *w3.SessionActiveClientChangedAction:
		if v.ActiveClient == nil {
			out = &wire.SessionActiveClientRemovedAction{ClientID: SenderClientID}
			break
		}
		ac, err := via[wire.SessionActiveClient](v.ActiveClient)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %v", t, err)
		}
		out = &wire.SessionActiveClientSetAction{ActiveClient: ac}
	case *w3.SessionActiveClientToolsChangedAction:
		tools, err := via[[]wire.ToolDefinition](v.Tools)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %v", t, err)
		}
		if tools == nil {
			tools = []wire.ToolDefinition{}
		}
		out = &wire.SessionActiveClientSetAction{ActiveClient: wire.SessionActiveClient{ClientID: SenderClientID, Tools: tools}}
	}
	if out != nil {
		hostChannel := channel
		if _, ok := out.(*wire.ChatDraftChangedAction); ok {
			chat, err := defaultChat()
			if err != nil {
				return "", nil, err
			}
			hostChannel = chat
		}
		b, err := wire.Marshal(wire.Action(out))
		if err != nil {
			return "", nil, fmt.Errorf("%s: %v", t, err)
		}
		return hostChannel, b, nil
	}

	switch {
	case sessionToChat[t] != "":
		chat, err := defaultChat()
		if err != nil {
			return "", nil, err
		}
		b, err := retypeUp(a, sessionToChat[t])
		if err != nil {
			return "", nil, err
		}
		return chat, b, nil
	case sameUp[t]:
		b, err := retypeUp(a, wire.ActionType(t))
		if err != nil {
			return "", nil, err
		}
		return channel, b, nil
	}
	return "", nil, fmt.Errorf("%s is not an action an AHP 0.3.0 client may dispatch", a.Type())
}

// retypeUp re-encodes a 0.3.0 action as the 0.7.0 action t, leaving out
// the members the host stamps.
func retypeUp(a w3.StateAction, t wire.ActionType) (json.RawMessage, error) {
	b, err := w3.Marshal(a)
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
	var out wire.StateAction
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s as %s: %v", a.Type(), t, err)
	}
	if b, err = wire.Marshal(out); err != nil {
		return nil, err
	}
	member, ok := hostStamped[t]
	if !ok {
		return b, nil
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, member)
	return json.Marshal(m)
}

// selectionDraft is the default-chat draft that carries a 0.3.0 client's
// model or agent choice: 0.7.0 keeps the selection on the message being
// composed, and a 0.3.0 client composes nothing the host could see.
// changed, when not "", is the selection a session/modelChanged or
// session/agentChanged changed (SelectionMeta).
func selectionDraft(model *wire.ModelSelection, agent *wire.AgentSelection, changed string) *wire.Message {
	m := &wire.Message{
		Text:   "",
		Origin: wire.MessageOrigin{Kind: wire.MessageKindUser},
		Model:  model,
		Agent:  agent,
	}
	if changed != "" {
		m.Meta = map[string]any{SelectionMeta: changed}
	}
	return m
}

func upModel(m *w3.ModelSelection) *wire.ModelSelection {
	if m == nil {
		return nil
	}
	out := &wire.ModelSelection{ID: m.ID}
	for k, v := range m.Config {
		if out.Config == nil {
			out.Config = map[string]wire.JsonPrimitive{}
		}
		out.Config[k] = v
	}
	return out
}

func upAgent(a *w3.AgentSelection) *wire.AgentSelection {
	if a == nil {
		return nil
	}
	return &wire.AgentSelection{URI: a.URI}
}
