// Package bridge joins the AHP host to the agents behind it.
//
// It implements host.Backend: the host hands it accepted client actions
// (turnStarted, turnCancelled, toolCallConfirmed, inputCompleted,
// modelChanged, …) and it drives backend sessions (ACP agents, agent-channel
// backends) accordingly. Events from the agents are translated into AHP
// actions by package mapping and submitted through the host's sequencer, so
// client and server actions share one order. The bridge also arbitrates
// permission requests (the --approve policy, first confirmation wins) and
// mirrors agent terminals into AHP terminal channels.
package bridge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// Host is what the bridge needs from the AHP host.
type Host interface {
	Dispatch(channel string, a wire.StateAction) (int64, error)
	ReadSession(channel string, fn func(*wire.SessionState)) bool
	CreateTerminal(channel string, st wire.TerminalState) error
	RemoveTerminal(channel string)
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
}

// Bridge is the host.Backend of ahp-bridge.
type Bridge struct {
	opts      Options
	log       zerolog.Logger
	host      Host
	providers map[string]backend.Provider
	order     []string

	// ctx is cancelled by Close; it bounds every goroutine the bridge starts.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session // by channel URI
	models   map[string][]backend.ModelInfo
	options  map[string][]backend.ConfigOption // the settings each provider's agent last reported
	closed   bool
}

// New returns a Bridge over the given providers. Attach a Host before Start.
func New(providers []backend.Provider, opts Options) *Bridge {
	if opts.NewID == nil {
		opts.NewID = NewUUID
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bridge{
		opts:      opts,
		log:       opts.Logger,
		providers: map[string]backend.Provider{},
		ctx:       ctx,
		cancel:    cancel,
		sessions:  map[string]*session{},
		models:    map[string][]backend.ModelInfo{},
		options:   map[string][]backend.ConfigOption{},
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
			Models:      []wire.SessionModelInfo{},
		}
		for _, m := range models {
			ai.Models = append(ai.Models, wire.SessionModelInfo{ID: m.ID, Provider: id, Name: firstNonEmpty(m.Name, m.ID)})
		}
		agents = append(agents, ai)
	}
	b.mu.Unlock()
	_, err := b.host.Dispatch(rootChannel, wire.Action(wire.RootAgentsChangedAction{Agents: agents}))
	if err != nil {
		return fmt.Errorf("publishing the agent list: %w", err)
	}
	return nil
}

// learnModels records the settings an agent reported for a provider and
// republishes the root agent list when its models changed.
func (b *Bridge) learnModels(provider string, opts []backend.ConfigOption) {
	b.mu.Lock()
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
		if err := b.publishAgents(); err != nil {
			b.log.Warn().Err(err).Msg("could not republish agents")
		}
	}
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
// provider's agent reported for its last session, so that new sessions
// start with a schema clients can change. An agent not yet started has
// none.
func (b *Bridge) ResolveSessionConfig(ctx context.Context, provider string) wire.SessionConfigState {
	b.mu.Lock()
	opts := b.options[provider]
	b.mu.Unlock()
	return mapping.SessionConfig(opts)
}

// CreateSession implements host.Backend: the backend session is opened in
// the background and the outcome dispatched as session/ready or
// session/creationFailed.
func (b *Bridge) CreateSession(ctx context.Context, channel string, params wire.CreateSessionParams) {
	providerID := ""
	if params.Provider != nil {
		providerID = *params.Provider
	}
	if providerID == "" && len(b.order) > 0 {
		providerID = b.order[0]
	}
	p, ok := b.providers[providerID]
	if !ok {
		b.dispatch(channel, wire.SessionCreationFailedAction{Error: wire.ErrorInfo{
			ErrorType: "unknownProvider",
			Message:   fmt.Sprintf("no agent provider %q is configured (have: %s)", providerID, strings.Join(b.order, ", ")),
		}})
		return
	}
	cwd, err := workingDirectory(params.WorkingDirectory)
	if err != nil {
		b.dispatch(channel, wire.SessionCreationFailedAction{Error: wire.ErrorInfo{ErrorType: "invalidWorkingDirectory", Message: err.Error()}})
		return
	}
	s := newSession(b, channel, providerID, cwd)
	if params.Model != nil {
		s.model = params.Model.ID
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.sessions[channel] = s
	b.mu.Unlock()

	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		s.open(b.ctx, p)
	}()
}

