package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/logfield"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// configTimeout bounds a SetConfig call to the agent.
const configTimeout = 10 * time.Second

// chat is one AHP chat and the backend session behind it.
//
// Events from the backend arrive on the backend's goroutine (Event), client
// actions on the host's per-channel worker, and the end of a turn on the
// turn's goroutine; mu serialises them, and actions are dispatched while it
// is held so that the order of the AHP stream is the order of events.
// Permission and question answers are sent to the backend after mu is
// released, since a backend may block on its connection.
type chat struct {
	b    *Bridge
	sess *session
	log  zerolog.Logger
	uri  string
	cwd  string
	// isDefault is set for the session's default chat: its backend
	// session's outcome is the session's (ready or creationFailed), and its
	// title and settings are the session's.
	isDefault bool

	ready chan struct{} // closed when the backend session is open (or failed)
	// holdArmed: a flush of the turn's held tool call is due (toolHold).
	holdArmed bool

	mu        sync.Mutex
	be        backend.Session // nil until ready, or when opening failed
	openErr   error
	turn      *mapping.Turn // the turn the backend is working on; nil before the first
	turnDone  chan struct{} // closed when turn's Prompt has returned
	gone      bool          // the clients already ended turn (turnCancelled); its actions are not dispatched
	perms     map[string]pendingPermission
	resources map[string]mapping.Resource
	commands  []backend.Command
	deferred  map[string]string // config changes waiting for the turn to end
	// model is the model the backend session runs, as it last reported (or
	// as it was opened with); a turn asking for another switches it first.
	model string
	// refused is a model the backend session would not switch to; turns
	// asking for it again run on the current model without asking again.
	refused   string
	terminals []string
	disposed  bool
	// configSeen is set once the backend session has reported its settings
	// for the first time: that first report is the agent's defaults for a
	// new session, later ones are this chat's own choices.
	configSeen bool
	// options are the settings the backend session last reported: what the
	// session's config values go back to when the agent refuses a change.
	options []backend.ConfigOption
	// notices are what the user must be told that no turn was open to show
	// (a setting the agent refused); the chat's next turn starts with them.
	notices []string
	// restored is set for a chat the host brought back from its store: its
	// backend session is opened on first use (restore.go).
	restored *restoredChat
	// replay is the agent's replay of its own session (replay.go).
	replay replayState
}

type pendingPermission struct {
	turnID  string
	options []backend.PermissionOption
	respond func(backend.PermissionOutcome)
}

func newChat(s *session, uri, cwd string, isDefault bool) *chat {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	done := make(chan struct{})
	close(done)
	return &chat{
		b:         s.b,
		sess:      s,
		log:       logfield.Str(s.log, "chat", uri),
		uri:       uri,
		cwd:       cwd,
		isDefault: isDefault,
		ready:     make(chan struct{}),
		turnDone:  done,
		perms:     map[string]pendingPermission{},
		resources: map[string]mapping.Resource{},
		deferred:  map[string]string{},
	}
}

