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

// PromptFromTurn turns a chat/turnStarted into the backend prompt, with no
// chat transcripts at hand (see PromptFromTurnWith).
func PromptFromTurn(a *wire.ChatTurnStartedAction) backend.Prompt {
	return PromptFromTurnWith(a, nil)
}

// PromptFromTurnWith turns a chat/turnStarted into the backend prompt.
// Every attachment becomes one backend attachment, in order, its `_meta`
// carried (docs/mapping.md, "Attachments"):
//
//   - resource → a resource link, with its selection;
//   - embeddedResource → embedded data: its text when the data is UTF-8
//     and not an image or audio, else the base64 data, with its selection;
//   - simple → its model representation as text (a completion's command
//     without one is already in the message text: nothing more is added);
//   - annotations → text naming the annotations it references;
//   - chat → the referenced chat's transcript as text, from chat (the
//     chat's state, or nil when the host has no such chat), through the
//     pinned turn;
//   - a kind this bridge does not know → its JSON, embedded.
//
// A message that is not the user's own (origin agent, tool or
// systemNotification: a turn the server started) is introduced by a line
// saying where it comes from (OriginNote), so the agent does not take it
// for the user's words.
func PromptFromTurnWith(a *wire.ChatTurnStartedAction, chat func(uri string) *wire.ChatState) backend.Prompt {
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
				Selection: selectionOf(v.Selection), Meta: v.Meta,
			})
		case *wire.MessageEmbeddedResourceAttachment:
			at := backend.Attachment{Kind: backend.AttachEmbedded, URI: embeddedURI(v), Name: v.Label, MimeType: v.ContentType,
				Selection: selectionOf(v.Selection), Meta: v.Meta}
			if b, err := base64.StdEncoding.DecodeString(v.Data); err == nil && utf8.Valid(b) && !isMedia(v.ContentType) {
				at.Text = string(b)
			} else {
				at.Data = v.Data
			}
			p.Attachments = append(p.Attachments, at)
		case *wire.SimpleMessageAttachment:
			rep := deref(v.ModelRepresentation)
			if rep == "" {
				if _, command := v.Meta["command"]; command {
					continue // a completion's slash command: the text has it
				}
				rep = fmt.Sprintf("[Attached: %s]", v.Label)
			}
			p.Attachments = append(p.Attachments, backend.Attachment{
				Kind: backend.AttachEmbedded, AsText: true, Name: v.Label, MimeType: "text/plain", Text: rep, Meta: v.Meta,
			})
		case *wire.MessageAnnotationsAttachment:
			p.Attachments = append(p.Attachments, backend.Attachment{
				Kind: backend.AttachEmbedded, AsText: true, Name: v.Label, URI: v.Resource, MimeType: "text/plain",
				Text: AnnotationsText(v), Meta: v.Meta,
			})
		case *wire.MessageChatAttachment:
			var st *wire.ChatState
			if chat != nil {
				st = chat(v.Resource)
			}
			p.Attachments = append(p.Attachments, backend.Attachment{
				Kind: backend.AttachEmbedded, AsText: true, Name: v.Label, URI: v.Resource, MimeType: "text/markdown",
				Text: ChatTranscript(v, st), Meta: v.Meta,
			})
		default:
			// A kind this bridge does not know: pass its JSON on rather
			// than drop what the user attached.
			raw, err := json.Marshal(att)
			if err != nil {
				continue
			}
			var head struct {
				Label string         `json:"label"`
				Meta  map[string]any `json:"_meta"`
			}
			_ = json.Unmarshal(raw, &head)
			p.Attachments = append(p.Attachments, backend.Attachment{
				Kind: backend.AttachEmbedded, URI: "attachment:" + pathSeg(orDefault(head.Label, "unknown")),
				Name: head.Label, MimeType: "application/json", Text: string(raw), Meta: head.Meta,
			})
		}
	}
	return p
}

// isMedia reports whether a content type is an image or audio (SVG, an
// image written as text, excepted): such data stays bytes, so that an
// agent that takes images gets an image block.
func isMedia(contentType string) bool {
	ct := strings.ToLower(contentType)
	return (strings.HasPrefix(ct, "image/") && !strings.HasPrefix(ct, "image/svg")) || strings.HasPrefix(ct, "audio/")
}

func selectionOf(s *wire.TextSelection) *backend.Range {
	if s == nil {
		return nil
	}
	r := s.Range
	return &backend.Range{StartLine: int(r.Start.Line), StartChar: int(r.Start.Character), EndLine: int(r.End.Line), EndChar: int(r.End.Character)}
}

// AnnotationsText is an annotations attachment as the agent reads it: the
// bridge holds no annotations, so it names the channel and ids.
func AnnotationsText(v *wire.MessageAnnotationsAttachment) string {
	which := "all annotations"
	if len(v.AnnotationIDs) > 0 {
		which = "annotations " + strings.Join(v.AnnotationIDs, ", ")
	}
	return fmt.Sprintf("[Attached %s «%s» of %s]", which, v.Label, v.Resource)
}

// ChatTranscript is a chat attachment as the agent reads it: the
// referenced chat's retained turns, from the first through the pinned one
// (its endTurn, else the latest completed turn), each as the user's
// message and the agent's answer (markdown, and a line per tool call). st
// is the chat's state, nil when the chat is unknown. Chat attachments
// inside the transcript are named, not expanded.
func ChatTranscript(v *wire.MessageChatAttachment, st *wire.ChatState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Transcript of the chat «%s» (%s)", v.Label, v.Resource)
	if st == nil {
		b.WriteString(": this chat is not available on this server.")
		return b.String()
	}
	end := deref(v.EndTurn)
	if end == "" && len(st.Turns) > 0 {
		end = st.Turns[len(st.Turns)-1].ID
	}
	if end != "" {
		fmt.Fprintf(&b, " through turn %s", end)
	}
	b.WriteString(":\n")
	for _, turn := range st.Turns {
		fmt.Fprintf(&b, "\nUser: %s\n", turn.Message.Text)
		for _, at := range turn.Message.Attachments {
			if raw, err := json.Marshal(at); err == nil {
				var head struct {
					Type  string `json:"type"`
					Label string `json:"label"`
				}
				_ = json.Unmarshal(raw, &head)
				fmt.Fprintf(&b, "(attached %s «%s»)\n", head.Type, head.Label)
			}
		}
		var answer []string
		for _, part := range turn.ResponseParts {
			switch x := part.Value.(type) {
			case *wire.MarkdownResponsePart:
				answer = append(answer, x.Content)
			case *wire.ToolCallResponsePart:
				if raw, err := json.Marshal(x.ToolCall); err == nil {
					var head struct {
						DisplayName string `json:"displayName"`
						Status      string `json:"status"`
					}
					_ = json.Unmarshal(raw, &head)
					answer = append(answer, fmt.Sprintf("[tool call: %s, %s]", head.DisplayName, head.Status))
				}
			}
		}
		fmt.Fprintf(&b, "Agent: %s\n", strings.Join(answer, "\n"))
		if turn.ID == end {
			break
		}
	}
	return b.String()
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
