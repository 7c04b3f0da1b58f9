package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

const sessionsUsage = `usage: ahp-bridge sessions list [--state FILE]
       ahp-bridge sessions show [--state FILE] URI
       ahp-bridge sessions export [--state FILE] URI
       ahp-bridge sessions delete [--state FILE] [--config FILE | --acp ID=COMMAND]... URI...

Inspects the sessions a bridge keeps in its state file (default
ahp-bridge/state.db under the user's state directory, e.g.
~/.local/state/ahp-bridge/state.db; --state names another).

  list    every stored session, most recently modified first: when it was
          modified, its provider, its URI and its title ("[archived]"
          after it when a client's disposeSession archived it)
  show    one session: its catalogue entry and, per chat, its agent session
          id, how many turns it holds and whether a turn was streaming when
          the bridge stopped
  export  one session with every turn, as one JSON document on stdout
          (format ahp-bridge/session-export, version 1)
  delete  the sessions named, with their turns (disposeSession never
          deletes a session with turns: it archives it; this does); with
          the agents named (--config, --acp, as for serve), each agent
          session behind them too, where the agent can (ACP session/delete)

list, show and export only read the file, so they work while a bridge runs
on it; delete needs the file to itself and refuses while a bridge holds it.

Exit codes: 0 done, 1 the file cannot be read or written or a session is
not stored, 2 bad usage.
`

func runSessions(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var state string
	flags := newFlagSet("sessions")
	flags.StringVar(&state, "state", "", "the state `FILE` (default ahp-bridge/state.db in the user's state directory)")
	var agentsFile string // delete: the agents whose own sessions go too (sessions_agent.go)
	var agentFlags repeated
	flags.StringVar(&agentsFile, "config", "", "delete: the agents of this config `FILE` delete their own sessions too")
	flags.Var(&agentFlags, "acp", "delete: the agent `ID=COMMAND` deletes its own sessions too (repeatable)")
	if len(args) == 0 {
		return parseProblem("sessions", sessionsUsage, flags, argErrorf("which one: list, show, export or delete?"), stdout, stderr)
	}
	verb := args[0]
	if verb == "-h" || verb == "--help" || verb == "-help" || verb == "help" {
		return parseProblem("sessions", sessionsUsage, flags, flag.ErrHelp, stdout, stderr)
	}
	// Flags may come before or after the URIs.
	var uris []string
	for rest := args[1:]; ; {
		if err := parseFlags(flags, rest); err != nil {
			return parseProblem("sessions", sessionsUsage, flags, err, stdout, stderr)
		}
		if rest = flags.Args(); len(rest) == 0 {
			break
		}
		uris, rest = append(uris, rest[0]), rest[1:]
	}
	var want string
	switch verb {
	case "list":
		if len(uris) > 0 {
			want = "list takes no session URI"
		}
	case "show", "export":
		if len(uris) != 1 {
			want = verb + " takes one session URI"
		}
	case "delete":
		if len(uris) == 0 {
			want = "delete takes the URIs of the sessions to delete"
		}
	default:
		return parseProblem("sessions", sessionsUsage, flags, argErrorf("unknown sessions command %q: want list, show, export or delete", verb), stdout, stderr)
	}
	if want != "" {
		return parseProblem("sessions", sessionsUsage, flags, argErrorf("%s", want), stdout, stderr)
	}
	if state == stateNone {
		return parseProblem("sessions", sessionsUsage, flags, argErrorf("--state none keeps no sessions to inspect; name a state file"), stdout, stderr)
	}
	path, err := statePath(state)
	if err != nil {
		return parseProblem("sessions", sessionsUsage, flags, err, stdout, stderr)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Not created here: delete would make an empty state file.
		fmt.Fprintf(stderr, "ahp-bridge sessions %s: there is no state file %s: no bridge has kept sessions there\n", verb, path)
		return exitError
	}
	st, err := store.Open(ctx, path, store.Options{ReadOnly: verb != "delete"})
	if err != nil {
		fmt.Fprintf(stderr, "ahp-bridge sessions %s: %v\n", verb, err)
		return exitError
	}
	defer st.Close()
	if m := st.MovedAside(); m != nil {
		fmt.Fprintf(stderr, "ahp-bridge sessions %s: %s\n", verb, m)
	}
	switch verb {
	case "list":
		err = listSessions(ctx, st, stdout)
	case "show":
		err = showSession(ctx, st, uris[0], stdout)
	case "export":
		var doc *store.SessionExport
		if doc, err = store.Export(ctx, st, uris[0]); err == nil {
			err = doc.Encode(stdout)
		}
	case "delete":
		var agents *agentDeleter
		if agents, err = newAgentDeleter(agentsFile, agentFlags, stdout); err == nil {
			defer agents.close()
			err = deleteSessions(ctx, st, uris, stdout, agents)
		}
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) && len(uris) == 1 {
			err = fmt.Errorf("session %s is not in %s", uris[0], st.Path())
		}
		fmt.Fprintf(stderr, "ahp-bridge sessions %s: %v\n", verb, err)
		return exitError
	}
	return exitOK
}

