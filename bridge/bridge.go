// Package bridge joins the AHP host to the agents behind it.
//
// It implements host.Handler. Each AHP chat is one backend session (an ACP
// session of the provider's agent process, or an agent-channel connection)
// working in the AHP session's working directory with the session's
// settings: createSession opens the default chat's backend session,
// createChat another of the same provider. The host hands the bridge
// accepted client actions (turnStarted, turnCancelled, toolCallConfirmed,
// inputCompleted on a chat; configChanged on the session) and the bridge
// drives the backend sessions accordingly. Events from the agents are
// translated into AHP actions by package mapping and submitted through the
// host's sequencer — a turn's to its chat, the session's (title, settings,
// _meta, ready or failed) to the session — so client and server actions
// share one order. The bridge also arbitrates permission requests (the
// --approve policy, first confirmation wins) and mirrors agent terminals
// into AHP terminal channels.
package bridge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// Host is what the bridge needs from the AHP host (*host.Host).
type Host interface {
	Dispatch(channel string, a wire.StateAction) (int64, error)
	ReadSession(channel string, fn func(*wire.SessionState)) bool
	ReadChat(channel string, fn func(*wire.ChatState)) bool
	CreateTerminal(channel string, st wire.TerminalState) error
	RemoveTerminal(channel string)
	Progress(session, message string)
	// SetAgentSessionID records the agent's id of a chat's conversation,
	// which a restored chat continues (restore.go).
	SetAgentSessionID(chat, id string) error
}

// Options configure a Bridge.
type Options struct {
	// Approve is the permission policy: PolicyAsk (the zero value)
	// forwards every request to AHP clients; the others answer without
	// asking.
	Approve mapping.Policy
	Logger  zerolog.Logger
	// NewID makes identifiers for response parts and input requests; random
	// UUIDs by default.
	NewID func() string
	// Clock returns the current time in Unix milliseconds; turn durations
	// are measured with it. The wall clock by default.
	Clock func() int64
	// Models remembers the models each provider offered across restarts
	// (the state store), so that AgentInfo.models is not empty before a
	// provider's first session; nil keeps them for this run only
	// (models.go).
	Models ModelStore
	// ListRefresh is how often at most an agent's own sessions are listed
	// again (external.go); 3 s by default.
	ListRefresh time.Duration
}

// Bridge is the host.Handler of ahp-bridge.
type Bridge struct {
	opts      Options
	log       zerolog.Logger
	host      Host
	providers map[string]backend.Provider // guarded by mu: SetProviders changes it
	order     []string                    // guarded by mu
	retired   []backend.Provider          // replaced, still serving sessions; guarded by mu
	ops       opsCounters

	// ctx is cancelled by Close; it bounds every goroutine the bridge starts.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	ext externals // the agents' own sessions (external.go)

	// storeMu orders the writes of providers' models (models.go).
	storeMu sync.Mutex

	mu       sync.Mutex
	sessions map[string]*session // by session URI
	chats    map[string]*chat    // by chat URI, of every session
	models   map[string][]backend.ModelInfo
	options  map[string][]backend.ConfigOption // the settings each provider's agent last reported
	closed   bool

	// mcpEnablement is what users chose for each provider's configured MCP
	// servers, by customization id, for the provider's next sessions (mcp.go).
	mcpEnablement map[string]map[string][]wire.CustomizationEnablement
	// authSeen is each provider's sign-in state as last published, and
	// awaiting the default chats waiting for a sign-in (auth.go).
	authSeen map[string]string
	awaiting map[string][]awaitingChat
}

// New returns a Bridge over the given providers. Attach a Host before Start.
func New(providers []backend.Provider, opts Options) *Bridge {
	if opts.NewID == nil {
		opts.NewID = NewUUID
	}
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMilli() }
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bridge{
		opts:      opts,
		log:       opts.Logger,
		providers: map[string]backend.Provider{},
		ctx:       ctx,
		cancel:    cancel,
		sessions:  map[string]*session{},
		chats:     map[string]*chat{},
		models:    map[string][]backend.ModelInfo{},
		options:   map[string][]backend.ConfigOption{},

		mcpEnablement: map[string]map[string][]wire.CustomizationEnablement{},
		authSeen:      map[string]string{},
		awaiting:      map[string][]awaitingChat{},
	}
	for _, p := range providers {
		id := p.Info().ID
		b.providers[id] = p
		b.order = append(b.order, id)
	}
	return b
}

// Attach sets the host the bridge dispatches to.
func (b *Bridge) Attach(h Host) { b.host = h }

