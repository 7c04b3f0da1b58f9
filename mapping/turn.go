package mapping

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// Error types used in chat/error actions.
const (
	// ErrorTypeRuntime is a turn that failed (the backend returned an error).
	ErrorTypeRuntime = "runtime"
	// ErrorTypeRefusal is a turn the agent refused to continue (ACP stop
	// reason `refusal`).
	ErrorTypeRefusal = "refusal"
	// ErrorTypeDisconnected is a turn cut short because the agent process
	// or connection went away.
	ErrorTypeDisconnected = "disconnected"
	// ErrorTypeAttachmentRefused is a turn whose message the agent was not
	// sent because it cannot take one of its attachments (or a file is
	// outside the session's working directories): the message says which.
	ErrorTypeAttachmentRefused = "attachmentRefused"
)

// Session _meta keys owned by this package.
const (
	// MetaPlan holds the agent's current plan: {"entries":[{content,priority,status}]}.
	MetaPlan = "plan"
	// MetaCustom holds backend updates of unknown kinds received outside a
	// turn: {"<kind>": <raw JSON>} (the latest one per kind).
	MetaCustom = "customUpdates"
	// MetaContextWindow holds each chat's context window and cost as its
	// agent last reported them (backend.ContextUsage; AHP's UsageInfo
	// counts the tokens a turn spent and has no place for them):
	// {"<chat URI>": {"used", "size", "cost": {"amount", "currency"},
	// "_meta"}}, each field as last reported.
	MetaContextWindow = "ahp-bridge/contextWindow"
	// MetaConfigSchema holds the session config schema as the agent's
	// settings now are (SessionConfig): AHP 1.0 has no action that changes
	// a live session's schema, so a setting the agent added or removed
	// after the session was created shows here.
	MetaConfigSchema = "ahp-bridge/configSchema"
	// MetaConfigRejected holds the last setting the agent refused:
	// {"key", "value", "message"}; the value stays what it was.
	MetaConfigRejected = "ahp-bridge/configRejected"
	// MetaUsage is the key, in a chat/usage's `_meta`, of the token counts
	// AHP's UsageInfo has no field for: {"cacheWriteTokens",
	// "thoughtTokens", "totalTokens"}, each only when the agent reported it.
	MetaUsage = "ahp-bridge/usage"
)

// phase mirrors the AHP tool-call status this Turn has driven a tool call
// into. It decides which action moves the AHP state forward, since AHP's
// reducer ignores actions that do not fit the current status.
type phase int

const (
	phaseStreaming phase = iota // after toolCallStart
	phasePending                // pending-confirmation: waiting for the user
	phaseRunning                // running
	phaseDone                   // completed or cancelled: nothing more can change
)

// toolState is everything known about one backend tool call.
type toolState struct {
	ahpID     string
	title     string
	kind      string
	status    backend.ToolStatus
	phase     phase
	content   []backend.ToolContent
	locations []backend.Location
	rawInput  json.RawMessage
	rawOutput json.RawMessage
	meta      map[string]any
	inputSent bool
	// customStatus is the latest backend-specific (ACP v2 `_`) status.
	customStatus backend.ToolStatus
	// sentIntention is the intention clients have (toolCallStart's, or a
	// later toolCallReady's).
	sentIntention string
	// invocation is the invocation message clients have while the call
	// streams (toolCallStart shows the display name; toolCallDelta may
	// change it).
	invocation string
	// sentMeta is the `_meta` clients have, as JSON (metaKey).
	sentMeta string
}

// PendingQuestion is a backend Question this Turn has published as a
// chat/inputRequested request and that has not been answered yet.
type PendingQuestion struct {
	// Request is the input request as published (its Questions are in the
	// order of Question.Questions).
	Request wire.ChatInputRequest
	// Question is the backend event; the bridge calls its Respond.
	Question backend.Question
}

// Resource is content the bridge serves through `resourceRead` for a URI this
// package put into an action (old/new text of a diff, an image the agent
// sent).
type Resource struct {
	// Data is the content: UTF-8 text, or base64 when Base64 is set.
	Data string `json:"data"`
	// Base64 tells that Data is base64-encoded binary content.
	Base64 bool `json:"base64,omitempty"`
	// ContentType is the MIME type, e.g. "text/plain" or "image/png".
	ContentType string `json:"contentType"`
}

