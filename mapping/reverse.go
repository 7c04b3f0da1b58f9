package mapping

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// AutoOutcome is the answer a policy decision gives: approve picks
// allow_once, else allow_always; deny picks reject_once, else reject_always;
// when no option fits the request is cancelled.
func AutoOutcome(options []backend.PermissionOption, approve bool) backend.PermissionOutcome {
	prefs := []backend.PermissionOptionKind{backend.RejectOnce, backend.RejectAlways}
	if approve {
		prefs = []backend.PermissionOptionKind{backend.AllowOnce, backend.AllowAlways}
	}
	for _, kind := range prefs {
		for _, o := range options {
			if o.Kind == kind {
				return backend.PermissionOutcome{OptionID: o.ID}
			}
		}
	}
	return backend.PermissionOutcome{Cancelled: true}
}

// Confirmation is a client's chat/toolCallConfirmed, whichever variant
// (wire.StateAction carries the approved and the denied form as different
// types).
type Confirmation struct {
	TurnID           string
	ToolCallID       string
	Approved         bool
	SelectedOptionID string
	// Action is the action as PermissionOutcome takes it.
	Action *wire.ChatToolCallConfirmedAction
}

// ConfirmationOf recognises a chat/toolCallConfirmed action; ok is false
// for any other action.
func ConfirmationOf(a wire.StateAction) (c Confirmation, ok bool) {
	switch v := a.Value.(type) {
	case *wire.ChatToolCallApprovedAction:
		c = Confirmation{TurnID: v.TurnID, ToolCallID: v.ToolCallID, Approved: true, SelectedOptionID: deref(v.SelectedOptionID)}
	case *wire.ChatToolCallDeniedAction:
		c = Confirmation{TurnID: v.TurnID, ToolCallID: v.ToolCallID, SelectedOptionID: deref(v.SelectedOptionID)}
	default:
		return Confirmation{}, false
	}
	action := wire.NewChatToolCallConfirmedAction(a.Value)
	c.Action = &action
	return c, true
}

// PermissionOutcome turns a client's chat/toolCallConfirmed into the
// backend's answer: the selected option when it is one of the backend's;
// otherwise by approval (see AutoOutcome). A nil or unrecognised action
// cancels.
func PermissionOutcome(options []backend.PermissionOption, confirmed *wire.ChatToolCallConfirmedAction) backend.PermissionOutcome {
	if confirmed == nil {
		return backend.PermissionOutcome{Cancelled: true}
	}
	var selected string
	var approve bool
	switch v := confirmed.Value.(type) {
	case *wire.ChatToolCallApprovedAction:
		selected, approve = deref(v.SelectedOptionID), true
	case *wire.ChatToolCallDeniedAction:
		selected, approve = deref(v.SelectedOptionID), false
	default:
		return backend.PermissionOutcome{Cancelled: true}
	}
	if selected != "" {
		for _, o := range options {
			if o.ID == selected {
				return backend.PermissionOutcome{OptionID: o.ID}
			}
		}
	}
	return AutoOutcome(options, approve)
}

// InputAnswers turns a client's chat/inputCompleted into the backend's
// answers, one per question of req in order. The answers come from the
// action, or from req (the request as it stands in the chat state, with
// the drafts clients submitted) when the action carries none. A declined or
// cancelled request returns declined.
func InputAnswers(req wire.ChatInputRequest, completed *wire.ChatInputCompletedAction) (answers []string, declined bool) {
	if completed == nil || completed.Response != wire.ChatInputResponseKindAccept {
		return nil, true
	}
	given := completed.Answers
	if given == nil {
		given = req.Answers
	}
	answers = make([]string, 0, len(req.Questions))
	for _, q := range req.Questions {
		a, ok := given[q.ID()]
		if !ok {
			answers = append(answers, "")
			continue
		}
		answers = append(answers, answerText(a))
	}
	return answers, false
}

// answerText renders one answer as the plain text a backend expects.
func answerText(a wire.ChatInputAnswer) string {
	switch v := a.Value.(type) {
	case *wire.ChatInputAnswered:
		return answerValueText(v.Value)
	case *wire.ChatInputSkipped:
		return strings.Join(v.FreeformValues, ", ")
	}
	return ""
}

