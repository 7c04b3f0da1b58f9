// Package scriptagent is a scripted Agent Client Protocol agent for demos
// and tests. It speaks ACP (protocol version 1, plus a few v2 items) as
// newline-delimited JSON-RPC over the given reader and writer; the text of
// each prompt selects what the turn does, so tests can pick a scenario.
// Run it with Main (e.g. `ahp-bridge demo-agent`, or
// internal/scriptagent/cmd/scriptagent).
//
// The first word of the prompt text selects the scenario:
//
//	demo (or anything not listed)  thought, plan, streamed text, a "read" tool
//	                               call that asks permission (allow/reject);
//	                               if allowed, reads README.md from the cwd
//	                               with fs/read_text_file; final text; usage
//	permission                     tool call asking permission with all four
//	                               option kinds (ids allow-once, allow-always,
//	                               reject-once, reject-always); replies
//	                               "selected: <id>", or ends the turn
//	                               "cancelled" when the request is cancelled
//	perm-first                     asks permission for tool call "early-1"
//	                               before reporting it with tool_call
//	v2                             ACP v2 items: custom tool kind "_custom_kind",
//	                               status "_queued"/"_paused",
//	                               tool_call_content_chunk, content cleared with
//	                               [], a "_custom_update" session update and
//	                               custom content type "_custom_content"
//	flood N SIZE                   N agent_message_chunks of SIZE bytes each;
//	                               chunk i starts with i as 8 digits
//	bench N SIZE [RATE] [TOOLEVERY] N agent_message_chunks of SIZE bytes, each
//	                               "T<UnixNano, 19 digits>#<i, 8 digits>xxx…",
//	                               RATE per second (0: unpaced), and a
//	                               tool_call + tool_call_update after every
//	                               TOOLEVERY-th chunk (0: none); optional
//	                               PERMEVERY (every PERMEVERY-th tool call asks
//	                               permission) and MAXSIZE (sizes SIZE..MAXSIZE,
//	                               BenchChunkSize); see bench.go
//	longline [BYTES]               one agent_message_chunk whose line is longer
//	                               than BYTES (default 12 MiB), then "after"
//	notify-flood [N]               N "_scriptagent/ping" and N "unknown/notification"
//	                               notifications (default 5000), then "survived"
//	longresponse [BYTES]           the prompt response carries BYTES of _meta
//	                               padding (default 9 MiB)
//	longrequest [BYTES]            fs/read_text_file with a path of BYTES bytes
//	                               (default 9 MiB); replies "longrequest error: …"
//	garbage                        writes non-JSON lines to stdout between
//	                               updates
//	crash                          some output, a stderr line, then exits with
//	                               status 3 in the middle of the turn
//	unknown-method                 calls client method "x/unknown_method" and
//	                               "_scriptagent/unknown", reports the errors
//	wait                           "waiting", then waits until cancelled
//	ignore-cancel                  "ignoring cancel", then never ends the turn
//	                               (until stdin closes)
//	terminal CMD...                runs CMD with /bin/sh -c in a client terminal
//	                               (terminal/create, wait_for_exit, output,
//	                               release); replies "exit=<code>
//	                               truncated=<bool> output=<output>"
//	terminal-limit N CMD...        same with outputByteLimit N
//	terminal-kill                  starts "sleep 30", kills it, waits, replies
//	                               "killed signal=<signal> exit=<code>"
//	terminal-release               starts "sleep 30" and releases it at once
//	read PATH [LINE LIMIT]         fs/read_text_file; replies "content:<text>"
//	                               or "read error: <message>"
//	write PATH CONTENT...          fs/write_text_file; replies "wrote <path>"
//	                               or "write error: <message>"
//	diff PATH TEXT...              an "edit" tool call whose content is a diff
//	                               of PATH (its text on disk before, TEXT
//	                               after), completed after the agent wrote
//	                               TEXT to the file itself; replies "edited <path>"
//	multi A ;; B ;; ...            runs the scenarios A, B, ... in one turn
//	mcp                            replies with the MCP servers session/new
//	                               gave: "mcp:<name>=<transport>" joined by "|"
//	echo                           replies with the prompt's blocks described
//	                               (text:…, link:NAME=URI, resource:URI=TEXT or
//	                               resource:URI=blob:MIME, image:MIME,
//	                               audio:MIME), each followed by "+meta" when
//	                               the block carries a _meta
//	recall                         replies "recall: " and the session's earlier
//	                               prompts joined with " | " (or "nothing");
//	                               see sessions.go for resume and load
//	title TEXT                     session_info_update with title TEXT
//	usage                          usage_update (used 1234, size 200000)
//	error                          the prompt request fails with a JSON-RPC
//	                               error "scripted failure"
//
// Relative paths are joined to the session's cwd without cleaning, so
// "../x" reaches the client as "<cwd>/../x". session/new answers with a
// "model" config option (script-fast, script-smart) and modes (default,
// plan); it sends a session_info_update (title "Script session") just
// before that response and available_commands_update just after, and logs
// "scriptagent: closed session <id>" to stderr on session/close. With the environment
// variable SCRIPTAGENT_REQUIRE_AUTH=1, session/new fails with
// "Authentication required" until the client authenticates with the auth
// method initialize lists ("script-token"), and with
// SCRIPTAGENT_DELAY_MS=N the demo turn pauses N ms between updates so that
// streaming is visible to a person watching; with SCRIPTAGENT_NEW_DELAY_MS=N
// session/new answers only after N ms. SCRIPTAGENT_SESSIONS makes it
// advertise session/resume and session/load, and SCRIPTAGENT_STATE_DIR keeps
// its sessions across runs (sessions.go); SCRIPTAGENT_AGENT_SESSIONS makes it
// advertise session/list, session/fork, session/delete and
// additionalDirectories (agentsessions.go).
// SCRIPTAGENT_CAPS=LIST sets the capabilities initialize announces: a comma
// list of image, audio, embeddedContext (promptCapabilities) and http, sse
// (mcpCapabilities), or "none"; embeddedContext alone by default. With
// SCRIPTAGENT_LOG=FILE every message the agent receives is appended to FILE
// as one JSON line, exactly as received, so that tests can check what
// reached the agent. In WRITE and DIFF texts, "\n" stands for a newline.
// The agent is deterministic: ids are counters, nothing is random.
package scriptagent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type sess struct {
	id     string
	cwd    string
	model  string
	mode   string
	cancel context.CancelFunc
	mcp    []string // "name=transport" of session/new's mcpServers
	// history is the text of the session's completed prompts (sessions.go).
	history []string
}

