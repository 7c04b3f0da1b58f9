package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Exit codes of a prompt or a follow, as `ahp-bridge client` documents them.
const (
	ExitOK        = 0
	ExitError     = 1 // connection or protocol error
	ExitTurnError = 3 // the turn ended with chat/error
	ExitCancelled = 4 // the turn was cancelled, or the queued prompt removed
	ExitDenied    = 5 // the turn completed but a tool call was denied
	// ExitToolFailed: the turn completed but a tool call of it failed (an
	// approved edit the agent could not make is not a success).
	ExitToolFailed = 6
)

// cancelGrace is how long a prompt waits for the host to confirm a
// cancellation after Ctrl-C before giving up.
const cancelGrace = 10 * time.Second

// callTimeout bounds the wait for the host's echo of one of the prompt's
// actions (its turn, its queued message, taking it back, cancelling it),
// so that a host that never echoes is an error rather than a hang.
const callTimeout = 30 * time.Second

// ErrInterrupted is the cause of a set-up cut short by Ctrl-C.
var ErrInterrupted = errors.New("interrupted before the session was ready")

// Options say which session to open and how to answer questions.
type Options struct {
	Provider string // agent of a new session; "" = the server's first agent
	Cwd      string // working directory of a new session
	Session  string // join this session instead of creating one
	// ApproveAll and DenyAll answer every permission request (and result
	// confirmation) without asking; input requests are declined under
	// DenyAll and accepted with their defaults under ApproveAll.
	ApproveAll, DenyAll bool
	// JSON prints every event as one NDJSON line instead of rendering it.
	JSON bool
}

// IO is the terminal side of a session.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Interactive says questions may be asked on Stdin; when false (and no
	// ApproveAll/DenyAll) they are left to another client.
	Interactive bool
	// Color enables ANSI dimming of reasoning.
	Color bool
	// Interrupts delivers Ctrl-C presses (see WatchInterrupts). A prompt
	// cancels its turn on the first and quits on the second; a follow ends
	// on the first.
	Interrupts <-chan struct{}
	// Name prefixes what is written to Stderr, e.g. "ahp-bridge client".
	Name string
	// WaitHint is said once on Stderr the first time a question has to
	// wait for another client because nobody can answer it here, so that
	// a run without a terminal never hangs silently; "" says nothing.
	WaitHint string
}

// Run is `ahp-bridge client` once connected: it opens or joins the session,
// then sends prompt as one turn or, when prompt is empty, follows the
// session until interrupted. Errors are reported on sio.Stderr; the result
// is the exit code.
//
// With sio.Interrupts nil, the cancellation of ctx (main's
// signal.NotifyContext on Ctrl-C) is the first press and a SIGINT after it
// the second: the run goes on with a context that is not cancelled.
func Run(ctx context.Context, c *client.Client, opts Options, prompt string, sio IO) int {
	if sio.Interrupts == nil {
		presses, stop := WatchInterrupts(ctx)
		defer stop()
		sio.Interrupts = presses
		ctx = context.WithoutCancel(ctx)
	}
	if sio.Name == "" {
		sio.Name = "ahp-bridge client"
	}
	s, err := Open(ctx, c, opts, sio)
	if err != nil {
		fmt.Fprintf(sio.Stderr, "%s: %v\n", sio.Name, err)
		if errors.Is(err, ErrInterrupted) {
			return ExitCancelled
		}
		return ExitError
	}
	defer s.Close()
	var code int
	if prompt == "" {
		code, err = s.Follow(ctx, false)
	} else {
		code, err = s.Prompt(ctx, prompt)
	}
	if err != nil {
		s.report(err)
	}
	return code
}