// Turn translates the events of one prompt turn into AHP actions: chat/*
// actions for everything in the turn, session/* actions for what belongs
// to the session (title, settings, _meta; see OnSession). It is a state
// machine: it remembers the open text and reasoning parts, every tool
// call's AHP status, pending questions, the exit codes of terminals and
// the resources it has published. A Turn is not safe for concurrent use;
// the bridge feeds it from one goroutine per chat.
type Turn struct {
	id        string
	startedAt int64 // Unix ms, the turn's chat/turnStarted startedAt
	ids       func() string
	now       func() int64

	textPart      string // id of the open markdown part, "" when none
	reasoningPart string // id of the open reasoning part, "" when none
	streamedText  bool   // some visible text was streamed this turn

	tools     map[string]*toolState // by backend tool-call id
	toolOrder []*toolState          // in start order, including replaced ones
	reopened  map[string]int        // backend id → how often re-opened

	resources  map[string]Resource
	contentSeq int

	questions     map[string]*PendingQuestion
	questionOrder []string

	plan     *backend.Plan
	activity bool
	meta     map[string]any

	exits map[string]int64 // terminal id → exit code, for terminal tool content

	// held is a tool call the agent reported running whose toolCallReady
	// waits for the turn's next event (see Holding).
	held *toolState

	ended bool
}

// NewTurn returns the state machine for the turn turnID, which started at
// startedAt (Unix milliseconds). ids generates fresh identifiers for
// response parts and input requests; it must never return the same value
// twice within a chat. now is the clock the turn's duration is measured
// with when it ends (AHP wants the producer's own measure), in Unix
// milliseconds like startedAt.
func NewTurn(turnID string, startedAt int64, ids func() string, now func() int64) *Turn {
	return &Turn{
		id:        turnID,
		startedAt: startedAt,
		ids:       ids,
		now:       now,
		exits:     map[string]int64{},
		tools:     map[string]*toolState{},
		reopened:  map[string]int{},
		resources: map[string]Resource{},
		questions: map[string]*PendingQuestion{},
	}
}

// ID returns the AHP turn id.
func (t *Turn) ID() string { return t.id }

// Ended reports whether End (or a Disconnected event) has ended the turn.
func (t *Turn) Ended() bool { return t.ended }

// SetMeta tells the Turn the session's current `_meta`. session/metaChanged
// replaces the whole object, so the Turn starts from this value and only
// changes the keys it owns (MetaPlan).
func (t *Turn) SetMeta(meta map[string]any) { t.meta = maps.Clone(meta) }

// Meta returns the session `_meta` as of the last session/metaChanged this
// Turn produced (or as given to SetMeta).
func (t *Turn) Meta() map[string]any { return maps.Clone(t.meta) }

// Resources returns a copy of every resource this Turn has published, by URI.
// The bridge keeps them after the turn so clients can still read them.
func (t *Turn) Resources() map[string]Resource { return maps.Clone(t.resources) }

// Resource returns one published resource.
func (t *Turn) Resource(uri string) (Resource, bool) {
	r, ok := t.resources[uri]
	return r, ok
}

// ToolCallID returns the AHP tool-call id used for a backend tool-call id:
// the same id, unless the backend re-used the id of a finished tool call for
// a new permission request, in which case a suffixed id was started.
func (t *Turn) ToolCallID(backendID string) string {
	if ts, ok := t.tools[backendID]; ok {
		return ts.ahpID
	}
	return backendID
}

// Apply returns the AHP actions, in order, for one backend event. Events
// that are neither chat nor session actions (terminals, commands) return
// nil; a TerminalExited is remembered, so that the terminal's tool content
// carries the exit code.
// After the turn has ended only turn-independent events (title, config,
// plan, custom) still produce actions; everything else is dropped, because
// AHP has no active turn to attach it to — a PermissionRequest or Question
// arriving then is not recorded, so the bridge must answer it (cancelled,
// declined) itself.
//
// A PermissionRequest goes through Permission (ask the clients); the bridge
// calls AutoPermission instead when the --approve policy decides. A Question
// goes through AskQuestion, whose request id the bridge can also find with
// PendingQuestions.
func (t *Turn) Apply(ev backend.Event) []wire.StateAction {
	if req, ok := ev.(backend.PermissionRequest); ok {
		return t.Permission(req) // which settles a held tool call itself
	}
	if t.ended {
		acts, meta := sessionEvent(ev, t.meta)
		t.meta = meta
		return acts
	}
	held := t.Flush()
	return append(held, t.apply(ev)...)
}

