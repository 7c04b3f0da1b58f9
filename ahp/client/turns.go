package client

import (
	"context"
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The turn actions below go to a chat channel; each takes the chat's URI,
// or a subscribed session's URI standing for its default chat. Each
// dispatches its action and waits for the server's echo, like Confirm:
// it returns the echoed envelope, or a *RejectedError. Callers that do not
// want to wait build the action themselves (TurnStarted helps with the
// one that needs a clock) and use DispatchAction.

// UserMessage is a message typed by the user, with no attachments.
func UserMessage(text string) wire.Message {
	return wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
}

// TurnStarted builds chat/turnStarted for a new turn, started now by the
// client's clock (Options.Now).
func (c *Client) TurnStarted(turnID string, msg wire.Message) wire.StateAction {
	return wire.Action(&wire.ChatTurnStartedAction{TurnID: turnID, StartedAt: reducer.FormatTime(c.clock()), Message: msg})
}

// confirmOnChat resolves chat and Confirms action on it.
func (c *Client) confirmOnChat(ctx context.Context, chat string, action wire.StateAction) (*wire.ActionEnvelope, error) {
	c.mu.Lock()
	uri, err := c.resolveChatLocked(chat)
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", actionType(action), err)
	}
	return c.Confirm(ctx, uri, action)
}

// StartTurn starts a turn with msg (chat/turnStarted). A message that
// names no model or agent takes the ones chosen on the chat's draft
// (SelectModel), as a composer sends what it shows. The server rejects
// the turn while another is active; queue the message instead
// (SetPendingMessage).
func (c *Client) StartTurn(ctx context.Context, chat, turnID string, msg wire.Message) (*wire.ActionEnvelope, error) {
	uri, msg, err := c.withDraftChoices(chat, msg)
	if err != nil {
		return nil, fmt.Errorf("chat/turnStarted: %w", err)
	}
	return c.Confirm(ctx, uri, c.TurnStarted(turnID, msg))
}

// withDraftChoices resolves chat and fills msg's model and agent from the
// chat's draft where msg names none. A chat the client does not watch has
// no draft it knows; msg is then sent as it is.
func (c *Client) withDraftChoices(chat string, msg wire.Message) (string, wire.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uri, err := c.resolveChatLocked(chat)
	if err != nil {
		return "", msg, err
	}
	var draft *wire.Message
	if cs := c.channels[uri]; cs != nil && cs.chat != nil {
		draft = cs.chat.Draft
	}
	// The latest draft this client set counts, echoed or not.
	for _, p := range c.pending[uri] {
		if d, ok := p.action.Value.(*wire.ChatDraftChangedAction); ok {
			draft = d.Draft
		}
	}
	if draft != nil {
		if msg.Model == nil && draft.Model != nil {
			m := *draft.Model
			msg.Model = &m
		}
		if msg.Agent == nil && draft.Agent != nil {
			a := *draft.Agent
			msg.Agent = &a
		}
	}
	return uri, msg, nil
}

// CancelTurn cancels the active turn turnID (chat/turnCancelled; the
// server fills in its duration).
func (c *Client) CancelTurn(ctx context.Context, chat, turnID string) (*wire.ActionEnvelope, error) {
	return c.confirmOnChat(ctx, chat, wire.Action(&wire.ChatTurnCancelledAction{TurnID: turnID}))
}

// ApproveToolCall lets a tool call that waits for confirmation run
// (chat/toolCallConfirmed, approved by the user). optionID names the
// confirmation option chosen, "" for none.
func (c *Client) ApproveToolCall(ctx context.Context, chat, turnID, toolCallID, optionID string) (*wire.ActionEnvelope, error) {
	a := &wire.ChatToolCallApprovedAction{TurnID: turnID, ToolCallID: toolCallID, Approved: true,
		Confirmed: wire.ToolCallConfirmationReasonUserAction}
	if optionID != "" {
		a.SelectedOptionID = &optionID
	}
	return c.confirmOnChat(ctx, chat, wire.Action(a))
}

// DenyToolCall refuses a tool call that waits for confirmation
// (chat/toolCallConfirmed, denied). optionID names the confirmation option
// chosen, "" for none.
func (c *Client) DenyToolCall(ctx context.Context, chat, turnID, toolCallID, optionID string) (*wire.ActionEnvelope, error) {
	a := &wire.ChatToolCallDeniedAction{TurnID: turnID, ToolCallID: toolCallID, Approved: false,
		Reason: wire.ToolCallCancellationReasonDenied}
	if optionID != "" {
		a.SelectedOptionID = &optionID
	}
	return c.confirmOnChat(ctx, chat, wire.Action(a))
}

// ConfirmToolResult approves or rejects the result of a tool call that
// waits for its result to be confirmed (chat/toolCallResultConfirmed).
func (c *Client) ConfirmToolResult(ctx context.Context, chat, turnID, toolCallID string, approved bool) (*wire.ActionEnvelope, error) {
	return c.confirmOnChat(ctx, chat, wire.Action(&wire.ChatToolCallResultConfirmedAction{
		TurnID: turnID, ToolCallID: toolCallID, Approved: approved}))
}

// CompleteInput answers an input request of the active turn
// (chat/inputCompleted): accept with answers by question id, decline, or
// cancel.
func (c *Client) CompleteInput(ctx context.Context, chat, requestID string, response wire.ChatInputResponseKind, answers map[string]wire.ChatInputAnswer) (*wire.ActionEnvelope, error) {
	return c.confirmOnChat(ctx, chat, wire.Action(&wire.ChatInputCompletedAction{
		RequestID: requestID, Response: response, Answers: answers}))
}

