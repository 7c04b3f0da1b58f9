package bridge

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// closingProvider is a fakeProvider that remembers being closed.
type closingProvider struct {
	*fakeProvider
	mu     sync.Mutex
	closed bool
}

func (p *closingProvider) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

func (p *closingProvider) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (r *rig) agentIDs() []string {
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	var ids []string
	for _, a := range r.host.root.Agents {
		ids = append(ids, a.Provider)
	}
	return ids
}

// TestSetProvidersKeepsSessionsOnTheirAgent: a reload that replaces a
// provider and adds another republishes the agents; the running session
// keeps the provider it started on until it is disposed, which closes
// that provider; new sessions get the new one.
func TestSetProvidersKeepsSessionsOnTheirAgent(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	old := &closingProvider{fakeProvider: &fakeProvider{id: "fake"}}
	require.NoError(t, r.b.SetProviders(t.Context(), []backend.Provider{old}))
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	require.NotNil(t, old.session(chat1))

	replacement := &closingProvider{fakeProvider: &fakeProvider{id: "fake"}}
	added := &closingProvider{fakeProvider: &fakeProvider{id: "other"}}
	require.NoError(t, r.b.SetProviders(t.Context(), []backend.Provider{added, replacement}))
	assert.Equal(t, []string{"other", "fake"}, r.agentIDs(), "the root agents are republished in the new order")
	assert.False(t, old.isClosed(), "a replaced provider with a running session stays open")

	r.host.startTurn(r.b, chat1, "t1", "hello", "")
	r.host.turn(chat1, "t1")
	assert.Contains(t, old.session(chat1).callLog(), "prompt hello", "the running session's turn went to the agent it started on")

	const sess2, chat3 = "ahp-session:/s2", "ahp-chat:/s2"
	r.createSession(sess2, chat3, wire.CreateSessionParams{Provider: wire.Ptr("fake")}, nil)
	assert.NotNil(t, replacement.session(chat3), "a new session gets the replacement")
	assert.Nil(t, old.session(chat3))

	ps := r.b.Providers()
	require.Len(t, ps, 3)
	assert.Equal(t, []string{"other", "fake", "fake"}, []string{ps[0].ID, ps[1].ID, ps[2].ID})
	assert.True(t, ps[2].Retired)
	assert.Equal(t, 1, ps[2].Sessions)

	r.b.DisposeSession(t.Context(), sess1)
	assert.True(t, old.isClosed(), "the retired provider is closed with its last session")
	assert.False(t, replacement.isClosed())
	assert.Len(t, r.b.Providers(), 2)
}

// TestSetProvidersClosesAnIdleRemovedProviderAtOnce, and the original
// fake provider (no sessions) goes the same way.
func TestSetProvidersClosesAnIdleRemovedProviderAtOnce(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	a := &closingProvider{fakeProvider: &fakeProvider{id: "a"}}
	b := &closingProvider{fakeProvider: &fakeProvider{id: "b"}}
	require.NoError(t, r.b.SetProviders(t.Context(), []backend.Provider{a, b}))
	require.NoError(t, r.b.SetProviders(t.Context(), []backend.Provider{b}))
	assert.True(t, a.isClosed())
	assert.False(t, b.isClosed())
	assert.Equal(t, []string{"b"}, r.agentIDs())
	assert.Error(t, r.b.SetProviders(t.Context(), []backend.Provider{a, a}), "an id given twice")
}

// TestRetiredProvidersCloseWithTheBridge: a provider retired while a
// session runs on it is closed when the bridge closes.
func TestRetiredProvidersCloseWithTheBridge(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	old := &closingProvider{fakeProvider: &fakeProvider{id: "fake"}}
	require.NoError(t, r.b.SetProviders(t.Context(), []backend.Provider{old}))
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	require.NoError(t, r.b.SetProviders(t.Context(), []backend.Provider{&fakeProvider{id: "fake"}}))
	require.False(t, old.isClosed())
	r.b.Close(t.Context())
	assert.True(t, old.isClosed())
	assert.Error(t, r.b.SetProviders(t.Context(), nil), "no changes after Close")
}

// TestStatsCountTurnsAndPermissions: turns by provider and outcome, and
// permission requests by how they were answered.
func TestStatsCountTurnsAndPermissions(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)

	r.host.startTurn(r.b, chat1, "t1", "hello", "")
	r.host.turn(chat1, "t1")

	r.host.startTurn(r.b, chat1, "t2", "ask", "")
	turnID, toolID := r.pendingTool(chat1)
	r.host.client(r.b, chat1, wire.Action(&wire.ChatToolCallApprovedAction{
		TurnID: turnID, ToolCallID: toolID, Approved: true, Confirmed: wire.ToolCallConfirmationReasonUserAction, SelectedOptionID: wire.Ptr("allow"),
	}))
	r.host.turn(chat1, "t2")

	r.host.startTurn(r.b, chat1, "t3", "ask", "")
	r.pendingTool(chat1)
	r.host.client(r.b, chat1, wire.Action(&wire.ChatTurnCancelledAction{TurnID: "t3", Duration: 5}))
	r.host.turn(chat1, "t3")

	// The cancelled turn's end is counted when the agent's Prompt returns,
	// after the AHP turn ended; the next turn reaches the agent only then.
	r.host.startTurn(r.b, chat1, "t4", "hello", "")
	r.host.turn(chat1, "t4")

	st := r.b.Stats()
	assert.Equal(t, TurnCounts{Started: 4, Completed: 3, Cancelled: 1}, st.Turns["fake"])
	assert.Equal(t, PermissionCounts{Approved: 1, Cancelled: 1}, st.Permissions)
}

// TestStatsCountPolicyAnswers: --approve answers count as auto.
func TestStatsCountPolicyAnswers(t *testing.T) {
	r := newRig(t, mapping.PolicyAll)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	r.host.startTurn(r.b, chat1, "t1", "ask", "")
	r.host.turn(chat1, "t1")
	assert.Equal(t, PermissionCounts{Auto: 1}, r.b.Stats().Permissions)
	assert.Equal(t, TurnCounts{Started: 1, Completed: 1}, r.b.Stats().Turns["fake"])
}