// listSessions prints the catalogue, one session a line.
func listSessions(ctx context.Context, st store.Store, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODIFIED\tPROVIDER\tURI\tTITLE")
	err := store.EachSession(ctx, st, func(s store.Session) error {
		title := oneLine(s.Title)
		if archived(s) {
			title = strings.TrimSpace(title + " [archived]")
		}
		_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", stamp(s.Modified), s.Provider, s.URI, title)
		return err
	})
	if err != nil {
		return fmt.Errorf("listing the stored sessions: %w", err)
	}
	return tw.Flush()
}

// showSession prints one session's catalogue entry and its chats.
func showSession(ctx context.Context, st store.Store, uri string, w io.Writer) error {
	info, err := store.Show(ctx, st, uri)
	if err != nil {
		return err
	}
	s := info.Session
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "session:\t%s\n", s.URI)
	fmt.Fprintf(tw, "title:\t%s\n", oneLine(s.Title))
	fmt.Fprintf(tw, "provider:\t%s\n", s.Provider)
	fmt.Fprintf(tw, "working directories:\t%s\n", strings.Join(s.WorkingDirs, ", "))
	fmt.Fprintf(tw, "created:\t%s\n", stamp(s.Created))
	fmt.Fprintf(tw, "modified:\t%s\n", stamp(s.Modified))
	held := false
	if hs, ok := st.(store.Holding); ok {
		// Which running bridge drives it, if one does (issue 25).
		var h store.Holder
		if h, held, _ = hs.HolderOf(ctx, s.URI); held {
			fmt.Fprintf(tw, "driven by:\tthe ahp-bridge with %s\n", h)
		}
	}
	if archived(s) {
		fmt.Fprintf(tw, "archived:\tyes (a client disposed of it; 'sessions delete' deletes it)\n")
	}
	if len(s.Config) > 0 {
		var cfg struct {
			Values map[string]any `json:"values"`
		}
		if json.Unmarshal(s.Config, &cfg) == nil && len(cfg.Values) > 0 {
			b, _ := json.Marshal(cfg.Values)
			fmt.Fprintf(tw, "config:\t%s\n", b)
		}
	}
	for i, c := range info.Chats {
		fmt.Fprintf(tw, "chat %d:\t%s\n", i+1, c.URI)
		agent := c.ACPSessionID
		if agent == "" {
			agent = "(none recorded)"
		}
		fmt.Fprintf(tw, "  agent session:\t%s\n", agent)
		fmt.Fprintf(tw, "  turns:\t%d\n", c.Turns)
		if a := c.ActiveTurn; a != nil && held {
			fmt.Fprintf(tw, "  running turn:\t%s, %d bytes saved at %s\n", a.TurnID, a.Bytes, stamp(a.Updated))
		} else if a != nil {
			fmt.Fprintf(tw, "  interrupted turn:\t%s, %d bytes saved at %s (ends as cancelled when the session is next opened)\n",
				a.TurnID, a.Bytes, stamp(a.Updated))
		}
	}
	return tw.Flush()
}

// deleteSessions deletes each session, saying so; it goes on past one that
// is not stored, or that a running bridge holds, and reports them at the
// end. With agents named, each deleted session's agent sessions go too.
func deleteSessions(ctx context.Context, st store.Store, uris []string, w io.Writer, agents *agentDeleter) error {
	var missing, held []string
	for _, u := range uris {
		behind := agents.behind(ctx, st, u) // sessions_agent.go
		err := st.DeleteSession(ctx, u)
		var he *store.HeldError
		switch {
		case errors.Is(err, store.ErrNotFound):
			missing = append(missing, u)
		case errors.As(err, &he):
			// A running bridge drives it: deleting it under that bridge
			// would lose what it writes next.
			held = append(held, fmt.Sprintf("%s is in use by the ahp-bridge with %s; stop that bridge first", u, he.Holder))
		case err != nil:
			return fmt.Errorf("deleting session %s: %w", u, err)
		default:
			fmt.Fprintf(w, "deleted %s\n", u)
			agents.delete(ctx, behind) // sessions_agent.go
		}
	}
	var problems []string
	if len(held) > 0 {
		problems = append(problems, "not deleted: "+strings.Join(held, "; "))
	}
	if len(missing) > 0 {
		problems = append(problems, "not stored, so not deleted: "+strings.Join(missing, ", "))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// stamp formats a stored time for people: local time to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// oneLine keeps a title on its line of the table.
func oneLine(s string) string {
	if s == "" {
		return "(untitled)"
	}
	return strings.Join(strings.Fields(s), " ")
}

// archived reports whether a stored session is archived: its catalogue
// summary (the host's listSessions entry, which the host stores as
// {"summary": {"status": …}}) has the IsArchived status flag.
func archived(s store.Session) bool {
	var row struct {
		Summary struct {
			Status wire.SessionStatus `json:"status"`
		} `json:"summary"`
	}
	return json.Unmarshal(s.Summary, &row) == nil && row.Summary.Status.Has(wire.SessionStatusIsArchived)
}
