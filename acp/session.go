package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/logfield"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"
)

// turnState tracks the running turn of a session. Its fields are guarded
// by the session's mu.
type turnState struct {
	proc            *agentProc // set once the prompt is about to be sent
	acpID           string
	cancelRequested bool
	graceExpired    bool
	ended           bool
	timer           *time.Timer
}

// pendingPerm is a session/request_permission waiting for the user. Its
// fields never change; once makes the answer happen once.
type pendingPerm struct {
	once sync.Once
	id   json.RawMessage
	proc *agentProc
}

// session is a backend.Session on an ACP agent.
//
// Lock discipline: the fields above mu are set by newSession and never
// change; mu guards every field below it, including the running turn's
// turnState. mu is a leaf lock, held only to read or write those fields:
// never across a call to the agent, the sink, the queue or the provider,
// and nothing else is locked while it is held (the agent's routing lock
// is taken before it, in addPermission). Work that spans calls to the
// agent and must not overlap is marked in the guarded state instead of
// being done under a lock: prompting while a Prompt runs, recreating while
// the ACP session is being re-created on a restarted agent. A caller that
// finds one of them set waits for that channel to close, then looks again.
type session struct {
	p       *Provider
	opts    backend.SessionOptions
	cwd     string // absolute, cleaned
	cwdReal string // cwd with symlinks resolved
	sink    backend.Sink
	log     zerolog.Logger
	queue   *eventQueue
	text    coalescer // merges queued text chunks; used by the queue goroutine only

	mu         sync.Mutex
	proc       *agentProc // the agent the ACP session lives on
	acpID      string
	closed     bool
	prompting  chan struct{} // non-nil while a Prompt runs; closed when it returns
	recreating chan struct{} // non-nil while agentSession re-creates the ACP session
	turn       *turnState    // the turn Cancel acts on; nil between turns
	perms      map[*pendingPerm]struct{}
	suppress   *agentProc // agent we killed ourselves: no Disconnected for it
	terms      map[string]*terminal
	options    []backend.ConfigOption // the agent's configOptions
	modes      *backend.ConfigOption  // the agent's legacy session modes
	models     *backend.ConfigOption  // the agent's session/new `models`
	// optionCats holds the categories the agent has ever given a config
	// option. Legacy modes or models stand in for a category only while it
	// has none: once the agent moved a category to config options, a list
	// without it means it removed the setting, and the legacy value it sent
	// at session/new must not come back.
	optionCats map[string]bool

	// Used by the queue goroutine only (handle).
	tools   map[string]*trackedTool // the tool calls of the current turn
	created map[string]bool         // files fs/write_text_file created this turn
	// replaying is set between replayStart and replayEnd: the agent
	// replays the conversation of a session/load (attach.go).
	replaying bool
}

// trackedTool is what the session remembers of a tool call of the current
// turn, to merge its `_meta` and to mark the diffs of files it created.
type trackedTool struct {
	reported bool // a tool_call or tool_call_update named it (not only a permission request)
	meta     map[string]any
	content  []backend.ToolContent
}

// turnStarted is queued when a Prompt starts: the tool calls and created
// files tracked for the previous turn are forgotten.
type turnStarted struct{}

// fileCreated is queued when fs/write_text_file created a file (path is
// absolute and clean).
type fileCreated struct{ path string }

var _ backend.Session = (*session)(nil)

func newSession(p *Provider, opts backend.SessionOptions, sink backend.Sink) (*session, error) {
	if sink == nil {
		return nil, errors.New("no event sink")
	}
	cwd := opts.Cwd
	if strings.HasPrefix(cwd, "file://") {
		u, err := url.Parse(cwd)
		if err != nil {
			return nil, fmt.Errorf("working directory %q: %w", cwd, err)
		}
		cwd = u.Path
	}
	if cwd == "" {
		cwd = p.cfg.Dir
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		cwd = wd
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("working directory %q: %w", opts.Cwd, err)
	}
	fi, err := os.Stat(cwd)
	if err != nil {
		return nil, fmt.Errorf("working directory %q: %w", cwd, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("working directory %q is not a directory", cwd)
	}
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return nil, fmt.Errorf("working directory %q: %w", cwd, err)
	}
	s := &session{
		p: p, opts: opts, cwd: cwd, cwdReal: real, sink: sink,
		log:        logfield.Str(p.log, "session", opts.SessionID),
		perms:      make(map[*pendingPerm]struct{}),
		terms:      make(map[string]*terminal),
		optionCats: make(map[string]bool),
		tools:      make(map[string]*trackedTool),
		created:    make(map[string]bool),
	}
	if p.cfg.CoalesceText {
		s.text.emit = sink.Event
	}
	s.queue = newEventQueue(s.handle)
	return s, nil
}

