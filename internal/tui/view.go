package tui

// What to show of AHP 1.0.0 actions and state: the default chat's turns
// (chat/* actions) and the questions of the session (its inputNeeded).
// This file (with the answers built in ask.go) is where the client reads
// protocol shapes; a port to another dialect replaces these functions and
// keeps the layout in render.go.

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// envelope renders one action envelope of the session's default chat or
// of a terminal it uses. What the session channel carries (the chat
// catalogue, inputNeeded, active clients) is not shown: its questions are
// asked instead, and the chat says the rest.
func (r *renderer) envelope(env *wire.ActionEnvelope) {
	if wire.IsTerminalURI(env.Channel) {
		r.terminalAction(env)
		return
	}
	if env.RejectionReason != nil {
		r.line("[rejected %s: %s]", actionTypeOf(env.Action), *env.RejectionReason)
		return
	}
	switch a := env.Action.Value.(type) {
	case *wire.ChatTurnStartedAction:
		own := env.Origin != nil && env.Origin.ClientID == r.clientID
		if a.QueuedMessageID != nil && r.ownQueued[*a.QueuedMessageID] {
			own = true
		}
		if !own {
			r.userMessage(a.Message.Text)
		}
	case *wire.ChatPendingMessageSetAction:
		if a.Kind == wire.PendingMessageKindQueued && !r.ownQueued[a.ID] {
			r.line("+ queued%s: %s", r.bySuffix(env), oneLine(a.Message.Text))
		}
	case *wire.ChatResponsePartAction:
		r.responsePart(a.Part)
	case *wire.ChatDeltaAction:
		r.streamText(a.PartID, r.kindOf(a.PartID, partText), a.Content)
	case *wire.ChatReasoningAction:
		r.streamText(a.PartID, r.kindOf(a.PartID, partReasoning), a.Content)
	case *wire.ChatToolCallStartAction:
		r.tools[a.ToolCallID] = a.DisplayName
	case *wire.ChatToolCallReadyAction:
		labels := map[string]string{}
		for _, o := range a.Options {
			labels[o.ID] = o.Label
		}
		r.options[a.ToolCallID] = labels
		r.toolInvoked(a.ToolCallID, oneLine(markdownText(&a.InvocationMessage)))
		if a.Confirmed == nil {
			title := "needs approval"
			if a.ConfirmationTitle != nil {
				title += ": " + oneLine(markdownText(a.ConfirmationTitle))
			}
			r.line("  ? %s", title)
		}
	case *wire.ChatToolCallApprovedAction:
		r.line("  ✓ approved%s%s", r.optionSuffix(a.ToolCallID, a.SelectedOptionID), r.bySuffix(env))
	case *wire.ChatToolCallDeniedAction:
		r.line("  ✗ %s%s%s", a.Reason, r.optionSuffix(a.ToolCallID, a.SelectedOptionID), r.bySuffix(env))
	case *wire.ChatToolCallCompleteAction:
		r.toolResult(r.resultView(a.ToolCallID, &a.Result))
	case *wire.ChatToolCallResultConfirmedAction:
		if a.Approved {
			r.line("  ✓ result accepted")
		} else {
			r.line("  ✗ result rejected")
		}
	case *wire.ChatErrorAction:
		r.line("✗ error: %s", errorText(&a.Part.Error))
	case *wire.ChatTurnCancelledAction:
		r.line("[turn cancelled]")
	case *wire.ChatTurnCompleteAction:
		r.endLine()
	case *wire.ChatInputRequestedAction:
		if a.Request.Message != nil {
			r.line("? %s", *a.Request.Message)
		}
		if a.Request.URL != nil {
			r.line("  %s", *a.Request.URL)
		}
	case *wire.ChatInputCompletedAction:
		r.line("  ✓ input %s%s", a.Response, r.bySuffix(env))
	case *wire.ChatActivityChangedAction:
		// What the agent is doing now, e.g. the plan step in progress.
		if a.Activity != nil && *a.Activity != "" {
			r.line("… %s", oneLine(*a.Activity))
		}
	}
}

