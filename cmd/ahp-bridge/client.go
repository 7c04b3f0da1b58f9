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
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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

// asker is one open permission request or question, asked on the
// terminal one line at a time.
type asker interface {
	// key is the toolCallId or input requestId the answer resolves.
	key() string
	// summary is a one-line description for "waiting for another client".
	summary() string
	// prompt is the text asking for the next line of input.
	prompt() string
	// answer consumes a line. It returns the action to dispatch when the
	// question is complete, or a problem to show before asking again.
	answer(line string) (action any, done bool, problem string)
	// auto answers without asking under --approve-all / --deny-all; ok is
	// false when the flags do not settle it.
	auto(approveAll, denyAll bool) (action any, ok bool)
}

// approvalAsker asks whether a tool call may run, offering the host's
// confirmation options.
type approvalAsker struct {
	turnID, toolCallID string
	name, invocation   string
	options            []wire.ConfirmationOption
}

func newApprovalAsker(a *wire.SessionToolCallReadyAction, name string) *approvalAsker {
	return &approvalAsker{
		turnID:     a.TurnID,
		toolCallID: a.ToolCallID,
		name:       name,
		invocation: oneLine(markdownText(&a.InvocationMessage)),
		options:    a.Options,
	}
}

func (a *approvalAsker) key() string     { return a.toolCallID }
func (a *approvalAsker) summary() string { return "may " + a.name + " run? (" + a.invocation + ")" }

