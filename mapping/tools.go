package mapping

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// DefaultToolName is the AHP toolName of a tool call whose backend gave no kind.
const DefaultToolName = "tool"

// isTerminal reports whether a backend status ends the tool call.
func isTerminal(s backend.ToolStatus) bool {
	return s == backend.ToolCompleted || s == backend.ToolFailed
}

// isRunning reports whether a backend status means the tool is executing or
// done (so it no longer waits for parameters or confirmation).
func isRunning(s backend.ToolStatus) bool {
	return s == backend.ToolInProgress || isTerminal(s)
}

// merge applies a ToolCall (a full description or an update) to the state.
// Empty fields leave the state unchanged; content follows ContentMode.
func (ts *toolState) merge(e backend.ToolCall) (contentChanged bool) {
	if e.Title != "" {
		ts.title = e.Title
	}
	if e.Kind != "" {
		ts.kind = e.Kind
	}
	if e.Status != "" {
		ts.status = e.Status
		if !knownStatus(e.Status) {
			ts.customStatus = e.Status
		}
	}
	if e.Locations != nil {
		// An empty, non-nil list clears the locations.
		ts.locations = e.Locations
	}
	if !emptyInput(e.RawInput) {
		ts.rawInput = e.RawInput
	}
	if len(e.RawOutput) > 0 {
		ts.rawOutput = e.RawOutput
	}
	if e.Meta != nil {
		// The backend hands over the call's whole `_meta` as merged so far
		// (backend.ToolCall.Meta): it replaces ours, so a key the agent
		// removed is gone here too.
		ts.meta = maps.Clone(e.Meta)
	}
	mode := e.ContentMode
	if mode == backend.ContentUnchanged && !e.Update && e.Content != nil {
		// A full tool_call carries the whole content.
		mode = backend.ContentReplace
	}
	switch mode {
	case backend.ContentReplace:
		ts.content = append([]backend.ToolContent(nil), e.Content...)
		return true
	case backend.ContentAppend:
		ts.content = append(ts.content, e.Content...)
		return len(e.Content) > 0
	}
	return false
}

// emptyInput reports whether a raw input says nothing: absent, null or an
// empty object. Agents report a call before the model has streamed its
// input (claude-code-acp sends `{}`); sending that as the call's input
// would show clients a call without arguments.
func emptyInput(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", "{}":
		return true
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil && len(obj) == 0
}

func (ts *toolState) toolName() string { return orDefault(ts.kind, DefaultToolName) }

func (ts *toolState) displayName() string { return orDefault(ts.title, ts.toolName()) }

// intention is what the tool call intends to do, in the agent's words: ACP
// titles describe the call ("Read README.md", "Run `go test`"). A title
// that only names the tool (agent-channel backends title a call with the
// tool's name) says nothing about the intent, so it gives none.
func (ts *toolState) intention() string {
	title := strings.TrimSpace(ts.title)
	if title == "" || strings.EqualFold(title, ts.toolName()) {
		return ""
	}
	if name, ok := ts.meta["toolName"].(string); ok && strings.EqualFold(title, strings.TrimSpace(name)) {
		return ""
	}
	return ts.title
}