type agent struct {
	ctx    context.Context
	out    io.Writer
	errOut io.Writer
	wmu    sync.Mutex
	wg     sync.WaitGroup // goroutines started by requests

	mu       sync.Mutex
	nextID   int
	nextSess int
	pending  map[string]chan message
	sessions map[string]*sess
	authed   bool // a client authenticated (SCRIPTAGENT_REQUIRE_AUTH)

	logMu sync.Mutex
	log   *os.File // SCRIPTAGENT_LOG; nil without
}

// Main runs the agent until in reaches EOF, then returns nil once its
// running turns have ended. Cancelling ctx ends running turns (as if the
// client had gone) but Main keeps reading until EOF, so that no goroutine
// is left blocked on in. It writes ACP messages to out and diagnostics to
// errOut. The "crash" scenario ends the whole process with os.Exit(3).
func Main(ctx context.Context, in io.Reader, out io.Writer, errOut io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := &agent{ctx: ctx, out: out, errOut: errOut, pending: map[string]chan message{}, sessions: map[string]*sess{}}
	defer a.wg.Wait()
	defer cancel()
	if name := os.Getenv("SCRIPTAGENT_LOG"); name != "" {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("opening SCRIPTAGENT_LOG: %w", err)
		}
		defer f.Close()
		a.log = f
	}

	r := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			a.logLine(line)
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				fmt.Fprintf(errOut, "scriptagent: ignoring non-JSON input: %v\n", jerr)
			} else {
				a.dispatch(m)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading input: %w", err)
		}
	}
}

// logLine appends a received line to SCRIPTAGENT_LOG.
func (a *agent) logLine(line []byte) {
	if a.log == nil {
		return
	}
	a.logMu.Lock()
	defer a.logMu.Unlock()
	_, _ = a.log.Write(append([]byte(strings.TrimSpace(string(line))), '\n'))
}

// capabilities is initialize's agentCapabilities, after SCRIPTAGENT_CAPS.
func capabilities(load bool, sessCaps map[string]any) map[string]any {
	list := os.Getenv("SCRIPTAGENT_CAPS")
	if list == "" {
		list = "embeddedContext"
	}
	prompt := map[string]any{"image": false, "audio": false, "embeddedContext": false}
	mcp := map[string]any{"http": false, "sse": false}
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if _, ok := prompt[c]; ok {
			prompt[c] = true
		}
		if _, ok := mcp[c]; ok {
			mcp[c] = true
		}
	}
	return map[string]any{
		"loadSession":         load,
		"promptCapabilities":  prompt,
		"mcpCapabilities":     mcp,
		"sessionCapabilities": sessCaps,
	}
}