// open creates the backend session, applies settings and reports the
// outcome: on the session for its default chat, in the log (and to the
// chat's turns) for another.
func (c *chat) open(ctx context.Context, settings []setting) {
	be, err := c.sess.provider.OpenSession(ctx, backend.SessionOptions{
		SessionID:  c.uri,
		Cwd:        c.cwd,
		Model:      c.model,
		Resume:     c.resumeID(),
		Import:     c.imported(),
		Fork:       c.forkSource(),
		Roots:      c.sess.roots(c.cwd),  // mcp.go
		McpServers: c.sess.mcp.servers(), // mcp.go
	}, backend.SinkFunc(c.Event))
	var authErr *backend.AuthRequiredError
	if errors.As(err, &authErr) && c.isDefault && ctx.Err() == nil {
		c.mu.Lock()
		disposed := c.disposed
		c.mu.Unlock()
		if !disposed {
			c.awaitAuth(settings, authErr) // auth.go: opened again once signed in
			return
		}
	}
	c.b.authChanged(c.sess.providerID)
	if err == nil && c.isDefault {
		c.b.host.Progress(c.sess.uri, fmt.Sprintf("the %s agent is running", c.sess.providerID))
	}
	if err == nil {
		for _, st := range settings {
			if c.restored != nil {
				c.restoreConfig(be, st)
				continue
			}
			c.applyConfig(be, st.key, st.value)
		}
	}

	// Settings the clients changed while the session was being created were
	// deferred (setConfig defers while c.be is nil); send them before the
	// session is ready, so the first prompt already runs with them. c.be
	// stays nil until none is left, which keeps later changes in order.
	c.mu.Lock()
	for err == nil && !c.disposed && len(c.deferred) > 0 {
		deferred := c.deferred
		c.deferred = map[string]string{}
		c.mu.Unlock()
		for _, st := range settingsOf(anyMap(deferred)) {
			c.applyConfig(be, st.key, st.value)
		}
		c.mu.Lock()
	}
	c.be, c.openErr = be, err
	disposed := c.disposed
	close(c.ready)
	switch {
	case err != nil && c.restored != nil:
		// The session is ready since before the restart: its turns fail.
		c.log.Warn().Err(err).Msg("the restored chat's agent session could not be opened; its turns will fail")
	case err != nil && c.isDefault:
		c.log.Warn().Err(err).Msg("agent session could not be created")
		c.dispatchTo(c.sess.uri, &wire.SessionCreationFailedAction{Error: wire.ErrorInfo{ErrorType: "agentError", Message: err.Error()}})
	case err != nil:
		c.log.Warn().Err(err).Msg("the chat's agent session could not be created; its turns will fail")
	case c.isDefault && !disposed && c.restored == nil:
		c.dispatchTo(c.sess.uri, &wire.SessionReadyAction{})
	}
	c.mu.Unlock()

	if err == nil && disposed {
		_ = be.Close(context.WithoutCancel(ctx))
	}
}

// fail marks a chat whose backend session cannot be opened at all: its
// turns end with err.
func (c *chat) fail(err error) {
	c.log.Warn().Err(err).Msg("the chat's agent session cannot be created; its turns will fail")
	c.mu.Lock()
	c.openErr = err
	close(c.ready)
	c.mu.Unlock()
}

// Event receives the backend's events (backend.Sink).
func (c *chat) Event(ev backend.Event) {
	if c.replayed(ev) { // replay.go
		return
	}
	var after []func()
	c.mu.Lock()
	switch e := ev.(type) {
	case backend.TerminalStarted:
		c.terminalStarted(e)
	case backend.TerminalOutput:
		c.dispatchTo(mapping.TerminalChannel(e.TerminalID), &wire.TerminalDataAction{Data: e.Data})
	case backend.TerminalExited:
		var code *int64
		if e.ExitCode != nil {
			code = wire.Ptr(int64(*e.ExitCode))
		}
		c.dispatchTo(mapping.TerminalChannel(e.TerminalID), &wire.TerminalExitedAction{ExitCode: code})
		if c.turnOpenLocked() {
			// The exit code goes into the terminal's tool content; a tool
			// call held back (mapping.Turn.Holding) is settled first.
			c.dispatchActs(c.turn.Apply(e))
		}
	case backend.TerminalReleased:
		// The channel stays so clients can still read what the command printed.
	case backend.CommandsChanged:
		c.commands = e.Commands
	case backend.ConfigChanged:
		c.b.learnModels(c.sess.providerID, e.Options, !c.configSeen)
		c.configSeen = true
		c.options = e.Options
		if m := mapping.CurrentModel(e.Options); m != "" {
			c.model = m
		}
		c.applyLocked(ev)
		if c.isDefault {
			c.sess.updateMeta(func(meta map[string]any) ([]wire.StateAction, map[string]any) {
				return mapping.ConfigSchema(meta, e.Options)
			}, c.dispatchActs)
		}
	case backend.SettingRefused:
		c.refusedLocked(e.Key, e.Value, e.Err)
	case backend.ContextUsage:
		c.sess.updateMeta(func(meta map[string]any) ([]wire.StateAction, map[string]any) {
			return mapping.ContextWindow(meta, c.uri, e)
		}, c.dispatchActs)
	case backend.Plan, backend.Custom:
		c.applyMetaLocked(ev)
	case backend.Disconnected:
		c.log.Warn().Err(e.Err).Msg("agent disconnected")
	case backend.Attached:
		c.attachedLocked(e)
	case backend.McpServerStatus:
		c.dispatchTo(c.sess.uri, mcpStateAction(e)) // mcp.go
	case backend.FileEdited:
		c.sess.observeChanges(c.uri, e) // changes.go
	case backend.PermissionRequest:
		after = append(after, c.permissionLocked(e)...)
	case backend.Question:
		if !c.turnOpenLocked() {
			after = append(after, func() { e.Respond(nil, true) })
			break
		}
		_, acts := c.turn.AskQuestion(e)
		c.dispatchActs(acts)
	default:
		c.applyLocked(ev)
		c.sess.observeChanges(c.uri, ev) // changes.go: a tool call's diffs
	}
	c.armHoldLocked()
	c.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// toolHold bounds how long a tool call the agent reported running waits
// for the agent's next event before clients are told it runs
// (mapping.Turn.Holding): a permission request for it, which codex-acp
// sends right after, makes it pending confirmation from the start.
const toolHold = 100 * time.Millisecond

// armHoldLocked flushes the turn's held tool call after toolHold unless
// the agent's next event settles it first.
func (c *chat) armHoldLocked() {
	if c.holdArmed || !c.turnOpenLocked() || !c.turn.Holding() {
		return
	}
	c.holdArmed = true
	t := c.turn
	time.AfterFunc(toolHold, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.holdArmed = false
		if c.turn == t && c.turnOpenLocked() {
			c.dispatchActs(t.Flush())
		}
	})
}