// apply is Apply once a held tool call was settled.
func (t *Turn) apply(ev backend.Event) []wire.StateAction {
	switch e := ev.(type) {
	case backend.TextChunk:
		return t.text(e.Text)
	case backend.ThoughtChunk:
		return t.reasoning(e.Text)
	case backend.ContentBlock:
		return t.contentBlock(e)
	case backend.ToolCall:
		return t.toolCall(e)
	case backend.Question:
		_, acts := t.AskQuestion(e)
		return acts
	case backend.Plan:
		return t.planUpdate(e)
	case backend.UsageUpdate:
		return usageActions(t.id, e.Usage)
	case backend.Custom:
		return t.custom(e)
	case backend.TerminalExited:
		if e.ExitCode != nil {
			t.exits[e.TerminalID] = int64(*e.ExitCode)
		}
		return nil
	case backend.Disconnected:
		err := e.Err
		if err == nil {
			err = errors.New("the agent disconnected")
		}
		return t.end(backend.TurnResult{}, err, ErrorTypeDisconnected)
	default:
		acts, meta := sessionEvent(ev, t.meta)
		t.meta = meta
		return acts
	}
}

// closeParts ends the open text and reasoning parts: the next chunk starts a
// new part, so the response keeps stream order around tool calls and other
// parts.
func (t *Turn) closeParts() {
	t.textPart = ""
	t.reasoningPart = ""
}

func (t *Turn) text(s string) []wire.StateAction {
	if s == "" {
		return nil
	}
	var acts []wire.StateAction
	if t.textPart == "" {
		t.closeParts()
		t.textPart = t.ids()
		acts = append(acts, responsePartAction(t.id, markdownPart(t.textPart, "")))
	}
	t.streamedText = true
	return append(acts, deltaAction(t.id, t.textPart, s))
}

func (t *Turn) reasoning(s string) []wire.StateAction {
	if s == "" {
		return nil
	}
	var acts []wire.StateAction
	if t.reasoningPart == "" {
		t.closeParts()
		t.reasoningPart = t.ids()
		acts = append(acts, responsePartAction(t.id, reasoningPart(t.reasoningPart, "")))
	}
	return append(acts, reasoningAction(t.id, t.reasoningPart, s))
}

// contentBlock shows non-text answer content. Binary data and embedded
// resources become content references served by the bridge (the state tree
// stays small); links and unknown blocks become markdown, so nothing is
// dropped.
func (t *Turn) contentBlock(b backend.ContentBlock) []wire.StateAction {
	if b.Type == "text" {
		return t.text(b.Text)
	}
	t.closeParts()
	switch {
	case b.Data != "":
		uri := t.publish(Resource{Data: b.Data, Base64: true, ContentType: orDefault(b.MimeType, "application/octet-stream")})
		return []wire.StateAction{responsePartAction(t.id, contentRefPart(uri, orDefault(b.MimeType, "application/octet-stream"), base64Size(b.Data)))}
	case b.Text != "":
		uri := t.publish(Resource{Data: b.Text, ContentType: orDefault(b.MimeType, "text/plain")})
		return []wire.StateAction{responsePartAction(t.id, contentRefPart(uri, orDefault(b.MimeType, "text/plain"), int64(len(b.Text))))}
	case b.URI != "":
		return []wire.StateAction{responsePartAction(t.id, markdownPart(t.ids(), blockLink(b)))}
	default:
		return []wire.StateAction{responsePartAction(t.id, markdownPart(t.ids(), rawBlock(b.Type, b.Raw)))}
	}
}

// publish records a resource under a fresh URI of this turn.
func (t *Turn) publish(r Resource) string {
	t.contentSeq++
	uri := fmt.Sprintf("%s:/%s/content/%d", ResourceScheme, pathSeg(t.id), t.contentSeq)
	t.resources[uri] = r
	return uri
}

func (t *Turn) custom(c backend.Custom) []wire.StateAction {
	t.closeParts()
	return []wire.StateAction{responsePartAction(t.id, systemNotificationPart(customMarkdown(c)))}
}

func customMarkdown(c backend.Custom) string {
	return fmt.Sprintf("Agent update `%s`:\n\n%s", orDefault(c.Kind, "unknown"), fenceJSON(c.Raw))
}

func (t *Turn) planUpdate(p backend.Plan) []wire.StateAction {
	t.plan = &p
	var acts []wire.StateAction
	acts, t.meta = planActions(p, t.meta)
	if a := planActivity(p); a != "" {
		t.activity = true
		acts = append(acts, activityAction(a))
	} else if t.activity {
		t.activity = false
		acts = append(acts, activityAction(""))
	}
	return acts
}

