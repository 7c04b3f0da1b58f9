package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
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

// runDemoAgent runs the built-in scripted ACP agent on stdin/stdout; the demo
// starts the bridge with `ahp-bridge demo-agent` as its ACP command.
func runDemoAgent(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := scriptagent.Main(ctx, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "demo-agent: %v\n", err)
		return exitError
	}
	return exitOK
}

// runDemo starts a bridge on a free loopback port with the built-in agent
// as a real ACP subprocess, and runs one conversation with the built-in
// client.
func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "ahp-bridge demo: takes no arguments\n")
		return exitUsage
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
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(demoReadme), 0o644); err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: %v\n", err)
		return exitError
	}

	cfg := Config{
		Listen:    "127.0.0.1:0",
		LogLevel:  "warn",
		LogFormat: "console",
		Agents:    []AgentConfig{{ID: "demo", DisplayName: "Scripted demo agent", Command: shellQuote(exe) + " demo-agent"}},
	}
	if isTerminal(stdout) {
		// Slow the scripted agent down so a person sees the text stream in.
		cfg.Agents[0].Env = map[string]string{"SCRIPTAGENT_DELAY_MS": "40"}
	}
	cfg.applyDefaults()
	log, _ := newLogger(cfg, stderr)
	srv, err := newServer(cfg, log)
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

	code, err := demoConversation(ctx, url, dir, stdin, stdout, stderr, log)
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge demo: %v\n", err)
	}
	return code
}

func demoConversation(ctx context.Context, url, dir string, stdin io.Reader, stdout, stderr io.Writer, log zerolog.Logger) (int, error) {
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(dialCtx, url, client.Options{ClientID: "demo-client"})
	if err != nil {
		return exitError, err
	}
	defer c.Close()
	if _, err := c.Initialize(dialCtx); err != nil {
		return exitError, err
	}
	channel := client.NewSessionURI()
	if err := c.CreateSession(dialCtx, wire.CreateSessionParams{
		Channel:          channel,
		Provider:         wire.Ptr("demo"),
		WorkingDirectory: wire.Ptr(mapping.FileURI(dir)),
	}); err != nil {
		return exitError, fmt.Errorf("creating the demo session: %w", err)
	}

	interactive := isTerminal(stdin)
	fmt.Fprintf(stdout, "ahp-bridge demo — a bridge is running at %s\n", url)
	fmt.Fprintf(stdout, "Join this session from another terminal while it runs:\n  ahp-bridge client '%s' --session %s 'and then?'\n\n", url, channel)

	if !interactive {
		fmt.Fprintf(stdout, "(No terminal to ask: a second client, demo-auto-approver, approves each tool call after %d seconds.)\n\n", int(demoCountdown/time.Second))
		// Nobody to ask: a second client approves after a countdown, which
		// also shows two clients sharing one session.
		approverCtx, stopApprover := context.WithCancel(ctx)
		defer stopApprover()
		go autoApprove(approverCtx, url, channel, log)
	}

	fmt.Fprintf(stdout, "You: %s\n\n", demoPrompt)

	sio := sessionIO{
		Stdin:       stdin,
		Stdout:      stdout,
		Stderr:      stderr,
		Interactive: interactive,
		Color:       isTerminal(stdout) && os.Getenv("NO_COLOR") == "",
	}
	interrupts, stopWatching := watchInterrupts(ctx)
	defer stopWatching()
	sio.Interrupts = interrupts
	opts := clientOptions{URL: url, Session: channel, Prompt: demoPrompt}
	code := runClientSession(context.WithoutCancel(ctx), c, opts, sio)
	if code == exitOK {
		fmt.Fprintf(stdout, "\nDemo complete. Point your own AHP client at an `ahp-bridge serve` with real agents: see README.md.\n")
	}
	return code, nil
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
	approved := map[string]bool{}
	for {
		var turnID, toolCallID string
		_, err := c.WaitFor(ctx, channel, func(s *wire.SessionState) bool {
			for _, id := range client.PendingConfirmations(s) {
				if !approved[id] {
					turnID, toolCallID = s.ActiveTurn.ID, id
					return true
				}
			}
			return false
		})
		if err != nil {
			return
		}
		approved[toolCallID] = true
		select {
		case <-time.After(demoCountdown):
		case <-ctx.Done():
			return
		}
		_, err = c.DispatchAction(ctx, channel, wire.Action(&wire.SessionToolCallApprovedAction{
			TurnID:     turnID,
			ToolCallID: toolCallID,
			Approved:   true,
			Confirmed:  wire.ToolCallConfirmationReasonUserAction,
		}))
		if err != nil && !errors.Is(err, context.Canceled) {
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
