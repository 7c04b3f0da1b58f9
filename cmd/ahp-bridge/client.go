package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// Exit codes of `ahp-bridge client` beyond exitOK, exitError and exitUsage.
const (
	exitTurnError = 3 // the turn ended with session/error
	exitCancelled = 4 // the turn was cancelled
	exitDenied    = 5 // the turn completed but a tool call was denied
)

// cancelGrace is how long the client waits for the host to confirm a
// cancellation after Ctrl-C before giving up.
const cancelGrace = 10 * time.Second

const clientUsage = `usage: ahp-bridge client URL [--provider ID] [--cwd DIR] [--session URI]
                         [--approve-all|--deny-all] [--json] PROMPT...

Connects to an AHP server, creates a session (or joins --session), sends
PROMPT as one turn and shows the agent's answer, reasoning and tool calls.
Permission requests and questions are asked on the terminal; without one
(stdin not a terminal) they are left to another client unless
--approve-all or --deny-all is given. Ctrl-C cancels the turn.

Exit codes: 0 turn complete, 1 connection or protocol error, 2 bad usage,
3 turn error, 4 cancelled, 5 a tool call was denied.

Flags:
`

// clientOptions are the parsed `client` flags.
type clientOptions struct {
	URL        string
	Provider   string // "" = the first agent of the root state
	Cwd        string // "" = the current directory
	Session    string // join this session instead of creating one
	ApproveAll bool
	DenyAll    bool
	JSON       bool
	Prompt     string
}

// errHelp reports that -h was asked for; the usage is already printed.
var errHelp = errors.New("help requested")

// parseClientArgs parses flags and positional arguments in any order:
// `client URL --json PROMPT` and `client --json URL PROMPT` are the same.
// A "--" ends the flags; everything after it is prompt text.
func parseClientArgs(args []string, stderr io.Writer) (clientOptions, error) {
	var o clientOptions
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), clientUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.Provider, "provider", "", "agent provider `ID` (default: the server's first agent)")
	fs.StringVar(&o.Cwd, "cwd", "", "working directory `DIR` of a new session (default: the current directory)")
	fs.StringVar(&o.Session, "session", "", "join the existing session `URI` instead of creating one")
	fs.BoolVar(&o.ApproveAll, "approve-all", false, "approve every permission request without asking")
	fs.BoolVar(&o.DenyAll, "deny-all", false, "deny every permission request without asking")
	fs.BoolVar(&o.JSON, "json", false, "print only NDJSON: one {\"method\":…,\"params\":…} line per envelope or notification")

	var positional []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, errHelp
			}
			return o, err // the flag package has printed the problem and the usage
		}
		left := fs.Args()
		if len(left) == 0 {
			break
		}
		// fs.Parse stops at the first non-flag or after "--"; after "--"
		// everything is positional.
		consumed := len(rest) - len(left)
		if consumed > 0 && rest[consumed-1] == "--" {
			positional = append(positional, left...)
			break
		}
		positional = append(positional, left[0])
		rest = left[1:]
	}
	fail := func(format string, a ...any) (clientOptions, error) {
		err := fmt.Errorf(format, a...)
		fmt.Fprintf(stderr, "ahp-bridge client: %v\n\n", err)
		fs.Usage()
		return o, err
	}
	if len(positional) == 0 {
		return fail("missing the server URL")
	}
	o.URL = positional[0]
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fail("the server URL must look like ws://HOST:PORT/?tkn=TOKEN, not %q", o.URL)
	}
	o.Prompt = strings.TrimSpace(strings.Join(positional[1:], " "))
	if o.Prompt == "" {
		return fail("missing the PROMPT")
	}
	if o.ApproveAll && o.DenyAll {
		return fail("--approve-all and --deny-all exclude each other")
	}
	if o.Session != "" && (o.Provider != "" || o.Cwd != "") {
		return fail("--session joins an existing session; --provider and --cwd only apply to new ones")
	}
	if o.Session != "" && !strings.HasPrefix(o.Session, "ahp-session:") {
		return fail("--session wants a session URI (ahp-session:/…), not %q", o.Session)
	}
	return o, nil
}