// create runs session/new on a running agent and registers the session.
func (s *session) create(ctx context.Context) error {
	a, err := s.p.ensure(ctx)
	if err != nil {
		return err
	}
	// Raw, not through the SDK: its typed result has no `models`.
	servers, left := mcpServers(s.opts.McpServers, a.caps.McpCapabilities)
	raw, err := a.call(ctx, sdk.AgentMethodSessionNew, s.sessionParams(a, servers))
	if err != nil {
		if isAuthRequired(err) {
			return s.p.authRequired(a, err)
		}
		return a.describeErr("creating the agent session", err)
	}
	var resp newSessionResult
	if err := json.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("creating the agent session: the agent's answer cannot be read: %w", err)
	}
	if resp.SessionID == "" {
		return errors.New("creating the agent session: the agent returned no session id")
	}
	return s.adopt(ctx, a, resp, left)
}

// adopt makes the agent session a new one (session/new or session/fork)
// answered with the session's.
func (s *session) adopt(ctx context.Context, a *agentProc, resp newSessionResult, left []backend.McpServerStatus) error {
	id := resp.SessionID
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("session closed")
	}
	s.proc, s.acpID = a, id
	s.mu.Unlock()
	a.register(id, s)
	s.log.Info().Str("acp_session", id).Msg("agent session created")
	s.opened(ctx, a, id, resp, left, true)
	return nil
}

// opened finishes opening the agent session id (created, resumed or
// loaded): it reports the MCP servers left out, takes the settings the
// agent answered with (always for a new session, whose settings start
// there; for a continued one only when the agent sent some, so that the
// stored ones stay otherwise), and selects the model the bridge asked for.
func (s *session) opened(ctx context.Context, a *agentProc, id string, resp newSessionResult, left []backend.McpServerStatus, fresh bool) {
	s.reportMcp(left)
	if fresh || resp.ConfigOptions != nil || resp.Modes != nil || resp.Models != nil {
		if err := s.setInitialConfig(resp); err != nil {
			s.log.Warn().Err(err).Msg("agent sent session settings that cannot be read")
		}
	}
	if s.opts.Model != "" {
		if err := s.applyModel(ctx, a, id); err != nil {
			s.log.Warn().Err(err).Str("model", s.opts.Model).Msg("could not select the requested model")
			// After the ConfigChanged of the session's opening, so that
			// the bridge knows what the session runs instead.
			s.queue.push(queueItem{event: backend.SettingRefused{Key: "model", Value: s.opts.Model, Err: err}})
		}
	}
}

// newSessionResult is the part of a session/new result this package reads.
type newSessionResult struct {
	SessionID     string          `json:"sessionId"`
	ConfigOptions json.RawMessage `json:"configOptions"`
	Modes         json.RawMessage `json:"modes"`
	Models        json.RawMessage `json:"models"`
}

// setInitialConfig records the config options, modes and models of
// session/new and reports them as a ConfigChanged event. What cannot be
// read is left out; the error says what it was.
func (s *session) setInitialConfig(resp newSessionResult) error {
	var errs []error
	opts, err := DecodeConfigOptions(resp.ConfigOptions)
	if err != nil {
		opts = nil
		errs = append(errs, err)
	}
	modes, err := DecodeModes(resp.Modes)
	errs = append(errs, err)
	models, err := DecodeModels(resp.Models)
	errs = append(errs, err)
	s.mu.Lock()
	s.options, s.modes, s.models = opts, modes, models
	s.noteCategoriesLocked()
	all := s.allOptionsLocked()
	s.mu.Unlock()
	s.p.setModels(all)
	s.queue.push(queueItem{event: backend.ConfigChanged{Options: all}})
	return errors.Join(errs...)
}

