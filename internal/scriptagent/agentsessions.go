package scriptagent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file serves the agent's own sessions, for tests of how a client
// lists, forks and deletes them:
//
//	SCRIPTAGENT_AGENT_SESSIONS=LIST  a comma list of list, fork, delete and
//	                                 additionalDirectories: the
//	                                 sessionCapabilities initialize advertises
//	                                 beyond resume and close (sessions.go)
//	SCRIPTAGENT_LIST_PAGE=N          session/list pages of N sessions
//	                                 (default 50)
//
// session/list lists the sessions kept in SCRIPTAGENT_STATE_DIR
// (<id>.json) and those open in memory, most recently updated first (a
// kept session's time is its file's), filtered by the request's cwd; a
// kept session's title is its "title" field, else "Script <id>". Its
// cursor is the offset of the next page. session/fork copies a session's
// conversation into a new one ("fork <from> <new>" in paths.log);
// session/delete forgets a session and removes its file ("delete <id>").
// What the agent received, additionalDirectories included, is in
// SCRIPTAGENT_LOG.

// agentSessionCapsEnv is the set SCRIPTAGENT_AGENT_SESSIONS names.
func agentSessionCapsEnv() map[string]bool {
	out := map[string]bool{}
	for _, c := range strings.Split(os.Getenv("SCRIPTAGENT_AGENT_SESSIONS"), ",") {
		if c = strings.TrimSpace(c); c != "" {
			out[c] = true
		}
	}
	return out
}

// agentSessionCaps adds the advertised capabilities to initialize's
// sessionCapabilities.
func agentSessionCaps(caps map[string]any) {
	for c := range agentSessionCapsEnv() {
		switch c {
		case "list", "fork", "delete", "additionalDirectories":
			caps[c] = map[string]any{}
		}
	}
}

// listed is one entry of session/list.
type listed struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	at        time.Time
}

// agentSessions serves session/list, session/fork and session/delete when
// they are advertised.
func (a *agent) agentSessions(method string, params json.RawMessage) (any, error) {
	what := strings.TrimPrefix(method, "session/")
	if !agentSessionCapsEnv()[what] {
		return nil, &rpcError{Code: -32601, Message: "Method not found: " + method}
	}
	var p struct {
		SessionID string  `json:"sessionId"`
		Cwd       *string `json:"cwd"`
		Cursor    *string `json:"cursor"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: -32602, Message: err.Error()}
	}
	switch what {
	case "list":
		return a.list(p.Cwd, p.Cursor)
	case "fork":
		from := a.session(p.SessionID)
		if from == nil {
			return nil, &rpcError{Code: -32002, Message: "Resource not found: session " + p.SessionID}
		}
		cwd := from.cwd
		if p.Cwd != nil {
			cwd = *p.Cwd
		}
		a.mu.Lock()
		s := &sess{id: a.newSessionIDLocked(), cwd: cwd, model: "script-fast", mode: "default",
			history: slices.Clone(from.history)}
		a.sessions[s.id] = s
		a.mu.Unlock()
		a.persist(s)
		a.logPath("fork "+from.id, s.id)
		return map[string]any{"sessionId": s.id, "configOptions": a.configOptions(s), "modes": a.modes(s)}, nil
	default: // delete
		a.mu.Lock()
		delete(a.sessions, p.SessionID)
		a.mu.Unlock()
		if dir := stateDir(); dir != "" {
			err := os.Remove(filepath.Join(dir, filepath.Base(p.SessionID)+".json"))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, &rpcError{Code: -32603, Message: err.Error()}
			}
		}
		a.logPath("delete", p.SessionID)
		return map[string]any{}, nil
	}
}

// list serves session/list.
func (a *agent) list(cwd, cursor *string) (any, error) {
	byID := map[string]listed{}
	if dir := stateDir(); dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			fi, serr := os.Stat(f)
			var st struct {
				storedSess
				Title string `json:"title"`
			}
			if err != nil || serr != nil || json.Unmarshal(b, &st) != nil || st.ID == "" {
				continue
			}
			byID[st.ID] = listed{SessionID: st.ID, Cwd: st.Cwd, Title: st.Title, at: fi.ModTime()}
		}
	}
	a.mu.Lock()
	for id, s := range a.sessions {
		if _, ok := byID[id]; !ok {
			byID[id] = listed{SessionID: id, Cwd: s.cwd, at: time.Now()}
		}
	}
	a.mu.Unlock()
	all := make([]listed, 0, len(byID))
	for _, l := range byID {
		if cwd != nil && *cwd != "" && l.Cwd != *cwd {
			continue
		}
		if l.Title == "" {
			l.Title = "Script " + l.SessionID
		}
		l.UpdatedAt = l.at.UTC().Format(time.RFC3339Nano)
		all = append(all, l)
	}
	slices.SortFunc(all, func(x, y listed) int {
		if c := y.at.Compare(x.at); c != 0 {
			return c
		}
		return strings.Compare(x.SessionID, y.SessionID)
	})
	off := 0
	if cursor != nil {
		n, err := strconv.Atoi(strings.TrimPrefix(*cursor, "off:"))
		if err != nil || n < 0 {
			return nil, &rpcError{Code: -32602, Message: "invalid cursor " + *cursor}
		}
		off = min(n, len(all))
	}
	size := 50
	if n, err := strconv.Atoi(os.Getenv("SCRIPTAGENT_LIST_PAGE")); err == nil && n > 0 {
		size = n
	}
	end := min(off+size, len(all))
	res := map[string]any{"sessions": all[off:end]}
	if end < len(all) {
		res["nextCursor"] = "off:" + strconv.Itoa(end)
	}
	return res, nil
}
