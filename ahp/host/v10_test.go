package host

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// What AHP 1.0.0 asks of a host beyond 0.7.0 (docs/protocol-versions.md
// Part II), and what this host answers for the 1.0 features its agents
// cannot back.

// TestSummaryCarriesTheChatCatalogue: a session's root-catalogue entry
// carries the compact chat catalogue (SessionSummary.chats, with every
// chat's status) and its default chat, in listSessions and in
// root/sessionSummaryChanged, where chats is always sent whole.
func TestSummaryCarriesTheChatCatalogue(t *testing.T) {
	hs := newHarness(t, Options{Agents: []wire.AgentInfo{multiChatAgent()}})
	root := hs.dial(t, "root")
	root.initialize(RootURI)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "catalogue")
	added := root.nextNotification(wire.MethodRootSessionAdded)
	var p wire.SessionAddedParams
	require.NoError(t, json.Unmarshal(added.Params, &p))
	require.Len(t, p.Summary.Chats, 1)
	assert.Equal(t, s.chat, p.Summary.Chats[0].Resource)
	require.NotNil(t, p.Summary.DefaultChat)
	assert.Equal(t, s.chat, *p.Summary.DefaultChat)

	c.mustCall("createChat", map[string]any{"channel": s.uri, "chat": "ahp-chat:/second"}, nil)
	var chats []wire.SessionChatSummary
	root.until("the catalogue with both chats", func(m rpcMsg) bool {
		if m.Method != wire.MethodRootSessionSummaryChanged {
			return false
		}
		var ch summaryChange
		require.NoError(t, json.Unmarshal(m.Params, &ch))
		raw, ok := ch.Changes["chats"]
		if !ok {
			return false
		}
		require.NoError(t, json.Unmarshal(raw, &chats))
		return len(chats) == 2
	})
	assert.Equal(t, []string{s.chat, "ahp-chat:/second"}, []string{chats[0].Resource, chats[1].Resource})
	for _, ch := range chats {
		require.NotNil(t, ch.Status, "a catalogue entry always says its status")
	}

	var list wire.ListSessionsResult
	c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	require.Len(t, list.Items, 1)
	assert.Len(t, list.Items[0].Chats, 2)
	assert.Equal(t, s.chat, *list.Items[0].DefaultChat)
}

// TestChatReadAndArchivedFlags: chat/isReadChanged and isArchivedChanged
// mark one chat, default or not; the session catalogue and the root
// catalogue follow.
func TestChatReadAndArchivedFlags(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "flags")
	c.accepted(s.chat, &wire.ChatIsReadChangedAction{IsRead: true})
	e := c.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionChatUpdated))
	st := e.Action.Value.(*wire.SessionChatUpdatedAction).Changes.Status
	require.NotNil(t, st)
	assert.NotZero(t, *st&wire.SessionStatusIsRead)
	c.accepted(s.chat, &wire.ChatIsArchivedChangedAction{IsArchived: true})
	assert.NotZero(t, hs.readChat(t, s.chat).Status&wire.SessionStatusIsArchived)
	sum := hs.h.summaries()[0]
	require.Len(t, sum.Chats, 1)
	assert.NotZero(t, *sum.Chats[0].Status&wire.SessionStatusIsArchived, "the root catalogue shows the chat's flags")
	assert.Zero(t, hs.readSession(t, s.uri).Status&wire.SessionStatusIsArchived, "the session's own flag is untouched")
}

// TestUnbackedOneDotZeroFeaturesAnswer: what the agents cannot back is
// answered at once, with a reason, never left hanging.
func TestUnbackedOneDotZeroFeaturesAnswer(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "unbacked")

	_, err := c.call(wire.MethodMoveChat, map[string]any{"channel": s.chat, "destination": map[string]any{"kind": "newSession"}})
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidParams, err.Code)
	assert.Contains(t, err.Message, "not movable")

	var defs wire.ListAutomationTriggerDefinitionsResult
	c.mustCall(wire.MethodListAutomationTriggerDefinitions, map[string]any{"channel": RootURI}, &defs)
	assert.Empty(t, defs.Items)
	assert.NotNil(t, defs.Items, "an empty list, not null")
	for _, m := range []string{wire.MethodRunAutomation, wire.MethodFetchAutomationRuns} {
		_, err := c.call(m, map[string]any{"channel": wire.AutomationsChannel})
		require.NotNil(t, err, m)
		assert.Equal(t, CodeMethodNotFound, err.Code, m)
	}
	_, err = c.call("subscribe", map[string]any{"channel": wire.AutomationsChannel})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)

	_, err = c.call("createSession", map[string]any{"channel": "ahp-session:/forked", "provider": "fake",
		"fork": map[string]any{"session": s.uri, "turnId": "t0"}})
	require.NotNil(t, err, "1.0 dropped createSession.fork; it is refused, not ignored")
	assert.Equal(t, CodeInvalidParams, err.Code)

	assert.Contains(t, c.rejected(s.uri, &wire.SessionMcpServerBackgroundRequestedAction{ID: "mcp-1"}), "no MCP server")
	assert.Contains(t, c.rejected(s.uri, &wire.SessionWorkingDirectoryReplacedAction{Directory: "/a", Replacement: "/b"}), "cannot change")
}

// TestTurnResumeAndReusedTurnIDsAreRefused: the host never offers to
// resume a failed turn (ACP cannot continue one), and a turn id that
// already happened is refused rather than ignored by every reducer.
func TestTurnResumeAndReusedTurnIDsAreRefused(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "resume")
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")})
	hs.dispatch(t, s.chat, &wire.ChatErrorAction{TurnID: "t1", Part: wire.ErrorResponsePart{Kind: wire.ResponsePartKindError,
		Error: wire.ErrorInfo{ErrorType: "agentError", Message: "the agent failed"}}})
	assert.Contains(t, c.rejected(s.chat, &wire.ChatTurnResumeAction{TurnID: "t1"}), "cannot resume")
	assert.Contains(t, c.rejected(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("again")}), "already happened")
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("again")})
}