// stoppedPlan is a plan whose turn was cancelled or failed: the step that
// was in progress is not any more, and shows as pending.
func stoppedPlan(p backend.Plan) backend.Plan {
	out := backend.Plan{Entries: make([]backend.PlanEntry, len(p.Entries))}
	for i, e := range p.Entries {
		if e.Status == "in_progress" {
			e.Status = "pending"
		}
		out.Entries[i] = e
	}
	return out
}

// endPlan removes the live plan from the session's `_meta` when it is the
// one this turn reported (another chat's turn may have reported one since),
// so that the next turn starts without a plan unless its agent sends one.
func (t *Turn) endPlan() []wire.StateAction {
	cur, ok := t.meta[MetaPlan]
	if !ok || metaKey(map[string]any{"p": cur}) != metaKey(map[string]any{"p": planValue(*t.plan)}) {
		return nil
	}
	next := maps.Clone(t.meta)
	delete(next, MetaPlan)
	t.meta = next
	return []wire.StateAction{metaChangedAction(next)}
}

// planValue is a plan as it is stored under MetaPlan.
func planValue(p backend.Plan) map[string]any {
	entries := make([]any, 0, len(p.Entries))
	for _, e := range p.Entries {
		entries = append(entries, map[string]any{"content": e.Content, "priority": e.Priority, "status": e.Status})
	}
	return map[string]any{"entries": entries}
}

// planActions returns the session/metaChanged action that stores the plan
// under MetaPlan of the session's `_meta`, and the new `_meta`. The plan is
// the session's, not the transcript's: of a session's chats, the latest to
// report a plan wins.
func planActions(p backend.Plan, meta map[string]any) ([]wire.StateAction, map[string]any) {
	next := maps.Clone(meta)
	if next == nil {
		next = map[string]any{}
	}
	next[MetaPlan] = planValue(p)
	return []wire.StateAction{metaChangedAction(next)}, next
}

// planActivity describes the plan entry being worked on, e.g.
// "Plan 2/5: Write the tests"; "" when no entry is in progress.
func planActivity(p backend.Plan) string {
	for i, e := range p.Entries {
		if e.Status == "in_progress" {
			return fmt.Sprintf("Plan %d/%d: %s", i+1, len(p.Entries), e.Content)
		}
	}
	return ""
}

// PlanMarkdown renders a plan as a markdown checklist.
func PlanMarkdown(p backend.Plan) string {
	var b strings.Builder
	b.WriteString("**Plan**\n")
	for _, e := range p.Entries {
		mark := " "
		switch e.Status {
		case "completed":
			mark = "x"
		case "in_progress":
			mark = "~"
		}
		fmt.Fprintf(&b, "\n- [%s] %s", mark, e.Content)
		if e.Priority != "" && e.Priority != "medium" {
			fmt.Fprintf(&b, " _(%s priority)_", e.Priority)
		}
	}
	return b.String()
}

// AskQuestion publishes a backend Question as a chat/inputRequested request
// with one text question per string and remembers it until
// QuestionFor/TakeQuestion. It returns the request id the client will
// answer with chat/inputCompleted.
func (t *Turn) AskQuestion(q backend.Question) (requestID string, acts []wire.StateAction) {
	acts = t.Flush()
	req := inputRequest(t.ids(), q.Questions, t.ids)
	id := req.ID
	t.questions[id] = &PendingQuestion{Request: req, Question: q}
	t.questionOrder = append(t.questionOrder, id)
	return id, append(acts, inputRequestedAction(req))
}

// QuestionFor returns the pending question published under requestID.
func (t *Turn) QuestionFor(requestID string) (PendingQuestion, bool) {
	pq, ok := t.questions[requestID]
	if !ok {
		return PendingQuestion{}, false
	}
	return *pq, true
}

// TakeQuestion returns the pending question published under requestID and
// forgets it, so that it is answered exactly once.
func (t *Turn) TakeQuestion(requestID string) (PendingQuestion, bool) {
	pq, ok := t.QuestionFor(requestID)
	if ok {
		delete(t.questions, requestID)
	}
	return pq, ok
}

// PendingQuestions returns the questions not yet taken, in the order they
// were asked (the bridge declines them when the turn ends).
func (t *Turn) PendingQuestions() []PendingQuestion {
	var out []PendingQuestion
	for _, id := range t.questionOrder {
		if pq, ok := t.questions[id]; ok {
			out = append(out, *pq)
		}
	}
	return out
}