// turnOpenLocked reports whether an AHP turn is open for the agent's
// events: not before the first turn, after a turn ended, or while the
// agent winds down a turn the clients cancelled.
func (c *chat) turnOpenLocked() bool {
	return c.turn != nil && !c.turn.Ended() && !c.gone
}

// applyLocked maps an event through the current turn, or as a session-level
// event when no AHP turn is open. Session-level events (title, settings)
// are never lost that way — e.g. the agent's answer to a model change
// applied right after a cancelled turn — while turn-scoped ones have
// nothing to attach to and are dropped.
func (c *chat) applyLocked(ev backend.Event) {
	if !c.turnOpenLocked() {
		acts, _ := mapping.SessionEvent(ev, nil)
		c.dispatchActs(acts)
		return
	}
	c.dispatchActs(c.turn.Apply(ev))
}

// applyMetaLocked maps an event that may change the session's `_meta`
// (a plan, an agent update of an unknown kind). The session's chats share
// that `_meta`, so the change starts from the session's current value.
func (c *chat) applyMetaLocked(ev backend.Event) {
	s := c.sess
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	var acts []wire.StateAction
	if c.turnOpenLocked() {
		c.turn.SetMeta(s.meta)
		acts = c.turn.Apply(ev)
		s.meta = c.turn.Meta()
	} else {
		acts, s.meta = mapping.SessionEvent(ev, s.meta)
	}
	c.dispatchActs(acts)
}

// permissionLocked asks the clients, or answers by policy. It returns the
// answers to send once mu is released.
func (c *chat) permissionLocked(req backend.PermissionRequest) []func() {
	if !c.turnOpenLocked() {
		c.b.ops.permission(PermissionCancelled)
		return []func(){func() { req.Respond(backend.PermissionOutcome{Cancelled: true}) }}
	}
	if decide, approve := mapping.AutoApprove(c.b.opts.Approve, req.ToolCall.Kind); decide {
		c.b.ops.permission(PermissionAuto)
		c.dispatchActs(c.turn.AutoPermission(req, approve))
		outcome := mapping.AutoOutcome(req.Options, approve)
		return []func(){func() { req.Respond(outcome) }}
	}
	acts := c.turn.Permission(req)
	id := c.turn.ToolCallID(req.ToolCall.ID)
	var after []func()
	if old, ok := c.perms[id]; ok {
		c.b.ops.permission(PermissionCancelled)
		after = append(after, func() { old.respond(backend.PermissionOutcome{Cancelled: true}) })
	}
	c.perms[id] = pendingPermission{turnID: c.turn.ID(), options: req.Options, respond: req.Respond}
	c.dispatchActs(acts)
	return after
}