func (a *approvalAsker) prompt() string {
	if len(a.options) == 0 {
		return fmt.Sprintf("  Allow %s? [y/n]", a.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  Allow %s?", a.name)
	for i, o := range a.options {
		fmt.Fprintf(&b, "  [%d] %s", i+1, o.Label)
	}
	fmt.Fprintf(&b, "  (1-%d, y or n)", len(a.options))
	return b.String()
}

func (a *approvalAsker) answer(line string) (any, bool, string) {
	in := strings.ToLower(strings.TrimSpace(line))
	switch in {
	case "":
		return nil, false, ""
	case "y", "yes":
		return a.decide(wire.ConfirmationOptionKindApprove, nil), true, ""
	case "n", "no":
		return a.decide(wire.ConfirmationOptionKindDeny, nil), true, ""
	}
	for i, o := range a.options {
		if in == fmt.Sprint(i+1) || in == strings.ToLower(o.Label) || in == strings.ToLower(o.ID) {
			return a.decide(o.Kind, &a.options[i]), true, ""
		}
	}
	if len(a.options) == 0 {
		return nil, false, fmt.Sprintf("%q is not an answer: type y or n", line)
	}
	return nil, false, fmt.Sprintf("%q is not an answer: type a number from 1 to %d, y or n", line, len(a.options))
}

func (a *approvalAsker) auto(approveAll, denyAll bool) (any, bool) {
	switch {
	case approveAll:
		return a.decide(wire.ConfirmationOptionKindApprove, nil), true
	case denyAll:
		return a.decide(wire.ConfirmationOptionKindDeny, nil), true
	}
	return nil, false
}

// decide builds the confirmation. Without an explicit option it picks the
// host's first option of the wanted kind, so "y" means "allow once" rather
// than "always allow" when the host lists that first.
func (a *approvalAsker) decide(kind wire.ConfirmationOptionKind, opt *wire.ConfirmationOption) any {
	if opt == nil {
		for i := range a.options {
			if a.options[i].Kind == kind {
				opt = &a.options[i]
				break
			}
		}
	}
	var selected *string
	if opt != nil {
		selected = wire.Ptr(opt.ID)
	}
	if kind == wire.ConfirmationOptionKindApprove {
		return &wire.SessionToolCallApprovedAction{
			Type:             wire.ActionTypeSessionToolCallConfirmed,
			TurnID:           a.turnID,
			ToolCallID:       a.toolCallID,
			Approved:         true,
			Confirmed:        wire.ToolCallConfirmationReasonUserAction,
			SelectedOptionID: selected,
		}
	}
	return &wire.SessionToolCallDeniedAction{
		Type:             wire.ActionTypeSessionToolCallConfirmed,
		TurnID:           a.turnID,
		ToolCallID:       a.toolCallID,
		Approved:         false,
		Reason:           wire.ToolCallCancellationReasonDenied,
		SelectedOptionID: selected,
	}
}

// resultAsker asks whether the result of a finished tool call may be
// used (session/toolCallComplete with requiresResultConfirmation).
type resultAsker struct {
	turnID, toolCallID, name string
}

func (a *resultAsker) key() string     { return a.toolCallID }
func (a *resultAsker) summary() string { return "may the agent use the result of " + a.name + "?" }
func (a *resultAsker) prompt() string {
	return fmt.Sprintf("  Let the agent use the result of %s? [y/n]", a.name)
}

func (a *resultAsker) answer(line string) (any, bool, string) {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return a.decide(true), true, ""
	case "n", "no":
		return a.decide(false), true, ""
	case "":
		return nil, false, ""
	}
	return nil, false, fmt.Sprintf("%q is not an answer: type y or n", line)
}

func (a *resultAsker) auto(approveAll, denyAll bool) (any, bool) {
	if approveAll || denyAll {
		return a.decide(approveAll), true
	}
	return nil, false
}

func (a *resultAsker) decide(approved bool) any {
	return &wire.SessionToolCallResultConfirmedAction{
		Type:       wire.ActionTypeSessionToolCallResultConfirmed,
		TurnID:     a.turnID,
		ToolCallID: a.toolCallID,
		Approved:   approved,
	}
}

// inputAsker asks the questions of a session/inputRequested one by one.
type inputAsker struct {
	req     *wire.SessionInputRequest
	next    int // index of the question being asked
	answers map[string]wire.SessionInputAnswer
}

func newInputAsker(req *wire.SessionInputRequest) *inputAsker {
	return &inputAsker{req: req, answers: map[string]wire.SessionInputAnswer{}}
}

func (a *inputAsker) key() string { return a.req.ID }

func (a *inputAsker) summary() string {
	if a.req.Message != nil {
		return oneLine(*a.req.Message)
	}
	if len(a.req.Questions) > 0 {
		return oneLine(questionOf(a.req.Questions[0]).message)
	}
	return "input request " + a.req.ID
}

func (a *inputAsker) prompt() string {
	if len(a.req.Questions) == 0 {
		return "  Accept? [y/n]"
	}
	q := questionOf(a.req.Questions[a.next])
	var b strings.Builder
	b.WriteString("  ")
	if q.title != "" {
		b.WriteString(q.title + ": ")
	}
	b.WriteString(oneLine(q.message))
	for i, o := range q.options {
		fmt.Fprintf(&b, "\n    [%d] %s", i+1, o.Label)
		if o.Recommended != nil && *o.Recommended {
			b.WriteString(" (recommended)")
		}
	}
	hint := q.hint()
	if hint != "" {
		b.WriteString("\n  " + hint)
	}
	return b.String()
}

func (a *inputAsker) answer(line string) (any, bool, string) {
	if len(a.req.Questions) == 0 {
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return a.complete(wire.SessionInputResponseKindAccept), true, ""
		case "n", "no":
			return a.complete(wire.SessionInputResponseKindDecline), true, ""
		}
		return nil, false, fmt.Sprintf("%q is not an answer: type y or n", line)
	}
	q := questionOf(a.req.Questions[a.next])
	ans, problem := q.parse(strings.TrimSpace(line))
	if problem != "" {
		return nil, false, problem
	}
	a.answers[q.id] = ans
	a.next++
	if a.next < len(a.req.Questions) {
		return nil, false, ""
	}
	return a.complete(wire.SessionInputResponseKindAccept), true, ""
}

// auto declines under --deny-all and, under --approve-all, accepts with
// the defaults when every required question has one.
func (a *inputAsker) auto(approveAll, denyAll bool) (any, bool) {
	if denyAll {
		return a.complete(wire.SessionInputResponseKindDecline), true
	}
	if !approveAll {
		return nil, false
	}
	for _, raw := range a.req.Questions {
		q := questionOf(raw)
		ans, problem := q.parse("")
		if problem != "" {
			return nil, false
		}
		a.answers[q.id] = ans
	}
	return a.complete(wire.SessionInputResponseKindAccept), true
}

func (a *inputAsker) complete(kind wire.SessionInputResponseKind) any {
	act := &wire.SessionInputCompletedAction{
		Type:      wire.ActionTypeSessionInputCompleted,
		RequestID: a.req.ID,
		Response:  kind,
	}
	if kind == wire.SessionInputResponseKindAccept {
		act.Answers = a.answers
	}
	return act
}

// question is the common view of the five question kinds.
type question struct {
	id, title, message string
	kind               wire.SessionInputQuestionKind
	required           bool
	options            []wire.SessionInputOption
	freeform           bool
	min, max           *float64
	defText            *string
	defNumber          *float64
	defBool            *bool
}