// Start publishes the providers in the root state.
func (b *Bridge) Start(ctx context.Context) error {
	if b.host == nil {
		return fmt.Errorf("bridge: Start called before Attach")
	}
	b.mu.Lock()
	ids := append([]string(nil), b.order...)
	b.mu.Unlock()
	b.seedModels(ids) // models.go
	b.listAtStart()   // external.go
	return b.publishAgents()
}

func (b *Bridge) publishAgents() error {
	b.mu.Lock()
	agents := make([]wire.AgentInfo, 0, len(b.order))
	for _, id := range b.order {
		info := b.providers[id].Info()
		models := info.Models
		if m := b.models[id]; len(m) > 0 {
			models = m
		}
		ai := wire.AgentInfo{
			Provider:    id,
			DisplayName: firstNonEmpty(info.DisplayName, id),
			Description: info.Description,
			// Every chat is a backend session of its own, so a session can
			// have several; none starts from another chat's history (ACP
			// has no way to seed a session with a transcript) but a fork
			// where the agent can (external.go).
			Capabilities: agentCapabilities(b.providers[id]),
			// Its sign-in methods (auth.go).
			ProtectedResources: protectedResources(id, info.Auth),
		}
		b.authSeen[id] = authKey(info.Auth) + capsKey(b.providers[id])
		ai.Models = modelInfos(id, models)
		agents = append(agents, ai)
	}
	b.mu.Unlock()
	_, err := b.host.Dispatch(rootChannel, wire.Action(&wire.RootAgentsChangedAction{Agents: agents}))
	if err != nil {
		return fmt.Errorf("publishing the agent list: %w", err)
	}
	return nil
}

// learnModels records the settings an agent reported for a provider and
// republishes the root agent list when its models changed. Only a backend
// session's first report (opening) sets the current values new sessions
// start from; a later one (a client's choice in that session) keeps the
// values already learned for the settings it repeats.
func (b *Bridge) learnModels(provider string, opts []backend.ConfigOption, opening bool) {
	b.mu.Lock()
	if !opening {
		opts = keepCurrent(opts, b.options[provider])
	}
	b.options[provider] = opts
	b.mu.Unlock()
	var models []backend.ModelInfo
	for _, o := range opts {
		if o.Category != "model" {
			continue
		}
		for _, v := range o.Values {
			models = append(models, backend.ModelInfo{ID: v.ID, Name: v.Name})
		}
	}
	if len(models) == 0 {
		return
	}
	b.mu.Lock()
	same := sameModels(b.models[provider], models)
	b.models[provider] = models
	b.mu.Unlock()
	if !same {
		b.storeModels(provider) // models.go, in the background
		if err := b.publishAgents(); err != nil {
			b.log.Warn().Err(err).Msg("could not republish agents")
		}
	}
}

// keepCurrent returns opts with the current value of every setting that
// known also has taken from known.
func keepCurrent(opts, known []backend.ConfigOption) []backend.ConfigOption {
	out := make([]backend.ConfigOption, len(opts))
	copy(out, opts)
	for i := range out {
		for _, k := range known {
			if k.ID == out[i].ID {
				out[i].Current = k.Current
				break
			}
		}
	}
	return out
}

func sameModels(a, b []backend.ModelInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

const rootChannel = "ahp-root://"

// ResolveSessionConfig implements host.ConfigResolver: the settings the
// provider's agent reported for its sessions, with the values it opened the
// last one with, so that new sessions start with a schema clients can
// change. An agent not yet started has none.
func (b *Bridge) ResolveSessionConfig(ctx context.Context, provider string) wire.SessionConfigState {
	b.mu.Lock()
	opts := b.options[provider]
	b.mu.Unlock()
	return mapping.SessionConfig(opts)
}

// CreateSession implements host.Handler: the default chat's backend session
// is opened in the background, with the model of the chat's first draft
// (what an AHP 0.3.0 client chose at createSession) and then the settings
// the client asked for; the outcome is dispatched on the session as
// session/ready or session/creationFailed.
func (b *Bridge) CreateSession(ctx context.Context, uri, defaultChat string, params wire.CreateSessionParams) {
	providerID := ""
	if params.Provider != nil {
		providerID = *params.Provider
	}
	p, providerID, order := b.provider(providerID)
	if p == nil {
		b.dispatch(uri, &wire.SessionCreationFailedAction{Error: wire.ErrorInfo{
			ErrorType: "unknownProvider",
			Message:   fmt.Sprintf("no agent provider %q is configured (have: %s)", providerID, strings.Join(order, ", ")),
		}})
		return
	}
	cwd, err := mapping.WorkingDirectory(params.WorkingDirectories, nil)
	if err != nil {
		b.dispatch(uri, &wire.SessionCreationFailedAction{Error: wire.ErrorInfo{ErrorType: "invalidWorkingDirectory", Message: err.Error()}})
		return
	}
	model := ""
	b.host.ReadChat(defaultChat, func(st *wire.ChatState) { model = mapping.TurnModel(wire.Message{}, st.Draft) })

	s := newSession(b, uri, providerID, p, params.WorkingDirectories)
	s.mcp = b.buildMcp(providerID, p.Info(), params.ActiveClient) // mcp.go
	c := newChat(s, defaultChat, cwd, true)
	c.model = model
	if !b.add(s, c) {
		return
	}
	s.publishMcp()        // mcp.go
	s.startChanges(c.cwd) // changes.go
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		c.open(b.ctx, settingsOf(params.Config))
	}()
}