// noteCategoriesLocked records the categories of the config options.
func (s *session) noteCategoriesLocked() {
	for _, o := range s.options {
		if o.Category != "" {
			s.optionCats[o.Category] = true
		}
	}
}

// allOptionsLocked is the session's full settings: the config options plus
// the legacy modes and models, each unless the agent has given its
// category a config option (see optionCats).
func (s *session) allOptionsLocked() []backend.ConfigOption {
	out := make([]backend.ConfigOption, 0, len(s.options)+2)
	out = append(out, s.options...)
	for _, l := range s.legacyLocked() {
		o := *l
		o.Values = append([]backend.ConfigValue(nil), o.Values...)
		out = append(out, o)
	}
	return out
}

// legacyLocked returns the legacy settings that are in force: the modes
// and models of session/new whose category has no config option.
func (s *session) legacyLocked() []*backend.ConfigOption {
	var out []*backend.ConfigOption
	if s.modes != nil && !s.optionCats["mode"] {
		out = append(out, s.modes)
	}
	if s.models != nil && !s.optionCats["model"] {
		out = append(out, s.models)
	}
	return out
}

// applyModel selects the model the bridge asked for, if it is not current.
func (s *session) applyModel(ctx context.Context, a *agentProc, id string) error {
	s.mu.Lock()
	o, _ := s.findOptionLocked("model")
	s.mu.Unlock()
	if o == nil {
		return errors.New("the agent offers no model setting")
	}
	if o.Current == s.opts.Model {
		return nil
	}
	return s.setConfigOn(ctx, a, id, "model", s.opts.Model)
}

// findOptionLocked finds a setting in force by ID, or by category for
// "model" and "mode". legacy reports the option is the session modes or
// models of session/new.
func (s *session) findOptionLocked(key string) (opt *backend.ConfigOption, legacy bool) {
	for i := range s.options {
		if s.options[i].ID == key {
			return &s.options[i], false
		}
	}
	for i := range s.options {
		if s.options[i].Category == key && (key == "model" || key == "mode") {
			return &s.options[i], false
		}
	}
	for _, l := range s.legacyLocked() {
		if l.ID == key || l.Category == key {
			return l, true
		}
	}
	return nil, false
}

// handle runs on the queue goroutine: it decodes raw updates and hands
// events to the sink, in order.
func (s *session) handle(it queueItem) {
	if it.update != nil {
		// A text chunk read by scanTextUpdate: during a session/load
		// replay it is part of the conversation, dropped as
		// replayedUpdate drops it on the raw path.
		if !s.replaying {
			s.emit(it.update)
		}
		return
	}
	if it.raw == nil {
		s.text.flush()
		switch ev := it.event.(type) {
		case replayStart:
			s.replaying = true
		case replayEnd:
			s.replaying = false
		case turnStarted:
			clear(s.tools)
			clear(s.created)
		case fileCreated:
			s.markCreated(ev.path)
		case backend.PermissionRequest:
			ev.ToolCall = s.trackTool(ev.ToolCall, false)
			s.sink.Event(ev)
		case backend.Event:
			s.sink.Event(ev)
		}
		return
	}
	if s.replaying && replayedUpdate(it.raw) {
		return // already in the bridge's history
	}
	kind, evs, err := decodeUpdate(it.raw)
	if err != nil {
		s.log.Warn().Err(err).Str("update", clip(it.raw, 300)).Msg("session update could not be decoded; passed on as custom")
		if kind == "" {
			kind = "_invalid"
		}
		evs = []backend.Event{backend.Custom{Kind: kind, Raw: it.raw}}
	} else if kind == kindConfigOptionUpdate || kind == kindCurrentModeUpdate {
		evs = s.mergeConfig(kind, evs)
	} else if kind == kindUserMessageChunk && s.opts.Import {
		evs = userMessage(it.raw) // the replay of one of the agent's own sessions
	}
	for _, ev := range evs {
		if tc, ok := ev.(backend.ToolCall); ok {
			ev = s.trackTool(tc, true)
		}
		s.emit(ev)
	}
}