// runClient implements `ahp-bridge client`. ctx is cancelled on the first
// Ctrl-C (SIGINT): while connecting that aborts, during the session it
// cancels the running turn rather than dropping the connection.
func runClient(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseClientArgs(args, stderr)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if opts.Session == "" && opts.Cwd == "" {
		if opts.Cwd, err = os.Getwd(); err != nil {
			fmt.Fprintf(stderr, "ahp-bridge client: finding the current directory for --cwd: %v\n", err)
			return exitError
		}
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := client.Dial(dialCtx, opts.URL, client.Options{})
	if err == nil {
		_, err = c.Initialize(dialCtx)
		if err != nil {
			_ = c.Close()
		}
	}
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge client: %v\n", err)
		return exitError
	}
	defer c.Close()

	sio := sessionIO{
		Stdin:       stdin,
		Stdout:      stdout,
		Stderr:      stderr,
		Interactive: isTerminal(stdin),
		Color:       isTerminal(stdout) && os.Getenv("NO_COLOR") == "",
	}
	return runClientSession(ctx, c, opts, sio)
}

// watchInterrupts turns Ctrl-C presses into values on the returned
// channel: the first is the cancellation of ctx (main's
// signal.NotifyContext), the next a further SIGINT, caught here once ctx
// is done. stop ends the watcher goroutine and waits for it.
func watchInterrupts(ctx context.Context) (presses <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 2) // never more than two sends: no blocking
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-quit:
			return
		}
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt)
		defer signal.Stop(sigs)
		ch <- struct{}{}
		select {
		case <-sigs:
			ch <- struct{}{}
		case <-quit:
		}
	}()
	return ch, func() { close(quit); <-done }
}

// sessionIO is the terminal side of a client session.
type sessionIO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Interactive says permission requests and questions may be asked on
	// Stdin; when false (and no --approve-all/--deny-all) the client waits
	// for another client to answer them.
	Interactive bool
	// Color enables ANSI dimming of reasoning.
	Color bool
	// Interrupts delivers Ctrl-C presses: the first cancels the turn, the
	// second quits. Nil means: the cancellation of ctx is the first press
	// and a SIGINT after it the second (see watchInterrupts).
	Interrupts <-chan struct{}
}

// runClientSession runs one prompt on an initialized client: it creates or
// joins the session, starts the turn, renders it and answers permission
// requests and questions, and returns the exit code. `demo` reuses it.
//
// With sio.Interrupts nil, cancelling ctx (main's signal.NotifyContext on
// Ctrl-C) cancels the turn instead of dropping the connection: the run goes
// on with a context that is not cancelled, and ends with exit code 4 once
// the host confirms the cancellation.
func runClientSession(ctx context.Context, c *client.Client, opts clientOptions, sio sessionIO) int {
	if sio.Interrupts == nil {
		presses, stop := watchInterrupts(ctx)
		defer stop()
		sio.Interrupts = presses
		ctx = context.WithoutCancel(ctx)
	}
	s := &clientSession{c: c, opts: opts, io: sio}
	if !opts.JSON {
		s.r = newRenderer(sio.Stdout, sio.Color, c.ClientID())
	}
	code, err := s.run(ctx)
	if err != nil {
		fmt.Fprintf(sio.Stderr, "ahp-bridge client: %v\n", err)
	}
	return code
}

// clientSession is the state of one `client` run.
type clientSession struct {
	c    *client.Client
	opts clientOptions
	io   sessionIO
	r    *renderer // nil with --json

	channel  string
	turnID   string
	denied   bool    // a tool call of our turn was denied
	asks     []asker // open permission requests and questions, oldest first
	shown    asker   // the one whose question is on screen
	lines    <-chan string
	stdinEOF bool // stdin ended: nothing more can be asked here
	stopIn   chan struct{}
}