// SetPendingMessage adds or replaces a pending message
// (chat/pendingMessageSet): a queued one starts its own turn when the chat
// is idle, a steering one is handed to the running turn. Like StartTurn,
// it fills the message's model and agent from the chat's draft.
func (c *Client) SetPendingMessage(ctx context.Context, chat string, kind wire.PendingMessageKind, id string, msg wire.Message) (*wire.ActionEnvelope, error) {
	uri, msg, err := c.withDraftChoices(chat, msg)
	if err != nil {
		return nil, fmt.Errorf("chat/pendingMessageSet: %w", err)
	}
	return c.Confirm(ctx, uri, wire.Action(&wire.ChatPendingMessageSetAction{Kind: kind, ID: id, Message: msg}))
}

// SelectModel picks the model for the chat's next turns by setting it on
// the chat's draft (chat/draftChanged), keeping what else the draft holds;
// nil clears the choice. Since AHP 0.7.0 the model travels with each message;
// the draft is where a chat keeps the one the user chose, and StartTurn
// and SetPendingMessage copy it onto the messages they send.
func (c *Client) SelectModel(ctx context.Context, chat string, model *wire.ModelSelection) (*wire.ActionEnvelope, error) {
	st, err := c.OptimisticChat(chat)
	if err != nil {
		return nil, fmt.Errorf("chat/draftChanged: %w", err)
	}
	draft := UserMessage("")
	if st.Draft != nil {
		draft = *st.Draft
	}
	draft.Model = model
	return c.confirmOnChat(ctx, st.Resource, wire.Action(&wire.ChatDraftChangedAction{Draft: &draft}))
}

// ActiveTurn returns a copy of a subscribed chat's active turn, nil when
// the chat is idle (a session URI stands for its default chat).
func (c *Client) ActiveTurn(chat string) (*wire.ActiveTurn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uri, err := c.resolveChatLocked(chat)
	if err != nil {
		return nil, err
	}
	cs := c.channels[uri]
	if cs == nil || cs.chat == nil {
		return nil, fmt.Errorf("%s: %w", uri, ErrNoState)
	}
	if cs.chat.ActiveTurn == nil {
		return nil, nil
	}
	return cloneState(cs.chat.ActiveTurn, uri)
}

// WaitForTurn waits until turn turnID of a subscribed chat has ended
// (completed, cancelled or failed) and returns it (a session URI stands
// for its default chat).
func (c *Client) WaitForTurn(ctx context.Context, chat, turnID string) (*wire.Turn, error) {
	var out *wire.Turn
	err := c.wait(ctx, fmt.Sprintf("the end of turn %s in %s", turnID, chat), func() (bool, error) {
		uri, err := c.resolveChatLocked(chat)
		if err != nil {
			return false, nil // not subscribed yet: keep waiting
		}
		cs := c.channels[uri]
		if cs == nil || cs.chat == nil {
			return false, nil
		}
		for i := len(cs.chat.Turns) - 1; i >= 0; i-- {
			if cs.chat.Turns[i].ID == turnID {
				out, err = cloneState(&cs.chat.Turns[i], uri)
				return true, err
			}
		}
		return false, nil
	})
	return out, err
}

// TurnError returns the error a failed turn ended with, or nil. Since AHP
// 0.9.0 a turn has no error field: chat/error appends the error as the
// turn's last response part (an ErrorResponsePart) and sets its state to
// error.
func TurnError(t *wire.Turn) *wire.ErrorInfo {
	if t == nil || t.State != wire.TurnStateError {
		return nil
	}
	for i := len(t.ResponseParts) - 1; i >= 0; i-- {
		if p, ok := t.ResponseParts[i].Value.(*wire.ErrorResponsePart); ok && p != nil {
			return &p.Error
		}
	}
	return nil
}

// Confirmation is a tool call that a session waits on a client to confirm
// before it runs, as the session's inputNeeded lists it.
type Confirmation struct {
	// Chat is the chat the call runs in, where the answer goes.
	Chat string
	// TurnID is the turn of the call.
	TurnID string
	// ToolCallID is the call's id.
	ToolCallID string
	// ToolCall is the call as it waits (options, invocation message, …).
	ToolCall wire.ToolCallConfirmationState
}

// PendingConfirmations returns the tool calls a session waits on a client
// to confirm before they run (status pending-confirmation, answered with
// ApproveToolCall or DenyToolCall), in the session's inputNeeded order.
// Results waiting for confirmation (pending-result-confirmation) are not
// among them.
func PendingConfirmations(s *wire.SessionState) []Confirmation {
	if s == nil {
		return nil
	}
	var out []Confirmation
	for _, in := range s.InputNeeded {
		r, ok := in.Value.(*wire.SessionToolConfirmationRequest)
		if !ok || r == nil || r.ToolCall.Status() != string(wire.ToolCallStatusPendingConfirmation) {
			continue
		}
		out = append(out, Confirmation{Chat: r.Chat, TurnID: r.TurnID, ToolCallID: r.ToolCall.ToolCallID(), ToolCall: r.ToolCall})
	}
	return out
}

// PendingInputs returns the input requests a session waits on a client to
// answer (answered with CompleteInput on the request's chat), in the
// session's inputNeeded order.
func PendingInputs(s *wire.SessionState) []*wire.SessionChatInputRequest {
	if s == nil {
		return nil
	}
	var out []*wire.SessionChatInputRequest
	for _, in := range s.InputNeeded {
		if r, ok := in.Value.(*wire.SessionChatInputRequest); ok && r != nil {
			out = append(out, r)
		}
	}
	return out
}