func (a *agent) dispatch(m message) {
	switch {
	case m.Method != "" && len(m.ID) > 0:
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			res, err := a.handle(m.Method, m.Params)
			a.respond(m.ID, res, err)
		}()
	case m.Method != "":
		if m.Method == "session/cancel" {
			var p struct {
				SessionID string `json:"sessionId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			a.mu.Lock()
			if s := a.sessions[p.SessionID]; s != nil && s.cancel != nil {
				s.cancel()
			}
			a.mu.Unlock()
		}
	case len(m.ID) > 0:
		a.mu.Lock()
		ch := a.pending[string(m.ID)]
		delete(a.pending, string(m.ID))
		a.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (a *agent) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(a.errOut, "scriptagent: encoding: %v\n", err)
		return
	}
	a.writeRaw(append(b, '\n'))
}

func (a *agent) writeRaw(b []byte) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_, _ = a.out.Write(b)
}

func (a *agent) respond(id json.RawMessage, res any, err error) {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	var re *rpcError
	switch {
	case errors.As(err, &re):
		m["error"] = re
	case err != nil:
		m["error"] = &rpcError{Code: -32603, Message: err.Error()}
	case res == nil:
		m["result"] = map[string]any{}
	default:
		m["result"] = res
	}
	a.write(m)
}

func (a *agent) notify(sessionID string, update map[string]any) {
	a.write(map[string]any{"jsonrpc": "2.0", "method": "session/update",
		"params": map[string]any{"sessionId": sessionID, "update": update}})
}

// call sends a request to the client and waits for its response.
func (a *agent) call(method string, params any) (json.RawMessage, error) {
	a.mu.Lock()
	a.nextID++
	n := a.nextID // read under mu: concurrent calls must not share an id
	id := strconv.Itoa(n)
	ch := make(chan message, 1)
	a.pending[id] = ch
	a.mu.Unlock()
	a.write(map[string]any{"jsonrpc": "2.0", "id": n, "method": method, "params": params})
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-a.ctx.Done():
		return nil, a.ctx.Err()
	}
}

func (a *agent) handle(method string, params json.RawMessage) (any, error) {
	switch method {
	case "initialize":
		resume, load, _ := sessionCaps()
		sessCaps := map[string]any{"close": map[string]any{}}
		if resume {
			sessCaps["resume"] = map[string]any{}
		}
		agentSessionCaps(sessCaps) // agentsessions.go
		res := map[string]any{
			"protocolVersion":   1,
			"agentCapabilities": capabilities(load, sessCaps),
			"agentInfo":         map[string]any{"name": "scriptagent", "version": "1.0.0"},
			"authMethods":       []any{},
		}
		if os.Getenv("SCRIPTAGENT_REQUIRE_AUTH") == "1" {
			res["authMethods"] = []any{map[string]any{"id": "script-token", "name": "Script token"}}
		}
		return res, nil
	case "authenticate":
		var p struct {
			MethodID string `json:"methodId"`
		}
		_ = json.Unmarshal(params, &p)
		if p.MethodID != "script-token" {
			return nil, &rpcError{Code: -32602, Message: "unknown auth method " + p.MethodID}
		}
		a.mu.Lock()
		a.authed = true
		a.mu.Unlock()
		return map[string]any{}, nil
	case "session/new":
		a.mu.Lock()
		authed := a.authed
		a.mu.Unlock()
		if os.Getenv("SCRIPTAGENT_REQUIRE_AUTH") == "1" && !authed {
			return nil, &rpcError{Code: -32000, Message: "Authentication required"}
		}
		if ms, err := strconv.Atoi(os.Getenv("SCRIPTAGENT_NEW_DELAY_MS")); err == nil && ms > 0 {
			select { // a slow agent: settings changed meanwhile must wait
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-a.ctx.Done():
				return nil, &rpcError{Code: -32603, Message: "shutting down"}
			}
		}
		var p struct {
			Cwd        string `json:"cwd"`
			McpServers []struct {
				Name    string `json:"name"`
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		var mcp []string
		for _, m := range p.McpServers {
			tr := m.Type
			if tr == "" {
				tr = "stdio"
			}
			mcp = append(mcp, m.Name+"="+tr)
		}
		a.mu.Lock()
		s := &sess{id: a.newSessionIDLocked(), cwd: p.Cwd, model: "script-fast", mode: "default", mcp: mcp}
		a.sessions[s.id] = s
		a.mu.Unlock()
		a.persist(s)
		a.logPath("new", s.id)
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			// Sent after the response, as real agents do.
			select {
			case <-time.After(10 * time.Millisecond):
			case <-a.ctx.Done():
				return
			}
			a.notify(s.id, map[string]any{"sessionUpdate": "available_commands_update",
				"availableCommands": []any{map[string]any{"name": "demo", "description": "Run the demo turn",
					"input": map[string]any{"hint": "what to talk about"}}}})
		}()
		// An update before the response: clients must not lose it.
		a.notify(s.id, map[string]any{"sessionUpdate": "session_info_update", "title": "Script session"})
		return map[string]any{"sessionId": s.id, "configOptions": a.configOptions(s), "modes": a.modes(s)}, nil
	case "session/set_config_option":
		var p struct {
			SessionID string `json:"sessionId"`
			ConfigID  string `json:"configId"`
			Value     string `json:"value"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		s := a.session(p.SessionID)
		if s == nil || p.ConfigID != "model" || (p.Value != "script-fast" && p.Value != "script-smart") {
			return nil, &rpcError{Code: -32602, Message: fmt.Sprintf("invalid config %q=%q", p.ConfigID, p.Value)}
		}
		a.mu.Lock()
		s.model = p.Value
		a.mu.Unlock()
		return map[string]any{"configOptions": a.configOptions(s)}, nil
	case "session/set_mode":
		var p struct {
			SessionID string `json:"sessionId"`
			ModeID    string `json:"modeId"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		s := a.session(p.SessionID)
		if s == nil || (p.ModeID != "default" && p.ModeID != "plan") {
			return nil, &rpcError{Code: -32602, Message: "invalid mode " + p.ModeID}
		}
		a.mu.Lock()
		s.mode = p.ModeID
		a.mu.Unlock()
		return map[string]any{}, nil
	case "session/close":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(params, &p)
		a.mu.Lock()
		delete(a.sessions, p.SessionID)
		a.mu.Unlock()
		fmt.Fprintf(a.errOut, "scriptagent: closed session %s\n", p.SessionID)
		return map[string]any{}, nil
	case "session/prompt":
		return a.prompt(params)
	case "session/resume", "session/load":
		return a.reopen(method, params)
	case "session/list", "session/fork", "session/delete":
		return a.agentSessions(method, params) // agentsessions.go
	}
	return nil, &rpcError{Code: -32601, Message: "Method not found: " + method}
}

func (a *agent) session(id string) *sess {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

func (a *agent) modes(s *sess) map[string]any {
	a.mu.Lock()
	mode := s.mode
	a.mu.Unlock()
	return map[string]any{"currentModeId": mode, "availableModes": []any{
		map[string]any{"id": "default", "name": "Default"},
		map[string]any{"id": "plan", "name": "Plan", "description": "Plan only"}}}
}

func (a *agent) configOptions(s *sess) []any {
	a.mu.Lock()
	model := s.model
	a.mu.Unlock()
	return []any{map[string]any{"id": "model", "name": "Model", "category": "model", "type": "select",
		"currentValue": model, "options": []any{
			map[string]any{"value": "script-fast", "name": "Script Fast"},
			map[string]any{"value": "script-smart", "name": "Script Smart", "description": "Slower"}}}}
}

// turn is one running prompt.
type turn struct {
	a        *agent
	s        *sess
	ctx      context.Context
	respMeta map[string]any // _meta of the prompt response, if any
}

func (t *turn) update(u map[string]any) { t.a.notify(t.s.id, u) }

func (t *turn) text(s string) {
	t.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": s}})
}

func (t *turn) path(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return strings.TrimSuffix(t.s.cwd, "/") + "/" + p
}

// permission asks for permission and returns the chosen option id, or ""
// when the request was cancelled.
func (t *turn) permission(toolCall map[string]any, options []any) (string, error) {
	res, err := t.a.call("session/request_permission", map[string]any{
		"sessionId": t.s.id, "toolCall": toolCall, "options": options})
	if err != nil {
		return "", err
	}
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", err
	}
	if r.Outcome.Outcome != "selected" {
		return "", nil
	}
	return r.Outcome.OptionID, nil
}

func (a *agent) prompt(params json.RawMessage) (any, error) {
	var p struct {
		SessionID string            `json:"sessionId"`
		Prompt    []json.RawMessage `json:"prompt"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{Code: -32602, Message: err.Error()}
	}
	s := a.session(p.SessionID)
	if s == nil {
		return nil, &rpcError{Code: -32602, Message: "unknown session " + p.SessionID}
	}
	var text strings.Builder
	var blocks []string
	for _, b := range p.Prompt {
		var blk struct {
			Type     string         `json:"type"`
			Text     string         `json:"text"`
			URI      string         `json:"uri"`
			Name     string         `json:"name"`
			MimeType string         `json:"mimeType"`
			Meta     map[string]any `json:"_meta"`
			Resource *struct {
				URI      string `json:"uri"`
				Text     string `json:"text"`
				Blob     string `json:"blob"`
				MimeType string `json:"mimeType"`
			} `json:"resource"`
		}
		_ = json.Unmarshal(b, &blk)
		var d string
		switch blk.Type {
		case "text":
			if text.Len() == 0 {
				text.WriteString(blk.Text)
			}
			d = "text:" + blk.Text
		case "resource_link":
			d = "link:" + blk.Name + "=" + blk.URI
		case "resource":
			switch {
			case blk.Resource == nil:
				d = "resource"
			case blk.Resource.Blob != "":
				d = "resource:" + blk.Resource.URI + "=blob:" + blk.Resource.MimeType
			default:
				d = "resource:" + blk.Resource.URI + "=" + blk.Resource.Text
			}
		case "image", "audio":
			d = blk.Type + ":" + blk.MimeType
		default:
			d = blk.Type
		}
		if len(blk.Meta) > 0 {
			d += "+meta"
		}
		blocks = append(blocks, d)
	}
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	a.mu.Lock()
	s.cancel = cancel
	a.mu.Unlock()
	t := &turn{a: a, s: s, ctx: ctx}
	fields := strings.Fields(text.String())
	word := ""
	if len(fields) > 0 {
		word = strings.ToLower(fields[0])
	}
	stop, usage, err := t.run(word, fields, text.String(), blocks)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil && a.ctx.Err() == nil {
		stop = "cancelled"
	}
	if stop == "end_turn" {
		a.remember(s, text.String())
	}
	res := map[string]any{"stopReason": stop}
	if t.respMeta != nil {
		res["_meta"] = t.respMeta
	}
	if usage {
		res["usage"] = map[string]any{"inputTokens": 10, "outputTokens": 20, "totalTokens": 30, "cachedReadTokens": 5}
	}
	return res, nil
}

func intArg(fields []string, i, def int) int {
	if i < len(fields) {
		if n, err := strconv.Atoi(fields[i]); err == nil {
			return n
		}
	}
	return def
}

// run plays a scenario; it returns the stop reason and whether to report
// usage.
func (t *turn) run(word string, fields []string, text string, blocks []string) (string, bool, error) {
	switch word {
	case "permission":
		return t.permissionScenario()
	case "perm-first":
		return t.permFirst()
	case "v2":
		return t.v2()
	case "bench":
		return t.benchFlood(fields)
	case "flood":
		n, size := intArg(fields, 1, 1000), intArg(fields, 2, 64)
		if size < 8 {
			size = 8
		}
		pad := strings.Repeat("x", size-8)
		for i := 0; i < n; i++ {
			t.text(fmt.Sprintf("%08d", i) + pad)
		}
		return "end_turn", false, nil
	case "longline":
		n := intArg(fields, 1, 12<<20)
		t.text(strings.Repeat("a", n))
		t.text("after")
		return "end_turn", false, nil
	case "notify-flood":
		n := intArg(fields, 1, 5000)
		for i := 0; i < n; i++ {
			t.a.write(map[string]any{"jsonrpc": "2.0", "method": "_scriptagent/ping", "params": map[string]any{"i": i}})
			t.a.write(map[string]any{"jsonrpc": "2.0", "method": "unknown/notification", "params": map[string]any{"i": i}})
		}
		t.text("survived")
		return "end_turn", false, nil
	case "longresponse":
		t.respMeta = map[string]any{"padding": strings.Repeat("p", intArg(fields, 1, 9<<20))}
		return "end_turn", false, nil
	case "longrequest":
		_, err := t.a.call("fs/read_text_file", map[string]any{"sessionId": t.s.id, "path": t.path(strings.Repeat("q", intArg(fields, 1, 9<<20)))})
		t.text(fmt.Sprintf("longrequest error: %v", err))
		return "end_turn", false, nil
	case "garbage":
		t.text("before garbage")
		t.a.writeRaw([]byte("this is not JSON\n"))
		t.a.writeRaw([]byte("{\"truncated\": \n"))
		t.a.writeRaw([]byte("\n"))
		t.text(" after garbage")
		return "end_turn", false, nil
	case "crash":
		t.text("about to crash")
		// Give the output a moment to be read before the process goes.
		time.Sleep(50 * time.Millisecond)
		fmt.Fprintln(t.a.errOut, "scriptagent: crashing on purpose")
		os.Exit(3)
	case "unknown-method":
		_, err1 := t.a.call("x/unknown_method", map[string]any{"sessionId": t.s.id})
		_, err2 := t.a.call("_scriptagent/unknown", map[string]any{"sessionId": t.s.id})
		t.text(fmt.Sprintf("unknown-method error: %v; extension error: %v", err1, err2))
		return "end_turn", false, nil
	case "wait":
		t.text("waiting")
		<-t.ctx.Done()
		return "cancelled", false, nil
	case "ignore-cancel":
		t.text("ignoring cancel")
		<-t.a.ctx.Done()
		return "end_turn", false, nil
	case "terminal", "terminal-limit":
		limit := 1 << 20
		cmdFields := fields[1:]
		if word == "terminal-limit" {
			limit = intArg(fields, 1, limit)
			if len(fields) > 2 {
				cmdFields = fields[2:]
			} else {
				cmdFields = nil
			}
		}
		return t.terminalScenario(strings.Join(cmdFields, " "), limit)
	case "terminal-kill":
		return t.terminalKill()
	case "terminal-release":
		res, err := t.a.call("terminal/create", map[string]any{"sessionId": t.s.id, "command": "sleep", "args": []string{"30"}})
		if err != nil {
			t.text("terminal error: " + err.Error())
			return "end_turn", false, nil
		}
		id := terminalID(res)
		if _, err := t.a.call("terminal/release", map[string]any{"sessionId": t.s.id, "terminalId": id}); err != nil {
			t.text("release error: " + err.Error())
			return "end_turn", false, nil
		}
		t.text("released " + id)
		return "end_turn", false, nil
	case "read":
		if len(fields) < 2 {
			t.text("read error: no path")
			return "end_turn", false, nil
		}
		params := map[string]any{"sessionId": t.s.id, "path": t.path(fields[1])}
		if len(fields) >= 4 {
			params["line"] = intArg(fields, 2, 1)
			params["limit"] = intArg(fields, 3, 1)
		}
		res, err := t.a.call("fs/read_text_file", params)
		if err != nil {
			t.text("read error: " + err.Error())
			return "end_turn", false, nil
		}
		var r struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(res, &r)
		t.text("content:" + r.Content)
		return "end_turn", false, nil
	case "write":
		if len(fields) < 2 {
			t.text("write error: no path")
			return "end_turn", false, nil
		}
		content := unescape(strings.Join(fields[2:], " "))
		if _, err := t.a.call("fs/write_text_file", map[string]any{"sessionId": t.s.id, "path": t.path(fields[1]), "content": content}); err != nil {
			t.text("write error: " + err.Error())
			return "end_turn", false, nil
		}
		t.text("wrote " + fields[1])
		return "end_turn", false, nil
	case "echo":
		t.text(strings.Join(blocks, "|"))
		return "end_turn", false, nil
	case "mcp":
		t.a.mu.Lock()
		list := make([]string, 0, len(t.s.mcp))
		for _, m := range t.s.mcp {
			list = append(list, "mcp:"+m)
		}
		t.a.mu.Unlock()
		t.text(strings.Join(list, "|"))
		return "end_turn", false, nil
	case "diff":
		if len(fields) < 2 {
			t.text("diff error: no path")
			return "end_turn", false, nil
		}
		return t.diff(fields[1], unescape(strings.Join(fields[2:], " ")))
	case "multi":
		rest := strings.TrimSpace(strings.TrimPrefix(text, fields[0]))
		for _, step := range strings.Split(rest, ";;") {
			step = strings.TrimSpace(step)
			f := strings.Fields(step)
			if len(f) == 0 {
				continue
			}
			if _, _, err := t.run(strings.ToLower(f[0]), f, step, nil); err != nil {
				return "", false, err
			}
		}
		return "end_turn", false, nil
	case "recall":
		t.text(t.a.recall(t.s))
		return "end_turn", false, nil
	case "title":
		t.update(map[string]any{"sessionUpdate": "session_info_update", "title": strings.TrimSpace(strings.TrimPrefix(text, fields[0]))})
		return "end_turn", false, nil
	case "usage":
		t.update(map[string]any{"sessionUpdate": "usage_update", "used": 1234, "size": 200000})
		return "end_turn", true, nil
	case "error":
		return "", false, &rpcError{Code: -32603, Message: "scripted failure"}
	}
	return t.demo(text)
}

func terminalID(res json.RawMessage) string {
	var r struct {
		TerminalID string `json:"terminalId"`
	}
	_ = json.Unmarshal(res, &r)
	return r.TerminalID
}

// pause slows the demo down when SCRIPTAGENT_DELAY_MS asks for it.
func (t *turn) pause() {
	ms, err := strconv.Atoi(os.Getenv("SCRIPTAGENT_DELAY_MS"))
	if err != nil || ms <= 0 {
		return
	}
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
	case <-t.ctx.Done():
	}
}

func (t *turn) demo(text string) (string, bool, error) {
	t.update(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": "Thinking about: " + text}})
	t.update(map[string]any{"sessionUpdate": "plan", "entries": []any{
		map[string]any{"content": "Read README.md", "priority": "high", "status": "in_progress"},
		map[string]any{"content": "Answer", "priority": "medium", "status": "pending"}}})
	t.pause()
	t.text("Hello ")
	t.pause()
	t.text("from the script agent.")
	t.pause()
	readme := filepath.Join(t.s.cwd, "README.md")
	tc := map[string]any{"toolCallId": "read-1", "title": "Read README.md", "kind": "read", "status": "pending",
		"locations": []any{map[string]any{"path": readme}}, "rawInput": map[string]any{"path": readme}}
	t.update(merge(map[string]any{"sessionUpdate": "tool_call"}, tc))
	choice, err := t.permission(tc, []any{
		map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
		map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"}})
	if err != nil {
		return "", false, err
	}
	switch choice {
	case "":
		t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "status": "failed"})
		return "cancelled", false, nil
	case "allow":
		t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "status": "in_progress"})
		res, err := t.a.call("fs/read_text_file", map[string]any{"sessionId": t.s.id, "path": readme})
		content := ""
		status := "completed"
		if err != nil {
			content, status = "error: "+err.Error(), "failed"
		} else {
			var r struct {
				Content string `json:"content"`
			}
			_ = json.Unmarshal(res, &r)
			content = r.Content
		}
		t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "status": status,
			"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": content}}}})
		t.pause()
		t.text(" I read README.md.")
	default:
		t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "read-1", "status": "failed"})
		t.text(" You did not let me read README.md.")
	}
	t.update(map[string]any{"sessionUpdate": "plan", "entries": []any{
		map[string]any{"content": "Read README.md", "priority": "high", "status": "completed"},
		map[string]any{"content": "Answer", "priority": "medium", "status": "completed"}}})
	t.pause()
	t.text(" Done.")
	return "end_turn", true, nil
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func (t *turn) permissionScenario() (string, bool, error) {
	tc := map[string]any{"toolCallId": "perm-1", "title": "Run a command", "kind": "execute", "status": "pending",
		"rawInput": map[string]any{"command": "true"}}
	t.update(merge(map[string]any{"sessionUpdate": "tool_call"}, tc))
	choice, err := t.permission(tc, []any{
		map[string]any{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
		map[string]any{"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
		map[string]any{"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
		map[string]any{"optionId": "reject-always", "name": "Always reject", "kind": "reject_always"}})
	if err != nil {
		return "", false, err
	}
	if choice == "" {
		t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "perm-1", "status": "failed"})
		return "cancelled", false, nil
	}
	status := "completed"
	if strings.HasPrefix(choice, "reject") {
		status = "failed"
	}
	t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "perm-1", "status": status})
	t.text("selected: " + choice)
	return "end_turn", false, nil
}

