package host

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"sort"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The session channel carries aggregates of its chats that the host keeps
// in step with actions of its own, so that a client that only watches the
// session (a session list, a phone) sees every chat's state and every
// question waiting for an answer (docs/protocol-versions.md §5.5–5.7):
//
//   - the chat catalogue, session.chats, with session/chatUpdated;
//   - the inputs the session waits for, session.inputNeeded, with
//     session/inputNeededSet and session/inputNeededRemoved;
//   - the session's entry in the root catalogue, with the
//     root/sessionSummaryChanged notification.
//
// The host never changes a channel's state except through actions, so a
// client's reduced state always equals a fresh snapshot.

// chatSummaryOf is a chat's catalogue entry, as its state says.
func chatSummaryOf(st *wire.ChatState) wire.ChatSummary {
	return wire.ChatSummary{
		Resource:           st.Resource,
		Title:              st.Title,
		Status:             st.Status,
		Activity:           st.Activity,
		ModifiedAt:         st.ModifiedAt,
		Origin:             st.Origin,
		Interactivity:      st.Interactivity,
		WorkingDirectories: st.WorkingDirectories,
	}
}

// chatSummaryChanges returns what changed from a to b, or nil.
func chatSummaryChanges(a, b *wire.ChatSummary) *wire.PartialChatSummary {
	var ch wire.PartialChatSummary
	changed := false
	if a.Title != b.Title {
		ch.Title, changed = wire.Ptr(b.Title), true
	}
	if a.Status != b.Status {
		ch.Status, changed = wire.Ptr(b.Status), true
	}
	if !equalPtr(a.Activity, b.Activity) {
		// Activity cleared is sent as "", which clients show as none.
		ch.Activity, changed = wire.Ptr(deref(b.Activity)), true
	}
	if a.ModifiedAt != b.ModifiedAt {
		ch.ModifiedAt, changed = wire.Ptr(b.ModifiedAt), true
	}
	if !equalPtr(a.Interactivity, b.Interactivity) && b.Interactivity != nil {
		ch.Interactivity, changed = b.Interactivity, true
	}
	if !slices.Equal(a.WorkingDirectories, b.WorkingDirectories) && b.WorkingDirectories != nil {
		ch.WorkingDirectories, changed = slices.Clone(b.WorkingDirectories), true
	}
	if !sameJSON(a.Origin, b.Origin) && b.Origin != nil {
		ch.Origin, changed = b.Origin, true
	}
	if !changed {
		return nil
	}
	return &ch
}

// mirrorChatLocked writes a chat's changed summary into its session's
// catalogue. Changes of modifiedAt alone are coalesced to one a second (a
// busy turn touches it often and the catalogue needs no more). Called with
// the group's mutex held.
func (h *Host) mirrorChatLocked(ch *channel) {
	sess := ch.group.session
	if sess == nil || sess.removed {
		return
	}
	cur := chatSummaryOf(ch.chat.st)
	changes := chatSummaryChanges(&ch.chat.mirrored, &cur)
	if changes == nil {
		return
	}
	now := h.opts.Clock()
	onlyTime := changes.ModifiedAt != nil && changes.Title == nil && changes.Status == nil && changes.Activity == nil &&
		changes.Interactivity == nil && changes.WorkingDirectories == nil && changes.Origin == nil
	if onlyTime && now-ch.chat.mirroredAt < 1000 {
		return
	}
	ch.chat.mirrored, ch.chat.mirroredAt = cur, now
	a := wire.Action(&wire.SessionChatUpdatedAction{Chat: ch.uri, Changes: *changes})
	if _, err := h.applyLocked(sess, a, nil, nil); err != nil {
		h.log.Error().Err(err).Str("chat", ch.uri).Msg("failed to update the chat catalogue")
	}
}

// inputEntry is one session/inputNeeded entry a chat raises.
type inputEntry struct {
	id  string
	req wire.SessionInputRequest
	enc string
}

