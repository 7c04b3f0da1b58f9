package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// configTimeout bounds a SetConfig call to the agent.
const configTimeout = 10 * time.Second

// session is one AHP session and the backend session behind it.
//
// Events from the backend arrive on the backend's goroutine (Event), client
// actions on the host's per-session worker, and the end of a turn on the
// turn's goroutine; mu serialises them, and actions are dispatched while it
// is held so that the order of the AHP stream is the order of events.
// Permission and question answers are sent to the backend after mu is
// released, since a backend may block on its connection.
type session struct {
	b        *Bridge
	log      zerolog.Logger
	channel  string
	provider string
	cwd      string
	model    string

	ready chan struct{} // closed when the backend session is open (or failed)

	mu        sync.Mutex
	be        backend.Session // nil until ready, or when opening failed
	openErr   error
	turn      *mapping.Turn // the turn the backend is working on; nil before the first
	turnDone  chan struct{} // closed when turn's Prompt has returned
	gone      bool          // the clients already ended turn (turnCancelled); its actions are not dispatched
	perms     map[string]pendingPermission
	resources map[string]mapping.Resource
	commands  []backend.Command
	meta      map[string]any
	deferred  map[string]string // config changes waiting for the turn to end
	terminals []string
	disposed  bool
}

type pendingPermission struct {
	turnID  string
	options []backend.PermissionOption
	respond func(backend.PermissionOutcome)
}

func newSession(b *Bridge, channel, provider, cwd string) *session {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	done := make(chan struct{})
	close(done)
	return &session{
		b:         b,
		log:       b.log.With().Str("session", channel).Str("provider", provider).Logger(),
		channel:   channel,
		provider:  provider,
		cwd:       cwd,
		ready:     make(chan struct{}),
		turnDone:  done,
		perms:     map[string]pendingPermission{},
		resources: map[string]mapping.Resource{},
		deferred:  map[string]string{},
	}
}

// open creates the backend session and reports the outcome to the clients.
func (s *session) open(ctx context.Context, p backend.Provider) {
	be, err := p.OpenSession(ctx, backend.SessionOptions{
		SessionID: s.channel,
		Cwd:       s.cwd,
		Model:     s.model,
	}, backend.SinkFunc(s.Event))

	// Settings the clients changed while the session was being created were
	// deferred (setConfig defers while s.be is nil); send them before the
	// session is ready, so the first prompt already runs with them. s.be
	// stays nil until none is left, which keeps later changes in order.
	s.mu.Lock()
	for err == nil && !s.disposed && len(s.deferred) > 0 {
		deferred := s.deferred
		s.deferred = map[string]string{}
		s.mu.Unlock()
		for k, v := range deferred {
			s.applyConfig(be, k, v)
		}
		s.mu.Lock()
	}
	s.be, s.openErr = be, err
	disposed := s.disposed
	close(s.ready)
	if err != nil {
		s.log.Warn().Err(err).Msg("agent session could not be created")
		s.dispatchLocked(wire.SessionCreationFailedAction{Error: wire.ErrorInfo{ErrorType: "agentError", Message: err.Error()}})
	} else if !disposed {
		s.dispatchLocked(wire.SessionReadyAction{})
	}
	s.mu.Unlock()

	if err == nil && disposed {
		_ = be.Close(context.WithoutCancel(ctx))
	}
}