func (c *chat) terminalStarted(e backend.TerminalStarted) {
	ch := mapping.TerminalChannel(e.TerminalID)
	// The terminal belongs to this chat: its turn runs the command (AHP
	// 0.9.0 made the claim's chat required).
	claim := wire.TerminalSessionClaim{Kind: wire.TerminalClaimKindSession, Session: c.sess.uri, Chat: c.uri}
	if c.turn != nil && !c.turn.Ended() {
		claim.TurnID = wire.Ptr(c.turn.ID())
	}
	st := wire.TerminalState{
		Title:     firstNonEmpty(e.Command, "terminal"),
		Content:   []wire.TerminalContentPart{},
		Claim:     wire.NewTerminalClaim(&claim),
		Lifecycle: wire.NewTerminalLifecycleState(&wire.TerminalRunningLifecycleState{}),
	}
	if e.Cwd != "" {
		st.Cwd = wire.Ptr(mapping.FileURI(e.Cwd))
	}
	if err := c.b.host.CreateTerminal(ch, st); err != nil {
		c.log.Warn().Err(err).Str("terminal", ch).Msg("could not publish the agent's terminal")
		return
	}
	c.terminals = append(c.terminals, ch)
}

// startTurn runs a turn the clients (or the host, from a queued message)
// started. The backend gets the prompt once the previous turn's Prompt has
// returned, so a cancelled turn's late events never land in the new one,
// and once the backend session runs the model the turn asks for.
func (c *chat) startTurn(a *wire.ChatTurnStartedAction) {
	started, ok := reducer.ParseTime(a.StartedAt)
	if !ok {
		started = c.b.opts.Clock()
	}
	t := mapping.NewTurn(a.TurnID, started, c.b.opts.NewID, c.b.opts.Clock)
	prompt := mapping.PromptFromTurnWith(a, c.b.chatState) // mcp.go
	want := mapping.TurnModel(a.Message, nil)
	c.b.host.ReadChat(c.uri, func(st *wire.ChatState) { want = mapping.TurnModel(a.Message, st.Draft) })

	c.mu.Lock()
	prev := c.turnDone
	done := make(chan struct{})
	c.turnDone = done
	c.mu.Unlock()

	c.b.ops.turnStarted(c.sess.providerID)
	c.b.wg.Add(1)
	go func() {
		defer c.b.wg.Done()
		defer close(done)
		prompted := false
		defer func() {
			if !prompted { // cancelled or shut down before the agent got it
				c.b.ops.turnEnded(c.sess.providerID, TurnCancelled)
			}
		}()
		select {
		case <-prev:
		case <-c.b.ctx.Done():
			return
		}
		c.openRestored()
		select {
		case <-c.ready:
		case <-c.b.ctx.Done():
			return
		}
		c.mu.Lock()
		if c.disposed {
			c.mu.Unlock()
			return
		}
		if !c.turnActive(a.TurnID) {
			// The clients cancelled the turn before the agent got it.
			c.mu.Unlock()
			return
		}
		c.turn, c.gone = t, false
		be, openErr := c.be, c.openErr
		c.noticesLocked(t)
		c.mu.Unlock()

		var (
			res backend.TurnResult
			err error
		)
		switch {
		case be == nil:
			err = fmt.Errorf("the agent session is not available: %w", openErr)
		case !c.useModel(be, want) || !c.useModelConfig(be, a.Message):
			// The clients cancelled the turn while the model was switched.
			res = backend.TurnResult{StopReason: backend.StopCancelled}
		default:
			res, err = be.Prompt(c.b.ctx, prompt)
		}
		prompted = true
		c.endTurn(t, res, err)
	}()
}

