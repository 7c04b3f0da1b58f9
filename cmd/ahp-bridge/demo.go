package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
	"github.com/ahp-bridge/ahp-bridge/internal/tui"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// demoCountdown is how long the demo waits before approving a tool call by
// itself when nobody can be asked at a terminal.
const demoCountdown = 3 * time.Second

// demoPrompt makes the scripted agent run its full demo scenario.
const demoPrompt = "demo: look at this project and tell me what it is about"

// demoReadme is the file the demo agent reads with fs/read_text_file.
const demoReadme = `# Demo project

This folder was made by ahp-bridge's demo. The agent reads this file through
the bridge's fs/read_text_file service, confined to the session's working
directory.
`

const demoAgentUsage = `usage: ahp-bridge demo-agent

Runs the built-in scripted ACP agent on stdin/stdout, the agent the demo
starts. Serve it to your own clients with
  ahp-bridge serve --acp demo="$(pwd)/ahp-bridge demo-agent"
The first word of a prompt picks a scenario (see internal/scriptagent); any
other prompt plays the demo conversation.
`

// runDemoAgent runs the built-in scripted ACP agent on stdin/stdout; the demo
// starts the bridge with `ahp-bridge demo-agent` as its ACP command.
func runDemoAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo-agent")
	err := parseFlags(fs, args)
	if err == nil && fs.NArg() > 0 {
		err = argErrorf("unexpected argument %q (demo-agent takes none)", fs.Arg(0))
	}
	if err != nil {
		return parseProblem("demo-agent", demoAgentUsage, fs, err, stdout, stderr)
	}
	if err := scriptagent.Main(ctx, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "demo-agent: %v\n", err)
		return exitError
	}
	return exitOK
}

const demoUsage = `usage: ahp-bridge demo

Starts a bridge on a free loopback port with the built-in scripted agent (a
real ACP subprocess) and runs one conversation with it: thinking, a plan,
streamed text, a tool call that asks for approval, a file read and the
answer. It prints the bridge's URL and commands that join the session from
another terminal: one queues a prompt behind the running turn, the other
follows the session and answers its questions.

On a terminal you answer the tool call at the prompt, and after the
conversation the demo keeps running, showing what joined clients do, until
Ctrl-C. Without a terminal, a second client approves each tool call after a
3-second countdown, and the demo ends once no turn is running or queued.
`

// runDemo starts a bridge on a free loopback port with the built-in agent
// as a real ACP subprocess, and runs one conversation with the built-in
// client.
func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo")
	err := parseFlags(fs, args)
	if err == nil && fs.NArg() > 0 {
		err = argErrorf("unexpected argument %q (demo takes none)", fs.Arg(0))
	}
	if err != nil {
		return parseProblem("demo", demoUsage, fs, err, stdout, stderr)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: finding this program to run its demo agent: %v\n", err)
		return exitError
	}
	dir, err := os.MkdirTemp("", "ahp-bridge-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: %v\n", err)
		return exitError
	}
	defer os.RemoveAll(dir)
	// Apart from the workspace, so that the agent and clients browsing the
	// workspace never see it.
	stateDir, err := os.MkdirTemp("", "ahp-bridge-demo-state-")
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: %v\n", err)
		return exitError
	}
	defer os.RemoveAll(stateDir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(demoReadme), 0o644); err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: %v\n", err)
		return exitError
	}

	cfg := Config{
		Listen:    "127.0.0.1:0",
		LogLevel:  "warn",
		LogFormat: "console",
		Agents:    []AgentConfig{{ID: "demo", DisplayName: "Scripted demo agent", Command: shellQuote(exe) + " demo-agent"}},
		// The demo keeps its sessions in a real state file, as serve does,
		// but a file of its own: its one conversation is not worth keeping,
		// and must not meet a bridge that runs on the user's state file.
		State: filepath.Join(stateDir, "state.db"),
	}
	if isTerminal(stdout) {
		// Slow the scripted agent down so a person sees the text stream in.
		cfg.Agents[0].Env = map[string]string{"SCRIPTAGENT_DELAY_MS": "40"}
	}
	cfg.applyDefaults()
	log, _ := newLogger(cfg, stderr)
	srv, err := newServer(cfg, log, nil)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: %v\n", err)
		return exitError
	}
	defer srv.close()

	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- srv.serveWS(serveCtx, io.Discard) }()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			log.Warn().Err(err).Msg("demo server")
		}
	}()
	var url string
	select {
	case url = <-srv.ready:
	case err := <-served:
		served <- err
		fmt.Fprintf(stderr, "ahp-bridge demo: starting the bridge: %v\n", err)
		return exitError
	}

	d := demo{url: url, dir: dir, join: joinPrefix(exe, os.Args[0]), stdin: stdin, stdout: stdout, stderr: stderr, log: log}
	code, err := d.run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: %v\n", err)
	}
	return code
}

// demo is one run of the demo conversation against a running bridge.
type demo struct {
	url, dir string
	join     string // how to run this program from another terminal
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	log      zerolog.Logger
}