func (s *clientSession) run(ctx context.Context) (int, error) {
	st, err := s.setUp(ctx)
	if errors.Is(err, errInterrupted) {
		return exitCancelled, errors.New("interrupted before the turn started")
	}
	if err != nil {
		return exitError, err
	}
	if st.Lifecycle == wire.SessionLifecycleCreationFailed {
		msg := "unknown reason"
		if st.CreationError != nil {
			msg = errorText(st.CreationError)
		}
		return exitError, fmt.Errorf("the session could not be created: %s", msg)
	}

	// Events are read by a pump goroutine so that one select can wait for
	// them, for answers on stdin and for Ctrl-C.
	pumpCtx, stopPump := context.WithCancel(ctx)
	events := make(chan client.Event)
	pumpErr := make(chan error, 1)
	pumpDone := make(chan struct{})
	go func() {
		defer close(pumpDone)
		for {
			ev, err := s.c.Next(pumpCtx)
			if err != nil {
				pumpErr <- err
				return
			}
			select {
			case events <- ev:
			case <-pumpCtx.Done():
				pumpErr <- pumpCtx.Err()
				return
			}
		}
	}()
	defer func() { stopPump(); <-pumpDone }()
	s.stopIn = make(chan struct{})
	defer close(s.stopIn)

	s.turnID = client.NewUUID()
	turn := &wire.SessionTurnStartedAction{
		Type:    wire.ActionTypeSessionTurnStarted,
		TurnID:  s.turnID,
		Message: wire.Message{Text: s.opts.Prompt, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}},
	}
	if _, err := s.c.DispatchAction(ctx, s.channel, wire.StateAction{Value: turn}); err != nil {
		return exitError, err
	}

	var (
		cancelling bool
		deadline   <-chan time.Time
	)
	for {
		select {
		case ev := <-events:
			if code, done, err := s.handle(ctx, ev); done {
				return code, err
			}
		case err := <-pumpErr:
			if ctx.Err() != nil {
				return exitError, fmt.Errorf("stopped before the turn ended: %w", ctx.Err())
			}
			return exitError, fmt.Errorf("connection lost during the turn: %w", err)
		case line, ok := <-s.lines:
			if !ok {
				s.lines = nil
				s.stdinEOF = true
				s.stdinClosed()
				continue
			}
			if err := s.answer(ctx, line); err != nil {
				return exitError, err
			}
		case <-s.io.Interrupts:
			if cancelling {
				s.note("quitting without waiting for the cancellation")
				return exitCancelled, nil
			}
			cancelling = true
			s.note("cancelling the turn (Ctrl-C again to quit)…")
			act := &wire.SessionTurnCancelledAction{Type: wire.ActionTypeSessionTurnCancelled, TurnID: s.turnID}
			if _, err := s.c.DispatchAction(ctx, s.channel, wire.StateAction{Value: act}); err != nil {
				return exitError, err
			}
			deadline = time.After(cancelGrace)
		case <-deadline:
			return exitCancelled, fmt.Errorf("the host did not confirm the cancellation within %s", cancelGrace)
		}
	}
}

// errInterrupted is the cause of a set-up cut short by Ctrl-C.
var errInterrupted = errors.New("interrupted")

// setUp opens the session and waits until it is ready or failed. A Ctrl-C
// meanwhile abandons the wait.
func (s *clientSession) setUp(ctx context.Context) (*wire.SessionState, error) {
	setupCtx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() { // ends with the set-up: cancel is deferred below
		defer close(watched)
		select {
		case <-s.io.Interrupts:
			cancel(errInterrupted)
		case <-setupCtx.Done():
		}
	}()
	defer func() { cancel(nil); <-watched }()

	err := s.openSession(setupCtx)
	var st *wire.SessionState
	if err == nil {
		st, err = s.c.WaitFor(setupCtx, s.channel, func(st *wire.SessionState) bool {
			return st.Lifecycle != wire.SessionLifecycleCreating
		})
	}
	if err != nil && errors.Is(context.Cause(setupCtx), errInterrupted) {
		return nil, errInterrupted
	}
	return st, err
}