// emit passes an event on from the queue goroutine.
func (s *session) emit(ev backend.Event) {
	if s.text.emit != nil {
		s.text.add(ev)
	} else {
		s.sink.Event(ev)
	}
}

// trackTool records a tool call event of the current turn and completes it
// as backend.ToolCall documents: a re-sent full description of a known call
// becomes an update, Meta is the call's `_meta` merged so far, and diffs of
// files created this turn are marked Created. update says tc comes from a
// tool_call or tool_call_update, not from a permission request.
func (s *session) trackTool(tc backend.ToolCall, update bool) backend.ToolCall {
	if tc.ID == "" {
		return tc
	}
	tt := s.tools[tc.ID]
	if tt == nil {
		tt = &trackedTool{}
		s.tools[tc.ID] = tt
	}
	known := tt.reported
	tt.reported = tt.reported || update
	if known && !tc.Update {
		// claude-code-acp sends a second tool_call once the model's input
		// is complete, with the real title and input.
		tc.Update = true
		if tc.ContentMode == backend.ContentUnchanged {
			tc.ContentMode = backend.ContentReplace
			tc.Content = []backend.ToolContent{}
		}
	}
	if tc.Meta != nil {
		tt.meta = mergeMeta(tt.meta, tc.Meta)
		tc.Meta = cloneMeta(tt.meta)
	}
	if len(tc.Content) > 0 {
		tc.Content = append([]backend.ToolContent(nil), tc.Content...)
		for i := range tc.Content {
			if c := &tc.Content[i]; c.Type == "diff" && s.created[s.absPath(c.Path)] {
				c.Created = true
			}
		}
	}
	switch tc.ContentMode {
	case backend.ContentReplace:
		tt.content = append([]backend.ToolContent(nil), tc.Content...)
	case backend.ContentAppend:
		tt.content = append(tt.content, tc.Content...)
	}
	return tc
}

// markCreated records a file fs/write_text_file created, and re-reports the
// content of the tool calls with a diff of it, now marked Created: the diff
// alone cannot say so (its OldText is "" when the model created the file
// with an edit of empty text, and nil as well when it overwrote a file).
func (s *session) markCreated(path string) {
	s.created[path] = true
	for id, tt := range s.tools {
		changed := false
		for i := range tt.content {
			if c := &tt.content[i]; c.Type == "diff" && !c.Created && s.absPath(c.Path) == path {
				c.Created = true
				changed = true
			}
		}
		if changed {
			s.emit(backend.ToolCall{ID: id, Update: true, ContentMode: backend.ContentReplace,
				Content: append([]backend.ToolContent(nil), tt.content...)})
		}
	}
}

// absPath makes a path from the agent absolute and clean, relative paths
// being taken relative to the working directory, so the paths of diffs and
// of fs requests compare.
func (s *session) absPath(p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.cwd, p)
	}
	return filepath.Clean(p)
}

// mergeMeta merges the `_meta` of a tool call event into what the call had:
// objects are merged key by key, other values replace, null removes.
func mergeMeta(into, from map[string]any) map[string]any {
	if into == nil {
		into = make(map[string]any, len(from))
	}
	for k, v := range from {
		if v == nil {
			delete(into, k)
			continue
		}
		sub, ok := v.(map[string]any)
		old, oldOK := into[k].(map[string]any)
		if ok && oldOK {
			into[k] = mergeMeta(old, sub)
			continue
		}
		if ok {
			v = mergeMeta(nil, sub) // a copy: later merges change it in place
		}
		into[k] = v
	}
	return into
}

// cloneMeta copies a merged `_meta` for an event, so the tracked one can
// change afterwards without the event changing with it.
func cloneMeta(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneMeta(sub)
		}
		out[k] = v
	}
	return out
}