// joined shows the turn running when the session was joined: its prompt
// and the tool calls waiting for an answer, and learns the names and
// options later actions refer to.
func (r *renderer) joined(chat *wire.ChatState) {
	if chat == nil || chat.ActiveTurn == nil {
		return
	}
	turn := chat.ActiveTurn
	r.userMessage(turn.Message.Text)
	r.line("… (joined while this turn runs)")
	for _, p := range turn.ResponseParts {
		tc, ok := p.Value.(*wire.ToolCallResponsePart)
		if !ok {
			continue
		}
		id, _ := reducer.ToolCallID(tc.ToolCall)
		r.tools[id] = reducer.ToolCallDisplayName(tc.ToolCall)
		if x, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok {
			r.envelope(&wire.ActionEnvelope{Channel: chat.Resource, Action: wire.Action(&wire.ChatToolCallReadyAction{
				TurnID: turn.ID, ToolCallID: id, InvocationMessage: x.InvocationMessage,
				ConfirmationTitle: x.ConfirmationTitle, Options: x.Options,
			})})
		}
	}
}

// responsePart renders a part added to the active turn.
func (r *renderer) responsePart(p wire.ResponsePart) {
	switch part := p.Value.(type) {
	case *wire.MarkdownResponsePart:
		r.partKinds[part.ID] = partText
		// A part that arrives whole as a task list (the agent's final
		// plan) reads better as a checklist than as Markdown source.
		if title, items, ok := parseChecklist(part.Content); ok {
			r.checklist(title, items)
			return
		}
		r.streamText(part.ID, partText, part.Content)
	case *wire.ReasoningResponsePart:
		r.partKinds[part.ID] = partReasoning
		r.streamText(part.ID, partReasoning, part.Content)
	case *wire.ResourceResponsePart:
		r.line("[resource %s]", part.URI)
	case *wire.SystemNotificationResponsePart:
		r.line("[%s]", oneLine(markdownText(&part.Content)))
	}
}

func (r *renderer) kindOf(partID string, fallback partKind) partKind {
	if k, ok := r.partKinds[partID]; ok {
		return k
	}
	return fallback
}

// bySuffix says who acted when it was not us.
func (r *renderer) bySuffix(env *wire.ActionEnvelope) string {
	if env.Origin == nil {
		return " by the host"
	}
	if env.Origin.ClientID != r.clientID {
		return " by " + env.Origin.ClientID
	}
	return ""
}

// resultView is what to show of a finished tool call: its summary, its
// text, the files it touched and what its commands printed.
func (r *renderer) resultView(toolCallID string, res *wire.ToolCallResult) resultView {
	name := r.toolName(toolCallID)
	v := resultView{ok: res.Success}
	if res.Success {
		v.summary = oneLine(markdownText(&res.PastTenseMessage))
		if v.summary == "" {
			v.summary = name + " done"
		}
	} else {
		v.summary = name + " failed"
		if res.Error != nil {
			msg := oneLine(res.Error.Message)
			if strings.HasPrefix(msg, name) {
				v.summary = msg // "make test failed", not "make test failed: make test failed"
			} else {
				v.summary += ": " + msg
			}
		}
	}
	var edited []string // paths of the file edits, to drop texts that only repeat them
	for _, c := range res.Content {
		if e, ok := c.Value.(*wire.ToolResultFileEditContent); ok {
			edited = append(edited, fileEditPath(e))
		}
	}
	for _, c := range res.Content {
		switch x := c.Value.(type) {
		case *wire.ToolResultTextContent:
			if res.Error != nil && strings.TrimSpace(x.Text) == strings.TrimSpace(res.Error.Message) {
				continue // already shown as the failure
			}
			if describesEdit(x.Text, edited) {
				continue
			}
			v.blocks = append(v.blocks, resultBlock{text: x.Text})
		case *wire.ToolResultFileEditContent:
			v.blocks = append(v.blocks, resultBlock{line: fileEditLine(x)})
		case *wire.ToolResultResourceContent:
			v.blocks = append(v.blocks, resultBlock{line: "[resource " + x.URI + "]"})
		case *wire.ToolResultTerminalContent:
			v.blocks = append(v.blocks, r.terminalBlocks(x)...)
		}
	}
	return v
}

