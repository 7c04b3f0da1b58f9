package host

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// Two hosts on one state file (two bridges; here in one process, so the
// holds are told apart by store, not pid): each sees the other's new
// session, a turn on a session the other holds is refused naming it (a
// subscription there is served read-only), a disposed session is
// released, and a session whose holder closed is taken over by the next
// turn.
func TestTwoHostsShareAStateFile(t *testing.T) {
	t.Parallel() // waits on the once-a-second poll of the change counter
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
	// B serves it read-only: a subscription works, and holds nothing.
	cb.subscribe(s.uri)
	_, _, herr := stB.HolderOf(context.Background(), s.uri)
	require.NoError(t, herr)
	assert.False(t, stB.Holds(s.uri), "watching a session does not take it")

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

// A session another host holds is served read-only: a subscription gets
// its history without holding it or telling the handler, the holder's new
// turn reaches the subscriber as an ordinary turn (this host's serverSeq),
// an action there is refused naming the holder, the mirror leaves memory
// when nobody watches it, and once the holder is gone the next turn takes
// the session over under the same subscription.
func TestHostWatchesASessionAnotherHostHolds(t *testing.T) {
	t.Parallel() // waits on the once-a-second poll of the change counter
	path := stateFile(t)
	a, stA := storedHarness(t, path, Options{})
	b, stB := storedHarness(t, path, Options{})
	ca, cb := a.dial(t, "a"), b.dial(t, "b")
	ca.initialize(RootURI)
	cb.initialize(RootURI)

	s := a.newSession(ca, "watched")
	ca.subscribe(s.chat)
	runFakeTurn(ca, s.chat, "t1", "first")
	cb.nextNotification("root/sessionAdded")

	snap := cb.subscribe(s.chat)
	var st wire.ChatState
	require.NoError(t, json.Unmarshal(snap.State, &st))
	require.Len(t, st.Turns, 1, "B serves A's history")
	assert.Equal(t, "t1", st.Turns[0].ID)
	cb.subscribe(s.uri)
	assert.False(t, stB.Holds(s.uri), "watching a session does not take it")
	holder, held, err := stB.HolderOf(context.Background(), s.uri)
	require.NoError(t, err)
	require.True(t, held)
	assert.True(t, stA.Holds(s.uri), "A still holds it (%s)", holder)
	b.handler.set(func(h *fakeHandler) { assert.Empty(t, h.restored, "no agent is started for a watched session") })

	// A's next turn reaches B's subscriber as a turn that starts and ends.
	runFakeTurn(ca, s.chat, "t2", "second")
	started := cb.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnStarted))
	assert.Greater(t, started.ServerSeq, snap.FromSeq, "B's own serverSeq, above its snapshot")
	cb.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	turns := b.readChat(t, s.chat).Turns
	require.Len(t, turns, 2)
	assert.Equal(t, "t2", turns[1].ID)
	assert.Equal(t, a.readChat(t, s.chat).Turns[1].ResponseParts, turns[1].ResponseParts, "the same turn as A's")

	// A's new title too.
	ca.subscribe(s.uri)
	ca.accepted(s.uri, &wire.SessionTitleChangedAction{Title: "renamed in A"})
	retitled := cb.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionTitleChanged))
	assert.Equal(t, "renamed in A", retitled.Action.Value.(*wire.SessionTitleChangedAction).Title)

	reason := cb.rejected(s.chat, &wire.ChatTurnStartedAction{TurnID: "t3", Message: userMsg("mine?")})
	assert.Contains(t, reason, "held by another ahp-bridge")
	assert.Contains(t, cb.rejected(s.uri, &wire.SessionTitleChangedAction{Title: "renamed in B"}), "held by another ahp-bridge")
	_, cerr := cb.call("createChat", map[string]any{"channel": s.uri, "chat": s.uri + "/x"})
	require.NotNil(t, cerr)
	assert.Contains(t, cerr.Message, "held by another ahp-bridge")
	assert.False(t, stB.Holds(s.uri))

	// A goes; B's next turn takes the session over and runs, seen by the
	// same subscription.
	ca.close()
	a.h.Close()
	a.handler.wait()
	require.NoError(t, stA.Close())
	cb.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t3", Message: userMsg("now mine")})
	assert.True(t, stB.Holds(s.uri))
	b.handler.waitFor(t, "the take-over", func(h *fakeHandler) bool { return len(h.restored) == 1 && h.restored[0].Session == s.uri })
	cb.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))
	cb.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t3", ToolCallID: "tc-t3", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	cb.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	assert.Len(t, b.readChat(t, s.chat).Turns, 3)
}