// End ends the turn and returns the closing actions: running tool calls are
// completed (so a normal end does not show them as cancelled), the summary
// becomes the final markdown when nothing was streamed, the final plan is
// appended as a checklist, usage is reported, then the end action itself:
// chat/turnComplete, chat/turnCancelled or chat/error, with the turn's
// duration. A second End returns nil.
func (t *Turn) End(result backend.TurnResult, err error) []wire.StateAction {
	var refused *backend.AttachmentError
	if errors.As(err, &refused) {
		return t.end(result, err, ErrorTypeAttachmentRefused)
	}
	return t.end(result, err, ErrorTypeRuntime)
}

func (t *Turn) end(result backend.TurnResult, err error, errType string) []wire.StateAction {
	if t.ended {
		return nil
	}
	// The producer's own measure (AHP: clients must not derive it from
	// timestamps); a clock that went backwards gives 0, not a negative.
	duration := max(0, t.now()-t.startedAt)
	acts := t.Flush()
	normal := err == nil && result.StopReason != backend.StopRefusal && result.StopReason != backend.StopCancelled
	if normal {
		// A call the agent left running did not succeed: it fails, saying
		// why (the AHP reducers would cancel it as skipped, which hides
		// that it ran). Calls that never started running are left to the
		// reducers' force-cancel at the turn's end.
		for _, ts := range t.toolOrder {
			if ts.phase == phaseRunning {
				acts = append(acts, t.completeWith(ts, false, NoResultError))
			}
		}
	}
	t.closeParts()
	if result.Summary != "" && !t.streamedText {
		acts = append(acts, responsePartAction(t.id, markdownPart(t.ids(), result.Summary)))
	}
	if t.plan != nil {
		// The plan as it stood at the end is part of the turn's record (its
		// last plan checklist part); the live plan in the session's _meta
		// is this turn's and ends with it. A turn that did not end normally
		// has no step in progress any more.
		final := *t.plan
		if !normal {
			final = stoppedPlan(final)
		}
		if len(final.Entries) > 0 {
			acts = append(acts, responsePartAction(t.id, markdownPart(t.ids(), PlanMarkdown(final))))
		}
		acts = append(acts, t.endPlan()...)
	}
	if result.Usage != nil {
		acts = append(acts, usageActions(t.id, *result.Usage)...)
	}
	if t.activity {
		t.activity = false
		acts = append(acts, activityAction(""))
	}
	switch {
	case err != nil:
		acts = append(acts, errorAction(t.id, duration, errType, err.Error()))
	case result.StopReason == backend.StopRefusal:
		msg := "The agent refused to continue."
		if result.Summary != "" && t.streamedText {
			msg += " " + result.Summary
		}
		acts = append(acts, errorAction(t.id, duration, ErrorTypeRefusal, msg))
	case result.StopReason == backend.StopCancelled:
		acts = append(acts, turnCancelledAction(t.id, duration))
	default:
		acts = append(acts, turnCompleteAction(t.id, duration))
	}
	t.ended = true
	return acts
}

// SessionEvent returns the session actions for an event that does not need a
// turn (title, config, plan, custom updates), given the session's current
// `_meta`; it returns the new `_meta` too. Events that only make sense in a
// turn, and events that are not session actions, return no actions. (A
// plan outside a turn only updates `_meta`: the activity and the checklist
// belong to a turn.)
func SessionEvent(ev backend.Event, meta map[string]any) ([]wire.StateAction, map[string]any) {
	return sessionEvent(ev, maps.Clone(meta))
}

func sessionEvent(ev backend.Event, meta map[string]any) ([]wire.StateAction, map[string]any) {
	switch e := ev.(type) {
	case backend.TitleChanged:
		return []wire.StateAction{titleChangedAction(e.Title)}, meta
	case backend.ConfigChanged:
		return []wire.StateAction{configChangedAction(SessionConfig(e.Options).Values)}, meta
	case backend.Plan:
		return planActions(e, meta)
	case backend.Custom:
		next := maps.Clone(meta)
		if next == nil {
			next = map[string]any{}
		}
		custom, _ := next[MetaCustom].(map[string]any)
		custom = maps.Clone(custom)
		if custom == nil {
			custom = map[string]any{}
		}
		custom[orDefault(e.Kind, "unknown")] = rawValue(e.Raw)
		next[MetaCustom] = custom
		return []wire.StateAction{metaChangedAction(next)}, next
	}
	return nil, meta
}
