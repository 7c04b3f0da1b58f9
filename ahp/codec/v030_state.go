package codec

import (
	"encoding/json"
	"fmt"
	"time"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// This file projects 0.7.0 values (states and the types nested in states,
// actions and command results) onto their 0.3.0 shapes
// (docs/protocol-versions.md §3.2).
//
// The method is the same everywhere: take a private copy of the 0.7.0
// value, rewrite in place what 0.3.0 cannot decode (enum values it does not
// know, shapes that changed), then pass it through JSON into the 0.3.0
// generated type. The generated types drop every member they do not
// declare, so fields added after 0.3.0 (startedAt, intention, _meta on new
// places, …) vanish without a rule each; only what would survive that
// decoding wrongly needs code here.

// via converts src into a T through their common JSON encoding.
func via[T any](src any) (T, error) {
	var out T
	b, err := json.Marshal(src)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(b, &out)
	return out, err
}

// ms converts an AHP 0.7.0 ISO-8601 timestamp to the Unix milliseconds of
// 0.3.0; ok is false when s is not a timestamp.
func ms(s string) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// primitiveString renders a 0.7.0 JsonPrimitive as the string 0.3.0 carried
// in its place (model config values, config enums); ok is false for null,
// which 0.3.0 has no way to say.
func primitiveString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

func downModel(m *wire.ModelSelection) *w3.ModelSelection {
	if m == nil {
		return nil
	}
	out := &w3.ModelSelection{ID: m.ID}
	for k, v := range m.Config {
		if s, ok := primitiveString(v); ok {
			if out.Config == nil {
				out.Config = map[string]string{}
			}
			out.Config[k] = s
		}
	}
	return out
}

func downAgent(a *wire.AgentSelection) *w3.AgentSelection {
	if a == nil {
		return nil
	}
	return &w3.AgentSelection{URI: a.URI}
}

// fixEnum stringifies a config enum, dropping nulls.
func fixEnum(enum []wire.JsonPrimitive) []wire.JsonPrimitive {
	if enum == nil {
		return nil
	}
	out := make([]wire.JsonPrimitive, 0, len(enum))
	for _, v := range enum {
		if s, ok := primitiveString(v); ok {
			out = append(out, s)
		}
	}
	return out
}

func fixPropertySchema(p *wire.ConfigPropertySchema) {
	if p == nil {
		return
	}
	p.Enum = fixEnum(p.Enum)
	p.AdditionalProperties = nil
	fixPropertySchema(p.Items)
	for k, c := range p.Properties {
		fixPropertySchema(&c)
		p.Properties[k] = c
	}
}

func fixConfigSchema(s *wire.ConfigSchema) {
	if s == nil {
		return
	}
	for k, p := range s.Properties {
		fixPropertySchema(&p)
		s.Properties[k] = p
	}
}

func fixSessionConfigSchema(s *wire.SessionConfigSchema) {
	if s == nil {
		return
	}
	for k, p := range s.Properties {
		p.Enum = fixEnum(p.Enum)
		p.AdditionalProperties = nil
		fixPropertySchema(p.Items)
		for n, c := range p.Properties {
			fixPropertySchema(&c)
			p.Properties[n] = c
		}
		s.Properties[k] = p
	}
}

func fixAgents(agents []wire.AgentInfo) {
	for i := range agents {
		for j := range agents[i].Models {
			fixConfigSchema(agents[i].Models[j].ConfigSchema)
		}
	}
}

// fixMessage rewrites what a 0.3.0 message cannot hold: message kinds
// added in 0.4.0 (agent, tool) become systemNotification — the nearest
// 0.3.0 kind for text the user did not type — and attachment kinds added
// since (annotations, chat) become simple attachments keeping their label.
func fixMessage(m *wire.Message) {
	if m == nil {
		return
	}
	switch m.Origin.Kind {
	case wire.MessageKindAgent, wire.MessageKindTool:
		m.Origin.Kind = wire.MessageKindSystemNotification
	}
	for i, a := range m.Attachments {
		switch a.Type() {
		case string(wire.MessageAttachmentKindAnnotations), string(wire.MessageAttachmentKindChat):
			m.Attachments[i] = wire.NewMessageAttachment(&wire.SimpleMessageAttachment{
				Label:       a.Label(),
				Range:       a.Range(),
				DisplayKind: a.DisplayKind(),
				Meta:        a.Meta(),
			})
		}
	}
}

// fixToolInput drops a tool input kept as a content reference: 0.3.0 only
// knows inline text, and a codec cannot fetch the content.
func fixToolInput(in **wire.ToolInput) {
	if *in != nil && (*in).Ref != nil {
		*in = nil
	}
}

// fixToolCall rewrites a tool call state for 0.3.0: auth-required, which it
// does not know, is shown as the running call it was before the
// authentication challenge.
func fixToolCall(tc *wire.ToolCallState) {
	switch v := tc.Value.(type) {
	case *wire.ToolCallAuthRequiredState:
		contributor := wire.NewToolCallContributor(&v.Contributor)
		r := &wire.ToolCallRunningState{
			ToolCallID:        v.ToolCallID,
			ToolName:          v.ToolName,
			DisplayName:       v.DisplayName,
			Contributor:       &contributor,
			Meta:              v.Meta,
			InvocationMessage: v.InvocationMessage,
			ToolInput:         v.ToolInput,
			Confirmed:         v.Confirmed,
			SelectedOption:    v.SelectedOption,
			Content:           v.Content,
		}
		fixToolInput(&r.ToolInput)
		*tc = wire.NewToolCallState(r)
	case *wire.ToolCallPendingConfirmationState:
		fixToolInput(&v.ToolInput)
	case *wire.ToolCallRunningState:
		fixToolInput(&v.ToolInput)
	case *wire.ToolCallPendingResultConfirmationState:
		fixToolInput(&v.ToolInput)
	case *wire.ToolCallCompletedState:
		fixToolInput(&v.ToolInput)
	case *wire.ToolCallCancelledState:
		fixToolInput(&v.ToolInput)
	}
}

// fixParts drops the input-request parts 0.3.0 cannot decode and returns
// the requests of those still open, which 0.3.0 keeps in
// SessionState.inputRequests.
func fixParts(parts []wire.ResponsePart) (kept []wire.ResponsePart, open []wire.ChatInputRequest) {
	kept = make([]wire.ResponsePart, 0, len(parts))
	for _, p := range parts {
		switch v := p.Value.(type) {
		case *wire.InputRequestResponsePart:
			if v.Response == nil {
				open = append(open, v.Request)
			}
			continue
		case *wire.ToolCallResponsePart:
			fixToolCall(&v.ToolCall)
		}
		kept = append(kept, p)
	}
	return kept, open
}

func fixPending(p *wire.PendingMessage) {
	if p != nil {
		fixMessage(&p.Message)
	}
}

// fixOperations leaves disabled changeset operations out: 0.3.0 cannot show
// an operation disabled, and showing it idle would make it look invocable.
func fixOperations(ops []wire.ChangesetOperation) []wire.ChangesetOperation {
	if ops == nil {
		return nil
	}
	out := make([]wire.ChangesetOperation, 0, len(ops))
	for _, op := range ops {
		if op.Status != wire.ChangesetOperationStatusDisabled {
			out = append(out, op)
		}
	}
	return out
}

func fixSessionConfig(c *wire.SessionConfigState) {
	if c != nil {
		fixSessionConfigSchema(&c.Schema)
	}
}

// clone070 deep-copies a 0.7.0 value so that the fix* functions may
// rewrite it: the host's states and actions must stay untouched.
func clone070[T any](v *T) (*T, error) {
	c, err := via[T](v)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// selection070 is V030Selection over the 0.7.0 chat the 0.3.0 projection
// is made from.
func selection070(chat *wire.ChatState) (*wire.ModelSelection, *wire.AgentSelection) {
	if chat == nil {
		return nil, nil
	}
	msgs := make([]*wire.Message, 0, len(chat.Turns)+2)
	if chat.Draft != nil {
		msgs = append(msgs, chat.Draft)
	}
	if chat.ActiveTurn != nil {
		msgs = append(msgs, &chat.ActiveTurn.Message)
	}
	for i := len(chat.Turns) - 1; i >= 0; i-- {
		msgs = append(msgs, &chat.Turns[i].Message)
	}
	agentDone := chat.Draft != nil && changedSelection(chat.Draft) == "agent"
	return newestSelection(msgs, func(m *wire.Message) (*wire.ModelSelection, *wire.AgentSelection) { return m.Model, m.Agent }, agentDone)
}

// newestSelection returns the first model and the first agent that msgs
// (newest first) name; with agentDone, no agent.
func newestSelection[Msg, Model, Agent any](msgs []*Msg, sel func(*Msg) (*Model, *Agent), agentDone bool) (*Model, *Agent) {
	var model *Model
	var agent *Agent
	for _, m := range msgs {
		mm, ma := sel(m)
		if model == nil {
			model = mm
		}
		if agent == nil && !agentDone {
			agent = ma
		}
		if model != nil && (agent != nil || agentDone) {
			break
		}
	}
	return model, agent
}

// changedSelection returns the SelectionMeta mark of a draft: "model" or
// "agent" when it comes from a 0.3.0 client's change, else "".
func changedSelection(m *wire.Message) string {
	switch v, _ := m.Meta[SelectionMeta].(string); v {
	case "model", "agent":
		return v
	}
	return ""
}

// sessionStatus is the 0.3.0 summary status: the activity bits of the
// default chat (the only chat a 0.3.0 client sees, and what its own
// reducer recomputes from the projected turns), the flags (IsRead,
// IsArchived, unknown bits) of the session.
//
// This deliberately leaves out the promotion to InputNeeded or Error by
// other chats and by SessionState.inputNeeded that §3.2.1 suggests: a
// 0.3.0 client recomputes the activity bits from the turns it holds on the
// next turn action, so a promoted value would flicker back; and
// inputNeeded entries of kind toolClientExecution have no 0.3.0
// counterpart at all.
func sessionStatus(s *wire.SessionState, chat *wire.ChatState) w3.SessionStatus {
	activity := s.Status.Activity()
	if chat != nil {
		activity = chat.Status.Activity()
	}
	return w3.SessionStatus(s.Status.WithActivity(activity))
}

// projectSession merges a session, its default chat (nil when the session
// has none) and its root catalog entry (nil when the host did not pass
// one) into a 0.3.0 session state.
func projectSession(uri string, src *wire.SessionState, srcChat *wire.ChatState, sum *wire.SessionSummary) (*w3.SessionState, error) {
	s, err := clone070(src)
	if err != nil {
		return nil, err
	}
	var chat *wire.ChatState
	if srcChat != nil {
		if chat, err = clone070(srcChat); err != nil {
			return nil, err
		}
	}
	fixSessionConfig(s.Config)

	out := &w3.SessionState{
		Summary: w3.SessionSummary{
			Resource: uri,
			Provider: s.Provider,
			Title:    s.Title,
			Status:   sessionStatus(s, chat),
			Activity: s.Activity,
		},
		Lifecycle: w3.SessionLifecycle(s.Lifecycle),
		Turns:     []w3.Turn{},
		Meta:      s.Meta,
	}
	if out.Summary.Project, err = via[*w3.ProjectInfo](s.Project); err != nil {
		return nil, err
	}
	if len(s.WorkingDirectories) > 0 {
		out.Summary.WorkingDirectory = &s.WorkingDirectories[0]
	}
	if out.CreationError, err = via[*w3.ErrorInfo](s.CreationError); err != nil {
		return nil, err
	}
	if out.ServerTools, err = via[[]w3.ToolDefinition](s.ServerTools); err != nil {
		return nil, err
	}
	// 0.3.0 has one active-client slot and no per-connection snapshot; the
	// last client to join is the one it shows (session/activeClientSet
	// appends new clients).
	if n := len(s.ActiveClients); n > 0 {
		if out.ActiveClient, err = via[*w3.SessionActiveClient](&s.ActiveClients[n-1]); err != nil {
			return nil, err
		}
	}
	if out.Config, err = via[*w3.SessionConfigState](s.Config); err != nil {
		return nil, err
	}
	if out.Customizations, err = via[[]w3.Customization](s.Customizations); err != nil {
		return nil, err
	}
	if out.Changesets, err = via[[]w3.Changeset](s.Changesets); err != nil {
		return nil, err
	}

	var modified int64
	if sum != nil {
		out.Summary.CreatedAt, _ = ms(sum.CreatedAt)
		modified, _ = ms(sum.ModifiedAt)
		if out.Summary.Changes, err = via[*w3.ChangesSummary](sum.Changes); err != nil {
			return nil, err
		}
	}
	if chat == nil {
		out.Summary.ModifiedAt = modified
		if sum == nil {
			out.Summary.CreatedAt = modified
		}
		return out, nil
	}

	// The chat's activity is the one that follows the conversation 0.3.0
	// shows; the session's is a fallback (hosts keep the two in step).
	if chat.Activity != nil {
		out.Summary.Activity = chat.Activity
	}
	if m, ok := ms(chat.ModifiedAt); ok && m > modified {
		modified = m
	}
	out.Summary.ModifiedAt = modified
	if sum == nil {
		// Without the catalog entry nothing in the states says when the
		// session was created; the chat's last change is the best stable
		// guess. The host should pass the entry (see Snapshot).
		out.Summary.CreatedAt = modified
	}
	model, agent := selection070(chat)
	out.Summary.Model, out.Summary.Agent = downModel(model), downAgent(agent)

	if out.Turns, err = projectTurns(chat.Turns); err != nil {
		return nil, err
	}
	if t := chat.ActiveTurn; t != nil {
		fixMessage(&t.Message)
		parts, open := fixParts(t.ResponseParts)
		at := &w3.ActiveTurn{ID: t.ID, ResponseParts: []w3.ResponsePart{}}
		if at.Message, err = via[w3.Message](t.Message); err != nil {
			return nil, err
		}
		if len(parts) > 0 {
			if at.ResponseParts, err = via[[]w3.ResponsePart](parts); err != nil {
				return nil, err
			}
		}
		if at.Usage, err = via[*w3.UsageInfo](t.Usage); err != nil {
			return nil, err
		}
		out.ActiveTurn = at
		if out.InputRequests, err = via[[]w3.SessionInputRequest](open); err != nil {
			return nil, err
		}
	}
	// auth-required calls block a 0.7.0 chat (InputNeeded) but are shown
	// running to 0.3.0, whose reducer would compute InProgress for them.
	if out.Summary.Status&w3.SessionStatusInputNeeded == w3.SessionStatusInputNeeded && !needsInput(out) {
		out.Summary.Status = out.Summary.Status&^w3.SessionStatusInputNeeded | w3.SessionStatusInProgress
	}
	fixPending(chat.SteeringMessage)
	for i := range chat.QueuedMessages {
		fixPending(&chat.QueuedMessages[i])
	}
	if out.SteeringMessage, err = via[*w3.PendingMessage](chat.SteeringMessage); err != nil {
		return nil, err
	}
	if out.QueuedMessages, err = via[[]w3.PendingMessage](chat.QueuedMessages); err != nil {
		return nil, err
	}
	return out, nil
}

// needsInput reports whether a projected session waits for its user the
// way the 0.3.0 reducer sees it: an open input request, or a tool call of
// the active turn waiting for a confirmation.
func needsInput(s *w3.SessionState) bool {
	if len(s.InputRequests) > 0 {
		return true
	}
	if s.ActiveTurn == nil {
		return false
	}
	for _, p := range s.ActiveTurn.ResponseParts {
		if tp, ok := p.Value.(*w3.ToolCallResponsePart); ok && tp != nil {
			switch w3.ToolCallStatus(tp.ToolCall.Status()) {
			case w3.ToolCallStatusPendingConfirmation, w3.ToolCallStatusPendingResultConfirmation:
				return true
			}
		}
	}
	return false
}

// projectTurns projects completed turns; the slice is a fresh copy the
// function may rewrite.
func projectTurns(turns []wire.Turn) ([]w3.Turn, error) {
	out := make([]w3.Turn, 0, len(turns))
	for _, t := range turns {
		fixMessage(&t.Message)
		t.ResponseParts, _ = fixParts(t.ResponseParts)
		pt, err := via[w3.Turn](t)
		if err != nil {
			return nil, fmt.Errorf("turn %s: %w", t.ID, err)
		}
		if pt.ResponseParts == nil {
			pt.ResponseParts = []w3.ResponsePart{}
		}
		out = append(out, pt)
	}
	return out, nil
}

func projectRoot(src *wire.RootState) (*w3.RootState, error) {
	s, err := clone070(src)
	if err != nil {
		return nil, err
	}
	fixAgents(s.Agents)
	if s.Config != nil {
		fixConfigSchema(&s.Config.Schema)
	}
	out, err := via[w3.RootState](s)
	return &out, err
}

func projectChangeset(src *wire.ChangesetState) (*w3.ChangesetState, error) {
	s, err := clone070(src)
	if err != nil {
		return nil, err
	}
	s.Operations = fixOperations(s.Operations)
	out, err := via[w3.ChangesetState](s)
	return &out, err
}

// projectSummary projects a root catalog entry. It has no model or agent:
// 0.7.0 keeps them on the chats' messages and drafts, which a summary does
// not reach (the session snapshot has them).
func projectSummary(s wire.SessionSummary) (w3.SessionSummary, error) {
	out, err := via[w3.SessionSummary](struct {
		wire.SessionSummary
		CreatedAt  int64 `json:"createdAt"`
		ModifiedAt int64 `json:"modifiedAt"`
	}{SessionSummary: s})
	if err != nil {
		return out, err
	}
	out.CreatedAt, _ = ms(s.CreatedAt)
	out.ModifiedAt, _ = ms(s.ModifiedAt)
	if len(s.WorkingDirectories) > 0 {
		out.WorkingDirectory = &s.WorkingDirectories[0]
	}
	return out, nil
}