// A mirror nobody watches any more leaves memory at the next poll.
func TestHostUnloadsAnUnwatchedMirror(t *testing.T) {
	t.Parallel() // waits on the once-a-second poll of the change counter
	path := stateFile(t)
	a, _ := storedHarness(t, path, Options{})
	b, _ := storedHarness(t, path, Options{})
	ca, cb := a.dial(t, "a"), b.dial(t, "b")
	ca.initialize(RootURI)
	cb.initialize(RootURI)
	s := a.newSession(ca, "glanced")
	cb.nextNotification("root/sessionAdded")
	cb.subscribe(s.uri)
	require.NotNil(t, b.h.lookup(s.uri))
	cb.mustCall("unsubscribe", map[string]any{"channel": s.uri}, nil)
	require.Eventually(t, func() bool { return b.h.lookup(s.uri) == nil }, 5*time.Second, 20*time.Millisecond,
		"an unwatched mirror leaves memory")
}

// runFakeTurn runs one turn of the fake handler on chat from c (which
// must be subscribed to it), approving its tool call.
func runFakeTurn(c *testClient, chat, id, text string) {
	c.t.Helper()
	c.accepted(chat, &wire.ChatTurnStartedAction{TurnID: id, Message: userMsg(text)})
	c.nextEnvelope(isAction(chat, wire.ActionTypeChatToolCallReady))
	c.accepted(chat, &wire.ChatToolCallApprovedAction{TurnID: id, ToolCallID: "tc-" + id, Confirmed: wire.ToolCallConfirmationReasonUserAction})
	c.nextEnvelope(isAction(chat, wire.ActionTypeChatTurnComplete))
}

// A createSession refused after the session was claimed (an unknown
// provider, a relative directory, a fork), or any request naming a session
// the state file lacks, leaves no hold behind: another bridge can create
// the same URI at once, and this one can later.
func TestRefusedCreateSessionReleasesItsHold(t *testing.T) {
	path := stateFile(t)
	a, stA := storedHarness(t, path, Options{})
	ca := a.dial(t, "a")
	ca.initialize()
	const uri = "ahp-session:/refused"
	// A request naming a session the file does not have claims nothing.
	_, serr := ca.call("subscribe", map[string]any{"channel": uri})
	require.NotNil(t, serr)
	assert.False(t, stA.Holds(uri), "a subscription to a session that does not exist left a hold")
	for _, params := range []map[string]any{
		{"channel": uri, "provider": "no-such-provider"},
		{"channel": uri, "provider": "fake", "workingDirectories": []string{"relative/dir"}},
		{"channel": uri, "provider": "fake", "fork": map[string]any{"session": "ahp-session:/x", "turnId": "t1"}},
	} {
		_, err := ca.call("createSession", params)
		require.NotNil(t, err, "%v", params)
		assert.False(t, stA.Holds(uri), "refused (%s): this bridge still holds the session", err.Message)
		_, held, herr := stA.HolderOf(context.Background(), uri)
		require.NoError(t, herr)
		assert.False(t, held, "refused (%s): the state file still names a holder", err.Message)
	}
	// Created for real, it is held.
	a.newSession(ca, "refused")
	assert.True(t, stA.Holds(uri))
}

// A chat the holder adds after another bridge loaded the session as a
// mirror reaches the mirror's subscribers (session/chatAdded), and a
// takeover writes the session with it: the chat is not lost from the
// catalogue.
func TestMirrorFollowsTheHoldersNewChat(t *testing.T) {
	t.Parallel() // waits on the once-a-second poll of the change counter
	path := stateFile(t)
	opts := Options{Agents: []wire.AgentInfo{multiChatAgent()}}
	a, stA := storedHarness(t, path, opts)
	b, stB := storedHarness(t, path, opts)
	ca, cb := a.dial(t, "a"), b.dial(t, "b")
	ca.initialize(RootURI)
	cb.initialize(RootURI)

	s := a.newSession(ca, "grows")
	cb.nextNotification("root/sessionAdded")
	cb.subscribe(s.uri)
	const side = "ahp-chat:/grows-side"
	ca.mustCall("createChat", map[string]any{"channel": s.uri, "chat": side}, nil)
	added := cb.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionChatAdded))
	assert.Equal(t, side, added.Action.Value.(*wire.SessionChatAddedAction).Summary.Resource)
	cb.subscribe(side)

	// A goes; B's title change takes the session over and stores it with
	// both chats.
	ca.close()
	a.h.Close()
	a.handler.wait()
	require.NoError(t, stA.Close())
	cb.accepted(s.uri, &wire.SessionTitleChangedAction{Title: "mine now"})
	require.True(t, stB.Holds(s.uri))
	b.h.Close()
	b.handler.wait()
	rec, err := stB.GetSession(context.Background(), s.uri)
	require.NoError(t, err)
	ss, err := persist.DecodeSession(rec.Session)
	require.NoError(t, err)
	var chats []string
	for _, c := range ss.State.Chats {
		chats = append(chats, c.Resource)
	}
	assert.Contains(t, chats, side, "the stored catalogue keeps the chat A added")
	assert.Equal(t, "mine now", ss.State.Title)
}
