package tui

import (
	"fmt"
	"io"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// ANSI escapes used when the output is a colour terminal.
const (
	ansiDim   = "\x1b[2m"
	ansiReset = "\x1b[0m"
)

// maxResultLines bounds how much of a tool's text result or a command's
// output is shown.
const maxResultLines = 8

// partKind says how streamed text is shown.
type partKind int

const (
	partText      partKind = iota // the answer, as is
	partReasoning                 // prefixed with "│ ", dimmed on a colour terminal
)

// renderer turns what happens in one session into readable text: streamed
// answer text as is, reasoning prefixed with "│ " (and dimmed on a colour
// terminal), one line per tool-call step with the start of its output,
// checklists as checklists. It keeps just enough memory of earlier actions
// (part kinds, tool names, terminal output) to label later ones, so it
// works from actions alone. envelope (view.go) reads the protocol; the
// methods here only lay out plain values.
type renderer struct {
	out   io.Writer
	color bool
	// clientID is our own client id; our own prompt is not echoed back,
	// nor are the messages we queued (ownQueued, by queued-message id).
	clientID  string
	ownQueued map[string]bool

	partKinds map[string]partKind
	tools     map[string]string            // toolCallId → display name
	options   map[string]map[string]string // toolCallId → option id → label
	terminals map[string]*terminal         // terminal channel → its output so far
	// stream is the part whose text is being streamed ("" after a full
	// line of our own), lineStart whether the cursor is at the start of a
	// line.
	stream    string
	lineStart bool
}

// terminal is what the renderer knows of a terminal channel.
type terminal struct {
	state *wire.TerminalState
	seq   int64 // serverSeq of state
}

func newRenderer(out io.Writer, color bool, clientID string) *renderer {
	return &renderer{
		out:       out,
		color:     color,
		clientID:  clientID,
		ownQueued: map[string]bool{},
		partKinds: map[string]partKind{},
		tools:     map[string]string{},
		options:   map[string]map[string]string{},
		terminals: map[string]*terminal{},
		lineStart: true,
	}
}

// userMessage shows a prompt someone else sent.
func (r *renderer) userMessage(text string) {
	r.line("» %s", strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n  "))
}

// toolInvoked shows a tool call about to run, naming the tool once: ACP
// agents give a call one title, which AHP carries both as the display name
// and as the invocation message.
func (r *renderer) toolInvoked(id, invocation string) {
	r.line("⚙ %s", toolLine(r.toolName(id), invocation))
}

// toolLine is "name: invocation", or just one of them when the other adds
// nothing.
func toolLine(name, invocation string) string {
	switch {
	case invocation == "" || invocation == name:
		return name
	case name == "" || strings.HasPrefix(invocation, name):
		return invocation
	}
	return name + ": " + invocation
}

// resultView is what to show of a finished tool call.
type resultView struct {
	ok      bool
	summary string // what was done, or why it failed
	blocks  []resultBlock
}

// resultBlock is one item of a tool call's result.
type resultBlock struct {
	text string // text or command output: indented, at most maxResultLines
	line string // or one line of its own: "created /p/a.go (+3 -0)", …
}

// toolResult shows a finished tool call and the start of its output.
func (r *renderer) toolResult(v resultView) {
	if v.ok {
		r.line("  ✓ %s", v.summary)
	} else {
		r.line("  ✗ %s", v.summary)
	}
	for _, b := range v.blocks {
		if b.line != "" {
			r.line("    %s", b.line)
			continue
		}
		r.indented(b.text)
	}
}

// checkState is the state of one checklist item.
type checkState int

const (
	checkPending checkState = iota
	checkInProgress
	checkDone
)

// checkItem is one item of a checklist.
type checkItem struct {
	state checkState
	text  string
}

// checklist shows a checklist (the agent's plan) as one line per item.
func (r *renderer) checklist(title string, items []checkItem) {
	if title != "" {
		r.line("%s", title)
	}
	for _, it := range items {
		mark := "○"
		switch it.state {
		case checkDone:
			mark = "✓"
		case checkInProgress:
			mark = "▸"
		}
		r.line("  %s %s", mark, it.text)
	}
}

// streamText writes streamed text of a part, starting a new line when the
// part changes so that parts (answer text, reasoning) never share a line.
func (r *renderer) streamText(partID string, kind partKind, text string) {
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
	if kind != partReasoning {
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

// optionSuffix names the option a confirmation chose.
func (r *renderer) optionSuffix(toolCallID string, selected *string) string {
	if selected == nil {
		return ""
	}
	if label := r.options[toolCallID][*selected]; label != "" {
		return " (" + label + ")"
	}
	return " (" + *selected + ")"
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

// oneLine collapses whitespace so a message fits on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