// Session is one client's view of one AHP session: its default chat's
// turns, and the questions of the whole session. Open it, run Prompt and
// Follow one after the other as often as needed, then Close it. It owns
// the goroutine that reads the client's events and the one that reads
// Stdin; Close stops them.
type Session struct {
	c    *client.Client
	opts Options
	io   IO
	r    *renderer // nil with JSON

	channel string // the session
	chat    string // its default chat, where prompts go
	// state and chatState are the session and its default chat as of the
	// envelopes handled so far (the client's own copies may be ahead of
	// them); seq and chatSeq are their serverSeqs.
	state     *wire.SessionState
	seq       int64
	chatState *wire.ChatState
	chatSeq   int64

	events   chan client.Event
	pumpErr  chan error
	stopPump context.CancelFunc
	pumpDone chan struct{}

	// The prompt being run: our turn once started, our queued message
	// while it waits behind another turn.
	turnID     string
	queuedID   string
	prompt     string
	denied     bool // a tool call of our turn was denied
	toolFailed bool // a tool call of our turn failed
	cancelling bool // Ctrl-C was pressed once

	follow, untilIdle bool

	asks  []asker // open permission requests and questions, oldest first
	shown asker   // the one whose question is on screen
	// asked holds the inputNeeded entries handled here (asked, answered
	// or left to another client) until the host removes them, so that an
	// update of an entry is not asked twice.
	asked    map[string]bool
	lines    <-chan string
	stdinEOF bool // stdin ended: nothing more can be asked here
	stopIn   chan struct{}
	hinted   bool            // WaitHint has been said
	terms    map[string]bool // terminal channels subscribed to
}

