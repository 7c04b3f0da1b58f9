package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// This file has the doubles of the bridge's unit tests: a host that keeps
// session and chat states with the real 0.7.0 reducers and refuses actions
// on the wrong kind of channel, as host.Host does, and a backend whose
// sessions record what the bridge asked of them. The end-to-end tests
// (*_e2e_test.go) run the real host, providers and agents.

// testClock is the clock of the fake host and of the bridges under test:
// one second per reading, so durations are whole and never zero.
type testClock struct {
	mu  sync.Mutex
	now int64
}

func (c *testClock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now += 1000
	return c.now
}

// fakeHost implements Host over reduced states.
type fakeHost struct {
	t     *testing.T
	clock *testClock

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	root      wire.RootState
	sessions  map[string]*wire.SessionState
	chats     map[string]*wire.ChatState
	terminals map[string]*wire.TerminalState
	progress  map[string][]string
	// log lists every dispatched action as "<channel> <type>".
	log []string
	// actions are the dispatched actions, by channel, in order.
	actions map[string][]wire.StateAction
	// agentIDs are the agent session ids recorded per chat.
	agentIDs map[string]string
}

func newFakeHost(t *testing.T, clock *testClock) *fakeHost {
	return &fakeHost{
		t: t, clock: clock, changed: make(chan struct{}),
		sessions: map[string]*wire.SessionState{}, chats: map[string]*wire.ChatState{},
		terminals: map[string]*wire.TerminalState{}, progress: map[string][]string{},
		actions: map[string][]wire.StateAction{},
	}
}

func (h *fakeHost) signalLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Dispatch reduces a into the state of channel, refusing an action whose
// kind does not match the channel's (host.Host does the same).
func (h *fakeHost) Dispatch(channel string, a wire.StateAction) (int64, error) {
	a = wire.NewStateAction(a.Value)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.applyLocked(channel, a); err != nil {
		return 0, err
	}
	h.log = append(h.log, channel+" "+a.Type())
	h.actions[channel] = append(h.actions[channel], a)
	h.signalLocked()
	return int64(len(h.log)), nil
}

func (h *fakeHost) applyLocked(channel string, a wire.StateAction) error {
	clock := reducer.Clock(h.clock.Now)
	typ := a.Type()
	switch {
	case channel == rootChannel && strings.HasPrefix(typ, "root/"):
		reducer.Root(&h.root, a, clock)
	case h.sessions[channel] != nil && strings.HasPrefix(typ, "session/"):
		reducer.Session(h.sessions[channel], a, clock)
	case h.chats[channel] != nil && strings.HasPrefix(typ, "chat/"):
		reducer.Chat(h.chats[channel], a, clock)
	case h.terminals[channel] != nil && strings.HasPrefix(typ, "terminal/"):
		reducer.Terminal(h.terminals[channel], a, clock)
	default:
		return fmt.Errorf("fake host: %s cannot be applied to %s", typ, channel)
	}
	return nil
}

func (h *fakeHost) ReadSession(channel string, fn func(*wire.SessionState)) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.sessions[channel]
	if st != nil {
		fn(st)
	}
	return st != nil
}

func (h *fakeHost) ReadChat(channel string, fn func(*wire.ChatState)) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.chats[channel]
	if st != nil {
		fn(st)
	}
	return st != nil
}

func (h *fakeHost) CreateTerminal(channel string, st wire.TerminalState) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.terminals[channel] != nil {
		return errors.New("fake host: terminal exists")
	}
	h.terminals[channel] = &st
	h.signalLocked()
	return nil
}

func (h *fakeHost) RemoveTerminal(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.terminals, channel)
	h.signalLocked()
}

func (h *fakeHost) SetAgentSessionID(chat, id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chats[chat] == nil {
		return errors.New("unknown chat " + chat)
	}
	if h.agentIDs == nil {
		h.agentIDs = map[string]string{}
	}
	h.agentIDs[chat] = id
	h.signalLocked()
	return nil
}

func (h *fakeHost) Progress(session, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress[session] = append(h.progress[session], message)
	h.signalLocked()
}

// addSession adds a session in the creating lifecycle with its default
// chat, whose draft is draft, as the host does before CreateSession.
func (h *fakeHost) addSession(session, chat string, cfg wire.SessionConfigState, draft *wire.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[session] = &wire.SessionState{
		Provider: "fake", Lifecycle: wire.SessionLifecycleCreating, Config: &cfg,
		ActiveClients: []wire.SessionActiveClient{}, Chats: []wire.ChatSummary{}, DefaultChat: wire.Ptr(chat),
	}
	h.chats[chat] = &wire.ChatState{Resource: chat, Turns: []wire.Turn{}, Draft: draft}
}

// addChat adds a further chat, as the host does before CreateChat.
func (h *fakeHost) addChat(chat string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chats[chat] = &wire.ChatState{Resource: chat, Turns: []wire.Turn{}}
}