// DisposeSession implements host.Backend.
func (b *Bridge) DisposeSession(ctx context.Context, channel string) {
	b.mu.Lock()
	s := b.sessions[channel]
	delete(b.sessions, channel)
	b.mu.Unlock()
	if s != nil {
		s.dispose(ctx)
	}
}

// ClientAction implements host.Backend.
func (b *Bridge) ClientAction(ctx context.Context, channel string, action wire.StateAction, origin wire.ActionOrigin) {
	s := b.session(channel)
	if s == nil {
		return
	}
	switch a := action.Value.(type) {
	case *wire.SessionTurnStartedAction:
		s.startTurn(a)
	case *wire.SessionTurnCancelledAction:
		s.cancelTurn(ctx, a.TurnID)
	case *wire.SessionToolCallApprovedAction:
		s.confirmTool(a.ToolCallID, action)
	case *wire.SessionToolCallDeniedAction:
		s.confirmTool(a.ToolCallID, action)
	case *wire.SessionInputCompletedAction:
		s.completeInput(a)
	case *wire.SessionModelChangedAction:
		s.setConfig("model", a.Model.ID)
	case *wire.SessionConfigChangedAction:
		keys := make([]string, 0, len(a.Config))
		for k := range a.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s.setConfig(k, fmt.Sprint(a.Config[k]))
		}
	case *wire.SessionPendingMessageSetAction:
		if a.Kind == wire.PendingMessageKindSteering {
			s.log.Debug().Msg("steering message stored; it is sent as the next turn when the current one ends")
		}
	}
}

// Completions implements host.Backend: the agent's slash commands.
func (b *Bridge) Completions(ctx context.Context, params wire.CompletionsParams) (wire.CompletionsResult, error) {
	res := wire.CompletionsResult{Items: []wire.CompletionItem{}}
	s := b.session(params.Channel)
	if s == nil {
		return res, nil
	}
	res.Items = s.completions(params)
	return res, nil
}

// ResourceRead implements host.Backend: the old and new text of file edits
// shown in tool call results.
func (b *Bridge) ResourceRead(ctx context.Context, params wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	b.mu.Lock()
	sessions := make([]*session, 0, len(b.sessions))
	for _, s := range b.sessions {
		sessions = append(sessions, s)
	}
	b.mu.Unlock()
	for _, s := range sessions {
		if r, ok := s.resource(params.URI); ok {
			var want wire.ContentEncoding
			if params.Encoding != nil {
				want = *params.Encoding
			}
			return r.ReadResult(want), nil
		}
	}
	return wire.ResourceReadResult{}, fmt.Errorf("%w: %s", ErrNotFound, params.URI)
}

// ErrNotFound is returned for resources the bridge does not serve.
var ErrNotFound = errors.New("resource not found")

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
	sessions := make([]*session, 0, len(b.sessions))
	for _, s := range b.sessions {
		sessions = append(sessions, s)
	}
	b.mu.Unlock()

	for _, s := range sessions {
		s.shutdown(ctx)
	}
	b.cancel()
	for _, id := range b.order {
		if err := b.providers[id].Close(ctx); err != nil {
			b.log.Warn().Err(err).Str("provider", id).Msg("closing provider")
		}
	}
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		b.log.Warn().Msg("bridge goroutines still running at shutdown deadline")
	}
}

func (b *Bridge) session(channel string) *session {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessions[channel]
}

// dispatch submits a server action, logging (not failing) when the host
// refuses it: the host only refuses actions for channels that are gone.
func (b *Bridge) dispatch(channel string, v any) {
	if _, err := b.host.Dispatch(channel, wire.Action(v)); err != nil {
		b.log.Debug().Err(err).Str("channel", channel).Msg("dispatch refused")
	}
}

// workingDirectory turns createSession's workingDirectory (a file URI or a
// plain path) into a local directory path.
func workingDirectory(uri *string) (string, error) {
	if uri == nil || *uri == "" {
		return "", nil
	}
	s := *uri
	if strings.HasPrefix(s, "file:") {
		u, err := url.Parse(s)
		if err != nil {
			return "", fmt.Errorf("workingDirectory %q is not a valid file URI: %w", s, err)
		}
		s = u.Path
	}
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("workingDirectory %q must be an absolute path or file URI", *uri)
	}
	return s, nil
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
