package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// memModels is a ModelStore in memory.
type memModels struct {
	mu   sync.Mutex
	data map[string]json.RawMessage
	puts int
}

func (m *memModels) PutProviderModels(ctx context.Context, provider string, models json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		m.data = map[string]json.RawMessage{}
	}
	m.data[provider] = append(json.RawMessage(nil), models...)
	m.puts++
	return nil
}

func (m *memModels) ProviderModels(ctx context.Context, provider string) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if raw, ok := m.data[provider]; ok {
		return raw, nil
	}
	return nil, store.ErrNotFound
}

func (m *memModels) get(provider string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return string(m.data[provider])
}

// probingProvider is a fakeProvider that allows the bridge to probe it.
type probingProvider struct{ fakeProvider }

func (p *probingProvider) Info() backend.ProviderInfo {
	info := p.fakeProvider.Info()
	info.ProbeModels = true
	return info
}

// modelBridge starts a bridge over p with the model store ms and returns
// its fake host.
func modelBridge(t *testing.T, p backend.Provider, ms ModelStore) (*Bridge, *fakeHost) {
	t.Helper()
	h := newFakeHost(t, &testClock{now: 1_700_000_000_000})
	n := 0
	var idMu sync.Mutex
	b := New([]backend.Provider{p}, Options{
		Approve: mapping.PolicyAsk,
		Logger:  zerolog.New(zerolog.NewTestWriter(t)),
		NewID:   func() string { idMu.Lock(); defer idMu.Unlock(); n++; return fmt.Sprintf("id%d", n) },
		Models:  ms,
	})
	b.Attach(h)
	require.NoError(t, b.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
		defer cancel()
		b.Close(ctx)
	})
	return b, h
}

func rootModels(h *fakeHost) []wire.SessionModelInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.root.Agents) == 0 {
		return nil
	}
	return h.root.Agents[0].Models
}

// The models an earlier run stored are in AgentInfo.models from the start,
// before any session; the provider is not started for them.
func TestStoredModelsArePublishedAtStart(t *testing.T) {
	ms := &memModels{data: map[string]json.RawMessage{
		"fake": json.RawMessage(`[{"id":"opus","provider":"fake","name":"Claude Opus"},{"id":"haiku","provider":"fake","name":"haiku"}]`),
	}}
	p := &probingProvider{fakeProvider{id: "fake"}}
	_, h := modelBridge(t, p, ms)
	assert.Equal(t, []wire.SessionModelInfo{
		{ID: "opus", Provider: "fake", Name: "Claude Opus"},
		{ID: "haiku", Provider: "fake", Name: "haiku"},
	}, rootModels(h))
	assert.Zero(t, p.opened(), "stored models need no probe")
	assert.Zero(t, ms.puts)
}

// What a session's agent reports is stored for the next start, and
// published at once (root/agentsChanged).
func TestSessionModelsAreStored(t *testing.T) {
	ms := &memModels{}
	p := &fakeProvider{id: "fake"}
	r := &rig{t: t, prov: p, clock: &testClock{now: 1_700_000_000_000}}
	r.b, r.host = modelBridge(t, p, ms)
	assert.Empty(t, rootModels(r.host), "nothing known and no probe allowed")
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))
	assert.Len(t, rootModels(r.host), 3)
	require.Eventually(t, func() bool { return ms.get("fake") != "" }, 5*time.Second, 10*time.Millisecond, "stored in the background")
	assert.JSONEq(t, `[{"id":"m1","provider":"fake","name":"m1"},{"id":"m2","provider":"fake","name":"m2"},{"id":"m3","provider":"fake","name":"m3"}]`, ms.get("fake"))

	// A restarted bridge publishes them before any session.
	_, h2 := modelBridge(t, &fakeProvider{id: "fake"}, ms)
	assert.Len(t, rootModels(h2), 3)
}

// A provider never run before, which allows a probe, is started once with
// a throwaway session in an empty directory of its own; its models are
// published and stored, and the session is closed.
func TestProbeLearnsTheModelsOfANewProvider(t *testing.T) {
	ms := &memModels{}
	p := &probingProvider{fakeProvider{id: "fake"}}
	_, h := modelBridge(t, p, ms)
	h.waitFor("the probe's models", func() bool { return len(h.root.Agents) == 1 && len(h.root.Agents[0].Models) == 3 })
	require.Equal(t, 1, p.opened())
	p.mu.Lock()
	s := p.sessions[0]
	p.mu.Unlock()
	assert.NotEmpty(t, s.opts.Cwd)
	require.Eventually(t, s.isClosed, 5*time.Second, 10*time.Millisecond, "the throwaway session is closed")
	require.Eventually(t, func() bool { _, err := os.Stat(s.opts.Cwd); return os.IsNotExist(err) }, 5*time.Second, 10*time.Millisecond,
		"its directory is removed")
	require.Eventually(t, func() bool { return ms.get("fake") != "" }, 5*time.Second, 10*time.Millisecond)
}

// A probe that fails (the agent wants a sign-in first) blocks nothing and
// leaves the catalogue as it was.
func TestFailedProbeBlocksNothing(t *testing.T) {
	p := &probingProvider{fakeProvider{id: "fake", openErr: fmt.Errorf("authentication required")}}
	b, h := modelBridge(t, p, &memModels{})
	assert.Empty(t, rootModels(h))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.Close(ctx) // the probe's goroutine has ended
	assert.Empty(t, rootModels(h))
}

// effortProvider's sessions also report an "effort" setting.
type effortProvider struct{ fakeProvider }

func (p *effortProvider) OpenSession(ctx context.Context, opts backend.SessionOptions, sink backend.Sink) (backend.Session, error) {
	s, err := p.fakeProvider.OpenSession(ctx, opts, sink)
	if err != nil {
		return nil, err
	}
	cfg := s.(*fakeSession).config()
	cfg.Options = append(cfg.Options, backend.ConfigOption{ID: "effort", Name: "Effort", Current: "low", Values: []backend.ConfigValue{{ID: "low"}, {ID: "high"}}})
	sink.Event(cfg)
	return s, nil
}

// A VS Code turn: the client's turnId is the turn's id everywhere, and the
// model configuration its message carries is asked of the agent before the
// prompt (the fake agent refuses it: the turn says so and runs on).
func TestTurnKeepsTheClientsTurnIDAndModelConfig(t *testing.T) {
	p := &effortProvider{fakeProvider{id: "fake"}}
	r := newRigOver(t, mapping.PolicyAsk, p)
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))
	const turnID = "vscode-request-7f3a"
	msg := wire.Message{Text: "hi", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser},
		Model: &wire.ModelSelection{ID: "m1", Config: map[string]wire.JsonPrimitive{"effort": "high", "contextTier": "1m"}}}
	r.host.client(r.b, chat1, wire.Action(&wire.ChatTurnStartedAction{TurnID: turnID, StartedAt: "2026-11-28T15:00:00.000Z", Message: msg}))
	turn := r.host.turn(chat1, turnID)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, []string{"set effort=high", "prompt hi"}, p.session(chat1).callLog(), "the setting before the prompt; keys the agent lacks left out")
	parts, err := json.Marshal(turn.ResponseParts)
	require.NoError(t, err)
	assert.Contains(t, string(parts), "effort", "the refusal is said in the turn")
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	require.Len(t, r.host.chats[chat1].Turns, 1)
	assert.Equal(t, turnID, r.host.chats[chat1].Turns[0].ID)
}
