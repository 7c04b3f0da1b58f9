package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/tui"
)

const clientUsage = `usage: ahp-bridge client URL [--provider ID] [--cwd DIR] [--approve-all|--deny-all] [--json] PROMPT...
       ahp-bridge client URL --session URI [--watch] [--approve-all|--deny-all] [--json] [PROMPT...]

Connects to an AHP server (URL as printed on serve's READY line), sends PROMPT
as one turn of a new session and shows the agent's answer, reasoning and tool
calls as they happen.

With --session, the prompt goes to that existing session instead. When a turn
is running there, the prompt is queued and starts once the turns before it
end. Without a PROMPT (or with --watch), the client follows the session: it
shows every turn and answers questions until Ctrl-C.

Permission requests and questions are asked on the terminal. Without one
(stdin not a terminal) they wait for another client, unless --approve-all or
--deny-all answers them. Ctrl-C cancels the turn (or takes the queued prompt
back); a second Ctrl-C quits.

Exit codes: 0 turn complete (or a follow ended with Ctrl-C), 1 connection or
protocol error, 2 bad usage, 3 turn error, 4 cancelled, 5 a tool call was
denied, 6 a tool call failed.

--approve-all and "y" approve this call only: when the agent offers several
ways to approve (once, always), the client names none and the server answers
for this call alone; choose an option by its number to allow more.
`

// waitHint is said when a question waits because nobody can answer it here.
const waitHint = "waiting for another client to answer; --approve-all or --deny-all answer without asking"

// clientArgs are the parsed `client` arguments.
type clientArgs struct {
	URL    string
	Prompt string // "" follows the session
	tui.Options
}

func clientFlags(a *clientArgs, watch *bool) *flag.FlagSet {
	fs := newFlagSet("client")
	fs.StringVar(&a.Provider, "provider", "", "agent provider `ID` of a new session (default: the server's first agent)")
	fs.StringVar(&a.Cwd, "cwd", "", "working directory `DIR` of a new session (default: the current directory)")
	fs.StringVar(&a.Session, "session", "", "use the existing session `URI` instead of creating one")
	fs.BoolVar(watch, "watch", false, "with --session and no PROMPT: follow the session (the default without a PROMPT)")
	fs.BoolVar(&a.ApproveAll, "approve-all", false, "approve every permission request without asking")
	fs.BoolVar(&a.DenyAll, "deny-all", false, "deny every permission request without asking")
	fs.BoolVar(&a.JSON, "json", false, "print only NDJSON: the initialize result (protocol version, server), then one {\"method\":…,\"params\":…} line per envelope or notification")
	return fs
}

// isSessionURI reports whether uri can name a session: ahp-session:/…, or
// any other "scheme:/path" URI whose scheme is not one of AHP's own
// (ahp-chat:, ahp-root:, …) nor VS Code's agenthost-terminal:, such as the <provider>:/<uuid> an ahpx (AHP
// 0.5.x) client names its sessions with, which the host keeps and lists.
func isSessionURI(uri string) bool {
	i := strings.Index(uri, ":/")
	if i <= 0 || len(uri) <= i+2 || strings.ContainsAny(uri, " \t\r\n") {
		return false
	}
	return strings.HasPrefix(uri, "ahp-session:") || !strings.HasPrefix(uri, "ahp-") && !wire.IsTerminalURI(uri)
}

// parseClientArgs parses flags and positional arguments in any order:
// `client URL --json PROMPT` and `client --json URL PROMPT` are the same.
// A "--" ends the flags; everything after it is prompt text.
func parseClientArgs(args []string) (clientArgs, *flag.FlagSet, error) {
	var (
		a     clientArgs
		watch bool
	)
	fs := clientFlags(&a, &watch)
	var positional []string
	rest := args
	for {
		if err := parseFlags(fs, rest); err != nil {
			return a, fs, err
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
	if len(positional) == 0 {
		return a, fs, argErrorf("missing the server URL")
	}
	a.URL = positional[0]
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return a, fs, argErrorf("the server URL must look like ws://HOST:PORT/?tkn=TOKEN, not %q", a.URL)
	}
	a.Prompt = strings.TrimSpace(strings.Join(positional[1:], " "))
	switch {
	case a.ApproveAll && a.DenyAll:
		return a, fs, argErrorf("--approve-all and --deny-all exclude each other")
	case a.Session != "" && (a.Provider != "" || a.Cwd != ""):
		return a, fs, argErrorf("--session joins an existing session; --provider and --cwd only apply to new ones")
	case a.Session != "" && !isSessionURI(a.Session):
		return a, fs, argErrorf("--session wants a session URI (ahp-session:/…, or an ahpx session's <provider>:/…), not %q", a.Session)
	case watch && a.Session == "":
		return a, fs, argErrorf("--watch follows an existing session: give its --session URI")
	case watch && a.Prompt != "":
		return a, fs, argErrorf("--watch follows the session and sends nothing: give no PROMPT")
	case a.Prompt == "" && a.Session == "":
		return a, fs, argErrorf("missing the PROMPT (or --session URI to follow a session)")
	}
	return a, fs, nil
}

// runClient implements `ahp-bridge client`. ctx is cancelled on the first
// Ctrl-C (SIGINT): while connecting that aborts; afterwards it cancels the
// running turn rather than dropping the connection.
func runClient(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a, fs, err := parseClientArgs(args)
	if err != nil {
		return parseProblem("client", clientUsage, fs, err, stdout, stderr)
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := client.Dial(dialCtx, a.URL, client.Options{})
	var init *wire.InitializeResult
	if err == nil {
		init, err = c.Initialize(dialCtx)
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
	if a.JSON {
		if err := writeInitialize(stdout, init); err != nil {
			fmt.Fprintf(stderr, "ahp-bridge client: %v\n", err)
			return exitError
		}
	}
	return tui.Run(ctx, c, a.Options, a.Prompt, tui.IO{
		Stdin:       stdin,
		Stdout:      stdout,
		Stderr:      stderr,
		Interactive: isTerminal(stdin),
		Color:       isTerminal(stdout) && os.Getenv("NO_COLOR") == "",
		Name:        "ahp-bridge client",
		WaitHint:    waitHint,
	})
}

// writeInitialize starts the NDJSON output with what the handshake
// settled — the protocol version the server chose and who the server is —
// so that a consumer knows the dialect of every line after it. The
// snapshots are left out: the root state is not what a prompt is about.
func writeInitialize(w io.Writer, res *wire.InitializeResult) error {
	type negotiated struct {
		ProtocolVersion string               `json:"protocolVersion"`
		ServerInfo      *wire.Implementation `json:"serverInfo,omitempty"`
		ServerSeq       int64                `json:"serverSeq"`
	}
	b, err := json.Marshal(struct {
		Method string     `json:"method"`
		Result negotiated `json:"result"`
	}{"initialize", negotiated{res.ProtocolVersion, res.ServerInfo, res.ServerSeq}})
	if err != nil {
		return fmt.Errorf("encoding the initialize result as JSON: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing to stdout: %w", err)
	}
	return nil
}
