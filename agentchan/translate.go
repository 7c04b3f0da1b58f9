package agentchan

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// Permission option ids offered for every agent-channel permission request.
// Choosing OptionApprove sends `approve {requestId}`; anything else, or a
// cancelled request, sends `reject {requestId}`.
const (
	OptionApprove = "approve"
	OptionReject  = "reject"
)

// DeclinedAnswer is what the agent receives when the user declines to answer
// its question.
const DeclinedAnswer = "The user declined to answer the question."

// PermissionOptions are the two answers offered for every permission
// request.
func PermissionOptions() []backend.PermissionOption {
	return []backend.PermissionOption{
		{ID: OptionApprove, Name: "Approve", Kind: backend.AllowOnce},
		{ID: OptionReject, Name: "Reject", Kind: backend.RejectOnce},
	}
}

// step is what one frame means for the running turn. PermissionRequest and
// Question events in Events have no Respond yet: the session, which owns the
// socket, fills it in.
type step struct {
	Events []backend.Event `json:"-"`
	// RequestID is the permission request's id when Events holds a
	// PermissionRequest.
	RequestID string `json:"requestId,omitempty"`
	// AnswerTo is, when Events holds a Question, the tool call whose
	// tool_response carries the answer; "" means the answer is sent as a
	// follow-up prompt.
	AnswerTo string `json:"answerTo,omitempty"`
	// End is set when the frame ends the turn.
	End *turnEnd `json:"end,omitempty"`
}

// turnEnd is how the server ended a task: with a result or an error.
type turnEnd struct {
	Summary string `json:"summary,omitempty"`
	Err     string `json:"error,omitempty"`
	Failed  bool   `json:"failed,omitempty"`
}

// callInfo is what a turn remembers of a tool call.
type callInfo struct {
	title    string
	kind     string
	input    json.RawMessage
	finished bool
	// synthetic calls stand for a permission request that named no tool
	// call; they cannot receive a tool_response.
	synthetic bool
	// rejected calls are settled by the rejection of their permission
	// request and are not completed at the end of the turn.
	rejected bool
}

// turnState is the translation state of one task. It does no I/O and is
// used under the session's lock.
type turnState struct {
	taskID string
	calls  map[string]*callInfo
	order  []string // tool call ids in the order they started
	anon   int      // counter for tool calls that came without an id
}

func newTurnState(taskID string) *turnState {
	return &turnState{taskID: taskID, calls: map[string]*callInfo{}}
}