// openSession creates the session (or checks the one to join) and
// subscribes to it.
func (s *clientSession) openSession(ctx context.Context) error {
	if s.opts.Session != "" {
		s.channel = s.opts.Session
		snap, err := s.c.Subscribe(ctx, s.channel)
		if err != nil {
			return err
		}
		if snap == nil {
			return fmt.Errorf("%s is not a session the server knows", s.channel)
		}
		return nil
	}
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
	dir, err := filepath.Abs(s.opts.Cwd)
	if err != nil {
		return fmt.Errorf("resolving --cwd %q: %w", s.opts.Cwd, err)
	}
	s.channel = client.NewSessionURI()
	params := wire.CreateSessionParams{
		Channel:          s.channel,
		Provider:         &provider,
		WorkingDirectory: wire.Ptr(fileURI(dir)),
	}
	if err := s.c.CreateSession(ctx, params); err != nil {
		return err
	}
	_, err = s.c.Subscribe(ctx, s.channel)
	return err
}

// fileURI turns an absolute path into a file: URI.
func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// handle processes one event; done means the run is over with code.
func (s *clientSession) handle(ctx context.Context, ev client.Event) (code int, done bool, err error) {
	if s.opts.JSON {
		if err := writeNDJSON(s.io.Stdout, ev); err != nil {
			return exitError, true, err
		}
	}
	if ev.Err != nil {
		fmt.Fprintf(s.io.Stderr, "ahp-bridge client: the server reported: %v\n", ev.Err)
		return 0, false, nil
	}
	if ev.Envelope == nil || ev.Channel != s.channel {
		return 0, false, nil
	}
	env := ev.Envelope
	if s.r != nil {
		s.r.envelope(env)
	}
	if env.RejectionReason != nil {
		if t, ok := env.Action.Value.(*wire.SessionTurnStartedAction); ok && t.TurnID == s.turnID {
			return exitError, true, fmt.Errorf("the server refused the prompt: %s", *env.RejectionReason)
		}
		return 0, false, nil
	}
	switch a := env.Action.Value.(type) {
	case *wire.SessionToolCallReadyAction:
		if a.TurnID == s.turnID && a.Confirmed == nil {
			return 0, false, s.ask(ctx, newApprovalAsker(a, s.toolName(a.ToolCallID)))
		}
	case *wire.SessionToolCallApprovedAction:
		s.resolved(a.ToolCallID)
	case *wire.SessionToolCallDeniedAction:
		if a.TurnID == s.turnID {
			s.denied = true
		}
		s.resolved(a.ToolCallID)
	case *wire.SessionToolCallCompleteAction:
		if a.TurnID == s.turnID && a.RequiresResultConfirmation != nil && *a.RequiresResultConfirmation {
			return 0, false, s.ask(ctx, &resultAsker{turnID: a.TurnID, toolCallID: a.ToolCallID, name: s.toolName(a.ToolCallID)})
		}
	case *wire.SessionToolCallResultConfirmedAction:
		if a.TurnID == s.turnID && !a.Approved {
			s.denied = true
		}
		s.resolved(a.ToolCallID)
	case *wire.SessionInputRequestedAction:
		return 0, false, s.ask(ctx, newInputAsker(&a.Request))
	case *wire.SessionInputCompletedAction:
		s.resolved(a.RequestID)
	case *wire.SessionTurnCompleteAction:
		if a.TurnID == s.turnID {
			if s.denied {
				return exitDenied, true, nil
			}
			return exitOK, true, nil
		}
	case *wire.SessionErrorAction:
		if a.TurnID == s.turnID {
			if s.r == nil { // --json: the error is in the NDJSON; say it on stderr too
				fmt.Fprintf(s.io.Stderr, "ahp-bridge client: turn failed: %s\n", errorText(&a.Error))
			}
			return exitTurnError, true, nil
		}
	case *wire.SessionTurnCancelledAction:
		if a.TurnID == s.turnID {
			return exitCancelled, true, nil
		}
	}
	return 0, false, nil
}

