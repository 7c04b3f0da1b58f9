package scriptagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// This file lets the agent continue its sessions after it was restarted,
// for tests of a client's re-attach paths:
//
//	SCRIPTAGENT_SESSIONS=resume   advertise sessionCapabilities.resume
//	SCRIPTAGENT_SESSIONS=load     advertise loadSession
//	SCRIPTAGENT_SESSIONS=both     advertise both
//	…-fail (e.g. load-fail)       advertise it, but fail the request
//	(unset)                       advertise neither (the default)
//	SCRIPTAGENT_STATE_DIR=DIR     keep each session's conversation (the text
//	                              of its completed prompts) in DIR/<id>.json,
//	                              and append one line per session the agent
//	                              opens to DIR/paths.log: "new <id>",
//	                              "resume <id>", "load <id>" or
//	                              "<method>-failed <id>"
//
// session/load replays the conversation before it answers: for each
// earlier prompt, a user_message_chunk with its text and an
// agent_message_chunk "replayed: <text>". The prompt "recall" answers
// "recall: " and the session's earlier prompts joined with " | " (or
// "nothing"), so a test can tell whether the agent remembers.

// sessionCaps reads SCRIPTAGENT_SESSIONS: which of resume and load the
// agent advertises, and whether it fails them.
func sessionCaps() (resume, load, fail bool) {
	v := os.Getenv("SCRIPTAGENT_SESSIONS")
	fail = strings.HasSuffix(v, "-fail")
	v = strings.TrimSuffix(v, "-fail")
	return v == "resume" || v == "both", v == "load" || v == "both", fail
}

// storedSess is a session as kept in SCRIPTAGENT_STATE_DIR.
type storedSess struct {
	ID      string   `json:"id"`
	Cwd     string   `json:"cwd"`
	Prompts []string `json:"prompts"`
}

// stateDir is SCRIPTAGENT_STATE_DIR ("" when unset).
func stateDir() string { return os.Getenv("SCRIPTAGENT_STATE_DIR") }

// newSessionID returns the next session id; with a state directory it is
// one no earlier run of the agent used.
func (a *agent) newSessionIDLocked() string {
	for {
		a.nextSess++
		id := fmt.Sprintf("sess-%d", a.nextSess)
		dir := stateDir()
		if dir == "" {
			return id
		}
		if _, err := os.Stat(filepath.Join(dir, id+".json")); errors.Is(err, fs.ErrNotExist) {
			return id
		}
	}
}

// persist writes a session's conversation to the state directory.
func (a *agent) persist(s *sess) {
	dir := stateDir()
	if dir == "" {
		return
	}
	a.mu.Lock()
	b, err := json.Marshal(storedSess{ID: s.id, Cwd: s.cwd, Prompts: append([]string{}, s.history...)})
	a.mu.Unlock()
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, s.id+".json"), b, 0o600)
	}
	if err != nil {
		fmt.Fprintf(a.errOut, "scriptagent: keeping session %s: %v\n", s.id, err)
	}
}

// logPath appends "what id" to DIR/paths.log.
func (a *agent) logPath(what, id string) {
	dir := stateDir()
	if dir == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, "paths.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s %s\n", what, id)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(a.errOut, "scriptagent: logging %s %s: %v\n", what, id, err)
	}
}

// reopen serves session/resume and session/load: the session comes back
// from memory or the state directory; load replays it first.
func (a *agent) reopen(method string, params json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: -32602, Message: err.Error()}
	}
	what := strings.TrimPrefix(method, "session/")
	resume, load, fail := sessionCaps()
	if (what == "resume" && !resume) || (what == "load" && !load) {
		return nil, &rpcError{Code: -32601, Message: "Method not found: " + method}
	}
	if fail {
		a.logPath(what+"-failed", p.SessionID)
		return nil, &rpcError{Code: -32603, Message: "scripted " + what + " failure"}
	}
	s := a.session(p.SessionID)
	if s == nil {
		var st storedSess
		b, err := os.ReadFile(filepath.Join(stateDir(), filepath.Base(p.SessionID)+".json"))
		if stateDir() == "" || err != nil || json.Unmarshal(b, &st) != nil {
			a.logPath(what+"-failed", p.SessionID)
			return nil, &rpcError{Code: -32002, Message: "Resource not found: session " + p.SessionID}
		}
		s = &sess{id: st.ID, cwd: p.Cwd, model: "script-fast", mode: "default", history: st.Prompts}
		a.mu.Lock()
		a.sessions[s.id] = s
		a.mu.Unlock()
	}
	a.logPath(what, s.id)
	if what == "load" {
		a.mu.Lock()
		prompts := append([]string(nil), s.history...)
		a.mu.Unlock()
		for _, pr := range prompts {
			a.notify(s.id, map[string]any{"sessionUpdate": "user_message_chunk", "content": map[string]any{"type": "text", "text": pr}})
			a.notify(s.id, map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "replayed: " + pr}})
		}
	}
	return map[string]any{"configOptions": a.configOptions(s), "modes": a.modes(s)}, nil
}

// remember adds a completed prompt to its session's conversation.
func (a *agent) remember(s *sess, text string) {
	a.mu.Lock()
	s.history = append(s.history, text)
	a.mu.Unlock()
	a.persist(s)
}

// recall is the answer of the "recall" prompt.
func (a *agent) recall(s *sess) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(s.history) == 0 {
		return "recall: nothing"
	}
	return "recall: " + strings.Join(s.history, " | ")
}