func answerValueText(v wire.ChatInputAnswerValue) string {
	switch x := v.Value.(type) {
	case *wire.ChatInputTextAnswerValue:
		return x.Value
	case *wire.ChatInputNumberAnswerValue:
		return strconv.FormatFloat(x.Value, 'f', -1, 64)
	case *wire.ChatInputBooleanAnswerValue:
		return strconv.FormatBool(x.Value)
	case *wire.ChatInputSelectedAnswerValue:
		return strings.Join(append([]string{x.Value}, x.FreeformValues...), ", ")
	case *wire.ChatInputSelectedManyAnswerValue:
		return strings.Join(append(append([]string(nil), x.Value...), x.FreeformValues...), ", ")
	}
	return ""
}

// PromptFromTurn turns a chat/turnStarted into the backend prompt.
// Resource attachments become resource links, embedded resources embedded
// text (base64 data decoded; binary data that is not UTF-8 stays base64),
// simple attachments with a model representation are appended to the text
// so the agent sees what the user attached, and attachments of other kinds
// (chat and annotations references included) are passed on as embedded
// JSON. A message that is not the user's own (origin agent, tool or
// systemNotification: a turn the server started) is introduced by a line
// saying where it comes from (OriginNote), so the agent does not take it
// for the user's words.
func PromptFromTurn(a *wire.ChatTurnStartedAction) backend.Prompt {
	if a == nil {
		return backend.Prompt{}
	}
	p := backend.Prompt{TurnID: a.TurnID, Text: a.Message.Text}
	if note := OriginNote(a.Message.Origin.Kind); note != "" {
		p.Text = note + "\n\n" + p.Text
	}
	for _, att := range a.Message.Attachments {
		switch v := att.Value.(type) {
		case *wire.MessageResourceAttachment:
			p.Attachments = append(p.Attachments, backend.Attachment{
				Kind: backend.AttachResourceLink, URI: v.URI, Name: v.Label, MimeType: deref(v.ContentType),
			})
		case *wire.MessageEmbeddedResourceAttachment:
			text := v.Data
			if b, err := base64.StdEncoding.DecodeString(v.Data); err == nil && utf8.Valid(b) {
				text = string(b)
			}
			p.Attachments = append(p.Attachments, backend.Attachment{
				Kind: backend.AttachEmbedded, URI: embeddedURI(v), Name: v.Label, MimeType: v.ContentType, Text: text,
			})
		case *wire.SimpleMessageAttachment:
			if rep := deref(v.ModelRepresentation); rep != "" {
				p.Text += "\n\n" + rep
			}
		default:
			// A chat or annotations reference, or a kind this bridge does
			// not know: the agent cannot follow the reference, so pass its
			// JSON on rather than drop what the user attached.
			raw, err := json.Marshal(att)
			if err != nil {
				continue
			}
			var head struct {
				Label string `json:"label"`
			}
			_ = json.Unmarshal(raw, &head)
			p.Attachments = append(p.Attachments, backend.Attachment{
				Kind: backend.AttachEmbedded, URI: "attachment:" + pathSeg(orDefault(head.Label, "unknown")),
				Name: head.Label, MimeType: "application/json", Text: string(raw),
			})
		}
	}
	return p
}

// OriginNote is the line that introduces a turn's message to the agent
// when the user did not type it ("" for the user's own messages).
func OriginNote(kind wire.MessageKind) string {
	switch kind {
	case wire.MessageKindUser, "":
		return ""
	case wire.MessageKindAgent:
		return "[This message comes from another agent, not from the user.]"
	case wire.MessageKindTool:
		return "[This message comes from a tool, not from the user.]"
	case wire.MessageKindSystemNotification:
		return "[System notification, not written by the user.]"
	}
	return fmt.Sprintf("[This message comes from %q, not from the user.]", string(kind))
}

// embeddedURI names an embedded attachment: its `_meta.uri` when the client
// gave one, else a URI made from its label.
func embeddedURI(v *wire.MessageEmbeddedResourceAttachment) string {
	if u, ok := v.Meta["uri"].(string); ok && u != "" {
		return u
	}
	return "attachment:" + pathSeg(v.Label)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