// chatInputs lists what a chat waits for: tool calls awaiting a
// confirmation or their client, and unanswered input requests of the
// active turn.
func chatInputs(chat string, st *wire.ChatState) []inputEntry {
	t := st.ActiveTurn
	if t == nil {
		return nil
	}
	var out []inputEntry
	add := func(id string, v any) {
		req := wire.NewSessionInputRequest(v)
		b, err := json.Marshal(req)
		if err != nil {
			return
		}
		out = append(out, inputEntry{id: id, req: req, enc: string(b)})
	}
	for _, p := range t.ResponseParts {
		switch part := p.Value.(type) {
		case *wire.ToolCallResponsePart:
			// The id only for a tool call that waits: this runs after most
			// chat actions over every part of the turn, finished tool calls
			// included (BenchmarkChatInputs).
			tc := part.ToolCall
			toolID := func() string { return chat + "#tool/" + tc.ToolCallID() }
			switch v := tc.Value.(type) {
			case *wire.ToolCallPendingConfirmationState:
				id := toolID()
				add(id, &wire.SessionToolConfirmationRequest{ID: id, Chat: chat, Kind: wire.SessionInputRequestKindToolConfirmation,
					TurnID: t.ID, ToolCall: wire.NewToolCallConfirmationState(v)})
			case *wire.ToolCallPendingResultConfirmationState:
				id := toolID()
				add(id, &wire.SessionToolConfirmationRequest{ID: id, Chat: chat, Kind: wire.SessionInputRequestKindToolConfirmation,
					TurnID: t.ID, ToolCall: wire.NewToolCallConfirmationState(v)})
			case *wire.ToolCallAuthRequiredState:
				id := toolID()
				add(id, &wire.SessionToolAuthenticationRequest{ID: id, Chat: chat, Kind: wire.SessionInputRequestKindToolAuthentication,
					TurnID: t.ID, ToolCall: *v})
			case *wire.ToolCallRunningState:
				if c, ok := contributorOf(tc).(*wire.ToolCallClientContributor); ok && c != nil {
					id := toolID()
					add(id, &wire.SessionToolClientExecutionRequest{ID: id, Chat: chat, Kind: wire.SessionInputRequestKindToolClientExecution,
						TurnID: t.ID, ClientID: c.ClientID, ToolCall: *v})
				}
			}
		case *wire.InputRequestResponsePart:
			if part.Response == nil {
				id := chat + "#input/" + part.Request.ID
				add(id, &wire.SessionChatInputRequest{ID: id, Chat: chat, Kind: wire.SessionInputRequestKindChatInput, Request: part.Request})
			}
		}
	}
	return out
}

// refreshInputsLocked announces on the session what a chat newly waits
// for, re-announces what changed and removes what was resolved. Called
// with the group's mutex held.
func (h *Host) refreshInputsLocked(ch *channel) {
	sess := ch.group.session
	if sess == nil || sess.removed {
		return
	}
	cur := chatInputs(ch.uri, ch.chat.st)
	if len(cur) == 0 && len(ch.chat.inputs) == 0 {
		return
	}
	seen := make(map[string]bool, len(cur))
	for _, e := range cur {
		seen[e.id] = true
		if prev, ok := ch.chat.inputs[e.id]; ok && prev == e.enc {
			continue
		}
		if ch.chat.inputs == nil {
			ch.chat.inputs = map[string]string{}
		}
		ch.chat.inputs[e.id] = e.enc
		if _, err := h.applyLocked(sess, wire.Action(&wire.SessionInputNeededSetAction{Request: e.req}), nil, nil); err != nil {
			h.log.Error().Err(err).Str("chat", ch.uri).Msg("failed to announce an input the session needs")
		}
	}
	h.dropInputsLocked(ch, func(id string) bool { return !seen[id] })
}

