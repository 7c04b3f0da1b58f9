package bridge

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// restoreReady adds a ready session as the host restores it and hands it
// to the bridge.
func (r *rig) restoreReady(rs host.RestoredSession) {
	r.host.addSession(rs.Session, rs.Chats[0].Chat, wire.SessionConfigState{}, nil)
	r.host.mu.Lock()
	r.host.sessions[rs.Session].Lifecycle = wire.SessionLifecycleReady
	r.host.mu.Unlock()
	r.b.RestoreSession(r.t.Context(), rs)
}

// TestRestoredChatOpensOnItsNextTurn: a restored chat opens no backend
// session until its next turn, which asks the backend to continue the
// recorded conversation; the id the backend reports is recorded, and a
// fresh conversation puts a notice in the turn.
func TestRestoredChatOpensOnItsNextTurn(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.restoreReady(host.RestoredSession{Session: sess1, Provider: "fake",
		Chats: []host.RestoredChat{{Chat: chat1, Default: true, AgentSessionID: "agent-7"}}})
	assert.Zero(t, r.prov.opened(), "nothing is opened at restore")

	r.host.startTurn(r.b, chat1, "t1", "wait", "")
	r.host.waitFor("a backend session", func() bool { return r.prov.opened() == 1 })
	be := r.prov.session(chat1)
	r.host.waitFor("the prompt", func() bool { return slices.Contains(be.callLog(), "prompt wait") })
	assert.Equal(t, "agent-7", be.opts.Resume, "the recorded conversation is continued")
	be.sink.Event(backend.Attached{ID: "agent-8", How: backend.AttachFresh, Reason: "the agent can neither resume nor load an earlier session"})
	r.host.client(r.b, chat1, wire.Action(&wire.ChatTurnCancelledAction{TurnID: "t1"}))
	turn := r.host.turn(chat1, "t1")
	var notices []string
	for _, p := range turn.ResponseParts {
		if n, ok := p.Value.(*wire.SystemNotificationResponsePart); ok {
			notices = append(notices, n.Content.Text)
		}
	}
	require.Len(t, notices, 1)
	assert.Contains(t, notices[0], "does not remember earlier turns")
	assert.Contains(t, notices[0], "neither resume nor load")
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	assert.Equal(t, "agent-8", r.host.agentIDs[chat1])
	assert.Equal(t, wire.SessionLifecycleReady, r.host.sessions[sess1].Lifecycle)
	for _, l := range r.host.log {
		assert.NotContains(t, l, "session/ready", "a restored session is not made ready again")
	}
}

// TestRestoredSessionOfAGoneProvider: the turns of a restored session whose
// provider is no longer configured fail, saying so.
func TestRestoredSessionOfAGoneProvider(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.restoreReady(host.RestoredSession{Session: sess1, Provider: "gone",
		Chats: []host.RestoredChat{{Chat: chat1, Default: true, AgentSessionID: "agent-7"}}})
	r.host.startTurn(r.b, chat1, "t1", "hello", "")
	turn := r.host.turn(chat1, "t1")
	assert.Equal(t, wire.TurnStateError, turn.State)
	assert.Zero(t, r.prov.opened())
	var msg string
	for _, p := range turn.ResponseParts {
		if e, ok := p.Value.(*wire.ErrorResponsePart); ok {
			msg = e.Error.Message
		}
	}
	assert.Contains(t, msg, `the agent provider "gone" of this session is no longer configured`)
}