// terminalBlocks shows what a command printed, or names its terminal when
// its output is not known.
func (r *renderer) terminalBlocks(c *wire.ToolResultTerminalContent) []resultBlock {
	t := r.terminals[c.Resource]
	if t == nil {
		return []resultBlock{{line: "[terminal " + c.Resource + "]"}}
	}
	out := []resultBlock{{text: plainText(terminalOutput(t.state))}}
	if x, ok := t.state.Lifecycle.Value.(*wire.TerminalExitedLifecycleState); ok && x != nil && x.ExitCode != nil && *x.ExitCode != 0 {
		out = append(out, resultBlock{line: fmt.Sprintf("(exit status %d)", *x.ExitCode)})
	}
	return out
}

// terminalSnapshot starts the renderer's copy of a terminal from a
// subscription snapshot taken at serverSeq seq.
func (r *renderer) terminalSnapshot(uri string, st *wire.TerminalState, seq int64) {
	r.terminals[uri] = &terminal{state: st, seq: seq}
}

// terminalAction applies an action of a terminal channel to the
// renderer's copy; the output is shown with the tool call's result.
func (r *renderer) terminalAction(env *wire.ActionEnvelope) {
	if env.RejectionReason != nil {
		return
	}
	t := r.terminals[env.Channel]
	if t == nil {
		t = &terminal{state: &wire.TerminalState{Content: []wire.TerminalContentPart{}}}
		r.terminals[env.Channel] = t
	}
	if env.ServerSeq <= t.seq {
		return // part of the snapshot
	}
	reducer.Terminal(t.state, env.Action, reducer.SystemClock)
	t.seq = env.ServerSeq
}

// terminalsOf lists the terminal channels an action's tool content names.
func terminalsOf(a wire.StateAction) []string {
	var content []wire.ToolResultContent
	switch x := a.Value.(type) {
	case *wire.ChatToolCallContentChangedAction:
		content = x.Content
	case *wire.ChatToolCallCompleteAction:
		content = x.Result.Content
	}
	var out []string
	for _, c := range content {
		if t, ok := c.Value.(*wire.ToolResultTerminalContent); ok && wire.IsTerminalURI(t.Resource) {
			out = append(out, t.Resource)
		}
	}
	return out
}

// terminalOutput is the raw output of a terminal, every part in order.
func terminalOutput(st *wire.TerminalState) string {
	var b strings.Builder
	for _, p := range st.Content {
		switch x := p.Value.(type) {
		case *wire.TerminalUnclassifiedPart:
			b.WriteString(x.Value)
		case *wire.TerminalCommandPart:
			b.WriteString(x.Output)
		}
	}
	return b.String()
}

// ansiEscape matches the terminal control sequences a command may print:
// CSI (colours, cursor moves), OSC (titles, links) and two-byte escapes.
var ansiEscape = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// plainText turns terminal output into plain lines: escapes dropped, and a
// line rewritten after a carriage return (a progress bar) shown as it
// ended.
func plainText(vt string) string {
	vt = ansiEscape.ReplaceAllString(vt, "")
	lines := strings.Split(strings.ReplaceAll(vt, "\r\n", "\n"), "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(strings.TrimRight(l, "\r"), '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = strings.TrimRight(l, "\r")
	}
	return strings.Join(lines, "\n")
}