// dropInputsLocked removes the chat's inputNeeded entries for which drop
// says so, in a stable order.
func (h *Host) dropInputsLocked(ch *channel, drop func(id string) bool) {
	sess := ch.group.session
	var gone []string
	for id := range ch.chat.inputs {
		if drop(id) {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		delete(ch.chat.inputs, id)
		if sess == nil || sess.removed {
			continue
		}
		if _, err := h.applyLocked(sess, wire.Action(&wire.SessionInputNeededRemovedAction{ID: id}), nil, nil); err != nil {
			h.log.Error().Err(err).Str("chat", ch.uri).Msg("failed to withdraw an input the session needed")
		}
	}
}

// markUnreadLocked clears the session's IsRead flag when its default chat
// starts a turn or asks a question: there is something new to read. 0.7.0
// clears only the chat's own flag there; 0.3.0 clients, whose session is
// its default chat, clear the session's, so without this their state and a
// fresh projection would disagree. Called with the group's mutex held.
func (h *Host) markUnreadLocked(ch *channel, a wire.StateAction) {
	switch a.Value.(type) {
	case *wire.ChatTurnStartedAction, *wire.ChatInputRequestedAction:
	default:
		return
	}
	g := ch.group
	sess := g.session
	if g.defaultChat() != ch || sess == nil || sess.removed || sess.session.Status&wire.SessionStatusIsRead == 0 {
		return
	}
	if _, err := h.applyLocked(sess, wire.Action(&wire.SessionIsReadChangedAction{IsRead: false}), nil, nil); err != nil {
		h.log.Error().Err(err).Str("session", sess.uri).Msg("failed to mark the session unread")
	}
}

// summaryOf computes a session's root-catalogue entry from its state and
// its chats (docs/protocol-versions.md §5.6). Called with the group's
// mutex held.
func summaryOf(g *sessionGroup) wire.SessionSummary {
	return summaryWith(g, g.session.session.Chats)
}

// summaryWith is summaryOf with the chat catalogue given: the store writes
// the summary the chats' live states make (persist.go), which the session's
// catalogue catches up with only after the action being stored.
func summaryWith(g *sessionGroup, chats []wire.ChatSummary) wire.SessionSummary {
	s := g.summary // identity: resource, provider, createdAt
	st := *g.session.session
	st.Chats = chats
	s.Provider = st.Provider
	s.Title = st.Title
	s.Project = st.Project
	s.WorkingDirectories = st.WorkingDirectories
	s.Annotations = st.Annotations
	s.Changes = g.changes
	def := ""
	if d := g.defaultChat(); d != nil {
		def = d.uri
	}
	s.Status = reducer.AggregateStatus(st.Status, st.Chats, def)
	// The activity shown is the session's own, else that of the chat
	// whose status the aggregate shows.
	s.Activity = st.Activity
	if i := reducer.AggregateChat(st.Chats, def); s.Activity == nil && i >= 0 {
		s.Activity = st.Chats[i].Activity
	}
	modified := s.ModifiedAt
	// The compact chat catalogue of 1.0 (SessionSummary.chats), in the
	// session's order, from the chats' live states; it is always sent whole.
	s.Chats = make([]wire.SessionChatSummary, 0, len(g.chats))
	for _, c := range g.chats { // live states: the catalogue's times are coalesced
		st := c.chat.st
		if st.ModifiedAt > modified {
			modified = st.ModifiedAt
		}
		s.Chats = append(s.Chats, wire.SessionChatSummary{
			Resource: st.Resource, Title: st.Title, Origin: st.Origin, Interactivity: st.Interactivity, Status: wire.Ptr(st.Status),
		})
	}
	if def != "" {
		s.DefaultChat = wire.Ptr(def)
	}
	s.ModifiedAt = modified
	return s
}

// summaryUnchanged reports, without encoding either summary, what the
// member-by-member comparison of refreshSummaryLocked would find nothing to
// announce in: next equal to before, or (when debounced says a
// modifiedAt-only change would be coalesced) equal but for modifiedAt.
// Equal values encode to equal members; values it cannot tell equal go to
// that comparison. With hundreds of busy sessions every tool call's actions
// refresh the summary, and encoding both summaries twice over was 4 % of the
// bridge's CPU (docs/performance.md, "At scale").
func summaryUnchanged(before, next *wire.SessionSummary, debounced bool) bool {
	if reflect.DeepEqual(before, next) {
		return true
	}
	if !debounced || before.ModifiedAt == next.ModifiedAt {
		return false
	}
	timeless := *next
	timeless.ModifiedAt = before.ModifiedAt
	return reflect.DeepEqual(before, &timeless)
}

// summaryFields encodes a summary member by member for change detection.
func summaryFields(s *wire.SessionSummary) map[string]json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// refreshSummaryLocked announces a change of the session's root-catalogue
// entry to root subscribers (root/sessionSummaryChanged, changed members
// only). Changes that only move modifiedAt are coalesced to one per
// second (the spec allows debouncing this notification). While the group
// holds actions for a store write the announcement waits for them
// (pipeline.go). Called with the group's mutex held.
func (h *Host) refreshSummaryLocked(g *sessionGroup) {
	if g == nil || g.session == nil || g.session.removed {
		return
	}
	if g.pipe.held() {
		// Announced once the held actions are broadcast: the summary is
		// derived from the state, so computing it then is as good.
		g.pipe.summaryDirty = true
		return
	}
	tried := g.pipe.summaryTried
	g.pipe.summaryTried = false
	next := summaryOf(g)
	now := h.opts.Clock()
	// A change of modifiedAt alone within a second of the last note is
	// coalesced into the next one.
	debounced := now-g.lastSummaryNote < 1000
	if summaryUnchanged(&g.summary, &next, debounced) {
		return
	}
	before, after := summaryFields(&g.summary), summaryFields(&next)
	changes := map[string]json.RawMessage{}
	for k, v := range after {
		switch k {
		case "resource", "provider", "createdAt":
			continue // identity members never change
		}
		if !bytes.Equal(before[k], v) {
			changes[k] = v
		}
	}
	for k := range before {
		if _, still := after[k]; !still && k != "resource" && k != "provider" && k != "createdAt" {
			changes[k] = json.RawMessage("null")
		}
	}
	if len(changes) == 0 {
		return
	}
	if _, onlyTime := changes["modifiedAt"]; onlyTime && len(changes) == 1 && debounced {
		return
	}
	if !tried && h.summaryWriteDueLocked(g, changes) {
		// Durable before it is announced: the group's drainer writes it,
		// then comes back here and announces it, written or not (a failed
		// write is not retried for ever).
		g.pipe.summaryDirty, g.pipe.summaryTried = true, true
		h.holdLocked(g, heldAction{}, true, true)
		return
	}
	g.summary = next
	g.lastSummaryNote = now
	h.mu.Lock()
	h.broadcastRootLocked("root/sessionSummaryChanged", map[string]any{"channel": RootURI, "session": g.session.uri, "changes": changes})
	h.mu.Unlock()
}

// progressWatch is createSession's progress reporting to the connection
// that asked for it (root/progress is about its own request, so no other
// connection gets it).
type progressWatch struct {
	c     *conn
	token string
}

// progressSteps is the total of createSession progress: announced, the
// agent is up, the session is ready (or failed).
const progressSteps = 2

// reportProgressLocked sends one root/progress notification. Called with
// the group's mutex held.
func (h *Host) reportProgressLocked(g *sessionGroup, step int64, message string) {
	p := g.progress
	if p == nil {
		return
	}
	params := wire.ProgressParams{Channel: RootURI, ProgressToken: p.token, Progress: step, Total: wire.Ptr[int64](progressSteps)}
	if message != "" {
		params.Message = wire.Ptr(message)
	}
	h.mu.Lock()
	h.notifyLocked("root/progress", params, map[*conn]struct{}{p.c: {}})
	h.mu.Unlock()
}

// finishProgressLocked ends createSession's progress once the session is
// ready or has failed: the last report always has progress == total.
func (h *Host) finishProgressLocked(g *sessionGroup) {
	if g.progress == nil {
		return
	}
	msg := "the session is ready"
	if g.session.session.Lifecycle == wire.SessionLifecycleFailed {
		msg = "the session could not be created"
	}
	h.reportProgressLocked(g, progressSteps, msg)
	g.progress = nil
}

// Progress reports a step of a session's creation (for example "the agent
// has started") to the client that created it with a progressToken. It is
// a no-op for other sessions or once the session is ready.
func (h *Host) Progress(session, message string) {
	ch := h.lookup(session)
	if ch == nil || ch.kind != chanSession {
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.removed {
		h.reportProgressLocked(ch.group, 1, message)
	}
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