// Open creates the session (or joins opts.Session), subscribes to it and
// waits until it is ready. A Ctrl-C meanwhile returns ErrInterrupted.
func Open(ctx context.Context, c *client.Client, opts Options, sio IO) (*Session, error) {
	if sio.Name == "" {
		sio.Name = "ahp-bridge client"
	}
	s := &Session{c: c, opts: opts, io: sio, terms: map[string]bool{}, asked: map[string]bool{}, stopIn: make(chan struct{})}
	if !opts.JSON {
		s.r = newRenderer(sio.Stdout, sio.Color, c.ClientID())
	}
	if err := s.setUp(ctx); err != nil {
		return nil, err
	}
	if st, err := c.Session(s.channel); err == nil && st.Lifecycle == wire.SessionLifecycleFailed {
		msg := "unknown reason"
		if st.CreationError != nil {
			msg = errorText(st.CreationError)
		}
		return nil, fmt.Errorf("the session could not be created: %s", msg)
	}

	// Events are read by a pump goroutine so that one select can wait for
	// them, for answers on stdin and for Ctrl-C.
	pumpCtx, stop := context.WithCancel(ctx)
	s.stopPump = stop
	s.events = make(chan client.Event)
	s.pumpErr = make(chan error, 1)
	s.pumpDone = make(chan struct{})
	go s.pump(pumpCtx)

	if s.opts.Session != "" && s.r != nil {
		s.r.joined(s.chatState)
	}
	// Questions that were already open when we joined get no envelope of
	// their own: ask them now.
	for _, a := range pendingAsks(s.state) {
		if err := s.ask(ctx, a); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Channel is the session's channel URI.
func (s *Session) Channel() string { return s.channel }

// Close stops the goroutines of the session.
func (s *Session) Close() {
	if s.stopPump != nil {
		s.stopPump()
		<-s.pumpDone
		s.stopPump = nil
	}
	select {
	case <-s.stopIn:
	default:
		close(s.stopIn)
	}
}

func (s *Session) pump(ctx context.Context) {
	defer close(s.pumpDone)
	for {
		ev, err := s.c.Next(ctx)
		if err != nil {
			s.pumpErr <- err
			return
		}
		select {
		case s.events <- ev:
		case <-ctx.Done():
			s.pumpErr <- ctx.Err()
			return
		}
	}
}

// report writes an error for the person at the terminal.
func (s *Session) report(err error) {
	fmt.Fprintf(s.io.Stderr, "%s: %v\n", s.io.Name, err)
}

// Prompt sends text as one turn of the default chat and shows it until it
// ends; the result is the exit code. When another turn is running, text is
// queued (AHP chat/pendingMessageSet, kind queued) and the host starts it
// once the running turn and the messages queued before it are done; the
// turn running meanwhile is shown and its questions are asked too.
func (s *Session) Prompt(ctx context.Context, text string) (int, error) {
	s.prompt, s.turnID, s.queuedID = text, "", ""
	s.denied, s.toolFailed, s.cancelling, s.follow, s.untilIdle = false, false, false, false, false
	// The client's state may be ahead of the envelopes handled so far:
	// it is the better guess of whether a turn can start now.
	busy := s.chatState.ActiveTurn != nil
	if st, err := s.c.Chat(s.chat); err == nil {
		busy = st.ActiveTurn != nil || len(st.QueuedMessages) > 0
	}
	var err error
	if busy {
		err = s.queue(ctx)
	} else {
		err = s.startTurn(ctx)
	}
	if err != nil {
		return ExitError, err
	}
	return s.loop(ctx)
}

// Follow shows the session's turns as they happen and answers their
// questions, until a Ctrl-C (exit code 0) or, with untilIdle, until no
// turn is running or queued.
func (s *Session) Follow(ctx context.Context, untilIdle bool) (int, error) {
	s.turnID, s.queuedID, s.prompt = "", "", ""
	s.follow, s.untilIdle, s.cancelling = true, untilIdle, false
	if untilIdle && s.idle() {
		return ExitOK, nil
	}
	return s.loop(ctx)
}

// idle reports whether the default chat runs no turn and has none queued.
func (s *Session) idle() bool {
	return s.chatState.ActiveTurn == nil && len(s.chatState.QueuedMessages) == 0
}

// startTurn starts the prompt's turn. The client fills in the model the
// chat's draft names, as any composer of the chat would. When another
// client started a turn just before ours, the prompt is queued instead.
func (s *Session) startTurn(ctx context.Context) error {
	s.turnID = client.NewUUID()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.c.StartTurn(ctx, s.chat, s.turnID, client.UserMessage(s.prompt))
	if reason, ok := rejection(err); ok {
		if st, err := s.c.Chat(s.chat); err == nil && st.ActiveTurn != nil {
			return s.queue(ctx)
		}
		return fmt.Errorf("the server refused the prompt: %s", reason)
	}
	return err
}

// queue sends the prompt as a queued message and says so.
func (s *Session) queue(ctx context.Context) error {
	s.turnID = ""
	s.queuedID = client.NewUUID()
	if s.r != nil {
		s.r.ownQueued[s.queuedID] = true
	}
	fmt.Fprintf(s.io.Stderr, "%s: the session is busy; your message is queued and starts when the turns before it end (Ctrl-C takes it back)\n", s.io.Name)
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.c.SetPendingMessage(ctx, s.chat, wire.PendingMessageKindQueued, s.queuedID, client.UserMessage(s.prompt))
	if reason, ok := rejection(err); ok {
		return fmt.Errorf("the server refused to queue the prompt: %s", reason)
	}
	return err
}

// retract takes the queued prompt back. The host refuses when it has just
// started the prompt's turn; that turn is then cancelled when it shows.
func (s *Session) retract(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.c.Confirm(ctx, s.chat, wire.Action(&wire.ChatPendingMessageRemovedAction{
		Kind: wire.PendingMessageKindQueued, ID: s.queuedID,
	}))
	if _, ok := rejection(err); ok {
		return nil
	}
	return err
}

// rejection reports whether err is the host refusing one of our actions,
// and why.
func rejection(err error) (reason string, ok bool) {
	var rej *client.RejectedError
	if !errors.As(err, &rej) {
		return "", false
	}
	if rej.Envelope != nil && rej.Envelope.RejectionReason != nil {
		return *rej.Envelope.RejectionReason, true
	}
	return "no reason given", true
}

// loop handles events, typed answers and Ctrl-C until the prompt or the
// follow is over.
func (s *Session) loop(ctx context.Context) (int, error) {
	var deadline <-chan time.Time
	for {
		select {
		case ev := <-s.events:
			code, done, err := s.handle(ctx, ev)
			if done {
				return code, err
			}
			if err != nil {
				return ExitError, err
			}
		case err := <-s.pumpErr:
			s.pumpErr <- err // a later Prompt or Follow sees it too
			if ctx.Err() != nil {
				return ExitError, fmt.Errorf("stopped: %w", ctx.Err())
			}
			if s.follow {
				return ExitError, fmt.Errorf("connection to the server ended: %w", err)
			}
			return ExitError, fmt.Errorf("connection lost during the turn: %w", err)
		case line, ok := <-s.lines:
			if !ok {
				s.lines = nil
				s.stdinEOF = true
				s.stdinClosed()
				continue
			}
			if err := s.answer(ctx, line); err != nil {
				return ExitError, err
			}
		case <-s.io.Interrupts:
			if s.follow {
				return ExitOK, nil
			}
			if s.cancelling {
				s.note("quitting without waiting for the cancellation")
				return ExitCancelled, nil
			}
			s.cancelling = true
			deadline = time.After(cancelGrace)
			if s.turnID == "" {
				s.note("taking back the queued message (Ctrl-C again to quit)…")
				if err := s.retract(ctx); err != nil {
					return ExitError, err
				}
				continue
			}
			s.note("cancelling the turn (Ctrl-C again to quit)…")
			if err := s.cancelTurn(ctx); err != nil {
				return ExitError, err
			}
		case <-deadline:
			return ExitCancelled, fmt.Errorf("the host did not confirm the cancellation within %s", cancelGrace)
		}
	}
}

// cancelTurn cancels our turn. The host refuses when the turn has just
// ended; its end is then on its way.
func (s *Session) cancelTurn(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.c.CancelTurn(ctx, s.chat, s.turnID)
	if _, ok := rejection(err); ok {
		return nil
	}
	return err
}

// setUp opens the session and waits until it is ready or failed. A Ctrl-C
// meanwhile abandons the wait.
func (s *Session) setUp(ctx context.Context) error {
	setupCtx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() { // ends with the set-up: cancel is deferred below
		defer close(watched)
		select {
		case <-s.io.Interrupts:
			cancel(ErrInterrupted)
		case <-setupCtx.Done():
		}
	}()
	defer func() { cancel(nil); <-watched }()

	err := s.openSession(setupCtx)
	if err == nil {
		_, err = s.c.WaitFor(setupCtx, s.channel, func(st *wire.SessionState) bool {
			return st.Lifecycle != wire.SessionLifecycleCreating
		})
	}
	if err != nil && errors.Is(context.Cause(setupCtx), ErrInterrupted) {
		return ErrInterrupted
	}
	return err
}

// openSession creates the session (or checks the one to join), subscribes
// to it and its default chat and keeps their snapshots as the starting
// state.
func (s *Session) openSession(ctx context.Context) error {
	if s.opts.Session != "" {
		s.channel = s.opts.Session
	} else {
		if err := s.createSession(ctx); err != nil {
			return err
		}
	}
	snap, err := s.c.Subscribe(ctx, s.channel)
	if err != nil {
		return err
	}
	if snap == nil {
		return fmt.Errorf("%s is not a session the server knows", s.channel)
	}
	s.state = new(wire.SessionState)
	if err := snap.State.As(s.state); err != nil {
		return fmt.Errorf("reading the snapshot of %s: %w", s.channel, err)
	}
	s.seq = snap.FromSeq
	if s.state.DefaultChat == nil {
		return fmt.Errorf("%s has no default chat to send prompts to", s.channel)
	}
	s.chat = *s.state.DefaultChat
	// Subscribe already follows the default chat, but does not say as of
	// which serverSeq; subscribing again does, and changes nothing else.
	chatSnap, err := s.c.Subscribe(ctx, s.chat)
	if err != nil {
		return err
	}
	if chatSnap == nil {
		return fmt.Errorf("%s is not a chat the server knows", s.chat)
	}
	s.chatState = new(wire.ChatState)
	if err := chatSnap.State.As(s.chatState); err != nil {
		return fmt.Errorf("reading the snapshot of %s: %w", s.chat, err)
	}
	s.chatSeq = chatSnap.FromSeq
	return nil
}

func (s *Session) createSession(ctx context.Context) error {
	provider := s.opts.Provider
	if provider == "" {
		root, err := s.c.Root()
		if err != nil {
			return err
		}
		if len(root.Agents) == 0 {
			return errors.New("the server offers no agents (pass --provider if it hides them)")
		}
		provider = root.Agents[0].Provider
	}
	cwd := s.opts.Cwd
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return fmt.Errorf("finding the current directory for the session: %w", err)
		}
	}
	dir, err := filepath.Abs(cwd)
	if err != nil {
		return fmt.Errorf("resolving the working directory %q: %w", s.opts.Cwd, err)
	}
	s.channel = client.NewSessionURI()
	return s.c.CreateSession(ctx, wire.CreateSessionParams{
		Channel:            s.channel,
		Provider:           &provider,
		WorkingDirectories: []string{fileURI(dir)},
	})
}