// mergeConfig folds a config update into the session's settings and
// returns the full settings as one ConfigChanged.
func (s *session) mergeConfig(kind string, evs []backend.Event) []backend.Event {
	if len(evs) != 1 {
		return evs
	}
	cc, ok := evs[0].(backend.ConfigChanged)
	if !ok {
		return evs
	}
	s.mu.Lock()
	if kind == kindConfigOptionUpdate {
		// The list replaces the settings: an option missing from it is gone.
		s.options = cc.Options
		s.noteCategoriesLocked()
	} else if len(cc.Options) == 1 {
		cur := cc.Options[0].Current
		found := false
		for i := range s.options {
			if s.options[i].Category == "mode" {
				s.options[i].Current = cur
				found = true
			}
		}
		switch {
		case s.modes != nil:
			s.modes.Current = cur
		case !found:
			m := cc.Options[0]
			s.modes = &m
		}
	}
	all := s.allOptionsLocked()
	s.mu.Unlock()
	s.p.setModels(all)
	return []backend.Event{backend.ConfigChanged{Options: all}}
}

// agentSession returns the agent and ACP session id to talk to, starting
// the agent and re-creating the ACP session when the agent was restarted.
// Concurrent callers wait for one re-creation rather than each starting
// their own.
func (s *session) agentSession(ctx context.Context) (*agentProc, string, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, "", errors.New("session is closed")
		}
		if wait := s.recreating; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, "", fmt.Errorf("waiting for the agent session to be re-created: %w", ctx.Err())
			}
		}
		a, id := s.proc, s.acpID
		if a != nil && !a.isExited() {
			s.mu.Unlock()
			return a, id, nil
		}
		done := make(chan struct{})
		s.recreating = done
		s.mu.Unlock()
		return s.recreate(ctx, a, id, done)
	}
}

// recreate re-attaches the ACP session on a (re)started agent for
// agentSession, which has set s.recreating to done: the earlier
// conversation continued if the agent can, else a new one (attach.go).
func (s *session) recreate(ctx context.Context, old *agentProc, oldID string, done chan struct{}) (*agentProc, string, error) {
	defer func() {
		s.mu.Lock()
		s.recreating = nil
		s.mu.Unlock()
		close(done)
	}()
	if old != nil {
		old.unregister(oldID, s)
	}
	s.log.Warn().Str("acp_session", oldID).Msg("the agent was restarted: re-attaching the agent session")
	if err := s.attach(ctx, oldID); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc, s.acpID, nil
}

// beginPrompt waits until no other Prompt runs, then records t as the
// running turn. The returned func ends the Prompt.
func (s *session) beginPrompt(ctx context.Context, t *turnState) (end func(), err error) {
	s.mu.Lock()
	for s.prompting != nil {
		wait := s.prompting
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("turn aborted while waiting for the previous one to end: %w", ctx.Err())
		}
		s.mu.Lock()
	}
	done := make(chan struct{})
	s.prompting, s.turn = done, t
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.prompting = nil
		s.mu.Unlock()
		close(done)
	}, nil
}