// Event receives the backend's events (backend.Sink).
func (s *session) Event(ev backend.Event) {
	var after []func()
	s.mu.Lock()
	switch e := ev.(type) {
	case backend.TerminalStarted:
		s.terminalStarted(e)
	case backend.TerminalOutput:
		s.dispatchTo(mapping.TerminalChannel(e.TerminalID), wire.TerminalDataAction{Data: e.Data})
	case backend.TerminalExited:
		s.dispatchTo(mapping.TerminalChannel(e.TerminalID), wire.TerminalExitedAction{ExitCode: e.ExitCode})
	case backend.TerminalReleased:
		// The channel stays so clients can still read what the command printed.
	case backend.CommandsChanged:
		s.commands = e.Commands
	case backend.ConfigChanged:
		s.b.learnModels(s.provider, e.Options)
		s.applyLocked(ev)
	case backend.Disconnected:
		s.log.Warn().Err(e.Err).Msg("agent disconnected")
	case backend.PermissionRequest:
		after = append(after, s.permissionLocked(e)...)
	case backend.Question:
		if s.turn == nil || s.turn.Ended() || s.gone {
			after = append(after, func() { e.Respond(nil, true) })
			break
		}
		_, acts := s.turn.AskQuestion(e)
		s.dispatchActs(acts)
	default:
		s.applyLocked(ev)
	}
	s.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// applyLocked maps an event through the current turn, or as a session-level
// event when no AHP turn is open: before the first turn, after a turn ended,
// and while the agent winds down a turn the clients cancelled. Session-level
// events (title, settings, plan, custom updates) are never lost that way —
// e.g. the agent's answer to a model change applied right after a cancelled
// turn — while turn-scoped ones have nothing to attach to and are dropped.
func (s *session) applyLocked(ev backend.Event) {
	if s.turn == nil || s.turn.Ended() || s.gone {
		var acts []wire.StateAction
		acts, s.meta = mapping.SessionEvent(ev, s.meta)
		if s.turn != nil {
			// endTurn takes the session _meta from the turn.
			s.turn.SetMeta(s.meta)
		}
		s.dispatchActs(acts)
		return
	}
	// endTurn takes the session _meta back from the turn.
	s.dispatchActs(s.turn.Apply(ev))
}

// permissionLocked asks the clients, or answers by policy. It returns the
// answers to send once mu is released.
func (s *session) permissionLocked(req backend.PermissionRequest) []func() {
	if s.turn == nil || s.turn.Ended() || s.gone {
		return []func(){func() { req.Respond(backend.PermissionOutcome{Cancelled: true}) }}
	}
	if decide, approve := mapping.AutoApprove(s.b.opts.Approve, req.ToolCall.Kind); decide {
		s.dispatchActs(s.turn.AutoPermission(req, approve))
		outcome := mapping.AutoOutcome(req.Options, approve)
		return []func(){func() { req.Respond(outcome) }}
	}
	acts := s.turn.Permission(req)
	id := s.turn.ToolCallID(req.ToolCall.ID)
	var after []func()
	if old, ok := s.perms[id]; ok {
		after = append(after, func() { old.respond(backend.PermissionOutcome{Cancelled: true}) })
	}
	s.perms[id] = pendingPermission{turnID: s.turn.ID(), options: req.Options, respond: req.Respond}
	s.dispatchActs(acts)
	return after
}

func (s *session) terminalStarted(e backend.TerminalStarted) {
	ch := mapping.TerminalChannel(e.TerminalID)
	st := wire.TerminalState{
		Title:   firstNonEmpty(e.Command, "terminal"),
		Content: []wire.TerminalContentPart{},
		Claim:   wire.NewTerminalClaim(wire.TerminalSessionClaim{Session: s.channel}),
	}
	if e.Cwd != "" {
		st.Cwd = wire.Ptr(mapping.FileURI(e.Cwd))
	}
	if s.turn != nil && !s.turn.Ended() {
		claim := wire.TerminalSessionClaim{Session: s.channel, TurnID: wire.Ptr(s.turn.ID())}
		st.Claim = wire.NewTerminalClaim(claim)
	}
	if err := s.b.host.CreateTerminal(ch, st); err != nil {
		s.log.Warn().Err(err).Str("terminal", ch).Msg("could not publish the agent's terminal")
		return
	}
	s.terminals = append(s.terminals, ch)
}

// startTurn runs a turn the clients started. The backend gets the prompt
// once the previous turn's Prompt has returned, so a cancelled turn's late
// events never land in the new one.
func (s *session) startTurn(a *wire.SessionTurnStartedAction) {
	t := mapping.NewTurn(a.TurnID, s.b.opts.NewID)
	prompt := mapping.PromptFromTurn(a)

	s.mu.Lock()
	prev := s.turnDone
	done := make(chan struct{})
	s.turnDone = done
	s.mu.Unlock()

	s.b.wg.Add(1)
	go func() {
		defer s.b.wg.Done()
		defer close(done)
		select {
		case <-prev:
		case <-s.b.ctx.Done():
			return
		}
		select {
		case <-s.ready:
		case <-s.b.ctx.Done():
			return
		}
		s.mu.Lock()
		if s.disposed {
			s.mu.Unlock()
			return
		}
		if !s.turnActive(a.TurnID) {
			// The clients cancelled the turn before the agent got it.
			s.mu.Unlock()
			return
		}
		s.turn, s.gone = t, false
		t.SetMeta(s.meta)
		be, openErr := s.be, s.openErr
		s.mu.Unlock()

		var (
			res backend.TurnResult
			err error
		)
		if be == nil {
			err = fmt.Errorf("the agent session is not available: %w", openErr)
		} else {
			res, err = be.Prompt(s.b.ctx, prompt)
		}
		s.endTurn(t, res, err)
	}()
}

// turnActive reports whether turnID is the session's active turn in the
// host's state.
func (s *session) turnActive(turnID string) bool {
	active := false
	s.b.host.ReadSession(s.channel, func(st *wire.SessionState) {
		active = st.ActiveTurn != nil && st.ActiveTurn.ID == turnID
	})
	return active
}

// endTurn publishes the end of a turn and settles what it left open.
func (s *session) endTurn(t *mapping.Turn, res backend.TurnResult, err error) {
	if err != nil && errors.Is(err, context.Canceled) && s.b.ctx.Err() != nil {
		res, err = backend.TurnResult{StopReason: backend.StopCancelled}, nil
	}
	var after []func()
	s.mu.Lock()
	if s.turn == t {
		acts := t.End(res, err)
		if !s.gone {
			s.dispatchActs(acts)
		}
		s.meta = t.Meta()
		for uri, r := range t.Resources() {
			s.resources[uri] = r
		}
		after = s.settleLocked(t.ID())
	}
	deferred := s.deferred
	s.deferred = map[string]string{}
	be := s.be
	s.mu.Unlock()
	for _, f := range after {
		f()
	}
	for k, v := range deferred {
		s.applyConfig(be, k, v)
	}
	if err != nil {
		s.log.Info().Err(err).Msg("turn ended with an error")
	}
	s.consumeSteering()
}

// settleLocked answers every permission and question still open for turnID:
// the turn is over, so nobody can answer them any more.
func (s *session) settleLocked(turnID string) []func() {
	var after []func()
	for id, p := range s.perms {
		if p.turnID == turnID {
			respond := p.respond
			after = append(after, func() { respond(backend.PermissionOutcome{Cancelled: true}) })
			delete(s.perms, id)
		}
	}
	if s.turn != nil && s.turn.ID() == turnID {
		for _, pq := range s.turn.PendingQuestions() {
			if q, ok := s.turn.TakeQuestion(pq.Request.ID); ok {
				after = append(after, func() { q.Question.Respond(nil, true) })
			}
		}
	}
	return after
}

// consumeSteering sends a steering message left when a turn ends as the next
// turn: ACP has no way to inject a message into a running turn.
func (s *session) consumeSteering() {
	var msg *wire.PendingMessage
	s.b.host.ReadSession(s.channel, func(st *wire.SessionState) {
		if st.ActiveTurn == nil && st.SteeringMessage != nil {
			m := *st.SteeringMessage
			msg = &m
		}
	})
	if msg == nil {
		return
	}
	s.b.dispatch(s.channel, wire.SessionPendingMessageRemovedAction{Kind: wire.PendingMessageKindSteering, ID: msg.ID})
	start := wire.SessionTurnStartedAction{TurnID: s.b.opts.NewID(), Message: msg.Message}
	if _, err := s.b.host.Dispatch(s.channel, wire.Action(start)); err != nil {
		s.log.Warn().Err(err).Msg("could not start a turn for the steering message")
		return
	}
	s.startTurn(&start)
}

// cancelTurn handles a client's turnCancelled: the AHP turn is already over,
// the agent is asked to stop, and what the turn left open is answered.
func (s *session) cancelTurn(ctx context.Context, turnID string) {
	s.mu.Lock()
	var after []func()
	var be backend.Session
	if s.turn != nil && s.turn.ID() == turnID && !s.turn.Ended() {
		s.gone = true
		after = s.settleLocked(turnID)
		be = s.be
		s.clearActivityLocked()
	}
	s.mu.Unlock()
	for _, f := range after {
		f()
	}
	if be != nil {
		if err := be.Cancel(ctx); err != nil {
			s.log.Warn().Err(err).Msg("cancelling the agent's turn")
		}
	}
}

// clearActivityLocked clears the session's activity (the plan entry in
// progress) when the clients cancelled the turn: the turn's own end actions,
// which clear it on every other ending, are not dispatched for a turn the
// clients already ended, and the reducer keeps the activity across turns.
func (s *session) clearActivityLocked() {
	set := false
	s.b.host.ReadSession(s.channel, func(st *wire.SessionState) {
		set = st.Summary.Activity != nil
	})
	if set {
		s.dispatchLocked(wire.SessionActivityChangedAction{})
	}
}

// confirmTool answers a pending permission with the client's confirmation.
func (s *session) confirmTool(toolCallID string, action wire.StateAction) {
	c, ok := mapping.ConfirmationOf(action)
	if !ok {
		return
	}
	s.mu.Lock()
	p, found := s.perms[toolCallID]
	delete(s.perms, toolCallID)
	if s.turn != nil {
		s.turn.ToolConfirmed(toolCallID, c.Approved)
	}
	s.mu.Unlock()
	if found {
		p.respond(mapping.PermissionOutcome(p.options, c.Action))
	}
}

// completeInput answers a backend question with the client's answers.
func (s *session) completeInput(a *wire.SessionInputCompletedAction) {
	s.mu.Lock()
	var (
		pq mapping.PendingQuestion
		ok bool
	)
	if s.turn != nil {
		pq, ok = s.turn.TakeQuestion(a.RequestID)
	}
	s.mu.Unlock()
	if !ok {
		return
	}
	answers, declined := mapping.InputAnswers(pq.Request, a)
	pq.Question.Respond(answers, declined)
}

// setConfig changes an agent setting now, or after the running turn.
func (s *session) setConfig(key, value string) {
	s.mu.Lock()
	running := s.turn != nil && !s.turn.Ended()
	be := s.be
	if running || be == nil {
		s.deferred[key] = value
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.applyConfig(be, key, value)
}

func (s *session) applyConfig(be backend.Session, key, value string) {
	if be == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.b.ctx, configTimeout)
	defer cancel()
	if err := be.SetConfig(ctx, key, value); err != nil {
		s.log.Warn().Err(err).Str("key", key).Str("value", value).Msg("the agent refused a setting")
	}
}

func (s *session) completions(params wire.CompletionsParams) []wire.CompletionItem {
	s.mu.Lock()
	cmds := s.commands
	s.mu.Unlock()
	items := mapping.CompletionItems(cmds, params)
	if items == nil {
		items = []wire.CompletionItem{}
	}
	return items
}

func (s *session) resource(uri string) (mapping.Resource, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.resources[uri]; ok {
		return r, true
	}
	if s.turn != nil {
		return s.turn.Resource(uri)
	}
	return mapping.Resource{}, false
}

// shutdown ends a running turn as cancelled and closes the backend session.
func (s *session) shutdown(ctx context.Context) {
	s.mu.Lock()
	var after []func()
	be := s.be
	if s.turn != nil && !s.turn.Ended() {
		if !s.gone {
			s.dispatchActs(s.turn.End(backend.TurnResult{StopReason: backend.StopCancelled}, nil))
		}
		s.gone = true
		after = s.settleLocked(s.turn.ID())
		if be != nil {
			after = append(after, func() { _ = be.Cancel(ctx) })
		}
	}
	s.disposed = true
	s.mu.Unlock()
	for _, f := range after {
		f()
	}
	if be != nil {
		if err := be.Close(ctx); err != nil {
			s.log.Debug().Err(err).Msg("closing the agent session")
		}
	}
}

// dispose is shutdown plus removing the session's terminal channels.
func (s *session) dispose(ctx context.Context) {
	s.shutdown(ctx)
	s.mu.Lock()
	terms := s.terminals
	s.terminals = nil
	s.mu.Unlock()
	for _, ch := range terms {
		s.b.host.RemoveTerminal(ch)
	}
}

func (s *session) dispatchLocked(v any) { s.b.dispatch(s.channel, v) }

func (s *session) dispatchTo(channel string, v any) { s.b.dispatch(channel, v) }

func (s *session) dispatchActs(acts []wire.StateAction) {
	for _, a := range acts {
		if _, err := s.b.host.Dispatch(s.channel, a); err != nil {
			s.log.Debug().Err(err).Msg("dispatch refused")
		}
	}
}