// fileURI turns an absolute path into a file: URI.
func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// handle processes one event; done means the prompt or follow is over
// with code.
func (s *Session) handle(ctx context.Context, ev client.Event) (code int, done bool, err error) {
	if s.opts.JSON {
		if err := writeNDJSON(s.io.Stdout, ev); err != nil {
			return ExitError, true, err
		}
	}
	if ev.Err != nil {
		fmt.Fprintf(s.io.Stderr, "%s: the server reported: %v\n", s.io.Name, ev.Err)
		return 0, false, nil
	}
	env := ev.Envelope
	if env == nil {
		return 0, false, nil
	}
	if env.RejectionReason != nil {
		s.rejected(env) // ours, whichever chat it went to
		return 0, false, nil
	}
	switch env.Channel {
	case s.chat:
		code, done, err = s.chatEnvelope(ctx, env)
	case s.channel:
		code, done, err = s.sessionEnvelope(ctx, env)
	default:
		if s.terms[env.Channel] && s.r != nil {
			s.r.envelope(env)
		}
		return 0, false, nil
	}
	if !done && err == nil && s.follow && s.untilIdle && s.idle() && !consumesQueued(env) {
		return ExitOK, true, nil
	}
	return code, done, err
}

// chatEnvelope handles an envelope of the default chat: it is shown, and
// may end our turn.
func (s *Session) chatEnvelope(ctx context.Context, env *wire.ActionEnvelope) (int, bool, error) {
	if env.ServerSeq <= s.chatSeq {
		return 0, false, nil // already part of the snapshot
	}
	reducer.Chat(s.chatState, env.Action, reducer.SystemClock)
	s.chatSeq = env.ServerSeq
	s.watchTerminals(ctx, env)
	if s.r != nil {
		s.r.envelope(env)
	}
	return s.apply(ctx, env)
}

