package tui

// Asking the person at the terminal: permission requests, result
// confirmations and input requests, one line of input at a time.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// asker is one open permission request or question, asked on the
// terminal one line at a time.
type asker interface {
	// key is the id of the session's inputNeeded entry the answer
	// resolves; the host removes the entry once it is answered.
	key() string
	// chat is the chat channel the answer goes to.
	chat() string
	// summary is a one-line description for "waiting for another client".
	summary() string
	// prompt is the text asking for the next line of input.
	prompt() string
	// answer consumes a line. It returns the action to dispatch when the
	// question is complete, or a problem to show before asking again.
	answer(line string) (action any, done bool, problem string)
	// auto answers without asking under --approve-all / --deny-all; ok is
	// false when the flags do not settle it.
	auto(approveAll, denyAll bool) (action any, ok bool)
}

// need is where a question comes from: an entry of the session's
// inputNeeded, answered on a chat.
type need struct{ id, chatURI string }

func (n need) key() string  { return n.id }
func (n need) chat() string { return n.chatURI }

// approvalAsker asks whether a tool call may run, offering the host's
// confirmation options.
type approvalAsker struct {
	need
	turnID, toolCallID string
	name, invocation   string
	options            []wire.ConfirmationOption
}

func newApprovalAsker(n need, turnID string, tc *wire.ToolCallPendingConfirmationState) *approvalAsker {
	name := tc.DisplayName
	if name == "" {
		name = tc.ToolCallID
	}
	return &approvalAsker{
		need:       n,
		turnID:     turnID,
		toolCallID: tc.ToolCallID,
		name:       name,
		invocation: oneLine(markdownText(&tc.InvocationMessage)),
		options:    tc.Options,
	}
}

func (a *approvalAsker) summary() string {
	if a.invocation == "" || a.invocation == a.name {
		return "may " + a.name + " run?"
	}
	return "may " + a.name + " run? (" + a.invocation + ")"
}