// translate turns one agent frame of this task into events. Frames of other
// channels and other tasks must have been filtered out by the caller.
func (t *turnState) translate(f Frame) step {
	if f.IsPermissionRequest() && f.Type != TypeToolInvocation {
		return t.permission(f)
	}
	switch f.Type {
	case TypeText:
		if f.Content == "" {
			return step{}
		}
		return step{Events: []backend.Event{backend.TextChunk{Text: f.Content}}}
	case TypeThinking:
		if f.Content == "" {
			return step{}
		}
		return step{Events: []backend.Event{backend.ThoughtChunk{Text: f.Content}}}
	case TypeToolInvocation:
		s := t.invocation(f)
		if f.IsPermissionRequest() {
			p := t.permission(f)
			s.Events = append(s.Events, p.Events...)
			s.RequestID = p.RequestID
		}
		return s
	case TypeToolResult:
		return t.toolResult(f)
	case TypeQuestion:
		return step{
			Events:   []backend.Event{backend.Question{Questions: nonNil(f.Questions)}},
			AnswerTo: t.latestOpen(),
		}
	case TypeResult:
		return step{Events: t.settle(backend.ToolCompleted), End: &turnEnd{Summary: f.Summary}}
	case TypeError:
		msg := f.Message
		if strings.TrimSpace(msg) == "" {
			msg = "the agent reported an error without a message"
		}
		return step{Events: t.settle(backend.ToolFailed), End: &turnEnd{Err: msg, Failed: true}}
	}
	return step{}
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func (t *turnState) invocation(f Frame) step {
	id := f.ToolCallID
	if id == "" {
		t.anon++
		id = fmt.Sprintf("tool-%d", t.anon)
	}
	title := firstNonEmpty(f.ToolName, f.Title, "Tool call")
	info, seen := t.calls[id]
	if !seen {
		info = &callInfo{}
		t.calls[id] = info
		t.order = append(t.order, id)
	}
	info.title, info.kind, info.input = title, ToolKind(f.ToolName), f.Args
	info.finished, info.synthetic, info.rejected = false, false, false
	tc := backend.ToolCall{
		ID:       id,
		Title:    title,
		Kind:     info.kind,
		Status:   backend.ToolInProgress,
		RawInput: f.Args,
		Meta:     toolMeta(f.ToolName),
	}
	return step{Events: []backend.Event{tc}}
}

func toolMeta(toolName string) map[string]any {
	if toolName == "" {
		return nil
	}
	return map[string]any{"toolName": toolName}
}

func (t *turnState) toolResult(f Frame) step {
	id := f.ToolCallID
	if id == "" {
		// A result that names no call belongs to the latest open one.
		id = t.latestOpen()
	}
	// An absent result leaves the content alone rather than blanking it.
	mode, content := backend.ContentUnchanged, []backend.ToolContent(nil)
	if f.Result != nil {
		mode, content = backend.ContentReplace, []backend.ToolContent{{Type: "content", Text: ResultText(f.Result)}}
	}
	info, known := t.calls[id]
	if id == "" || !known {
		// The bridge has not heard of this call: describe it whole.
		if id == "" {
			t.anon++
			id = fmt.Sprintf("tool-%d", t.anon)
		}
		t.calls[id] = &callInfo{title: firstNonEmpty(f.ToolName, "Tool call"), kind: ToolKind(f.ToolName), finished: true}
		t.order = append(t.order, id)
		return step{Events: []backend.Event{backend.ToolCall{
			ID:          id,
			Title:       t.calls[id].title,
			Kind:        t.calls[id].kind,
			Status:      backend.ToolCompleted,
			ContentMode: mode,
			Content:     content,
			RawOutput:   f.Result,
			Meta:        toolMeta(f.ToolName),
		}}}
	}
	info.finished = true
	return step{Events: []backend.Event{backend.ToolCall{
		ID:          id,
		Update:      true,
		Status:      backend.ToolCompleted,
		ContentMode: mode,
		Content:     content,
		RawOutput:   f.Result,
	}}}
}

func (t *turnState) permission(f Frame) step {
	id := f.ToolCallID
	var tc backend.ToolCall
	if info, ok := t.calls[id]; ok && id != "" {
		tc = backend.ToolCall{
			ID:       id,
			Title:    firstNonEmpty(f.Message, f.Description, f.Title, info.title),
			Kind:     info.kind,
			RawInput: info.input,
		}
		if f.ToolName != "" {
			tc.Meta = toolMeta(f.ToolName)
		}
		if info.finished {
			tc.Status = backend.ToolCompleted
		} else {
			tc.Status = backend.ToolInProgress
		}
	} else {
		synthetic := id == ""
		if synthetic {
			id = "perm-" + f.RequestID
		}
		tc = backend.ToolCall{
			ID:       id,
			Title:    firstNonEmpty(f.Message, f.Description, f.Title, f.ToolName, "Permission request"),
			Kind:     ToolKind(f.ToolName),
			Status:   backend.ToolPending,
			RawInput: f.Args,
			Meta:     toolMeta(f.ToolName),
		}
		if _, seen := t.calls[id]; !seen {
			t.order = append(t.order, id)
		}
		t.calls[id] = &callInfo{title: tc.Title, kind: tc.Kind, input: f.Args, synthetic: synthetic}
	}
	return step{
		Events:    []backend.Event{backend.PermissionRequest{ToolCall: tc, Options: PermissionOptions()}},
		RequestID: f.RequestID,
	}
}

// rejected records that the permission request for call id was rejected.
func (t *turnState) rejected(id string) {
	if info, ok := t.calls[id]; ok && !info.finished {
		info.rejected = true
	}
}

// latestOpen is the latest unfinished real tool call, or "".
func (t *turnState) latestOpen() string {
	for i := len(t.order) - 1; i >= 0; i-- {
		info := t.calls[t.order[i]]
		if !info.finished && !info.synthetic && !info.rejected {
			return t.order[i]
		}
	}
	return ""
}

// settle ends every unfinished tool call with status, in start order, so
// that nothing stays running after the task is over.
func (t *turnState) settle(status backend.ToolStatus) []backend.Event {
	var evs []backend.Event
	for _, id := range t.order {
		info := t.calls[id]
		if info.finished || info.rejected {
			continue
		}
		info.finished = true
		evs = append(evs, backend.ToolCall{ID: id, Update: true, Status: status})
	}
	return evs
}

// ToolKind guesses the ACP tool kind (read, edit, delete, move, search,
// execute, think, fetch, other) from an agent-channel tool name, so that
// kind-based approval policies work; the name itself is kept in the tool
// call's Meta["toolName"].
func ToolKind(toolName string) string {
	words := toolWords(toolName)
	has := func(cands ...string) bool {
		for _, w := range words {
			for _, c := range cands {
				if w == c {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("delete", "remove", "rm", "rmdir", "unlink"):
		return "delete"
	case has("move", "rename", "mv"):
		return "move"
	case has("write", "edit", "patch", "replace", "create", "insert", "apply", "multiedit", "str"):
		return "edit"
	case has("bash", "shell", "exec", "execute", "command", "terminal", "run", "sh"):
		return "execute"
	case has("grep", "search", "glob", "find", "list", "ls"):
		return "search"
	case has("fetch", "http", "web", "url", "browse", "download", "curl"):
		return "fetch"
	case has("read", "view", "cat", "open", "get"):
		return "read"
	case has("think", "plan", "reason"):
		return "think"
	}
	return "other"
}

// toolWords splits a tool name into lower-case words at punctuation and
// camelCase boundaries ("readFile" and "read_file" both give read, file).
func toolWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			cur = append(cur, r)
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur = append(cur, r)
			prevLower = true
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return words
}

// PromptText renders a prompt with its attachments as the single string the
// agent channel accepts: resource links are listed by name and URI, embedded
// resources are appended as fenced text.
func PromptText(p backend.Prompt) string {
	var b strings.Builder
	b.WriteString(p.Text)
	for _, a := range p.Attachments {
		name := firstNonEmpty(a.Name, a.URI, "attachment")
		switch a.Kind {
		case backend.AttachEmbedded:
			fmt.Fprintf(&b, "\n\n<attachment name=%q uri=%q>\n%s\n</attachment>", name, a.URI, a.Text)
		default:
			fmt.Fprintf(&b, "\n\n[attached: %s (%s)]", name, a.URI)
		}
	}
	return b.String()
}

// eventJSON renders an event for golden files and logs: its Go type name and
// its fields, without the Respond callbacks (which JSON cannot carry).
func eventJSON(ev backend.Event) (json.RawMessage, error) {
	var v any
	switch e := ev.(type) {
	case backend.PermissionRequest:
		v = struct {
			Kind     string
			ToolCall backend.ToolCall
			Options  []backend.PermissionOption
		}{"PermissionRequest", e.ToolCall, e.Options}
	case backend.Question:
		v = struct {
			Kind      string
			Questions []string
		}{"Question", e.Questions}
	case backend.Disconnected:
		v = struct {
			Kind string
			Err  string
		}{"Disconnected", fmt.Sprint(e.Err)}
	default:
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(fmt.Sprintf("%T", ev), "backend.")
		return json.Marshal(struct {
			Kind  string
			Value json.RawMessage
		}{name, b})
	}
	return json.Marshal(v)
}