// useModel switches the backend session to the model a turn asks for when
// it runs another (a model it refused before is not asked for again: the
// turn runs on the current one rather than fail). It reports whether the
// turn is still to be prompted.
func (c *chat) useModel(be backend.Session, want string) bool {
	c.mu.Lock()
	current, refused := c.model, c.refused
	c.mu.Unlock()
	if want != "" && want != current && want != refused {
		ctx, cancel := context.WithTimeout(c.b.ctx, configTimeout)
		err := be.SetConfig(ctx, "model", want)
		cancel()
		c.mu.Lock()
		if err != nil {
			c.refused = want
			c.log.Warn().Err(err).Str("model", want).Msg("the agent would not switch to the turn's model; the turn runs on the current one")
			c.notices = append(c.notices, fmt.Sprintf("The agent did not switch to the model `%s` this turn asked for; the turn runs on `%s`. %s",
				want, firstNonEmpty(current, "the agent's default"), err))
			if c.turn != nil && !c.gone {
				c.noticesLocked(c.turn)
			}
		} else {
			c.model = want
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.gone
}

// useModelConfig applies the model configuration the turn's message
// carries (message.model.config: e.g. a reasoning effort VS Code's model
// picker offers) to the backend session's settings of the same ids. A
// value the agent refuses is said in the turn and the turn runs on. It
// reports whether the turn is still to be prompted.
func (c *chat) useModelConfig(be backend.Session, msg wire.Message) bool {
	c.mu.Lock()
	changes := mapping.TurnModelConfig(msg, c.options)
	c.mu.Unlock()
	for _, ch := range changes {
		ctx, cancel := context.WithTimeout(c.b.ctx, configTimeout)
		err := be.SetConfig(ctx, ch.Key, ch.Value)
		cancel()
		if err != nil {
			c.log.Warn().Err(err).Str("key", ch.Key).Str("value", ch.Value).Msg("the agent would not take the turn's model setting")
			c.mu.Lock()
			c.notices = append(c.notices, fmt.Sprintf("The agent did not take `%s` = `%s` this turn asked for. %s", ch.Key, ch.Value, err))
			if c.turn != nil && !c.gone {
				c.noticesLocked(c.turn)
			}
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.gone
}

// turnActive reports whether turnID is the chat's active turn in the
// host's state.
func (c *chat) turnActive(turnID string) bool {
	active := false
	c.b.host.ReadChat(c.uri, func(st *wire.ChatState) {
		active = st.ActiveTurn != nil && st.ActiveTurn.ID == turnID
	})
	return active
}

// endTurn publishes the end of a turn and settles what it left open.
func (c *chat) endTurn(t *mapping.Turn, res backend.TurnResult, err error) {
	if err != nil && errors.Is(err, context.Canceled) && c.b.ctx.Err() != nil {
		res, err = backend.TurnResult{StopReason: backend.StopCancelled}, nil
	}
	var after []func()
	c.mu.Lock()
	c.b.ops.turnEnded(c.sess.providerID, turnOutcome(res, err, c.gone))
	if c.turn == t {
		c.sess.updateMeta(func(meta map[string]any) ([]wire.StateAction, map[string]any) {
			t.SetMeta(meta)
			acts := t.End(res, err)
			if c.gone {
				// The clients ended the turn: only what belongs to the
				// session (the end of its live plan) still applies.
				acts = slices.DeleteFunc(acts, func(a wire.StateAction) bool { return !mapping.OnSession(a) })
			}
			return acts, t.Meta()
		}, c.dispatchActs)
		for uri, r := range t.Resources() {
			c.resources[uri] = r
		}
		after = c.settleLocked(t.ID())
	}
	deferred := c.deferred
	c.deferred = map[string]string{}
	be := c.be
	c.mu.Unlock()
	for _, f := range after {
		f()
	}
	for _, st := range settingsOf(anyMap(deferred)) {
		c.applyConfig(be, st.key, st.value)
	}
	if err != nil {
		c.log.Info().Err(err).Msg("turn ended with an error")
	}
	c.queueSteering()
}

// settleLocked answers every permission and question still open for turnID:
// the turn is over, so nobody can answer them any more.
func (c *chat) settleLocked(turnID string) []func() {
	var after []func()
	for id, p := range c.perms {
		if p.turnID == turnID {
			c.b.ops.permission(PermissionCancelled)
			respond := p.respond
			after = append(after, func() { respond(backend.PermissionOutcome{Cancelled: true}) })
			delete(c.perms, id)
		}
	}
	if c.turn != nil && c.turn.ID() == turnID {
		for _, pq := range c.turn.PendingQuestions() {
			if q, ok := c.turn.TakeQuestion(pq.Request.ID); ok {
				after = append(after, func() { q.Question.Respond(nil, true) })
			}
		}
	}
	return after
}

// queueSteering turns a steering message left when a turn ends into a
// queued message, which the host starts as the next turn (and hands back
// to the bridge): ACP has no way to inject a message into a running turn.
// It goes through the host's queue, rather than a turn the bridge starts,
// so that it can never race a queued message the host starts itself.
func (c *chat) queueSteering() {
	var msg *wire.PendingMessage
	c.b.host.ReadChat(c.uri, func(st *wire.ChatState) {
		if st.ActiveTurn == nil && st.SteeringMessage != nil {
			m := *st.SteeringMessage
			msg = &m
		}
	})
	if msg == nil {
		return
	}
	c.dispatchTo(c.uri, &wire.ChatPendingMessageRemovedAction{Kind: wire.PendingMessageKindSteering, ID: msg.ID})
	c.dispatchTo(c.uri, &wire.ChatPendingMessageSetAction{Kind: wire.PendingMessageKindQueued, ID: msg.ID, Message: msg.Message})
}

// cancelTurn handles a client's turnCancelled: the AHP turn is already over,
// the agent is asked to stop, and what the turn left open is answered.
func (c *chat) cancelTurn(ctx context.Context, turnID string) {
	c.mu.Lock()
	var after []func()
	var be backend.Session
	if c.turn != nil && c.turn.ID() == turnID && !c.turn.Ended() {
		c.gone = true
		after = c.settleLocked(turnID)
		be = c.be
		c.clearActivityLocked()
	}
	c.mu.Unlock()
	for _, f := range after {
		f()
	}
	if be != nil {
		if err := be.Cancel(ctx); err != nil {
			c.log.Warn().Err(err).Msg("cancelling the agent's turn")
		}
	}
}

// clearActivityLocked clears the chat's activity (the plan entry in
// progress) when the clients cancelled the turn: the turn's own end actions,
// which clear it on every other ending, are not dispatched for a turn the
// clients already ended, and the reducer keeps the activity across turns.
func (c *chat) clearActivityLocked() {
	set := false
	c.b.host.ReadChat(c.uri, func(st *wire.ChatState) { set = st.Activity != nil })
	if set {
		c.dispatchTo(c.uri, &wire.ChatActivityChangedAction{})
	}
}

// confirmTool answers a pending permission with the client's confirmation.
func (c *chat) confirmTool(toolCallID string, action wire.StateAction) {
	conf, ok := mapping.ConfirmationOf(action)
	if !ok {
		return
	}
	c.mu.Lock()
	p, found := c.perms[toolCallID]
	delete(c.perms, toolCallID)
	if c.turn != nil {
		c.turn.ToolConfirmed(toolCallID, conf.Approved)
	}
	c.mu.Unlock()
	if found {
		c.b.ops.permission(confirmOutcome(conf.Approved))
		p.respond(mapping.PermissionOutcome(p.options, conf.Action))
	}
}

// completeInput answers a backend question with the client's answers.
func (c *chat) completeInput(a *wire.ChatInputCompletedAction) {
	c.mu.Lock()
	var (
		pq mapping.PendingQuestion
		ok bool
	)
	if c.turn != nil {
		pq, ok = c.turn.TakeQuestion(a.RequestID)
	}
	c.mu.Unlock()
	if !ok {
		return
	}
	answers, declined := mapping.InputAnswers(pq.Request, a)
	pq.Question.Respond(answers, declined)
}

// setConfig changes an agent setting now, or after the running turn.
func (c *chat) setConfig(key, value string) {
	c.mu.Lock()
	running := c.turn != nil && !c.turn.Ended()
	be := c.be
	if running || be == nil {
		c.deferred[key] = value
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.applyConfig(be, key, value)
}

func (c *chat) applyConfig(be backend.Session, key, value string) {
	if be == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.b.ctx, configTimeout)
	defer cancel()
	if err := be.SetConfig(ctx, key, value); err != nil {
		c.mu.Lock()
		c.refusedLocked(key, value, err)
		c.mu.Unlock()
		return
	}
	if key == "model" {
		c.mu.Lock()
		c.model = value
		c.mu.Unlock()
	}
}

// refusedLocked makes a setting the agent refused visible rather than
// silently kept: the session's config values go back to what the agent
// runs (a client already shows the value it asked for), the session's
// `_meta` says what was refused and why, and the chat's next turn starts
// with a notification saying so.
func (c *chat) refusedLocked(key, value string, err error) {
	c.log.Warn().Err(err).Str("key", key).Str("value", value).Msg("the agent refused a setting")
	if c.isDefault {
		c.dispatchActs([]wire.StateAction{mapping.ConfigValues(c.options)})
	}
	c.sess.updateMeta(func(meta map[string]any) ([]wire.StateAction, map[string]any) {
		return mapping.ConfigRejected(meta, key, value, err)
	}, c.dispatchActs)
	now := "the agent's default"
	for _, o := range c.options {
		if (o.ID == key || o.Category == key) && o.Current != "" {
			now = "`" + o.Current + "`"
			break
		}
	}
	c.notices = append(c.notices, fmt.Sprintf("The agent did not change the setting `%s` to `%s`; it stays %s. %s", key, value, now, err))
}

// noticesLocked shows the chat's pending notices in turn t, which has
// just started.
func (c *chat) noticesLocked(t *mapping.Turn) {
	acts := make([]wire.StateAction, 0, len(c.notices))
	for _, n := range c.notices {
		acts = append(acts, mapping.Notice(t.ID(), n))
	}
	c.notices = nil
	c.dispatchActs(acts)
}

func (c *chat) completions(params wire.CompletionsParams) []wire.CompletionItem {
	c.mu.Lock()
	cmds := c.commands
	c.mu.Unlock()
	items := mapping.CompletionItems(cmds, params)
	if items == nil {
		items = []wire.CompletionItem{}
	}
	return items
}

func (c *chat) resource(uri string) (mapping.Resource, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.resources[uri]; ok {
		return r, true
	}
	if c.turn != nil {
		return c.turn.Resource(uri)
	}
	return mapping.Resource{}, false
}

// shutdown ends a running turn as cancelled and closes the backend session.
func (c *chat) shutdown(ctx context.Context) {
	c.mu.Lock()
	var after []func()
	be := c.be
	if t := c.turn; t != nil && !t.Ended() {
		if !c.gone {
			c.sess.updateMeta(func(meta map[string]any) ([]wire.StateAction, map[string]any) {
				t.SetMeta(meta)
				return t.End(backend.TurnResult{StopReason: backend.StopCancelled}, nil), t.Meta()
			}, c.dispatchActs)
		}
		c.gone = true
		after = c.settleLocked(c.turn.ID())
		if be != nil {
			after = append(after, func() { _ = be.Cancel(ctx) })
		}
	}
	c.disposed = true
	c.mu.Unlock()
	for _, f := range after {
		f()
	}
	if be != nil {
		if err := be.Close(ctx); err != nil {
			c.log.Debug().Err(err).Msg("closing the agent session")
		}
	}
}

// dispose is shutdown plus removing the chat's terminal channels.
func (c *chat) dispose(ctx context.Context) {
	c.shutdown(ctx)
	c.mu.Lock()
	terms := c.terminals
	c.terminals = nil
	c.mu.Unlock()
	for _, ch := range terms {
		c.b.host.RemoveTerminal(ch)
	}
}

func (c *chat) dispatchTo(channel string, v any) { c.b.dispatch(channel, v) }

// dispatchActs submits a Turn's actions: a turn's to this chat, the
// session's to the session. The session's title and settings are those of
// its default chat's backend session: another chat's backend session
// starts with the agent's own title and defaults, which must not overwrite
// the session's.
func (c *chat) dispatchActs(acts []wire.StateAction) {
	for _, a := range acts {
		channel := c.uri
		if mapping.OnSession(a) {
			switch a.Value.(type) {
			case *wire.SessionTitleChangedAction, *wire.SessionConfigChangedAction:
				if !c.isDefault {
					continue
				}
			}
			channel = c.sess.uri
		}
		if _, err := c.b.host.Dispatch(channel, a); err != nil {
			c.log.Debug().Err(err).Str("channel", channel).Msg("dispatch refused")
		}
	}
}

// anyMap widens a string map for settingsOf.
func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