func (a *approvalAsker) prompt() string {
	if len(a.options) == 0 {
		return fmt.Sprintf("  Allow %s? [y/n]", a.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  Allow %s?", a.name)
	for i, o := range a.options {
		fmt.Fprintf(&b, "  [%d] %s", i+1, o.Label)
	}
	fmt.Fprintf(&b, "  (1-%d, y or n)", len(a.options))
	return b.String()
}

func (a *approvalAsker) answer(line string) (any, bool, string) {
	in := strings.ToLower(strings.TrimSpace(line))
	switch in {
	case "":
		return nil, false, ""
	case "y", "yes":
		return a.decide(wire.ConfirmationOptionKindApprove, nil), true, ""
	case "n", "no":
		return a.decide(wire.ConfirmationOptionKindDeny, nil), true, ""
	}
	for i, o := range a.options {
		if in == fmt.Sprint(i+1) || in == strings.ToLower(o.Label) || in == strings.ToLower(o.ID) {
			return a.decide(o.Kind, &a.options[i]), true, ""
		}
	}
	if len(a.options) == 0 {
		return nil, false, fmt.Sprintf("%q is not an answer: type y or n", line)
	}
	return nil, false, fmt.Sprintf("%q is not an answer: type a number from 1 to %d, y or n", line, len(a.options))
}

func (a *approvalAsker) auto(approveAll, denyAll bool) (any, bool) {
	switch {
	case approveAll:
		return a.decide(wire.ConfirmationOptionKindApprove, nil), true
	case denyAll:
		return a.decide(wire.ConfirmationOptionKindDeny, nil), true
	}
	return nil, false
}

// decide builds the confirmation. Without an explicit option ("y", "n",
// --approve-all, --deny-all) it names the host's option of the wanted kind
// only when there is exactly one: with several ("allow once" and "allow
// always", which Gemini CLI lists first) the AHP option says nothing of
// which is which, so none is named and the host answers for this call only
// (the bridge picks the agent's allow_once, or reject_once, option). Asking
// for more is choosing the option by its number (issue 26).
func (a *approvalAsker) decide(kind wire.ConfirmationOptionKind, opt *wire.ConfirmationOption) any {
	if opt == nil {
		for i := range a.options {
			if a.options[i].Kind != kind {
				continue
			}
			if opt != nil {
				opt = nil
				break
			}
			opt = &a.options[i]
		}
	}
	var selected *string
	if opt != nil {
		selected = wire.Ptr(opt.ID)
	}
	if kind == wire.ConfirmationOptionKindApprove {
		return &wire.ChatToolCallApprovedAction{
			TurnID:           a.turnID,
			ToolCallID:       a.toolCallID,
			Approved:         true,
			Confirmed:        wire.ToolCallConfirmationReasonUserAction,
			SelectedOptionID: selected,
		}
	}
	return &wire.ChatToolCallDeniedAction{
		TurnID:           a.turnID,
		ToolCallID:       a.toolCallID,
		Approved:         false,
		Reason:           wire.ToolCallCancellationReasonDenied,
		SelectedOptionID: selected,
	}
}

// resultAsker asks whether the result of a finished tool call may be
// used (chat/toolCallComplete with requiresResultConfirmation).
type resultAsker struct {
	need
	turnID, toolCallID, name string
}

func (a *resultAsker) summary() string { return "may the agent use the result of " + a.name + "?" }
func (a *resultAsker) prompt() string {
	return fmt.Sprintf("  Let the agent use the result of %s? [y/n]", a.name)
}

func (a *resultAsker) answer(line string) (any, bool, string) {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return a.decide(true), true, ""
	case "n", "no":
		return a.decide(false), true, ""
	case "":
		return nil, false, ""
	}
	return nil, false, fmt.Sprintf("%q is not an answer: type y or n", line)
}

func (a *resultAsker) auto(approveAll, denyAll bool) (any, bool) {
	if approveAll || denyAll {
		return a.decide(approveAll), true
	}
	return nil, false
}

func (a *resultAsker) decide(approved bool) any {
	return &wire.ChatToolCallResultConfirmedAction{
		TurnID:     a.turnID,
		ToolCallID: a.toolCallID,
		Approved:   approved,
	}
}

// inputAsker asks the questions of a chat/inputRequested one by one.
type inputAsker struct {
	need
	req     *wire.ChatInputRequest
	next    int // index of the question being asked
	answers map[string]wire.ChatInputAnswer
}

func newInputAsker(n need, req *wire.ChatInputRequest) *inputAsker {
	return &inputAsker{need: n, req: req, answers: map[string]wire.ChatInputAnswer{}}
}

func (a *inputAsker) summary() string {
	if a.req.Message != nil {
		return oneLine(*a.req.Message)
	}
	if len(a.req.Questions) > 0 {
		return oneLine(questionOf(a.req.Questions[0]).message)
	}
	return "input request " + a.req.ID
}

func (a *inputAsker) prompt() string {
	if len(a.req.Questions) == 0 {
		return "  Accept? [y/n]"
	}
	q := questionOf(a.req.Questions[a.next])
	var b strings.Builder
	b.WriteString("  ")
	if q.title != "" {
		b.WriteString(q.title + ": ")
	}
	b.WriteString(oneLine(q.message))
	for i, o := range q.options {
		fmt.Fprintf(&b, "\n    [%d] %s", i+1, o.Label)
		if o.Recommended != nil && *o.Recommended {
			b.WriteString(" (recommended)")
		}
	}
	hint := q.hint()
	if hint != "" {
		b.WriteString("\n  " + hint)
	}
	return b.String()
}

func (a *inputAsker) answer(line string) (any, bool, string) {
	if len(a.req.Questions) == 0 {
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return a.complete(wire.ChatInputResponseKindAccept), true, ""
		case "n", "no":
			return a.complete(wire.ChatInputResponseKindDecline), true, ""
		}
		return nil, false, fmt.Sprintf("%q is not an answer: type y or n", line)
	}
	q := questionOf(a.req.Questions[a.next])
	ans, problem := q.parse(strings.TrimSpace(line))
	if problem != "" {
		return nil, false, problem
	}
	a.answers[q.id] = ans
	a.next++
	if a.next < len(a.req.Questions) {
		return nil, false, ""
	}
	return a.complete(wire.ChatInputResponseKindAccept), true, ""
}

// auto declines under --deny-all and, under --approve-all, accepts with
// the defaults when every required question has one.
func (a *inputAsker) auto(approveAll, denyAll bool) (any, bool) {
	if denyAll {
		return a.complete(wire.ChatInputResponseKindDecline), true
	}
	if !approveAll {
		return nil, false
	}
	for _, raw := range a.req.Questions {
		q := questionOf(raw)
		ans, problem := q.parse("")
		if problem != "" {
			return nil, false
		}
		a.answers[q.id] = ans
	}
	return a.complete(wire.ChatInputResponseKindAccept), true
}