func (t *turn) permFirst() (string, bool, error) {
	choice, err := t.permission(map[string]any{"toolCallId": "early-1", "title": "Early tool", "kind": "execute"},
		[]any{map[string]any{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
			map[string]any{"optionId": "no", "name": "No", "kind": "reject_once"}})
	if err != nil {
		return "", false, err
	}
	t.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "early-1", "title": "Early tool", "kind": "execute", "status": "in_progress"})
	t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "early-1", "status": "completed"})
	if choice == "" {
		choice = "cancelled"
	}
	t.text("selected: " + choice)
	return "end_turn", false, nil
}

func (t *turn) v2() (string, bool, error) {
	t.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "v2-1", "title": "Custom tool", "kind": "_custom_kind", "status": "_queued"})
	for _, part := range []string{"part 1", "part 2"} {
		t.update(map[string]any{"sessionUpdate": "tool_call_content_chunk", "toolCallId": "v2-1",
			"content": map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": part}}})
	}
	t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "v2-1", "content": []any{}})
	t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "v2-1", "status": "_paused"})
	t.update(map[string]any{"sessionUpdate": "_custom_update", "payload": map[string]any{"x": 1}})
	t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "v2-1", "status": "completed",
		"content": []any{map[string]any{"type": "_custom_content", "data": 1}}})
	t.text("v2 done")
	return "end_turn", false, nil
}