// client applies a client's action, as the host does once it validated
// it, and hands it to the bridge.
func (h *fakeHost) client(b *Bridge, channel string, a wire.StateAction) {
	h.t.Helper()
	_, err := h.Dispatch(channel, a)
	require.NoError(h.t, err)
	b.ClientAction(h.t.Context(), channel, wire.NewStateAction(a.Value), wire.ActionOrigin{ClientID: "c1", ClientSeq: 1})
}

// startTurn starts a turn on chat with text (and a model, when not "")
// and returns its id.
func (h *fakeHost) startTurn(b *Bridge, chat, turnID, text, model string) {
	h.t.Helper()
	msg := wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
	if model != "" {
		msg.Model = &wire.ModelSelection{ID: model}
	}
	h.client(b, chat, wire.Action(&wire.ChatTurnStartedAction{TurnID: turnID, StartedAt: reducer.FormatTime(h.clock.Now()), Message: msg}))
}

// waitFor waits, up to its own deadline, until cond holds for the host's
// state (called with the host locked).
func (h *fakeHost) waitFor(what string, cond func() bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 10*time.Second)
	defer cancel()
	for {
		h.mu.Lock()
		ok := cond()
		ch := h.changed
		h.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			h.mu.Lock()
			defer h.mu.Unlock()
			b, _ := json.MarshalIndent(map[string]any{"sessions": h.sessions, "chats": h.chats, "log": h.log}, "", "  ")
			h.t.Fatalf("waiting for %s: %v\nhost state:\n%s", what, ctx.Err(), b)
		}
	}
}

// turn waits until turnID of chat has ended and returns it.
func (h *fakeHost) turn(chat, turnID string) wire.Turn {
	h.t.Helper()
	var out wire.Turn
	h.waitFor("turn "+turnID+" of "+chat+" to end", func() bool {
		for _, t := range h.chats[chat].Turns {
			if t.ID == turnID {
				out = t
				return true
			}
		}
		return false
	})
	return out
}

// fakeProvider opens fakeSessions.
type fakeProvider struct {
	id      string
	openErr error

	mu       sync.Mutex
	sessions []*fakeSession
}

func (p *fakeProvider) Info() backend.ProviderInfo {
	return backend.ProviderInfo{ID: p.id, DisplayName: "Fake " + p.id}
}

func (p *fakeProvider) OpenSession(ctx context.Context, opts backend.SessionOptions, sink backend.Sink) (backend.Session, error) {
	if p.openErr != nil {
		return nil, p.openErr
	}
	s := &fakeSession{opts: opts, sink: sink, model: "m1"}
	if opts.Model != "" {
		s.model = opts.Model
	}
	p.mu.Lock()
	p.sessions = append(p.sessions, s)
	p.mu.Unlock()
	sink.Event(backend.TitleChanged{Title: "title of " + opts.SessionID})
	sink.Event(s.config())
	return s, nil
}

func (p *fakeProvider) Close(ctx context.Context) error { return nil }

// session returns the backend session opened for a chat.
func (p *fakeProvider) session(chat string) *fakeSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sessions {
		if s.opts.SessionID == chat {
			return s
		}
	}
	return nil
}

func (p *fakeProvider) opened() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// fakeSession answers every prompt with a plan and one text chunk naming
// the model it runs on, the working directory and the prompt. The prompt
// "ask" then asks permission for a tool call and reports the answer
// ("outcome=<option id>" or "outcome=cancelled"); "wait" waits until the
// turn is cancelled. Its "model" setting takes m1, m2 or m3.
type fakeSession struct {
	opts backend.SessionOptions
	sink backend.Sink

	mu        sync.Mutex
	model     string
	calls     []string // SetConfig, Prompt and Cancel calls, in order
	closed    bool
	release   chan struct{} // when set, Prompt waits for it (or cancellation)
	cancelled chan struct{} // closed by Cancel; replaced by each Prompt
}

func (s *fakeSession) config() backend.ConfigChanged {
	s.mu.Lock()
	defer s.mu.Unlock()
	return backend.ConfigChanged{Options: []backend.ConfigOption{{
		ID: "model", Name: "Model", Category: "model", Current: s.model,
		Values: []backend.ConfigValue{{ID: "m1"}, {ID: "m2"}, {ID: "m3"}},
	}}}
}