func (s *clientSession) toolName(id string) string {
	if s.r != nil {
		return s.r.toolName(id)
	}
	if st, err := s.c.Session(s.channel); err == nil && st.ActiveTurn != nil {
		for _, p := range st.ActiveTurn.ResponseParts {
			if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok && toolCallID(tc.ToolCall) == id {
				if n := toolCallDisplayName(tc.ToolCall); n != "" {
					return n
				}
			}
		}
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

// note prints a line for the user: through the renderer on stdout, or on
// stderr with --json (stdout then carries nothing but NDJSON).
func (s *clientSession) note(format string, args ...any) {
	if s.r != nil {
		s.r.line(format, args...)
		return
	}
	fmt.Fprintf(s.io.Stderr, format+"\n", args...)
}

// ask handles a new permission request or question: answered at once by
// --approve-all/--deny-all, asked on the terminal, or left for another
// client.
func (s *clientSession) ask(ctx context.Context, a asker) error {
	if act, ok := a.auto(s.opts.ApproveAll, s.opts.DenyAll); ok {
		return s.dispatch(ctx, act)
	}
	if !s.io.Interactive || s.stdinEOF {
		s.note("waiting for another client to answer: %s", a.summary())
		return nil
	}
	s.asks = append(s.asks, a)
	if s.lines == nil {
		s.lines = startLineReader(s.io.Stdin, s.stopIn)
	}
	s.showNext()
	return nil
}

// showNext puts the oldest open question on screen if none is shown.
func (s *clientSession) showNext() {
	if s.shown != nil || len(s.asks) == 0 {
		return
	}
	s.shown = s.asks[0]
	s.note("%s", s.shown.prompt())
}

// answer feeds a line typed on stdin to the question on screen.
func (s *clientSession) answer(ctx context.Context, line string) error {
	if s.shown == nil {
		return nil // nothing asked: ignore stray input
	}
	act, done, problem := s.shown.answer(line)
	if problem != "" {
		s.note("  %s", problem)
		s.note("%s", s.shown.prompt())
		return nil
	}
	if !done {
		s.note("%s", s.shown.prompt())
		return nil
	}
	key := s.shown.key()
	s.drop(key)
	if err := s.dispatch(ctx, act); err != nil {
		return err
	}
	s.showNext()
	return nil
}

// resolved removes a question that has been answered (by us or another
// client) and moves on to the next.
func (s *clientSession) resolved(key string) {
	if s.shown != nil && s.shown.key() == key {
		s.note("  (answered)")
	}
	s.drop(key)
	s.showNext()
}

func (s *clientSession) drop(key string) {
	if s.shown != nil && s.shown.key() == key {
		s.shown = nil
	}
	kept := s.asks[:0]
	for _, a := range s.asks {
		if a.key() != key {
			kept = append(kept, a)
		}
	}
	s.asks = kept
}

// stdinClosed: nobody can answer here any more; leave the questions to
// other clients.
func (s *clientSession) stdinClosed() {
	if s.shown == nil && len(s.asks) == 0 {
		return
	}
	s.note("stdin closed; waiting for another client to answer")
	s.shown = nil
	s.asks = nil
}

func (s *clientSession) dispatch(ctx context.Context, act any) error {
	_, err := s.c.DispatchAction(ctx, s.channel, wire.StateAction{Value: act})
	return err
}

// startLineReader reads stdin line by line. The goroutine ends at EOF or,
// after a line was read, when stop is closed; a read blocked on a terminal
// ends with the process.
func startLineReader(r io.Reader, stop <-chan struct{}) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				select {
				case lines <- strings.TrimRight(line, "\r\n"):
				case <-stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

// toolCallID reads the id of any tool-call state variant.
func toolCallID(s wire.ToolCallState) string {
	id, _ := reducer.ToolCallID(s)
	return id
}

func toolCallDisplayName(s wire.ToolCallState) string { return reducer.ToolCallDisplayName(s) }