func (a *inputAsker) complete(kind wire.ChatInputResponseKind) any {
	act := &wire.ChatInputCompletedAction{
		RequestID: a.req.ID,
		Response:  kind,
	}
	if kind == wire.ChatInputResponseKindAccept {
		act.Answers = a.answers
	}
	return act
}

// question is the common view of the five question kinds.
type question struct {
	id, title, message string
	kind               wire.ChatInputQuestionKind
	required           bool
	options            []wire.ChatInputOption
	freeform           bool
	min, max           *float64
	defText            *string
	defNumber          *float64
	defBool            *bool
}

func questionOf(u wire.ChatInputQuestion) question {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	flag := func(p *bool) bool { return p != nil && *p }
	// Lengths and counts are whole numbers in 1.0.0; one range check
	// serves them and the number questions' fractional bounds.
	float := func(p *int64) *float64 {
		if p == nil {
			return nil
		}
		return wire.Ptr(float64(*p))
	}
	switch q := u.Value.(type) {
	case *wire.ChatInputTextQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), min: float(q.Min), max: float(q.Max), defText: q.DefaultValue}
	case *wire.ChatInputNumberQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), min: q.Min, max: q.Max, defNumber: q.DefaultValue}
	case *wire.ChatInputBooleanQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), defBool: q.DefaultValue}
	case *wire.ChatInputSingleSelectQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), options: q.Options, freeform: flag(q.AllowFreeformInput)}
	case *wire.ChatInputMultiSelectQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), options: q.Options, freeform: flag(q.AllowFreeformInput), min: float(q.Min), max: float(q.Max)}
	}
	// An unknown kind from a newer host: ask for free text and skip it if
	// nothing is typed.
	return question{id: unknownQuestionID(u), message: "(a question this client does not understand)", kind: wire.ChatInputQuestionKindText}
}

func unknownQuestionID(u wire.ChatInputQuestion) string {
	b, _ := json.Marshal(u)
	var head struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &head)
	return head.ID
}