// sessionEnvelope handles an envelope of the session channel: its
// inputNeeded says which questions to ask and which are settled.
func (s *Session) sessionEnvelope(ctx context.Context, env *wire.ActionEnvelope) (int, bool, error) {
	if env.ServerSeq <= s.seq {
		return 0, false, nil // already part of the snapshot
	}
	reducer.Session(s.state, env.Action, reducer.SystemClock)
	s.seq = env.ServerSeq
	switch a := env.Action.Value.(type) {
	case *wire.SessionInputNeededSetAction:
		return 0, false, s.ask(ctx, askerFor(a.Request))
	case *wire.SessionInputNeededRemovedAction:
		delete(s.asked, a.ID)
		s.resolved(a.ID)
	}
	return 0, false, nil
}

// consumesQueued reports whether env is the host taking a queued message
// to start a turn with it: the turnStarted follows at once, so the
// chat is not idle in between.
func consumesQueued(env *wire.ActionEnvelope) bool {
	a, ok := env.Action.Value.(*wire.ChatPendingMessageRemovedAction)
	return ok && env.Origin == nil && a.Kind == wire.PendingMessageKindQueued
}

// rejected shows the echo of one of our actions the host refused (the
// host echoes a refusal to its sender only). Refusals of the prompt's
// own actions — its turn, its queued message, taking it back, cancelling
// it — are handled where they are sent.
func (s *Session) rejected(env *wire.ActionEnvelope) {
	switch env.Action.Value.(type) {
	case *wire.ChatTurnStartedAction, *wire.ChatPendingMessageSetAction,
		*wire.ChatPendingMessageRemovedAction, *wire.ChatTurnCancelledAction:
		return
	}
	if s.r != nil {
		s.r.envelope(env)
	}
}