func (t *turn) terminalScenario(command string, limit int) (string, bool, error) {
	res, err := t.a.call("terminal/create", map[string]any{"sessionId": t.s.id, "command": "/bin/sh",
		"args": []string{"-c", command}, "outputByteLimit": limit})
	if err != nil {
		t.text("terminal error: " + err.Error())
		return "end_turn", false, nil
	}
	id := terminalID(res)
	t.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "term-1", "title": command, "kind": "execute",
		"status": "in_progress", "content": []any{map[string]any{"type": "terminal", "terminalId": id}}})
	ex, err := t.a.call("terminal/wait_for_exit", map[string]any{"sessionId": t.s.id, "terminalId": id})
	if err != nil {
		t.text("wait error: " + err.Error())
		return "end_turn", false, nil
	}
	var exit struct {
		ExitCode *int `json:"exitCode"`
	}
	_ = json.Unmarshal(ex, &exit)
	out, err := t.a.call("terminal/output", map[string]any{"sessionId": t.s.id, "terminalId": id})
	if err != nil {
		t.text("output error: " + err.Error())
		return "end_turn", false, nil
	}
	var o struct {
		Output    string `json:"output"`
		Truncated bool   `json:"truncated"`
	}
	_ = json.Unmarshal(out, &o)
	if _, err := t.a.call("terminal/release", map[string]any{"sessionId": t.s.id, "terminalId": id}); err != nil {
		t.text("release error: " + err.Error())
	}
	code := -1
	if exit.ExitCode != nil {
		code = *exit.ExitCode
	}
	t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "term-1", "status": "completed"})
	t.text(fmt.Sprintf("exit=%d truncated=%v output=%s", code, o.Truncated, o.Output))
	return "end_turn", false, nil
}