func questionOf(u wire.SessionInputQuestion) question {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	flag := func(p *bool) bool { return p != nil && *p }
	switch q := u.Value.(type) {
	case *wire.SessionInputTextQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), min: q.Min, max: q.Max, defText: q.DefaultValue}
	case *wire.SessionInputNumberQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), min: q.Min, max: q.Max, defNumber: q.DefaultValue}
	case *wire.SessionInputBooleanQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), defBool: q.DefaultValue}
	case *wire.SessionInputSingleSelectQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), options: q.Options, freeform: flag(q.AllowFreeformInput)}
	case *wire.SessionInputMultiSelectQuestion:
		return question{id: q.ID, title: str(q.Title), message: q.Message, kind: q.Kind, required: flag(q.Required), options: q.Options, freeform: flag(q.AllowFreeformInput), min: q.Min, max: q.Max}
	}
	// An unknown kind from a newer host: ask for free text and skip it if
	// nothing is typed.
	return question{id: unknownQuestionID(u), message: "(a question this client does not understand)", kind: wire.SessionInputQuestionKindText}
}

func unknownQuestionID(u wire.SessionInputQuestion) string {
	b, _ := json.Marshal(u)
	var head struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &head)
	return head.ID
}

// hint tells what to type.
func (q question) hint() string {
	var h string
	switch q.kind {
	case wire.SessionInputQuestionKindBoolean:
		h = "y or n"
		if q.defBool != nil {
			h += fmt.Sprintf(", empty for %s", yesNo(*q.defBool))
		}
	case wire.SessionInputQuestionKindSingleSelect:
		h = "a number"
		if q.freeform {
			h += " or your own text"
		}
	case wire.SessionInputQuestionKindMultiSelect:
		h = "numbers separated by commas"
	case wire.SessionInputQuestionKindNumber, wire.SessionInputQuestionKindInteger:
		h = "a number"
		if q.kind == wire.SessionInputQuestionKindInteger {
			h = "a whole number"
		}
		if q.defNumber != nil {
			h += fmt.Sprintf(", empty for %v", *q.defNumber)
		}
	default:
		if q.defText != nil {
			h = fmt.Sprintf("empty for %q", *q.defText)
		}
	}
	if !q.required && q.defaultAnswer() == nil {
		if h != "" {
			h += "; "
		}
		h += "empty to skip"
	}
	if h == "" {
		return ""
	}
	return "(" + h + ")"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// defaultAnswer is the value an empty line stands for, if any.
func (q question) defaultAnswer() any {
	switch {
	case q.defText != nil:
		return &wire.SessionInputTextAnswerValue{Kind: wire.SessionInputAnswerValueKindText, Value: *q.defText}
	case q.defNumber != nil:
		return &wire.SessionInputNumberAnswerValue{Kind: wire.SessionInputAnswerValueKindNumber, Value: *q.defNumber}
	case q.defBool != nil:
		return &wire.SessionInputBooleanAnswerValue{Kind: wire.SessionInputAnswerValueKindBoolean, Value: *q.defBool}
	}
	for _, o := range q.options {
		if o.Recommended != nil && *o.Recommended {
			if q.kind == wire.SessionInputQuestionKindMultiSelect {
				return &wire.SessionInputSelectedManyAnswerValue{Kind: wire.SessionInputAnswerValueKindSelectedMany, Value: []string{o.ID}}
			}
			return &wire.SessionInputSelectedAnswerValue{Kind: wire.SessionInputAnswerValueKindSelected, Value: o.ID}
		}
	}
	return nil
}

// parse turns a typed line into an answer, or says what is wrong with it.
func (q question) parse(in string) (wire.SessionInputAnswer, string) {
	submitted := func(v any) wire.SessionInputAnswer {
		return wire.SessionInputAnswer{Value: &wire.SessionInputAnswered{
			State: wire.SessionInputAnswerStateSubmitted,
			Value: wire.SessionInputAnswerValue{Value: v},
		}}
	}
	if in == "" {
		if d := q.defaultAnswer(); d != nil {
			return submitted(d), ""
		}
		if q.required {
			return wire.SessionInputAnswer{}, "an answer is required"
		}
		return wire.SessionInputAnswer{Value: &wire.SessionInputSkipped{State: wire.SessionInputAnswerStateSkipped}}, ""
	}
	switch q.kind {
	case wire.SessionInputQuestionKindBoolean:
		switch strings.ToLower(in) {
		case "y", "yes", "true":
			return submitted(&wire.SessionInputBooleanAnswerValue{Kind: wire.SessionInputAnswerValueKindBoolean, Value: true}), ""
		case "n", "no", "false":
			return submitted(&wire.SessionInputBooleanAnswerValue{Kind: wire.SessionInputAnswerValueKindBoolean, Value: false}), ""
		}
		return wire.SessionInputAnswer{}, fmt.Sprintf("%q is not an answer: type y or n", in)
	case wire.SessionInputQuestionKindNumber, wire.SessionInputQuestionKindInteger:
		var f float64
		if _, err := fmt.Sscan(in, &f); err != nil {
			return wire.SessionInputAnswer{}, fmt.Sprintf("%q is not a number", in)
		}
		if q.kind == wire.SessionInputQuestionKindInteger && f != float64(int64(f)) {
			return wire.SessionInputAnswer{}, fmt.Sprintf("%q is not a whole number", in)
		}
		if (q.min != nil && f < *q.min) || (q.max != nil && f > *q.max) {
			return wire.SessionInputAnswer{}, fmt.Sprintf("%v is out of range%s", f, rangeText(q.min, q.max))
		}
		return submitted(&wire.SessionInputNumberAnswerValue{Kind: wire.SessionInputAnswerValueKindNumber, Value: f}), ""
	case wire.SessionInputQuestionKindSingleSelect:
		if o, ok := q.option(in); ok {
			return submitted(&wire.SessionInputSelectedAnswerValue{Kind: wire.SessionInputAnswerValueKindSelected, Value: o.ID}), ""
		}
		if q.freeform {
			return submitted(&wire.SessionInputSelectedAnswerValue{Kind: wire.SessionInputAnswerValueKindSelected, Value: in, FreeformValues: []string{in}}), ""
		}
		return wire.SessionInputAnswer{}, fmt.Sprintf("%q is not one of the choices: type a number from 1 to %d", in, len(q.options))
	case wire.SessionInputQuestionKindMultiSelect:
		var ids, free []string
		for _, part := range strings.Split(in, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if o, ok := q.option(part); ok {
				ids = append(ids, o.ID)
			} else if q.freeform {
				free = append(free, part)
			} else {
				return wire.SessionInputAnswer{}, fmt.Sprintf("%q is not one of the choices: type numbers from 1 to %d", part, len(q.options))
			}
		}
		n := float64(len(ids) + len(free))
		if (q.min != nil && n < *q.min) || (q.max != nil && n > *q.max) {
			return wire.SessionInputAnswer{}, fmt.Sprintf("choose%s", rangeText(q.min, q.max))
		}
		if ids == nil {
			ids = []string{}
		}
		return submitted(&wire.SessionInputSelectedManyAnswerValue{Kind: wire.SessionInputAnswerValueKindSelectedMany, Value: ids, FreeformValues: free}), ""
	default:
		n := float64(len([]rune(in)))
		if (q.min != nil && n < *q.min) || (q.max != nil && n > *q.max) {
			return wire.SessionInputAnswer{}, fmt.Sprintf("the answer must have%s characters", rangeText(q.min, q.max))
		}
		return submitted(&wire.SessionInputTextAnswerValue{Kind: wire.SessionInputAnswerValueKindText, Value: in}), ""
	}
}

// option finds a choice by number, id or label.
func (q question) option(in string) (wire.SessionInputOption, bool) {
	for i, o := range q.options {
		if in == fmt.Sprint(i+1) || strings.EqualFold(in, o.ID) || strings.EqualFold(in, o.Label) {
			return o, true
		}
	}
	return wire.SessionInputOption{}, false
}

func rangeText(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf(" (between %v and %v)", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf(" (at least %v)", *lo)
	case hi != nil:
		return fmt.Sprintf(" (at most %v)", *hi)
	}
	return ""
}

// toolCallID and toolCallDisplayName read the common fields of any
// tool-call state variant.
func toolCallID(s wire.ToolCallState) string { return toolCallHead(s).ToolCallID }

func toolCallDisplayName(s wire.ToolCallState) string { return toolCallHead(s).DisplayName }

func toolCallHead(s wire.ToolCallState) (head struct {
	ToolCallID  string `json:"toolCallId"`
	DisplayName string `json:"displayName"`
}) {
	b, err := json.Marshal(s)
	if err == nil {
		_ = json.Unmarshal(b, &head)
	}
	return head
}
