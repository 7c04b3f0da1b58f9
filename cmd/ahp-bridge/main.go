// Command ahp-bridge lets any AHP (Agent Host Protocol) client drive ACP
// (Agent Client Protocol) stdio agents and agent-channel WebSocket backends.
//
// Subcommands: serve, client, demo, demo-agent (the built-in scripted ACP
// agent the demo runs as a subprocess) and version. See README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes shared by the subcommands.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  ahp-bridge serve  [--listen HOST:PORT] [--stdio] [--token TOKEN | --token-file FILE | --no-token]
                    [--allow-origin ORIGIN]... [--acp ID=COMMAND]... [--agentchan ID=URL]... [--config FILE]
                    [--approve ask|all|reads|none] [--replay-buffer N]
                    [--log-level LEVEL] [--log-format console|json] [--wire-log FILE]
                    [--max-frame-bytes N] [--max-sessions N] [--max-subscriptions N] [--max-pending-requests N]
  ahp-bridge client URL [--provider ID] [--cwd DIR] [--session URI] [--approve-all|--deny-all] [--json] PROMPT...
  ahp-bridge demo
  ahp-bridge version
`

// run dispatches to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stdin, stdout, stderr)
	case "client":
		return runClient(ctx, args[1:], stdin, stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdin, stdout, stderr)
	case "demo-agent":
		return runDemoAgent(ctx, stdin, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "ahp-bridge: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