func (t *turn) terminalKill() (string, bool, error) {
	res, err := t.a.call("terminal/create", map[string]any{"sessionId": t.s.id, "command": "sleep", "args": []string{"30"}})
	if err != nil {
		t.text("terminal error: " + err.Error())
		return "end_turn", false, nil
	}
	id := terminalID(res)
	if _, err := t.a.call("terminal/kill", map[string]any{"sessionId": t.s.id, "terminalId": id}); err != nil {
		t.text("kill error: " + err.Error())
		return "end_turn", false, nil
	}
	ex, err := t.a.call("terminal/wait_for_exit", map[string]any{"sessionId": t.s.id, "terminalId": id})
	if err != nil {
		t.text("wait error: " + err.Error())
		return "end_turn", false, nil
	}
	var exit struct {
		ExitCode *int    `json:"exitCode"`
		Signal   *string `json:"signal"`
	}
	_ = json.Unmarshal(ex, &exit)
	_, _ = t.a.call("terminal/release", map[string]any{"sessionId": t.s.id, "terminalId": id})
	sig, code := "", "none"
	if exit.Signal != nil {
		sig = *exit.Signal
	}
	if exit.ExitCode != nil {
		code = strconv.Itoa(*exit.ExitCode)
	}
	t.text(fmt.Sprintf("killed signal=%s exit=%s", sig, code))
	return "end_turn", false, nil
}

// unescape turns "\\n" into newlines.
func unescape(s string) string { return strings.ReplaceAll(s, `\n`, "\n") }

// diff edits a file the way agents with their own file tools do: the agent
// writes it itself and reports the edit as a diff in a tool call.
func (t *turn) diff(path, content string) (string, bool, error) {
	p := t.path(path)
	t.a.mu.Lock()
	t.a.nextID++
	id := fmt.Sprintf("edit-%d", t.a.nextID)
	t.a.mu.Unlock()
	var old any
	if b, err := os.ReadFile(p); err == nil {
		old = string(b)
	}
	t.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": "Edit " + path, "kind": "edit",
		"status": "in_progress", "locations": []any{map[string]any{"path": p}}})
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "failed"})
		t.text("diff error: " + err.Error())
		return "end_turn", false, nil
	}
	t.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
		"content": []any{map[string]any{"type": "diff", "path": p, "oldText": old, "newText": content}}})
	t.text("edited " + path)
	return "end_turn", false, nil
}