func (s *fakeSession) Prompt(ctx context.Context, p backend.Prompt) (backend.TurnResult, error) {
	cancelled := make(chan struct{})
	s.mu.Lock()
	s.calls = append(s.calls, "prompt "+p.Text)
	model, release := s.model, s.release
	s.cancelled = cancelled
	s.mu.Unlock()
	s.sink.Event(backend.Plan{Entries: []backend.PlanEntry{{Content: "answer", Status: "in_progress"}}})
	s.sink.Event(backend.TextChunk{Text: fmt.Sprintf("model=%s cwd=%s: %s", model, s.opts.Cwd, p.Text)})
	switch p.Text {
	case "ask":
		s.sink.Event(backend.ToolCall{ID: "tc1", Title: "Run ls", Kind: "execute", Status: backend.ToolPending})
		answer := make(chan backend.PermissionOutcome, 1)
		s.sink.Event(backend.PermissionRequest{
			ToolCall: backend.ToolCall{ID: "tc1", Update: true},
			Options: []backend.PermissionOption{
				{ID: "allow", Name: "Allow", Kind: backend.AllowOnce}, {ID: "reject", Name: "Reject", Kind: backend.RejectOnce},
			},
			Respond: func(o backend.PermissionOutcome) { answer <- o },
		})
		var o backend.PermissionOutcome
		select {
		case o = <-answer:
		case <-ctx.Done():
			return backend.TurnResult{}, ctx.Err()
		}
		status, outcome := backend.ToolCompleted, o.OptionID
		if o.Cancelled || o.OptionID != "allow" {
			status = backend.ToolFailed
		}
		if o.Cancelled {
			outcome = "cancelled"
		}
		s.sink.Event(backend.ToolCall{ID: "tc1", Update: true, Status: status})
		s.sink.Event(backend.TextChunk{Text: " outcome=" + outcome})
	case "wait":
		select {
		case <-cancelled:
			return backend.TurnResult{StopReason: backend.StopCancelled}, nil
		case <-ctx.Done():
			return backend.TurnResult{}, ctx.Err()
		}
	}
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return backend.TurnResult{}, ctx.Err()
		}
	}
	return backend.TurnResult{StopReason: backend.StopEndTurn}, nil
}

func (s *fakeSession) Cancel(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "cancel")
	if s.cancelled != nil {
		select {
		case <-s.cancelled:
		default:
			close(s.cancelled)
		}
	}
	return nil
}

func (s *fakeSession) SetConfig(ctx context.Context, key, value string) error {
	s.mu.Lock()
	s.calls = append(s.calls, "set "+key+"="+value)
	if key != "model" || (value != "m1" && value != "m2" && value != "m3") {
		s.mu.Unlock()
		return fmt.Errorf("the agent has no setting %s=%s", key, value)
	}
	s.model = value
	s.mu.Unlock()
	s.sink.Event(s.config())
	return nil
}

func (s *fakeSession) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *fakeSession) callLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *fakeSession) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// rig is a bridge over one fakeProvider and a fakeHost.
type rig struct {
	t     *testing.T
	host  *fakeHost
	prov  *fakeProvider
	b     *Bridge
	clock *testClock
}

func newRig(t *testing.T, policy mapping.Policy) *rig {
	p := &fakeProvider{id: "fake"}
	r := newRigOver(t, policy, p)
	r.prov = p
	return r
}

// newRigOver is a rig whose bridge runs over provider p, which must have
// the id "fake".
func newRigOver(t *testing.T, policy mapping.Policy, p backend.Provider) *rig {
	clock := &testClock{now: 1_700_000_000_000}
	h := newFakeHost(t, clock)
	n := 0
	var idMu sync.Mutex
	b := New([]backend.Provider{p}, Options{
		Approve: policy,
		Logger:  zerolog.New(zerolog.NewTestWriter(t)),
		NewID:   func() string { idMu.Lock(); defer idMu.Unlock(); n++; return fmt.Sprintf("id%d", n) },
		Clock:   clock.Now,
	})
	b.Attach(h)
	require.NoError(t, b.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
		defer cancel()
		b.Close(ctx)
	})
	return &rig{t: t, host: h, b: b, clock: clock}
}

// createSession creates a session with its default chat and waits until
// it has left the creating lifecycle.
func (r *rig) createSession(session, chat string, params wire.CreateSessionParams, draft *wire.Message) wire.SessionLifecycle {
	r.t.Helper()
	r.host.addSession(session, chat, r.b.ResolveSessionConfig(r.t.Context(), "fake"), draft)
	params.Channel = session
	r.b.CreateSession(r.t.Context(), session, chat, params)
	var lc wire.SessionLifecycle
	r.host.waitFor("session "+session+" to be created", func() bool {
		lc = r.host.sessions[session].Lifecycle
		return lc != wire.SessionLifecycleCreating
	})
	return lc
}

// createChat adds a further chat to a session.
func (r *rig) createChat(session, chat string, params wire.CreateChatParams) {
	r.t.Helper()
	r.host.addChat(chat)
	params.Channel, params.Chat = session, chat
	r.b.CreateChat(r.t.Context(), session, chat, params)
}

// text is a turn's answer: its markdown parts but the plan's checklist.
func text(t wire.Turn) string {
	var b strings.Builder
	for _, p := range t.ResponseParts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok && !strings.HasPrefix(m.Content, "**Plan**") {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}
