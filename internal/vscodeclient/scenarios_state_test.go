package vscodeclient_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// TestVSCodeStateOperations is VS Code's stateOperationsSuite against the
// bridge: the state actions a client dispatches on a session and its chat,
// each checked on a fresh snapshot as VS Code does. The subtests are named
// after VS Code's scenarios (docs/vscode-scenarios.md); its client-created
// terminal scenarios do not apply.
func TestVSCodeStateOperations(t *testing.T) {
	rig := newScenarioRig(t)
	run := func(name string, f func(t *testing.T, c *vsc.Client)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := rig.connect(t)
			f(t, c)
			assert.Empty(t, c.StrayFrames(), "no error frames for VS Code's notifications")
		})
	}

	run("client title change updates session state", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, map[string]any{"type": "session/titleChanged", "title": "Direct AHP Title"})
		assert.Equal(t, "Direct AHP Title", sessionState(t, c, session).Title)
	})

	run("marking a session read sets the read status flag", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, map[string]any{"type": "session/isReadChanged", "isRead": true})
		assert.NotZero(t, sessionState(t, c, session).Status&wire.SessionStatusIsRead)
	})

	run("marking a session unread clears the read status flag", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, map[string]any{"type": "session/isReadChanged", "isRead": true})
		requireApplied(t, c, session, map[string]any{"type": "session/isReadChanged", "isRead": false})
		assert.Zero(t, sessionState(t, c, session).Status&wire.SessionStatusIsRead)
	})

	run("archiving a session sets the archived status flag", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, map[string]any{"type": "session/isArchivedChanged", "isArchived": true})
		assert.NotZero(t, sessionState(t, c, session).Status&wire.SessionStatusIsArchived)
	})

	run("unarchiving a session clears the archived status flag", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, map[string]any{"type": "session/isArchivedChanged", "isArchived": true})
		requireApplied(t, c, session, map[string]any{"type": "session/isArchivedChanged", "isArchived": false})
		assert.Zero(t, sessionState(t, c, session).Status&wire.SessionStatusIsArchived)
	})

	// VS Code sets its own autoApprove key; the bridge's session config is
	// the agent's live settings, so this uses the scripted agent's mode. The
	// agent reports its settings just after the session is ready, and again
	// after each change; the check waits for them to settle.
	run("session config changes merge with existing values", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		configOf := func() map[string]any {
			s, _ := c.Session(session)
			if s.Config == nil {
				return nil
			}
			return s.Config.Values
		}
		require.NoError(t, c.WaitFor(scenarioCtx(t), "the agent's settings in the session config", func() bool {
			v := configOf()
			return v["model"] != nil && v["mode"] != nil
		}))
		before := sessionState(t, c, session)
		require.NotNil(t, before.Config, "the session has a config")
		want := map[string]any{}
		for k, v := range before.Config.Values {
			want[k] = v
		}
		want["mode"] = "plan"
		requireApplied(t, c, session, map[string]any{"type": "session/configChanged", "config": map[string]any{"mode": "plan"}})
		assert.NoError(t, c.WaitFor(scenarioCtx(t), "the merged config", func() bool {
			return assert.ObjectsAreEqual(want, configOf())
		}), "the config settles to the merged values: %v", configOf())
		after := sessionState(t, c, session)
		if assert.NotNil(t, after.Config) {
			assert.Equal(t, want, after.Config.Values)
		}
	})

	activeClient := func(c *vsc.Client, name string) map[string]any {
		return map[string]any{"type": "session/activeClientSet",
			"activeClient": map[string]any{"clientId": c.ClientID(), "displayName": name, "tools": []any{}}}
	}
	run("active client set adds a session participant", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, activeClient(c, "Coverage Client"))
		assert.Equal(t, []wire.SessionActiveClient{{ClientID: c.ClientID(), DisplayName: wire.Ptr("Coverage Client"), Tools: []wire.ToolDefinition{}}},
			sessionState(t, c, session).ActiveClients)
	})

	run("active client set replaces an existing participant", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, activeClient(c, "Before"))
		requireApplied(t, c, session, activeClient(c, "After"))
		var names []string
		for _, a := range sessionState(t, c, session).ActiveClients {
			names = append(names, deref(a.DisplayName))
		}
		assert.Equal(t, []string{"After"}, names)
	})

	run("active client removal removes the session participant", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		requireApplied(t, c, session, activeClient(c, "Coverage Client"))
		requireApplied(t, c, session, map[string]any{"type": "session/activeClientRemoved", "clientId": c.ClientID()})
		assert.Empty(t, sessionState(t, c, session).ActiveClients)
	})

	draft := func(text string) map[string]any {
		return map[string]any{"type": "chat/draftChanged", "draft": userMessage(text)}
	}
	wantDraft := func(text string) *wire.Message {
		return &wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
	}
	run("draft change stores a user message", func(t *testing.T, c *vsc.Client) {
		_, chat := newSession(t, c)
		requireApplied(t, c, chat, draft("draft text"))
		assert.Equal(t, wantDraft("draft text"), chatState(t, c, chat).Draft)
	})

	run("draft change replaces the previous message", func(t *testing.T, c *vsc.Client) {
		_, chat := newSession(t, c)
		requireApplied(t, c, chat, draft("before"))
		requireApplied(t, c, chat, draft("after"))
		assert.Equal(t, wantDraft("after"), chatState(t, c, chat).Draft)
	})

	run("clearing a draft removes it from chat state", func(t *testing.T, c *vsc.Client) {
		_, chat := newSession(t, c)
		requireApplied(t, c, chat, draft("draft"))
		requireApplied(t, c, chat, map[string]any{"type": "chat/draftChanged"})
		assert.Nil(t, chatState(t, c, chat).Draft)
	})

	// The scenarios about what is missing wait for the host's envelope of
	// the action, applied or rejected, as VS Code's do, and check that
	// nothing changed.
	run("removing a missing queued message leaves chat state unchanged", func(t *testing.T, c *vsc.Client) {
		_, chat := newSession(t, c)
		dispatchAndWait(t, c, chat, map[string]any{"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "missing"})
		assert.Empty(t, chatState(t, c, chat).QueuedMessages)
	})

	run("reordering a missing queue leaves chat state unchanged", func(t *testing.T, c *vsc.Client) {
		_, chat := newSession(t, c)
		dispatchAndWait(t, c, chat, map[string]any{"type": "chat/queuedMessagesReordered", "order": []string{"missing"}})
		assert.Empty(t, chatState(t, c, chat).QueuedMessages)
	})

	run("truncating at a missing turn leaves history unchanged", func(t *testing.T, c *vsc.Client) {
		_, chat := newSession(t, c)
		before := chatState(t, c, chat)
		dispatchAndWait(t, c, chat, map[string]any{"type": "chat/truncated", "turnId": "missing-turn"})
		assert.Equal(t, before.Turns, chatState(t, c, chat).Turns)
	})

	run("cancelling a missing turn leaves the chat idle", func(t *testing.T, c *vsc.Client) {
		_, chat := newSession(t, c)
		dispatchAndWait(t, c, chat, map[string]any{"type": "chat/turnCancelled", "turnId": "missing-turn", "duration": 0})
		st := chatState(t, c, chat)
		assert.Nil(t, st.ActiveTurn)
		assert.Empty(t, st.Turns)
		assert.Equal(t, wire.SessionStatusIdle, st.Status)
	})

	// The bridge refuses any channel it does not have; VS Code's scenario
	// names a terminal.
	run("subscribing to an unknown terminal is rejected", func(t *testing.T, c *vsc.Client) {
		newSession(t, c)
		_, err := c.Subscribe(scenarioCtx(t), "agenthost-terminal://e2e/"+newID())
		assert.Error(t, err)
		assert.NotZero(t, vsc.ErrorCode(err), "an error answer of the host, not a lost connection: %v", err)
	})
}
