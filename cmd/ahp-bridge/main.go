// Command ahp-bridge lets any AHP (Agent Host Protocol) client drive ACP
// (Agent Client Protocol) stdio agents and agent-channel WebSocket backends.
//
// Subcommands: serve, sessions, client, demo, demo-agent (the built-in
// scripted ACP agent the demo runs as a subprocess) and version. See
// README.md.
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

const usage = `usage: ahp-bridge COMMAND [FLAGS] [ARGS]

Commands:
  serve       run the bridge: AHP clients in, ACP agents and agent-channel backends out
  sessions    list, show, export or delete the sessions kept in a state file
  client      send a prompt to an AHP server, or follow one of its sessions
  demo        run a bridge with a built-in scripted agent and one conversation
  demo-agent  the built-in scripted ACP agent, on stdin/stdout
  version     print the version and commit

Run 'ahp-bridge help COMMAND' or 'ahp-bridge COMMAND --help' for a command's flags.
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
	case "sessions":
		return runSessions(ctx, args[1:], stdout, stderr)
	case "demo":
		return runDemo(ctx, args[1:], stdin, stdout, stderr)
	case "demo-agent":
		return runDemoAgent(ctx, args[1:], stdin, stdout, stderr)
	case "version", "--version", "-version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		if len(args) == 2 && args[0] == "help" && args[1] != "help" {
			// Every command prints its own help for --help.
			return run(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "ahp-bridge: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