func (d *demo) run(ctx context.Context) (int, error) {
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(dialCtx, d.url, client.Options{ClientID: "demo-client"})
	if err != nil {
		return exitError, err
	}
	defer c.Close()
	if _, err := c.Initialize(dialCtx); err != nil {
		return exitError, err
	}
	channel := client.NewSessionURI()
	if err := c.CreateSession(dialCtx, wire.CreateSessionParams{
		Channel:            channel,
		Provider:           wire.Ptr("demo"),
		WorkingDirectories: []string{mapping.FileURI(d.dir)},
	}); err != nil {
		return exitError, fmt.Errorf("creating the demo session: %w", err)
	}

	interactive := isTerminal(d.stdin)
	fmt.Fprintf(d.stdout, "ahp-bridge demo — a bridge is running at %s\n", d.url)
	fmt.Fprintf(d.stdout, "Join this session from another terminal while the demo runs:\n")
	fmt.Fprintf(d.stdout, "  %s client '%s' --session %s 'and then?'\n", d.join, d.url, channel)
	fmt.Fprintf(d.stdout, "      sends a prompt, queued until the running turn ends\n")
	fmt.Fprintf(d.stdout, "  %s client '%s' --session %s\n", d.join, d.url, channel)
	fmt.Fprintf(d.stdout, "      follows the session and answers its questions, until Ctrl-C\n\n")

	if !interactive {
		fmt.Fprintf(d.stdout, "(No terminal to ask: a second client, demo-auto-approver, approves each tool call after %d seconds,\n", int(demoCountdown/time.Second))
		fmt.Fprintf(d.stdout, "and the demo ends once no turn is running or queued.)\n\n")
		// Nobody to ask: a second client approves after a countdown, which
		// also shows two clients sharing one session.
		approverCtx, stopApprover := context.WithCancel(ctx)
		approverDone := make(chan struct{})
		go func() {
			defer close(approverDone)
			autoApprove(approverCtx, d.url, channel, d.log)
		}()
		defer func() { stopApprover(); <-approverDone }()
	}

	fmt.Fprintf(d.stdout, "You: %s\n\n", demoPrompt)

	interrupts, stopWatching := tui.WatchInterrupts(ctx)
	defer stopWatching()
	sio := tui.IO{
		Stdin:       d.stdin,
		Stdout:      d.stdout,
		Stderr:      d.stderr,
		Interactive: interactive,
		Color:       isTerminal(d.stdout) && os.Getenv("NO_COLOR") == "",
		Interrupts:  interrupts,
		Name:        "ahp-bridge demo",
	}
	// Ctrl-C reaches the session through interrupts; its context stays.
	ctx = context.WithoutCancel(ctx)
	s, err := tui.Open(ctx, c, tui.Options{Session: channel}, sio)
	if err != nil {
		if errors.Is(err, tui.ErrInterrupted) {
			return tui.ExitCancelled, nil
		}
		return exitError, err
	}
	defer s.Close()
	code, err := s.Prompt(ctx, demoPrompt)
	if code != exitOK || err != nil {
		return code, err
	}
	fmt.Fprintf(d.stdout, "\nDemo complete. Point your own AHP client at an `ahp-bridge serve` with real agents: see README.md.\n")
	if interactive {
		fmt.Fprintf(d.stdout, "The bridge keeps running for the join commands above; Ctrl-C ends the demo.\n\n")
	}
	// Show what joined clients do; without a terminal, only until the
	// turns they queued are done.
	return s.Follow(ctx, !interactive)
}

// joinPrefix is how to run this program from another terminal: through
// `go run` when that is how it was started (its binary then lives in a
// temporary build directory), else as it was invoked.
func joinPrefix(exe, arg0 string) string {
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return "go run ./cmd/ahp-bridge"
	}
	if arg0 == "" {
		arg0 = exe
	}
	if strings.ContainsAny(arg0, " \t'\"\\$`*?[]{}();&|<>!#~") {
		return shellQuote(arg0)
	}
	return arg0
}

// autoApprove is the demo's second client: it approves each tool call that
// waits for confirmation after a short, visible countdown.
func autoApprove(ctx context.Context, url, channel string, log zerolog.Logger) {
	c, err := client.Dial(ctx, url, client.Options{ClientID: "demo-auto-approver"})
	if err != nil {
		log.Warn().Err(err).Msg("demo auto-approver could not connect")
		return
	}
	defer c.Close()
	if _, err := c.Initialize(ctx); err != nil {
		return
	}
	if _, err := c.Subscribe(ctx, channel); err != nil {
		return
	}
	// Tool call ids are only unique within a turn: an agent may reuse
	// them in the next one (the demo agent does).
	type call struct{ chat, turnID, toolCallID string }
	approved := map[call]bool{}
	for {
		var next call
		_, err := c.WaitFor(ctx, channel, func(s *wire.SessionState) bool {
			for _, p := range client.PendingConfirmations(s) {
				if k := (call{p.Chat, p.TurnID, p.ToolCallID}); !approved[k] {
					next = k
					return true
				}
			}
			return false
		})
		if err != nil {
			return
		}
		approved[next] = true
		select {
		case <-time.After(demoCountdown):
		case <-ctx.Done():
			return
		}
		_, err = c.ApproveToolCall(ctx, next.chat, next.turnID, next.toolCallID, "")
		var refused *client.RejectedError
		switch {
		case errors.As(err, &refused):
			// Someone at the terminal, or a joined client, answered first.
		case err != nil && !errors.Is(err, context.Canceled):
			log.Warn().Err(err).Msg("demo auto-approver")
		}
	}
}

// shellQuote quotes s for splitCommand.
func shellQuote(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, `'\''`...)
			continue
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