// toolMeta is the `_meta` of the tool call: the backend's own meta plus the
// ACP fields AHP has no place for (kind, locations, the latest custom
// status).
func (ts *toolState) toolMeta() map[string]any {
	m := maps.Clone(ts.meta)
	if m == nil {
		m = map[string]any{}
	}
	if ts.kind != "" {
		m["kind"] = ts.kind
	}
	if _, own := m[MetaToolKind]; !own {
		if k := ts.clientToolKind(); k != "" {
			m[MetaToolKind] = k
		}
	}
	if m[MetaToolKind] == ToolKindSubagent {
		// What VS Code's subagent widget shows: the task and the agent
		// that does it (Claude's Task tool: description, subagent_type).
		var in struct {
			Description  string `json:"description"`
			SubagentType string `json:"subagent_type"`
		}
		if json.Unmarshal(ts.rawInput, &in) == nil {
			if _, own := m["subagentDescription"]; !own && in.Description != "" {
				m["subagentDescription"] = in.Description
			}
			if _, own := m["subagentAgentName"]; !own && in.SubagentType != "" {
				m["subagentAgentName"] = in.SubagentType
			}
		}
	}
	if len(ts.locations) > 0 {
		locs := make([]any, 0, len(ts.locations))
		for _, l := range ts.locations {
			loc := map[string]any{"path": l.Path}
			if l.Line != nil {
				loc["line"] = *l.Line
			}
			locs = append(locs, loc)
		}
		m["locations"] = locs
	}
	if ts.customStatus != "" {
		// Kept once seen: AHP (0.7.0 on) replaces a tool call's _meta with each
		// action's, so a call that went on to complete would lose it.
		m["status"] = string(ts.customStatus)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// MetaToolKind is the key, in a tool call's `_meta`, of the rendering
// hint VS Code's Agents window reads (its stateToProgressAdapter):
// ToolKindTerminal shows the call as a command line with its output (and a
// command-line confirmation built from toolInput's `command`),
// ToolKindSearch as a search, ToolKindSubagent as a subagent with
// `_meta.subagentDescription` and `_meta.subagentAgentName`.
const MetaToolKind = "toolKind"

// The values of MetaToolKind.
const (
	ToolKindTerminal = "terminal"
	ToolKindSearch   = "search"
	ToolKindSubagent = "subagent"
)

// clientToolKind is the MetaToolKind of the call: a subagent when the
// agent's own tool is Claude's Task (or Agent) tool, named in
// `_meta.claudeCode.toolName`; a terminal for ACP kind `execute` (shell
// commands); a search for ACP kind `search`; else none.
func (ts *toolState) clientToolKind() string {
	if cc, ok := ts.meta["claudeCode"].(map[string]any); ok {
		if name, _ := cc["toolName"].(string); name == "Task" || name == "Agent" {
			return ToolKindSubagent
		}
	}
	switch ts.kind {
	case "execute":
		return ToolKindTerminal
	case "search":
		return ToolKindSearch
	}
	return ""
}

func knownStatus(s backend.ToolStatus) bool {
	switch s {
	case backend.ToolPending, backend.ToolInProgress, backend.ToolCompleted, backend.ToolFailed:
		return true
	}
	return false
}

// start begins (or, for a re-used id, re-begins) a tool call in AHP.
func (t *Turn) start(e backend.ToolCall) (*toolState, []wire.StateAction) {
	ts := &toolState{ahpID: e.ID}
	switch n := t.reopened[e.ID]; {
	case e.ID == "":
		// Only a permission request can get here without an id (invalid,
		// but the user must still see it): give it one.
		ts.ahpID = "tool-" + t.ids()
	case n > 0:
		ts.ahpID = fmt.Sprintf("%s#%d", e.ID, n+1)
	}
	ts.merge(e)
	t.tools[e.ID] = ts
	t.toolOrder = append(t.toolOrder, ts)
	t.closeParts()
	ts.sentIntention = ts.intention()
	ts.invocation = ts.displayName()
	meta := ts.toolMeta()
	ts.sentMeta = metaKey(meta)
	acts := []wire.StateAction{toolCallStartAction(t.id, ts.ahpID, ts.toolName(), ts.displayName(), ts.sentIntention, meta)}
	return ts, append(acts, t.streamDelta(ts, true)...)
}

// streamDelta tells clients what changed while the tool call streams, in
// one chat/toolCallDelta: the raw input, a new invocation message (a later
// title, or a custom status), a new `_meta`. AHP can only append to partial
// input, so the input is sent once; later changes reach the client in
// toolCallReady's toolInput. AHP 1.0 has no action that changes a tool
// call's displayName, so a later title shows as the invocation message,
// and as toolCallReady's intention and invocation message.
//
// With full false only the input is sent: the call becomes ready at once,
// and toolCallReady carries the rest.
func (t *Turn) streamDelta(ts *toolState, full bool) []wire.StateAction {
	if ts.phase != phaseStreaming {
		return nil
	}
	var d deltaFields
	if !ts.inputSent && len(ts.rawInput) > 0 {
		ts.inputSent = true
		d.content = wire.Ptr(string(ts.rawInput))
	}
	if inv := ts.streamingInvocation(); full && inv != ts.invocation {
		ts.invocation = inv
		d.invocation = wire.Ptr(inv)
	}
	if full {
		d.meta = ts.metaChange()
	}
	if d.content == nil && d.invocation == nil && d.meta == nil {
		return nil
	}
	return []wire.StateAction{toolCallDeltaAction(t.id, ts.ahpID, d)}
}

// streamingInvocation is what a streaming tool call is doing, in words: its
// title, with a backend-specific (ACP v2 `_`) status, which has no AHP
// counterpart, in parentheses.
func (ts *toolState) streamingInvocation() string {
	if ts.status != "" && !knownStatus(ts.status) {
		return fmt.Sprintf("%s (%s)", ts.displayName(), ts.status)
	}
	return ts.displayName()
}

// metaChange returns the call's `_meta` when it differs from what clients
// have (AHP replaces a tool call's `_meta` with that of each action that
// carries one), and records it as theirs; nil when it is unchanged. A
// `_meta` that became empty is sent as {}, which clears it.
func (ts *toolState) metaChange() map[string]any {
	m := ts.toolMeta()
	key := metaKey(m)
	if key == ts.sentMeta {
		return nil
	}
	ts.sentMeta = key
	if m == nil {
		return map[string]any{}
	}
	return m
}

// metaKey identifies a `_meta` value for comparison (encoding/json sorts
// map keys).
func metaKey(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	return string(b)
}

// lookup returns the state for a backend tool call, starting it when it has
// not been seen. A finished tool call whose id comes back with a permission
// request is re-started under a new AHP id (reopen).
func (t *Turn) lookup(e backend.ToolCall, reopen bool) (ts *toolState, acts []wire.StateAction, changed bool) {
	ts, ok := t.tools[e.ID]
	if ok && reopen && ts.phase == phaseDone {
		// Carry what is known over to the new AHP tool call, updated by e.
		t.reopened[e.ID]++
		next := toolState{title: ts.title, kind: ts.kind, locations: ts.locations, rawInput: ts.rawInput, meta: maps.Clone(ts.meta)}
		next.merge(e)
		ts, acts = t.start(backend.ToolCall{
			ID: e.ID, Title: next.title, Kind: next.kind, Status: next.status, Locations: next.locations,
			RawInput: next.rawInput, RawOutput: next.rawOutput, Meta: next.meta, ContentMode: backend.ContentReplace, Content: next.content,
		})
		return ts, acts, len(ts.content) > 0
	}
	if !ok {
		ts, acts = t.start(e)
		return ts, acts, len(ts.content) > 0
	}
	changed = ts.merge(e)
	return ts, nil, changed
}

func (t *Turn) toolCall(e backend.ToolCall) []wire.StateAction {
	if e.ID == "" {
		// Nothing can refer to an anonymous tool call; show it rather than drop it.
		raw, _ := json.Marshal(map[string]any{"title": e.Title, "kind": e.Kind, "status": e.Status})
		return t.custom(backend.Custom{Kind: "tool_call without toolCallId", Raw: raw})
	}
	// An update (Update true) of a known call, even a finished one, only
	// changes it: lookup restarts a call for a permission request only.
	ts, acts, changed := t.lookup(e, false)
	switch ts.phase {
	case phaseStreaming:
		acts = append(acts, t.streamDelta(ts, !isRunning(ts.status))...)
		if isRunning(ts.status) && !isTerminal(ts.status) {
			// Held until the turn's next event: codex-acp reports a
			// command running and then asks permission for it; shown
			// running at once, clients would see running, then pending.
			t.held = ts
			return acts
		}
		if isRunning(ts.status) {
			acts = append(acts, t.ready(ts, wire.ToolCallConfirmationReasonNotNeeded))
			if isTerminal(ts.status) {
				return append(acts, t.complete(ts, ts.status == backend.ToolCompleted))
			}
			if len(ts.content) > 0 {
				acts = append(acts, t.contentChanged(ts))
			}
		}
	case phasePending:
		// The reducer accepts a completion while confirmation is pending
		// (the agent went ahead or gave up); anything else waits.
		if isTerminal(ts.status) {
			acts = append(acts, t.complete(ts, ts.status == backend.ToolCompleted))
		}
	case phaseRunning:
		if isTerminal(ts.status) {
			return append(acts, t.complete(ts, ts.status == backend.ToolCompleted))
		}
		if changed || metaKey(ts.toolMeta()) != ts.sentMeta {
			// A `_meta`-only update (claude-code-acp's hook sends
			// _meta.claudeCode.toolResponse so) rides on the content.
			acts = append(acts, t.contentChanged(ts))
		}
	}
	return acts
}

// Holding reports whether a tool call the agent reported running waits
// for the turn's next event before clients are told it runs. An agent may
// report a call in_progress and ask permission for it right after
// (codex-acp does when its sandbox refused the command): the request
// then makes the call's first toolCallReady a pending confirmation,
// instead of a running call that flips to pending. Any other event of the
// turn, and its end, settle the call as running first. The bridge bounds
// the wait (bridge/chat.go, toolHold) by calling Flush when nothing else
// comes.
func (t *Turn) Holding() bool { return t.held != nil }

// Flush settles a held tool call: it is running, with its content so far.
// Without one it returns nil.
func (t *Turn) Flush() []wire.StateAction {
	ts := t.held
	t.held = nil
	if ts == nil || ts.phase != phaseStreaming || t.ended {
		return nil
	}
	acts := []wire.StateAction{t.ready(ts, wire.ToolCallConfirmationReasonNotNeeded)}
	if len(ts.content) > 0 {
		acts = append(acts, t.contentChanged(ts))
	}
	return acts
}

// settleFor settles a held tool call before a permission request for the
// backend tool call id: a request for the held call itself takes it over
// (the call goes from streaming straight to its confirmation).
func (t *Turn) settleFor(id string) []wire.StateAction {
	if t.held != nil && t.tools[id] == t.held {
		t.held = nil
		return nil
	}
	return t.Flush()
}

// ready moves a streaming tool call to running with the given reason.
func (t *Turn) ready(ts *toolState, reason wire.ToolCallConfirmationReason) wire.StateAction {
	ts.phase = phaseRunning
	return toolCallReadyAction(t.id, ts.ahpID, readyFields{
		invocation: ts.displayName(),
		intention:  ts.newIntention(),
		toolInput:  string(ts.rawInput),
		confirmed:  reason,
		meta:       ts.metaChange(),
	})
}

// newIntention returns the intention when it changed since clients last
// got one (toolCallReady then replaces the provisional one of
// toolCallStart), else "".
func (ts *toolState) newIntention() string {
	cur := ts.intention()
	if cur == ts.sentIntention {
		return ""
	}
	ts.sentIntention = cur
	return cur
}

func (t *Turn) contentChanged(ts *toolState) wire.StateAction {
	return toolCallContentChangedAction(t.id, ts.ahpID, t.toolContent(ts), ts.metaChange())
}

// complete ends a tool call with its result.
func (t *Turn) complete(ts *toolState, success bool) wire.StateAction {
	return t.completeWith(ts, success, "")
}

// NoResultError is the error of a tool call that was still running when
// its turn ended normally: the agent never said how it went, so it did not
// succeed (issue 26: codex-acp left `ls` in_progress when its sandbox
// failed).
const NoResultError = "the agent ended the turn without reporting a result for this tool call"

// completeWith is complete with the error message of a failure given;
// "" uses the tool's own first text, else "<name> failed".
func (t *Turn) completeWith(ts *toolState, success bool, errMsg string) wire.StateAction {
	ts.phase = phaseDone
	res := resultFields{
		success:    success,
		pastTense:  ts.displayName(),
		content:    t.toolContent(ts),
		structured: structured(ts.rawOutput),
	}
	if len(res.content) == 0 {
		// codex-acp puts a command's output only in its rawOutput, which
		// clients get as structuredContent and do not show.
		if out := rawOutputText(ts.rawOutput); out != "" {
			res.content = append(res.content, textContent(out))
		}
	}
	if !success {
		res.errMsg = orDefault(errMsg, orDefault(firstText(ts.content), ts.displayName()+" failed"))
	}
	// The whole `_meta` as always (AHP replaces it with the action's); {}
	// when what clients have must be cleared.
	meta, had := ts.toolMeta(), ts.sentMeta
	ts.sentMeta = metaKey(meta)
	if meta == nil && had != "" {
		meta = map[string]any{}
	}
	return toolCallCompleteAction(t.id, ts.ahpID, meta, res)
}

// rawOutputText is the printed output a command's raw output carries, when
// it is an object with one of the members agents use for it (codex-acp's
// exec end: aggregated_output, formatted_output, stdout; "output"), else "".
func rawOutputText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	for _, k := range []string{"aggregated_output", "formatted_output", "stdout", "output"} {
		var s string
		if json.Unmarshal(obj[k], &s) == nil && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// structured turns a raw output into AHP structuredContent: a JSON object as
// is, any other JSON value under "value".
func structured(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err == nil && obj != nil {
		return obj
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		if err != nil {
			return map[string]any{"value": string(raw)}
		}
		return nil
	}
	return map[string]any{"value": v}
}

func firstText(content []backend.ToolContent) string {
	for _, c := range content {
		if c.Type == "content" && c.Block == nil && c.Text != "" {
			return c.Text
		}
	}
	return ""
}

// Permission publishes a permission request as a pending confirmation: the
// tool call is started if it has not been seen, then toolCallReady without
// `confirmed`, with the backend's options, a confirmation title and the
// diffs as edits. A request for a running tool call asks again
// (running → pending-confirmation). A request for a tool call that is
// already waiting for confirmation produces nothing.
func (t *Turn) Permission(req backend.PermissionRequest) []wire.StateAction {
	if t.ended {
		return nil
	}
	settled := t.settleFor(req.ToolCall.ID)
	call, description := permissionText(req.ToolCall)
	ts, acts, _ := t.lookup(call, true)
	acts = append(settled, acts...)
	acts = append(acts, t.streamDelta(ts, false)...)
	if ts.phase == phasePending {
		return acts
	}
	ts.phase = phasePending
	invocation := ts.displayName()
	if description != "" {
		invocation += "\n\n" + description
	}
	return append(acts, toolCallReadyAction(t.id, ts.ahpID, readyFields{
		invocation:        invocation,
		intention:         ts.newIntention(),
		toolInput:         string(ts.rawInput),
		confirmationTitle: ConfirmationTitle(ts.kind),
		edits:             t.edits(ts),
		options:           ConfirmationOptions(req.Options),
		meta:              ts.metaChange(),
	}))
}

// permissionText takes the text a permission request's tool call carries
// out of its content: it explains the request (codex-acp: why the command
// needs approval, the decisions available) and is the confirmation's
// description, not the tool's output, which it would otherwise stay as
// when the command printed nothing. Diffs and terminals stay content.
func permissionText(call backend.ToolCall) (backend.ToolCall, string) {
	var texts []string
	var kept []backend.ToolContent
	for _, c := range call.Content {
		if c.Type == "content" && c.Block == nil && c.Text != "" {
			texts = append(texts, c.Text)
			continue
		}
		kept = append(kept, c)
	}
	if len(texts) == 0 {
		return call, ""
	}
	call.Content = kept
	if len(kept) == 0 {
		// Nothing left to say about the content: what the call showed
		// before the request stays.
		call.Content, call.ContentMode = nil, backend.ContentUnchanged
	}
	return call, strings.Join(texts, "\n\n")
}

// AutoPermission answers a permission request by policy (see AutoApprove)
// instead of asking: approved, the tool call goes straight to running with
// `confirmed: "setting"`; denied, it is shown pending and then denied
// (chat/toolCallConfirmed with reason `denied`), so clients see what was
// refused.
func (t *Turn) AutoPermission(req backend.PermissionRequest, approve bool) []wire.StateAction {
	if t.ended {
		return nil
	}
	settled := t.settleFor(req.ToolCall.ID)
	call, _ := permissionText(req.ToolCall)
	ts, acts, _ := t.lookup(call, true)
	acts = append(settled, acts...)
	acts = append(acts, t.streamDelta(ts, false)...)
	if approve {
		if ts.phase == phasePending {
			return append(acts, deniedOrApproved(t.id, ts.ahpID, true, ts))
		}
		return append(acts, t.ready(ts, wire.ToolCallConfirmationReasonSetting))
	}
	if ts.phase != phasePending {
		acts = append(acts, t.Permission(backend.PermissionRequest{ToolCall: backend.ToolCall{ID: req.ToolCall.ID, Update: true}, Options: req.Options})...)
	}
	return append(acts, deniedOrApproved(t.id, ts.ahpID, false, ts))
}

// deniedOrApproved is the server-side chat/toolCallConfirmed of the policy.
func deniedOrApproved(turnID, toolCallID string, approve bool, ts *toolState) wire.StateAction {
	if approve {
		ts.phase = phaseRunning
	} else {
		ts.phase = phaseDone
	}
	return toolCallConfirmedAction(turnID, toolCallID, approve)
}

// ToolConfirmed tells the Turn how a client answered a pending confirmation
// of the AHP tool call toolCallID (the action has already been applied to the
// state): approved → running, denied → cancelled.
func (t *Turn) ToolConfirmed(toolCallID string, approved bool) {
	for _, ts := range t.toolOrder {
		if ts.ahpID == toolCallID && ts.phase == phasePending {
			if approved {
				ts.phase = phaseRunning
			} else {
				ts.phase = phaseDone
			}
			return
		}
	}
}

// ConfirmationTitle is the short title of a confirmation prompt for an ACP
// tool kind.
func ConfirmationTitle(kind string) string {
	switch kind {
	case "read":
		return "Read file"
	case "edit":
		return "Edit file"
	case "delete":
		return "Delete file"
	case "move":
		return "Move file"
	case "search":
		return "Search"
	case "execute":
		return "Run command"
	case "think":
		return "Think"
	case "fetch":
		return "Fetch"
	case "switch_mode":
		return "Switch mode"
	}
	return "Allow tool call"
}

// OptionKind maps an ACP permission option kind to approve or deny:
// allow_* approve, reject_* deny. Custom kinds are judged by their words
// (split at "_" and "-"): any of reject, deny, disallow, block, never
// denies; otherwise any of allow, approve, accept, grant approves; anything
// else denies, so an unclear option never grants more than the user saw.
func OptionKind(kind backend.PermissionOptionKind) wire.ConfirmationOptionKind {
	words := strings.FieldsFunc(strings.ToLower(string(kind)), func(r rune) bool { return r == '_' || r == '-' })
	approve := false
	for _, w := range words {
		switch w {
		case "reject", "deny", "disallow", "block", "never":
			return wire.ConfirmationOptionKindDeny
		case "allow", "approve", "accept", "grant":
			approve = true
		}
	}
	if approve {
		return wire.ConfirmationOptionKindApprove
	}
	return wire.ConfirmationOptionKindDeny
}

// ConfirmationOptions maps ACP permission options 1:1 (id = option id,
// label = name).
func ConfirmationOptions(opts []backend.PermissionOption) []wire.ConfirmationOption {
	if len(opts) == 0 {
		return nil
	}
	out := make([]wire.ConfirmationOption, 0, len(opts))
	for _, o := range opts {
		out = append(out, wire.ConfirmationOption{ID: o.ID, Label: orDefault(o.Name, o.ID), Kind: OptionKind(o.Kind)})
	}
	return out
}