// fileEditLine describes a file edit: a missing before side is a new file,
// a missing after side a deleted one.
func fileEditLine(e *wire.ToolResultFileEditContent) string {
	var s string
	switch {
	case e.Before == nil && e.After != nil:
		s = "created " + displayPath(e.After.URI)
	case e.After == nil && e.Before != nil:
		s = "deleted " + displayPath(e.Before.URI)
	case e.Before != nil && e.After != nil && e.Before.URI != e.After.URI:
		s = "moved " + displayPath(e.Before.URI) + " → " + displayPath(e.After.URI)
	case e.After != nil:
		s = "edited " + displayPath(e.After.URI)
	default:
		s = "edited a file"
	}
	if e.Diff != nil && (e.Diff.Added != nil || e.Diff.Removed != nil) {
		s += fmt.Sprintf(" (+%d -%d)", deref(e.Diff.Added), deref(e.Diff.Removed))
	}
	return s
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// fileEditPath is the path a file edit leaves behind (or removes).
func fileEditPath(e *wire.ToolResultFileEditContent) string {
	switch {
	case e.After != nil:
		return displayPath(e.After.URI)
	case e.Before != nil:
		return displayPath(e.Before.URI)
	}
	return ""
}

// describesEdit reports whether text is only a one-line description of
// one of the edits ("Created /p/a.go (+3 -0)"), which fileEditLine already
// shows.
func describesEdit(text string, paths []string) bool {
	t := strings.TrimSpace(text)
	if strings.Contains(t, "\n") {
		return false
	}
	verb, rest, ok := strings.Cut(t, " ")
	if !ok {
		return false
	}
	switch strings.ToLower(verb) {
	case "created", "edited", "deleted", "wrote", "modified":
	default:
		return false
	}
	for _, p := range paths {
		if p != "" && (rest == p || strings.HasPrefix(rest, p+" ")) {
			return true
		}
	}
	return false
}

// displayPath shows a file: URI as a path and any other URI as is.
func displayPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return uri
	}
	return u.Path
}

// checklistItem matches one item of a Markdown task list; the mark is " ",
// "x" or "~" (in progress, as ahp-bridge writes plans).
var checklistItem = regexp.MustCompile(`^\s*[-*+]\s+\[([ xX~])\]\s+(.*)$`)

// parseChecklist recognises Markdown that is nothing but a task list,
// under an optional title line ("**Plan**"), and returns its items; ok is
// false for any other text.
func parseChecklist(md string) (title string, items []checkItem, ok bool) {
	for i, l := range strings.Split(strings.TrimSpace(md), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		m := checklistItem.FindStringSubmatch(l)
		if m == nil {
			if i > 0 || len(items) > 0 {
				return "", nil, false
			}
			title = plainMarkdown(l)
			continue
		}
		st := checkPending
		switch m[1] {
		case "x", "X":
			st = checkDone
		case "~":
			st = checkInProgress
		}
		items = append(items, checkItem{state: st, text: plainMarkdown(m[2])})
	}
	return title, items, len(items) > 0
}

// plainMarkdown drops the emphasis and heading marks of one line.
func plainMarkdown(s string) string {
	s = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s), "#"))
	s = strings.NewReplacer("**", "", "__", "").Replace(s)
	return underscoreEmphasis.ReplaceAllString(s, "$1$2$3")
}

// underscoreEmphasis matches "_(high priority)_" and the like.
var underscoreEmphasis = regexp.MustCompile(`(^|\s)_([^_]+)_($|\s)`)

// askerFor is the question an entry of a session's inputNeeded asks, nil
// for the kinds this client does not answer (client tool executions,
// authentication).
func askerFor(req wire.SessionInputRequest) asker {
	switch r := req.Value.(type) {
	case *wire.SessionToolConfirmationRequest:
		n := need{id: r.ID, chatURI: r.Chat}
		switch tc := r.ToolCall.Value.(type) {
		case *wire.ToolCallPendingConfirmationState:
			return newApprovalAsker(n, r.TurnID, tc)
		case *wire.ToolCallPendingResultConfirmationState:
			name := tc.DisplayName
			if name == "" {
				name = tc.ToolCallID
			}
			return &resultAsker{need: n, turnID: r.TurnID, toolCallID: tc.ToolCallID, name: name}
		}
	case *wire.SessionChatInputRequest:
		req := r.Request // the asker keeps it; the state it came from changes
		return newInputAsker(need{id: r.ID, chatURI: r.Chat}, &req)
	}
	return nil
}

// pendingAsks are the questions open in a session's state, in its
// inputNeeded order: what a client that joins late must still be able to
// answer.
func pendingAsks(st *wire.SessionState) []asker {
	var out []asker
	for _, req := range st.InputNeeded {
		if a := askerFor(req); a != nil {
			out = append(out, a)
		}
	}
	return out
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

// actionTypeOf is the wire "type" of an action.
func actionTypeOf(a wire.StateAction) string {
	if t := a.Type(); t != "" {
		return t
	}
	return fmt.Sprintf("%T", a.Value)
}
