package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// ANSI escapes used when the output is a colour terminal.
const (
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// maxResultLines bounds how much of a tool's text result is shown.
const maxResultLines = 8

// renderer turns the action envelopes of one session into readable text:
// streamed answer text as is, reasoning prefixed with "│ " (and dimmed on a
// colour terminal), and one line per tool-call step. It keeps just enough
// memory of earlier actions (part kinds, tool names) to label later ones,
// so it works from actions alone and never needs the session state.
type renderer struct {
	out   io.Writer
	color bool
	// clientID is our own client id; our own prompt is not echoed back.
	clientID string

	partKinds map[string]wire.ResponsePartKind // partId → kind
	tools     map[string]string                // toolCallId → display name
	options   map[string][]wire.ConfirmationOption
	// stream is the part whose text is being streamed ("" after a full
	// line of our own), lineStart whether the cursor is at the start of a
	// line.
	stream    string
	lineStart bool
}

func newRenderer(out io.Writer, color bool, clientID string) *renderer {
	return &renderer{
		out:       out,
		color:     color,
		clientID:  clientID,
		partKinds: map[string]wire.ResponsePartKind{},
		tools:     map[string]string{},
		options:   map[string][]wire.ConfirmationOption{},
		lineStart: true,
	}
}

// envelope renders one action envelope of the session.
func (r *renderer) envelope(env *wire.ActionEnvelope) {
	if env.RejectionReason != nil {
		r.line("[rejected %s: %s]", actionTypeOf(env.Action), *env.RejectionReason)
		return
	}
	switch a := env.Action.Value.(type) {
	case *wire.SessionTurnStartedAction:
		if env.Origin == nil || env.Origin.ClientID != r.clientID {
			r.line("» %s", strings.ReplaceAll(strings.TrimRight(a.Message.Text, "\n"), "\n", "\n  "))
		}
	case *wire.SessionResponsePartAction:
		r.responsePart(a.Part)
	case *wire.SessionDeltaAction:
		r.streamText(a.PartID, r.kindOf(a.PartID, wire.ResponsePartKindMarkdown), a.Content)
	case *wire.SessionReasoningAction:
		r.streamText(a.PartID, r.kindOf(a.PartID, wire.ResponsePartKindReasoning), a.Content)
	case *wire.SessionToolCallStartAction:
		r.tools[a.ToolCallID] = a.DisplayName
	case *wire.SessionToolCallReadyAction:
		r.options[a.ToolCallID] = a.Options
		r.line("⚙ %s: %s", r.toolName(a.ToolCallID), oneLine(markdownText(&a.InvocationMessage)))
		if a.Confirmed == nil {
			title := "needs approval"
			if a.ConfirmationTitle != nil {
				title += ": " + oneLine(markdownText(a.ConfirmationTitle))
			}
			r.line("  ? %s", title)
		}
	case *wire.SessionToolCallApprovedAction:
		r.line("  ✓ approved%s%s", r.optionSuffix(a.ToolCallID, a.SelectedOptionID), r.bySuffix(env))
	case *wire.SessionToolCallDeniedAction:
		r.line("  ✗ %s%s%s", a.Reason, r.optionSuffix(a.ToolCallID, a.SelectedOptionID), r.bySuffix(env))
	case *wire.SessionToolCallCompleteAction:
		r.toolResult(a.ToolCallID, &a.Result)
	case *wire.SessionToolCallResultConfirmedAction:
		if a.Approved {
			r.line("  ✓ result accepted")
		} else {
			r.line("  ✗ result rejected")
		}
	case *wire.SessionErrorAction:
		r.line("✗ error: %s", errorText(&a.Error))
	case *wire.SessionTurnCancelledAction:
		r.line("[turn cancelled]")
	case *wire.SessionTurnCompleteAction:
		r.endLine()
	case *wire.SessionInputRequestedAction:
		if a.Request.Message != nil {
			r.line("? %s", *a.Request.Message)
		}
		if a.Request.URL != nil {
			r.line("  %s", *a.Request.URL)
		}
	case *wire.SessionInputCompletedAction:
		r.line("  ✓ input %s%s", a.Response, r.bySuffix(env))
	case *wire.SessionActivityChangedAction:
		// What the agent is doing now, e.g. the plan step in progress.
		if a.Activity != nil && *a.Activity != "" {
			r.line("… %s", oneLine(*a.Activity))
		}
	}
}

// responsePart renders a part added to the active turn.
func (r *renderer) responsePart(p wire.ResponsePart) {
	switch part := p.Value.(type) {
	case *wire.MarkdownResponsePart:
		r.partKinds[part.ID] = wire.ResponsePartKindMarkdown
		r.streamText(part.ID, wire.ResponsePartKindMarkdown, part.Content)
	case *wire.ReasoningResponsePart:
		r.partKinds[part.ID] = wire.ResponsePartKindReasoning
		r.streamText(part.ID, wire.ResponsePartKindReasoning, part.Content)
	case *wire.ResourceReponsePart:
		r.line("[resource %s]", part.URI)
	case *wire.SystemNotificationResponsePart:
		r.line("[%s]", oneLine(markdownText(&part.Content)))
	}
}

func (r *renderer) kindOf(partID string, fallback wire.ResponsePartKind) wire.ResponsePartKind {
	if k, ok := r.partKinds[partID]; ok {
		return k
	}
	return fallback
}

// streamText writes streamed text of a part, starting a new line when the
// part changes so that parts (answer text, reasoning) never share a line.
func (r *renderer) streamText(partID string, kind wire.ResponsePartKind, text string) {
	if text == "" {
		return
	}
	if partID != r.stream || partID == "" {
		// A new block of text starts on its own line, without the
		// blank that separated it from the previous chunk.
		r.endLine()
		r.stream = partID
		if text = strings.TrimLeft(text, " "); text == "" {
			return
		}
	}
	if kind != wire.ResponsePartKindReasoning {
		r.write(text)
		return
	}
	// Reasoning: prefix every line, dim it on a colour terminal, and reset
	// before every newline so nothing else is printed dimmed.
	var b strings.Builder
	for i, seg := range strings.SplitAfter(text, "\n") {
		if seg == "" {
			continue
		}
		if r.lineStart || i > 0 {
			b.WriteString("│ ")
		}
		body, nl := strings.CutSuffix(seg, "\n")
		if r.color && body != "" {
			b.WriteString(ansiDim + body + ansiReset)
		} else {
			b.WriteString(body)
		}
		if nl {
			b.WriteString("\n")
		}
		r.lineStart = nl
	}
	r.write(b.String())
}

func (r *renderer) toolName(id string) string {
	if n := r.tools[id]; n != "" {
		return n
	}
	return id
}

func (r *renderer) optionSuffix(toolCallID string, selected *string) string {
	if selected == nil {
		return ""
	}
	for _, o := range r.options[toolCallID] {
		if o.ID == *selected {
			return " (" + o.Label + ")"
		}
	}
	return " (" + *selected + ")"
}

// bySuffix says who answered when it was another client.
func (r *renderer) bySuffix(env *wire.ActionEnvelope) string {
	if env.Origin == nil {
		return " by the host"
	}
	if env.Origin.ClientID != r.clientID {
		return " by " + env.Origin.ClientID
	}
	return ""
}

// toolResult renders a finished tool call and the start of its text output.
func (r *renderer) toolResult(toolCallID string, res *wire.ToolCallResult) {
	name := r.toolName(toolCallID)
	if !res.Success {
		msg := "failed"
		if res.Error != nil {
			msg += ": " + oneLine(res.Error.Message)
		}
		r.line("  ✗ %s %s", name, msg)
	} else {
		summary := oneLine(markdownText(&res.PastTenseMessage))
		if summary == "" {
			summary = name + " done"
		}
		r.line("  ✓ %s", summary)
	}
	for _, c := range res.Content {
		switch v := c.Value.(type) {
		case *wire.ToolResultTextContent:
			if res.Error != nil && strings.TrimSpace(v.Text) == strings.TrimSpace(res.Error.Message) {
				continue // already shown as the failure
			}
			r.indented(v.Text)
		case *wire.ToolResultFileEditContent:
			r.line("    edited %s", fileEditTarget(v))
		case *wire.ToolResultResourceContent:
			r.line("    [resource %s]", v.URI)
		case *wire.ToolResultTerminalContent:
			r.line("    [terminal %s]", v.Resource)
		}
	}
}

func fileEditTarget(v *wire.ToolResultFileEditContent) string {
	switch {
	case v.After != nil:
		return v.After.URI
	case v.Before != nil:
		return v.Before.URI
	}
	return "a file"
}

// indented prints up to maxResultLines lines of text, indented.
func (r *renderer) indented(text string) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return
	}
	shown := lines
	if len(shown) > maxResultLines {
		shown = shown[:maxResultLines]
	}
	for _, l := range shown {
		r.line("    %s", l)
	}
	if n := len(lines) - len(shown); n > 0 {
		r.line("    … (%d more lines)", n)
	}
}

// line prints a full line of our own, on a line of its own.
func (r *renderer) line(format string, args ...any) {
	r.endLine()
	r.write(fmt.Sprintf(format, args...) + "\n")
	r.stream = ""
}

// endLine finishes a partly written line.
func (r *renderer) endLine() {
	if !r.lineStart {
		r.write("\n")
	}
}

func (r *renderer) write(s string) {
	if s == "" {
		return
	}
	_, _ = io.WriteString(r.out, s)
	r.lineStart = strings.HasSuffix(s, "\n")
}

// markdownText is the text of a StringOrMarkdown, whichever form it has.
func markdownText(s *wire.StringOrMarkdown) string {
	if s == nil {
		return ""
	}
	return s.Text
}

func errorText(e *wire.ErrorInfo) string {
	if e.ErrorType != "" && e.ErrorType != "error" {
		return e.Message + " (" + e.ErrorType + ")"
	}
	return e.Message
}

// oneLine collapses whitespace so a message fits on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// actionTypeOf is the wire "type" of an action.
func actionTypeOf(a wire.StateAction) string {
	if t := a.Type(); t != "" {
		return t
	}
	return fmt.Sprintf("%T", a.Value)
}