// Prompt runs one turn with session/prompt.
func (s *session) Prompt(ctx context.Context, pr backend.Prompt) (backend.TurnResult, error) {
	// The turn exists from here on, so a Cancel that comes while the agent
	// is still starting is not lost.
	t := &turnState{}
	endPrompt, err := s.beginPrompt(ctx, t)
	if err != nil {
		return backend.TurnResult{StopReason: backend.StopCancelled}, err
	}
	defer endPrompt()
	// The tool calls of the previous turn are done with.
	s.queue.push(queueItem{event: turnStarted{}})
	endEarly := func() {
		s.mu.Lock()
		t.ended = true
		s.turn = nil
		s.mu.Unlock()
	}
	a, id, err := s.agentSession(ctx)
	if err != nil {
		endEarly()
		return backend.TurnResult{}, err
	}
	s.mu.Lock()
	early := t.cancelRequested
	t.proc, t.acpID = a, id
	s.mu.Unlock()
	if early {
		endEarly()
		return backend.TurnResult{StopReason: backend.StopCancelled}, nil
	}
	blocks, err := s.promptContent(ctx, pr, a.caps.PromptCapabilities)
	if err != nil {
		endEarly()
		return backend.TurnResult{}, err
	}

	// Raw, not through the SDK: its typed usage turns counts the agent did
	// not send into zeros, and its content blocks drop a text's `_meta`.
	raw, perr := a.call(ctx, sdk.AgentMethodSessionPrompt, map[string]any{"sessionId": id, "prompt": blocks})
	if perr != nil && ctx.Err() != nil && !a.isExited() {
		// Nobody waits for this turn any more: the agent is told to stop it.
		if cerr := a.conn.Cancel(context.Background(), sdk.CancelNotification{SessionId: sdk.SessionId(id)}); cerr != nil {
			s.log.Warn().Err(cerr).Msg("could not tell the agent to stop an abandoned turn")
		}
	}

	s.mu.Lock()
	t.ended = true
	if t.timer != nil {
		t.timer.Stop()
	}
	s.turn = nil
	grace := t.graceExpired
	cancelled := t.cancelRequested
	s.mu.Unlock()
	// Whatever happened, the turn is over: nobody will answer these.
	s.cancelPermissions()

	// Events of the turn reach the sink before Prompt returns.
	if ferr := s.queue.flush(ctx); ferr != nil {
		return backend.TurnResult{}, ferr
	}
	if perr != nil {
		switch {
		case grace:
			return backend.TurnResult{StopReason: backend.StopCancelled}, nil
		case ctx.Err() != nil:
			return backend.TurnResult{StopReason: backend.StopCancelled}, fmt.Errorf("turn aborted: %w", ctx.Err())
		case cancelled && !a.isExited():
			// Some agents answer a cancelled prompt with an error instead
			// of the "cancelled" stop reason ACP asks for.
			s.log.Info().Err(perr).Msg("the agent ended the cancelled turn with an error")
			return backend.TurnResult{StopReason: backend.StopCancelled}, nil
		}
		return backend.TurnResult{}, a.describeErr("prompt", perr)
	}
	var resp struct {
		StopReason string          `json:"stopReason"`
		Usage      json.RawMessage `json:"usage"`
		Meta       struct {
			Quota json.RawMessage `json:"quota"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return backend.TurnResult{}, fmt.Errorf("prompt: the agent's answer cannot be read: %w", err)
	}
	res := backend.TurnResult{StopReason: backend.StopReason(resp.StopReason)}
	if res.StopReason == "" && cancelled {
		res.StopReason = backend.StopCancelled
	}
	u, err := DecodePromptUsage(resp.Usage)
	if err != nil {
		// The turn itself ended well: its figures are only left out.
		s.log.Warn().Err(err).Str("usage", clip(resp.Usage, 300)).Msg("the agent's token usage for the turn cannot be read; it is not reported")
	}
	if u == nil && err == nil {
		// Gemini CLI reports the turn's tokens only in _meta.quota.
		u = DecodeQuotaUsage(resp.Meta.Quota)
	}
	if u != nil {
		s.mu.Lock()
		if o, _ := s.findOptionLocked("model"); o != nil && u.Model == "" {
			u.Model = o.Current
		}
		s.mu.Unlock()
		res.Usage = u
	}
	return res, nil
}

// Cancel sends session/cancel, answers pending permission requests
// "cancelled", and arms the cancel grace timer.
func (s *session) Cancel(ctx context.Context) error {
	s.mu.Lock()
	t := s.turn
	if t == nil || t.cancelRequested {
		s.mu.Unlock()
		return nil
	}
	t.cancelRequested = true
	a, id := t.proc, t.acpID
	if a == nil {
		// The prompt has not been sent yet; Prompt sees the flag.
		s.mu.Unlock()
		return nil
	}
	t.timer = time.AfterFunc(s.p.cfg.CancelGrace, func() { s.cancelGraceExpired(t, a) })
	s.mu.Unlock()
	s.cancelPermissions()
	if err := a.conn.Cancel(ctx, sdk.CancelNotification{SessionId: sdk.SessionId(id)}); err != nil {
		return fmt.Errorf("sending cancel to the agent: %w", err)
	}
	return nil
}

// cancelGraceExpired ends a turn the agent did not end after cancel: the
// agent is killed (and restarted on next use) so Prompt returns.
func (s *session) cancelGraceExpired(t *turnState, a *agentProc) {
	s.mu.Lock()
	if t.ended {
		s.mu.Unlock()
		return
	}
	t.graceExpired = true
	s.suppress = a
	s.mu.Unlock()
	s.log.Warn().Dur("grace", s.p.cfg.CancelGrace).Msg("the agent did not end the cancelled turn in time; killing it, it restarts on next use")
	a.kill("did not end a cancelled turn in time")
}

// addPermission queues a PermissionRequest. It is called with the agent's
// routing lock held and must not block.
func (s *session) addPermission(a *agentProc, id json.RawMessage, tc backend.ToolCall, opts []backend.PermissionOption) {
	pp := &pendingPerm{id: id, proc: a}
	s.mu.Lock()
	refuse := s.closed || (s.turn != nil && s.turn.cancelRequested)
	if !refuse {
		s.perms[pp] = struct{}{}
	}
	s.mu.Unlock()
	if refuse {
		// The turn is being cancelled: ACP wants "cancelled" for requests.
		go s.answer(pp, backend.PermissionOutcome{Cancelled: true})
		return
	}
	s.queue.push(queueItem{event: backend.PermissionRequest{
		ToolCall: tc,
		Options:  opts,
		Respond:  func(o backend.PermissionOutcome) { s.answer(pp, o) },
	}})
}

// answer writes the response to a permission request, once.
func (s *session) answer(pp *pendingPerm, o backend.PermissionOutcome) {
	pp.once.Do(func() {
		s.mu.Lock()
		delete(s.perms, pp)
		s.mu.Unlock()
		pp.proc.writePermissionOutcome(pp.id, o.Cancelled || o.OptionID == "", o.OptionID)
	})
}

// cancelPermissions answers every pending permission request "cancelled".
func (s *session) cancelPermissions() {
	s.mu.Lock()
	pending := make([]*pendingPerm, 0, len(s.perms))
	for pp := range s.perms {
		pending = append(pending, pp)
	}
	s.mu.Unlock()
	for _, pp := range pending {
		s.answer(pp, backend.PermissionOutcome{Cancelled: true})
	}
}

// agentExited is called when a's process has ended.
func (s *session) agentExited(a *agentProc) {
	s.mu.Lock()
	if s.proc != a || s.closed {
		s.mu.Unlock()
		return
	}
	suppressed := s.suppress == a
	s.mu.Unlock()
	s.cancelPermissions()
	s.releaseTerminals()
	if !suppressed {
		s.queue.push(queueItem{event: backend.Disconnected{Err: a.exitError()}})
	}
}

// SetConfig changes a mode, model or other config option.
func (s *session) SetConfig(ctx context.Context, key, value string) error {
	a, id, err := s.agentSession(ctx)
	if err != nil {
		return err
	}
	return s.setConfigOn(ctx, a, id, key, value)
}

func (s *session) setConfigOn(ctx context.Context, a *agentProc, id, key, value string) error {
	s.mu.Lock()
	o, legacy := s.findOptionLocked(key)
	var optID string
	boolean, model := false, false
	if o != nil {
		optID = o.ID
		boolean = isBooleanOption(*o)
		model = o.Category == "model"
	}
	s.mu.Unlock()
	if o == nil {
		return fmt.Errorf("the agent has no setting %q", key)
	}
	if model {
		done, err := s.setModel(ctx, a, id, value)
		if done || err != nil {
			return err
		}
		if legacy {
			return fmt.Errorf("changing the model to %q: the agent does not know session/set_model and offers no model config option", value)
		}
	} else if legacy {
		if _, err := a.conn.SetSessionMode(ctx, sdk.SetSessionModeRequest{SessionId: sdk.SessionId(id), ModeId: sdk.SessionModeId(value)}); err != nil {
			return a.describeErr("setting the mode", err)
		}
		s.mu.Lock()
		if s.modes != nil {
			s.modes.Current = value
		}
		all := s.allOptionsLocked()
		s.mu.Unlock()
		s.queue.push(queueItem{event: backend.ConfigChanged{Options: all}})
		return nil
	}
	var req sdk.SetSessionConfigOptionRequest
	if boolean {
		if value != "true" && value != "false" {
			return fmt.Errorf("setting %q takes true or false, not %q", key, value)
		}
		req.Boolean = &sdk.SetSessionConfigOptionBoolean{ConfigId: sdk.SessionConfigId(optID), SessionId: sdk.SessionId(id), Type: "boolean", Value: value == "true"}
	} else {
		req.ValueId = &sdk.SetSessionConfigOptionValueId{ConfigId: sdk.SessionConfigId(optID), SessionId: sdk.SessionId(id), Value: sdk.SessionConfigValueId(value)}
	}
	// Raw, so that an empty list (every option removed) is told apart from
	// an answer without one.
	raw, err := a.call(ctx, sdk.AgentMethodSessionSetConfigOption, req)
	if err != nil {
		return a.describeErr(fmt.Sprintf("setting %q", key), err)
	}
	var resp struct {
		ConfigOptions json.RawMessage `json:"configOptions"`
	}
	var opts []backend.ConfigOption
	if err := json.Unmarshal(raw, &resp); err == nil && resp.ConfigOptions != nil {
		opts, err = DecodeConfigOptions(resp.ConfigOptions)
		if err != nil {
			s.log.Warn().Err(err).Msg("the agent's settings after a change cannot be read; only the changed one is updated")
			opts = nil
		}
	}
	s.mu.Lock()
	if opts != nil {
		// The answer's list is the agent's whole settings, as after a
		// config_option_update.
		s.options = opts
		s.noteCategoriesLocked()
	} else if cur, _ := s.findOptionLocked(key); cur != nil {
		cur.Current = value
	}
	all := s.allOptionsLocked()
	s.mu.Unlock()
	s.p.setModels(all)
	s.queue.push(queueItem{event: backend.ConfigChanged{Options: all}})
	return nil
}

// setModel changes the model with session/set_model, which claude-code-acp
// has instead of a model config option (and which the SDK does not know).
// done is false, with no error, when the agent does not have the method:
// the caller then tries session/set_config_option. An agent that answered
// "method not found" once is not asked again.
func (s *session) setModel(ctx context.Context, a *agentProc, id, value string) (done bool, err error) {
	if a.noSetModel.Load() {
		return false, nil
	}
	_, err = a.call(ctx, "session/set_model", map[string]string{"sessionId": id, "modelId": value})
	if isMethodNotFound(err) {
		a.noSetModel.Store(true)
		s.log.Debug().Msg("the agent has no session/set_model; models are changed as config options")
		return false, nil
	}
	if err != nil {
		return false, a.describeErr(fmt.Sprintf("changing the model to %q", value), err)
	}
	s.mu.Lock()
	if o, _ := s.findOptionLocked("model"); o != nil {
		o.Current = value
	}
	all := s.allOptionsLocked()
	s.mu.Unlock()
	s.p.setModels(all)
	s.queue.push(queueItem{event: backend.ConfigChanged{Options: all}})
	return true, nil
}

func isBooleanOption(o backend.ConfigOption) bool {
	return len(o.Values) == 2 && o.Values[0].ID == "true" && o.Values[1].ID == "false"
}

// Close answers pending requests, releases terminals, and closes the ACP
// session when the agent supports session/close.
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	a, id := s.proc, s.acpID
	s.mu.Unlock()
	s.cancelPermissions()
	s.releaseTerminals()
	var err error
	if a != nil && !a.isExited() && a.caps.SessionCapabilities.Close != nil {
		if _, cerr := a.conn.CloseSession(ctx, sdk.CloseSessionRequest{SessionId: sdk.SessionId(id)}); cerr != nil {
			err = a.describeErr("closing the agent session", cerr)
		}
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if a != nil {
		a.unregister(id, s)
	}
	s.queue.stop()
	s.p.forget(s)
	return err
}

// shutdown is Close without talking to the agent (the provider is closing);
// the queue is stopped by the provider.
func (s *session) shutdown() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	a, id := s.proc, s.acpID
	s.mu.Unlock()
	s.cancelPermissions()
	s.releaseTerminals()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if a != nil {
		a.unregister(id, s)
	}
}

// discard drops a session whose creation failed.
func (s *session) discard() {
	s.shutdown()
	s.queue.stop()
	s.p.forget(s)
}
