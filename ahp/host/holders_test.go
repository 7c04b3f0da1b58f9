package host

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// Two hosts on one state file (two bridges; here in one process, so the
// holds are told apart by store, not pid): each sees the other's new
// session, a turn or a subscription on a session the other holds is refused
// naming it, a disposed session is released, and a session whose holder
// closed is taken over by the next turn.
func TestTwoHostsShareAStateFile(t *testing.T) {
	path := stateFile(t)
	a, stA := storedHarness(t, path, Options{})
	b, stB := storedHarness(t, path, Options{})
	ca, cb := a.dial(t, "a"), b.dial(t, "b")
	ca.initialize(RootURI)
	cb.initialize(RootURI)

	s := a.newSession(ca, "shared")
	added := cb.nextNotification("root/sessionAdded")
	assert.Contains(t, string(added.Params), s.uri, "B's root subscribers hear of A's session")
	var list wire.ListSessionsResult
	cb.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	require.Len(t, list.Items, 1)
	assert.Equal(t, s.uri, list.Items[0].Resource)

	reason := cb.rejected(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("here?")})
	assert.Contains(t, reason, "held by another ahp-bridge")
	assert.Contains(t, reason, "pid "+strconv.Itoa(os.Getpid()))
	_, err := cb.call("subscribe", map[string]any{"channel": s.uri})
	require.NotNil(t, err)
	assert.Contains(t, err.Message, "held by another ahp-bridge")

	// A disposes of it: A no longer holds it, and B's root subscribers
	// hear it is gone.
	ca.mustCall("disposeSession", map[string]any{"channel": s.uri}, nil)
	_, held, herr := stB.HolderOf(context.Background(), s.uri)
	require.NoError(t, herr)
	assert.False(t, held, "a disposed session is released")
	// Deleted (by the dispose, or else as `sessions delete` would).
	if err := stA.DeleteSession(context.Background(), s.uri); err != nil {
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	removed := cb.nextNotification("root/sessionRemoved")
	assert.Contains(t, string(removed.Params), s.uri)

	// A second session, with a turn; A closes (releasing it); B's turn
	// there takes it over and runs.
	s2 := a.newSession(ca, "taken")
	// B's chat index learns of the new chat from the change counter.
	cb.nextNotification("root/sessionAdded")
	ca.accepted(s2.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("first")})
	ca.nextEnvelope(isAction(s2.chat, wire.ActionTypeChatToolCallReady))
	ca.accepted(s2.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	ca.nextEnvelope(isAction(s2.chat, wire.ActionTypeChatTurnComplete))
	assert.Contains(t, cb.rejected(s2.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("mine?")}), "held by another ahp-bridge")
	ca.close()
	a.h.Close()
	a.handler.wait()
	require.NoError(t, stA.Close())

	cb.subscribe(s2.uri)
	cb.subscribe(s2.chat)
	cb.accepted(s2.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("now mine")})
	assert.True(t, stB.Holds(s2.uri))
}