// hint tells what to type.
func (q question) hint() string {
	var h string
	switch q.kind {
	case wire.ChatInputQuestionKindBoolean:
		h = "y or n"
		if q.defBool != nil {
			h += fmt.Sprintf(", empty for %s", yesNo(*q.defBool))
		}
	case wire.ChatInputQuestionKindSingleSelect:
		h = "a number"
		if q.freeform {
			h += " or your own text"
		}
	case wire.ChatInputQuestionKindMultiSelect:
		h = "numbers separated by commas"
	case wire.ChatInputQuestionKindNumber, wire.ChatInputQuestionKindInteger:
		h = "a number"
		if q.kind == wire.ChatInputQuestionKindInteger {
			h = "a whole number"
		}
		if q.defNumber != nil {
			h += fmt.Sprintf(", empty for %v", *q.defNumber)
		}
	default:
		if q.defText != nil {
			h = fmt.Sprintf("empty for %q", *q.defText)
		}
	}
	if !q.required && q.defaultAnswer() == nil {
		if h != "" {
			h += "; "
		}
		h += "empty to skip"
	}
	if h == "" {
		return ""
	}
	return "(" + h + ")"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// defaultAnswer is the value an empty line stands for, if any.
func (q question) defaultAnswer() any {
	switch {
	case q.defText != nil:
		return &wire.ChatInputTextAnswerValue{Kind: wire.ChatInputAnswerValueKindText, Value: *q.defText}
	case q.defNumber != nil:
		return &wire.ChatInputNumberAnswerValue{Kind: wire.ChatInputAnswerValueKindNumber, Value: *q.defNumber}
	case q.defBool != nil:
		return &wire.ChatInputBooleanAnswerValue{Kind: wire.ChatInputAnswerValueKindBoolean, Value: *q.defBool}
	}
	for _, o := range q.options {
		if o.Recommended != nil && *o.Recommended {
			if q.kind == wire.ChatInputQuestionKindMultiSelect {
				return &wire.ChatInputSelectedManyAnswerValue{Kind: wire.ChatInputAnswerValueKindSelectedMany, Value: []string{o.ID}}
			}
			return &wire.ChatInputSelectedAnswerValue{Kind: wire.ChatInputAnswerValueKindSelected, Value: o.ID}
		}
	}
	return nil
}

// parse turns a typed line into an answer, or says what is wrong with it.
func (q question) parse(in string) (wire.ChatInputAnswer, string) {
	submitted := func(v any) wire.ChatInputAnswer {
		return wire.ChatInputAnswer{Value: &wire.ChatInputAnswered{
			State: wire.ChatInputAnswerStateSubmitted,
			Value: wire.ChatInputAnswerValue{Value: v},
		}}
	}
	if in == "" {
		if d := q.defaultAnswer(); d != nil {
			return submitted(d), ""
		}
		if q.required {
			return wire.ChatInputAnswer{}, "an answer is required"
		}
		return wire.ChatInputAnswer{Value: &wire.ChatInputSkipped{State: wire.ChatInputAnswerStateSkipped}}, ""
	}
	switch q.kind {
	case wire.ChatInputQuestionKindBoolean:
		switch strings.ToLower(in) {
		case "y", "yes", "true":
			return submitted(&wire.ChatInputBooleanAnswerValue{Kind: wire.ChatInputAnswerValueKindBoolean, Value: true}), ""
		case "n", "no", "false":
			return submitted(&wire.ChatInputBooleanAnswerValue{Kind: wire.ChatInputAnswerValueKindBoolean, Value: false}), ""
		}
		return wire.ChatInputAnswer{}, fmt.Sprintf("%q is not an answer: type y or n", in)
	case wire.ChatInputQuestionKindNumber, wire.ChatInputQuestionKindInteger:
		var f float64
		if _, err := fmt.Sscan(in, &f); err != nil {
			return wire.ChatInputAnswer{}, fmt.Sprintf("%q is not a number", in)
		}
		if q.kind == wire.ChatInputQuestionKindInteger && f != float64(int64(f)) {
			return wire.ChatInputAnswer{}, fmt.Sprintf("%q is not a whole number", in)
		}
		if (q.min != nil && f < *q.min) || (q.max != nil && f > *q.max) {
			return wire.ChatInputAnswer{}, fmt.Sprintf("%v is out of range%s", f, rangeText(q.min, q.max))
		}
		return submitted(&wire.ChatInputNumberAnswerValue{Kind: wire.ChatInputAnswerValueKindNumber, Value: f}), ""
	case wire.ChatInputQuestionKindSingleSelect:
		if o, ok := q.option(in); ok {
			return submitted(&wire.ChatInputSelectedAnswerValue{Kind: wire.ChatInputAnswerValueKindSelected, Value: o.ID}), ""
		}
		if q.freeform {
			return submitted(&wire.ChatInputSelectedAnswerValue{Kind: wire.ChatInputAnswerValueKindSelected, Value: in, FreeformValues: []string{in}}), ""
		}
		return wire.ChatInputAnswer{}, fmt.Sprintf("%q is not one of the choices: type a number from 1 to %d", in, len(q.options))
	case wire.ChatInputQuestionKindMultiSelect:
		var ids, free []string
		for _, part := range strings.Split(in, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if o, ok := q.option(part); ok {
				ids = append(ids, o.ID)
			} else if q.freeform {
				free = append(free, part)
			} else {
				return wire.ChatInputAnswer{}, fmt.Sprintf("%q is not one of the choices: type numbers from 1 to %d", part, len(q.options))
			}
		}
		n := float64(len(ids) + len(free))
		if (q.min != nil && n < *q.min) || (q.max != nil && n > *q.max) {
			return wire.ChatInputAnswer{}, fmt.Sprintf("choose%s", rangeText(q.min, q.max))
		}
		if ids == nil {
			ids = []string{}
		}
		return submitted(&wire.ChatInputSelectedManyAnswerValue{Kind: wire.ChatInputAnswerValueKindSelectedMany, Value: ids, FreeformValues: free}), ""
	default:
		n := float64(len([]rune(in)))
		if (q.min != nil && n < *q.min) || (q.max != nil && n > *q.max) {
			return wire.ChatInputAnswer{}, fmt.Sprintf("the answer must have%s characters", rangeText(q.min, q.max))
		}
		return submitted(&wire.ChatInputTextAnswerValue{Kind: wire.ChatInputAnswerValueKindText, Value: in}), ""
	}
}

// option finds a choice by number, id or label.
func (q question) option(in string) (wire.ChatInputOption, bool) {
	for i, o := range q.options {
		if in == fmt.Sprint(i+1) || strings.EqualFold(in, o.ID) || strings.EqualFold(in, o.Label) {
			return o, true
		}
	}
	return wire.ChatInputOption{}, false
}

func rangeText(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf(" (between %v and %v)", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf(" (at least %v)", *lo)
	case hi != nil:
		return fmt.Sprintf(" (at most %v)", *hi)
	}
	return ""
}
