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
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// Exit codes of a prompt or a follow, as `ahp-bridge client` documents them.
const (
	ExitOK        = 0
	ExitError     = 1 // connection or protocol error
	ExitTurnError = 3 // the turn ended with session/error
	ExitCancelled = 4 // the turn was cancelled, or the queued prompt removed
	ExitDenied    = 5 // the turn completed but a tool call was denied
)

// cancelGrace is how long a prompt waits for the host to confirm a
// cancellation after Ctrl-C before giving up.
const cancelGrace = 10 * time.Second

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

// Session is one client's view of one AHP session. Open it, run Prompt and
// Follow one after the other as often as needed, then Close it. It owns
// the goroutine that reads the client's events and the one that reads
// Stdin; Close stops them.
type Session struct {
	c    *client.Client
	opts Options
	io   IO
	r    *renderer // nil with JSON

	channel string
	// state is the session as of the envelopes handled so far (the
	// client's own copy may be ahead of them); seq is its serverSeq.
	state *wire.SessionState
	seq   int64

	events   chan client.Event
	pumpErr  chan error
	stopPump context.CancelFunc
	pumpDone chan struct{}

	// The prompt being run: our turn once started, our queued message
	// while it waits behind another turn.
	turnID     string
	queuedID   string
	prompt     string
	denied     bool   // a tool call of our turn was denied
	cancelling bool   // Ctrl-C was pressed once
	retracted  string // the queued message Ctrl-C took back

	follow, untilIdle bool

	asks     []asker // open permission requests and questions, oldest first
	shown    asker   // the one whose question is on screen
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
	s := &Session{c: c, opts: opts, io: sio, terms: map[string]bool{}, stopIn: make(chan struct{})}
	if !opts.JSON {
		s.r = newRenderer(sio.Stdout, sio.Color, c.ClientID())
	}
	if err := s.setUp(ctx); err != nil {
		return nil, err
	}
	if st, err := c.Session(s.channel); err == nil && st.Lifecycle == wire.SessionLifecycleCreationFailed {
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
		s.r.joined(s.state)
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

// Prompt sends text as one turn and shows it until it ends; the result is
// the exit code. When another turn is running, text is queued (AHP
// session/pendingMessageSet, kind queued) and the host starts it once the
// running turn and the messages queued before it are done; the turn
// running meanwhile is shown and its questions are asked too.
func (s *Session) Prompt(ctx context.Context, text string) (int, error) {
	s.prompt, s.turnID, s.queuedID, s.retracted = text, "", "", ""
	s.denied, s.cancelling, s.follow, s.untilIdle = false, false, false, false
	// The client's state may be ahead of the envelopes handled so far:
	// it is the better guess of whether a turn can start now.
	busy := s.state.ActiveTurn != nil
	if st, err := s.c.Session(s.channel); err == nil {
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

// idle reports whether no turn is running and none is queued.
func (s *Session) idle() bool {
	return s.state.ActiveTurn == nil && len(s.state.QueuedMessages) == 0
}

func (s *Session) startTurn(ctx context.Context) error {
	s.turnID = client.NewUUID()
	return s.dispatch(ctx, &wire.SessionTurnStartedAction{
		Type:    wire.ActionTypeSessionTurnStarted,
		TurnID:  s.turnID,
		Message: userMessage(s.prompt),
	})
}

// queue sends the prompt as a queued message and says so.
func (s *Session) queue(ctx context.Context) error {
	s.turnID = ""
	s.queuedID = client.NewUUID()
	if s.r != nil {
		s.r.ownQueued[s.queuedID] = true
	}
	fmt.Fprintf(s.io.Stderr, "%s: the session is busy; your message is queued and starts when the turns before it end (Ctrl-C takes it back)\n", s.io.Name)
	return s.dispatch(ctx, &wire.SessionPendingMessageSetAction{
		Type:    wire.ActionTypeSessionPendingMessageSet,
		Kind:    wire.PendingMessageKindQueued,
		ID:      s.queuedID,
		Message: userMessage(s.prompt),
	})
}

func userMessage(text string) wire.Message {
	return wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
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
				s.retracted = s.queuedID
				if err := s.dispatch(ctx, &wire.SessionPendingMessageRemovedAction{
					Type: wire.ActionTypeSessionPendingMessageRemoved, Kind: wire.PendingMessageKindQueued, ID: s.queuedID,
				}); err != nil {
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

func (s *Session) cancelTurn(ctx context.Context) error {
	return s.dispatch(ctx, &wire.SessionTurnCancelledAction{Type: wire.ActionTypeSessionTurnCancelled, TurnID: s.turnID})
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
// to it and keeps its snapshot as the starting state.
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
	st, err := decodeSnapshot[wire.SessionState](snap)
	if err != nil {
		return err
	}
	s.state, s.seq = st, snap.FromSeq
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
		Channel:          s.channel,
		Provider:         &provider,
		WorkingDirectory: wire.Ptr(fileURI(dir)),
	})
}

// decodeSnapshot reads a snapshot's state as T.
func decodeSnapshot[T any](snap *wire.Snapshot) (*T, error) {
	raw, err := json.Marshal(snap.State)
	if err != nil {
		return nil, fmt.Errorf("re-encoding the snapshot of %s: %w", snap.Resource, err)
	}
	var st T
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("decoding the snapshot of %s: %w", snap.Resource, err)
	}
	return &st, nil
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
	if env.Channel != s.channel {
		if s.terms[env.Channel] && s.r != nil {
			s.r.envelope(env)
		}
		return 0, false, nil
	}
	if env.RejectionReason == nil {
		if env.ServerSeq <= s.seq {
			return 0, false, nil // already part of the snapshot
		}
		reducer.Session(s.state, env.Action, reducer.SystemClock)
		s.seq = env.ServerSeq
	}
	if env.RejectionReason != nil {
		return s.rejected(ctx, env)
	}
	s.watchTerminals(ctx, env)
	if s.r != nil {
		s.r.envelope(env)
	}
	code, done, err = s.apply(ctx, env)
	if !done && err == nil && s.follow && s.untilIdle && s.idle() && !consumesQueued(env) {
		return ExitOK, true, nil
	}
	return code, done, err
}

// consumesQueued reports whether env is the host taking a queued message
// to start a turn with it: the turnStarted follows at once, so the
// session is not idle in between.
func consumesQueued(env *wire.ActionEnvelope) bool {
	a, ok := env.Action.Value.(*wire.SessionPendingMessageRemovedAction)
	return ok && env.Origin == nil && a.Kind == wire.PendingMessageKindQueued
}

// rejected handles the echo of one of our actions the host refused.
func (s *Session) rejected(ctx context.Context, env *wire.ActionEnvelope) (int, bool, error) {
	reason := *env.RejectionReason
	switch a := env.Action.Value.(type) {
	case *wire.SessionTurnStartedAction:
		if a.TurnID != s.turnID || s.turnID == "" {
			break
		}
		if s.state.ActiveTurn != nil {
			// Another client started a turn just before ours.
			return 0, false, s.queue(ctx)
		}
		return ExitError, true, fmt.Errorf("the server refused the prompt: %s", reason)
	case *wire.SessionPendingMessageSetAction:
		if a.ID == s.queuedID && s.queuedID != "" {
			return ExitError, true, fmt.Errorf("the server refused to queue the prompt: %s", reason)
		}
	case *wire.SessionPendingMessageRemovedAction:
		if a.ID == s.retracted {
			return 0, false, nil // too late to take it back: the turn has started and is being cancelled
		}
	}
	if s.r != nil {
		s.r.envelope(env)
	}
	return 0, false, nil
}

// apply acts on an accepted action of the session: asks its questions and
// notices the end of our turn.
func (s *Session) apply(ctx context.Context, env *wire.ActionEnvelope) (int, bool, error) {
	ours := func(turnID string) bool { return s.turnID != "" && turnID == s.turnID }
	switch a := env.Action.Value.(type) {
	case *wire.SessionTurnStartedAction:
		if s.queuedID != "" && a.QueuedMessageID != nil && *a.QueuedMessageID == s.queuedID {
			s.turnID, s.queuedID = a.TurnID, ""
			if s.cancelling {
				return 0, false, s.cancelTurn(ctx)
			}
		}
	case *wire.SessionPendingMessageRemovedAction:
		if s.queuedID == "" || a.ID != s.queuedID || env.Origin == nil {
			break // the host consumes it: our turn starts next
		}
		if env.Origin.ClientID == s.c.ClientID() {
			return ExitCancelled, true, nil
		}
		return ExitCancelled, true, fmt.Errorf("client %s removed the queued message", env.Origin.ClientID)
	case *wire.SessionToolCallReadyAction:
		if a.Confirmed == nil {
			return 0, false, s.ask(ctx, newApprovalAsker(a, s.toolName(a.ToolCallID)))
		}
	case *wire.SessionToolCallApprovedAction:
		s.resolved(a.ToolCallID)
	case *wire.SessionToolCallDeniedAction:
		if ours(a.TurnID) {
			s.denied = true
		}
		s.resolved(a.ToolCallID)
	case *wire.SessionToolCallCompleteAction:
		if a.RequiresResultConfirmation != nil && *a.RequiresResultConfirmation {
			return 0, false, s.ask(ctx, &resultAsker{turnID: a.TurnID, toolCallID: a.ToolCallID, name: s.toolName(a.ToolCallID)})
		}
	case *wire.SessionToolCallResultConfirmedAction:
		if ours(a.TurnID) && !a.Approved {
			s.denied = true
		}
		s.resolved(a.ToolCallID)
	case *wire.SessionInputRequestedAction:
		return 0, false, s.ask(ctx, newInputAsker(&a.Request))
	case *wire.SessionInputCompletedAction:
		s.resolved(a.RequestID)
	case *wire.SessionTurnCompleteAction:
		if ours(a.TurnID) && !s.follow {
			if s.denied {
				return ExitDenied, true, nil
			}
			return ExitOK, true, nil
		}
	case *wire.SessionErrorAction:
		if ours(a.TurnID) && !s.follow {
			if s.r == nil { // JSON: the error is in the NDJSON; say it on stderr too
				fmt.Fprintf(s.io.Stderr, "%s: turn failed: %s\n", s.io.Name, errorText(&a.Error))
			}
			return ExitTurnError, true, nil
		}
	case *wire.SessionTurnCancelledAction:
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
		if st, err := decodeSnapshot[wire.TerminalState](snap); err == nil {
			s.r.terminalSnapshot(uri, st, snap.FromSeq)
		}
	}
}

func (s *Session) toolName(id string) string {
	if s.r != nil {
		return s.r.toolName(id)
	}
	if n := toolDisplayName(s.state, id); n != "" {
		return n
	}
	return id
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

func (s *Session) dispatch(ctx context.Context, act any) error {
	_, err := s.c.DispatchAction(ctx, s.channel, wire.StateAction{Value: act})
	return err
}