// CreateChat implements host.Handler: the chat gets a backend session of
// its own, of its session's provider, in the chat's working directory (the
// session's unless the chat names one of them) and with the session's
// current settings. Its first turn waits until that session is open.
func (b *Bridge) CreateChat(ctx context.Context, sessionURI, chatURI string, params wire.CreateChatParams) {
	s := b.session(sessionURI)
	if s == nil {
		return
	}
	cwd, cwdErr := mapping.WorkingDirectory(s.dirs, params.WorkingDirectories)
	var settings []setting
	b.host.ReadSession(sessionURI, func(st *wire.SessionState) {
		if st.Config != nil {
			settings = settingsOf(st.Config.Values)
		}
	})
	c := newChat(s, chatURI, cwd, false)
	b.noteFork(chatURI, params) // external.go
	if !b.add(s, c) {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if cwdErr != nil {
			c.fail(cwdErr)
			return
		}
		c.open(b.ctx, settings)
	}()
}

// add registers a session's chat (and the session with its first chat). It
// reports false once the bridge is closed.
func (b *Bridge) add(s *session, c *chat) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.sessions[s.uri] = s
	s.chats[c.uri] = c
	b.chats[c.uri] = c
	return true
}

// DisposeSession implements host.Handler: every chat's backend session is
// closed (a running turn is cancelled first).
func (b *Bridge) DisposeSession(ctx context.Context, uri string) {
	b.mu.Lock()
	s := b.sessions[uri]
	delete(b.sessions, uri)
	var chats []*chat
	if s != nil {
		for _, c := range s.chats {
			chats = append(chats, c)
			delete(b.chats, c.uri)
		}
	}
	b.mu.Unlock()
	for _, c := range chats {
		c.dispose(ctx)
	}
	if s != nil {
		s.stopChanges()     // changes.go
		b.forgetAwaiting(s) // auth.go
	}
	b.closeIdleRetired(ctx)
}

// DisposeChat implements host.Handler: the chat's backend session is
// closed.
func (b *Bridge) DisposeChat(ctx context.Context, sessionURI, chatURI string) {
	b.mu.Lock()
	c := b.chats[chatURI]
	delete(b.chats, chatURI)
	if s := b.sessions[sessionURI]; s != nil {
		delete(s.chats, chatURI)
	}
	b.mu.Unlock()
	if c != nil {
		c.dispose(ctx)
	}
}

// ClientAction implements host.Handler.
func (b *Bridge) ClientAction(ctx context.Context, channel string, action wire.StateAction, origin wire.ActionOrigin) {
	if a, ok := action.Value.(*wire.SessionConfigChangedAction); ok {
		// A session setting holds for every chat of the session.
		for _, c := range b.chatsOf(channel) {
			for _, st := range settingsOf(a.Config) {
				c.setConfig(st.key, st.value)
			}
		}
		return
	}
	if a, ok := action.Value.(*wire.SessionCustomizationToggledAction); ok {
		if s := b.session(channel); s != nil {
			s.mcpToggled(a) // mcp.go
		}
		return
	}
	c := b.chat(channel)
	if c == nil {
		return
	}
	switch a := action.Value.(type) {
	case *wire.ChatTurnStartedAction:
		c.startTurn(a)
	case *wire.ChatTurnCancelledAction:
		c.cancelTurn(ctx, a.TurnID)
	case *wire.ChatToolCallApprovedAction:
		c.confirmTool(a.ToolCallID, action)
	case *wire.ChatToolCallDeniedAction:
		c.confirmTool(a.ToolCallID, action)
	case *wire.ChatInputCompletedAction:
		c.completeInput(a)
	case *wire.ChatPendingMessageSetAction:
		if a.Kind == wire.PendingMessageKindSteering {
			c.log.Debug().Msg("steering message stored; it is queued as the next turn when the current one ends")
		}
	}
}