// apply acts on an accepted action of the default chat: follows our
// queued message into its turn and notices the end of our turn.
func (s *Session) apply(ctx context.Context, env *wire.ActionEnvelope) (int, bool, error) {
	ours := func(turnID string) bool { return s.turnID != "" && turnID == s.turnID }
	switch a := env.Action.Value.(type) {
	case *wire.ChatTurnStartedAction:
		if s.queuedID != "" && a.QueuedMessageID != nil && *a.QueuedMessageID == s.queuedID {
			s.turnID, s.queuedID = a.TurnID, ""
			if s.cancelling {
				return 0, false, s.cancelTurn(ctx)
			}
		}
	case *wire.ChatPendingMessageRemovedAction:
		if s.queuedID == "" || a.ID != s.queuedID || env.Origin == nil {
			break // the host consumes it: our turn starts next
		}
		if env.Origin.ClientID == s.c.ClientID() {
			return ExitCancelled, true, nil
		}
		return ExitCancelled, true, fmt.Errorf("client %s removed the queued message", env.Origin.ClientID)
	case *wire.ChatToolCallDeniedAction:
		if ours(a.TurnID) {
			s.denied = true
		}
	case *wire.ChatToolCallResultConfirmedAction:
		if ours(a.TurnID) && !a.Approved {
			s.denied = true
		}
	case *wire.ChatToolCallCompleteAction:
		if ours(a.TurnID) && !a.Result.Success {
			s.toolFailed = true
		}
	case *wire.ChatTurnCompleteAction:
		if ours(a.TurnID) && !s.follow {
			switch {
			case s.denied:
				return ExitDenied, true, nil
			case s.toolFailed:
				return ExitToolFailed, true, nil
			}
			return ExitOK, true, nil
		}
	case *wire.ChatErrorAction:
		if ours(a.TurnID) && !s.follow {
			if s.r == nil { // JSON: the error is in the NDJSON; say it on stderr too
				fmt.Fprintf(s.io.Stderr, "%s: turn failed: %s\n", s.io.Name, errorText(&a.Part.Error))
			}
			return ExitTurnError, true, nil
		}
	case *wire.ChatTurnCancelledAction:
		if ours(a.TurnID) && !s.follow {
			return ExitCancelled, true, nil
		}
	}
	return 0, false, nil
}

// watchTerminals subscribes to the terminals a tool call names, so that
// the renderer can show what the command printed.
func (s *Session) watchTerminals(ctx context.Context, env *wire.ActionEnvelope) {
	if s.r == nil || env.RejectionReason != nil {
		return
	}
	for _, uri := range terminalsOf(env.Action) {
		if s.terms[uri] {
			continue
		}
		s.terms[uri] = true
		subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		snap, err := s.c.Subscribe(subCtx, uri)
		cancel()
		if err != nil || snap == nil {
			continue // the output is not available; the renderer names the terminal instead
		}
		st := new(wire.TerminalState)
		if err := snap.State.As(st); err == nil {
			s.r.terminalSnapshot(uri, st, snap.FromSeq)
		}
	}
}

// writeNDJSON prints one event as {"method":…,"params":…} on one line.
func writeNDJSON(w io.Writer, ev client.Event) error {
	var v any
	if ev.Err != nil {
		v = struct {
			Error *client.RPCError `json:"error"`
		}{ev.Err}
	} else {
		v = struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params,omitempty"`
		}{ev.Method, ev.Params}
	}
	b, err := json.Marshal(v) // compacts params onto one line
	if err != nil {
		return fmt.Errorf("encoding an event as JSON: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing to stdout: %w", err)
	}
	return nil
}

// reply sends the answer to a question to the chat it belongs to, which
// need not be one this client watches. It does not wait for the echo: the
// answer's effects, or the host's refusal (another client answered first,
// the turn ended), arrive as events like any other.
func (s *Session) reply(ctx context.Context, a asker, act any) error {
	_, err := s.c.DispatchAction(ctx, a.chat(), wire.StateAction{Value: act})
	return err
}