// Completions implements host.Handler: the agent's slash commands.
func (b *Bridge) Completions(ctx context.Context, params wire.CompletionsParams) (wire.CompletionsResult, error) {
	res := wire.CompletionsResult{Items: []wire.CompletionItem{}}
	c := b.chat(params.Channel)
	if c == nil {
		return res, nil
	}
	res.Items = c.completions(params)
	return res, nil
}

// ResourceRead implements host.Handler: the old and new text of file edits
// shown in tool call results, and content the agents sent.
func (b *Bridge) ResourceRead(ctx context.Context, params wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	b.mu.Lock()
	chats := make([]*chat, 0, len(b.chats))
	for _, c := range b.chats {
		chats = append(chats, c)
	}
	sessions := make([]*session, 0, len(b.sessions))
	for _, s := range b.sessions {
		sessions = append(sessions, s)
	}
	b.mu.Unlock()
	for _, s := range sessions {
		if r, ok := s.changesResource(params.URI); ok { // changes.go
			var want wire.ContentEncoding
			if params.Encoding != nil {
				want = *params.Encoding
			}
			return r.ReadResult(want), nil
		}
	}
	for _, c := range chats {
		if r, ok := c.resource(params.URI); ok {
			var want wire.ContentEncoding
			if params.Encoding != nil {
				want = *params.Encoding
			}
			return r.ReadResult(want), nil
		}
	}
	return wire.ResourceReadResult{}, notFoundError{uri: params.URI}
}

// ErrNotFound is returned for resources the bridge does not serve.
var ErrNotFound = errors.New("resource not found")

// notFoundError is ResourceRead's error for a URI the bridge does not
// serve: it is ErrNotFound, and the host answers it with AHP's NotFound
// code rather than as an internal error.
type notFoundError struct{ uri string }

func (e notFoundError) Error() string { return ErrNotFound.Error() + ": " + e.uri }

func (e notFoundError) Is(target error) bool { return target == ErrNotFound }

func (e notFoundError) As(target any) bool {
	p, ok := target.(**host.Error)
	if ok {
		*p = host.Errorf(host.CodeNotFound, "%s", e.Error())
	}
	return ok
}

// Close ends every running turn as cancelled, closes the backend sessions
// and the providers (which stop their agent processes), and waits for the
// bridge's goroutines.
func (b *Bridge) Close(ctx context.Context) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	chats := make([]*chat, 0, len(b.chats))
	for _, c := range b.chats {
		chats = append(chats, c)
	}
	b.mu.Unlock()

	for _, c := range chats {
		c.shutdown(ctx)
	}
	b.cancel()
	for _, id := range b.order {
		if err := b.providers[id].Close(ctx); err != nil {
			b.log.Warn().Err(err).Str("provider", id).Msg("closing provider")
		}
	}
	b.closeRetired(ctx)
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		b.log.Warn().Msg("bridge goroutines still running at shutdown deadline")
	}
}

func (b *Bridge) session(uri string) *session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessions[uri]
}

func (b *Bridge) chat(uri string) *chat {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.chats[uri]
}

// chatsOf returns the chats of a session, in URI order.
func (b *Bridge) chatsOf(sessionURI string) []*chat {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[sessionURI]
	if s == nil {
		return nil
	}
	out := make([]*chat, 0, len(s.chats))
	for _, c := range s.chats {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].uri < out[j].uri })
	return out
}

// dispatch submits a server action, logging (not failing) when the host
// refuses it: the host only refuses actions for channels that are gone.
func (b *Bridge) dispatch(channel string, v any) {
	if _, err := b.host.Dispatch(channel, wire.Action(v)); err != nil {
		b.log.Debug().Err(err).Str("channel", channel).Msg("dispatch refused")
	}
}

// setting is one session setting as a backend takes it.
type setting struct{ key, value string }

// settingsOf turns AHP config values into backend settings, in key order
// (AHP values are JSON primitives; backends take strings).
func settingsOf(values map[string]any) []setting {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]setting, 0, len(keys))
	for _, k := range keys {
		if values[k] == nil {
			continue
		}
		out = append(out, setting{k, fmt.Sprint(values[k])})
	}
	return out
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// NewUUID returns a random RFC 4122 version 4 UUID.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
