//go:build slowagents

package bridge_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/bridge"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/mockllm"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// TestClaudeAgentSessionListedAndOpened (issue 29): a HOME holding one
// earlier Claude Code session, made by running claude-agent-acp once
// against the mock model without the bridge. Once the agent runs for a
// session of the bridge, listSessions shows the earlier session as the
// agent's; subscribing to it opens it with session/load, its turn replayed
// into the chat, and the agent goes on remembering it.
func TestClaudeAgentSessionListedAndOpened(t *testing.T) {
	t.Parallel()
	ag := claudeAgents[1]
	require.Equal(t, "claude-agent-acp", ag.name)
	llm := mockllm.Start(rememberer)
	t.Cleanup(llm.Close)
	home, dir, other := t.TempDir(), t.TempDir(), t.TempDir()
	dir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)

	// The earlier session, as a terminal would have left it.
	ctx, cancel := context.WithTimeout(t.Context(), acpTimeout)
	defer cancel()
	direct := claudeProviderIn(t, ag, llm, home, nil)
	s, err := direct.OpenSession(ctx, backend.SessionOptions{SessionID: "earlier", Cwd: dir}, backend.SinkFunc(func(backend.Event) {}))
	require.NoError(t, err)
	res, err := s.Prompt(ctx, backend.Prompt{TurnID: "t1", Text: memoryFact})
	require.NoError(t, err)
	require.Equal(t, backend.StopEndTurn, res.StopReason)
	require.NoError(t, direct.Close(ctx))

	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	env := bridgetest.Start(t, []backend.Provider{claudeProviderIn(t, ag, llm, home, nil)}, bridgetest.Options{Host: host.Options{Store: st}})
	c := env.Client(t)
	// The bridge's own session starts the agent; it is not listed as the agent's.
	own := bridgetest.CreateSession(t, c, ag.name, other)

	var earlier wire.SessionSummary
	require.Eventually(t, func() bool {
		items, err := c.ListSessions(bridgetest.Context(t, acpTimeout))
		require.NoError(t, err)
		for _, it := range items {
			if it.Meta[bridge.AgentSessionMeta] == true {
				earlier = it
			}
		}
		return earlier.Resource != ""
	}, acpTimeout, 500*time.Millisecond, "the earlier session is listed")
	assert.True(t, strings.HasPrefix(earlier.Resource, ag.name+":/"), earlier.Resource)
	assert.NotEqual(t, own, earlier.Resource)
	assert.Equal(t, []string{fileURI(dir)}, earlier.WorkingDirectories)
	assert.NotEmpty(t, earlier.Title)

	ctx2 := bridgetest.Context(t, acpTimeout)
	_, err = c.Subscribe(ctx2, earlier.Resource)
	require.NoError(t, err)
	chat := wire.DefaultChatURI(earlier.Resource)
	_, err = c.Subscribe(ctx2, chat)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.Chat(chat)
		return err == nil && len(st.Turns) >= 1
	}, acpTimeout, 50*time.Millisecond, "the replayed turn")
	cs, err := c.Chat(chat)
	require.NoError(t, err)
	assert.Contains(t, cs.Turns[0].Message.Text, memoryFact)

	id := bridgetest.StartTurn(t, c, chat, "What is the name of my cat?")
	turn := bridgetest.WaitTurnEnd(t, c, chat, id, acpTimeout)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	assert.Contains(t, acpTurnText(turn.ResponseParts), "Quetzal", "the agent remembers its session")
	agentID, ok := env.Host.AgentSessionID(chat)
	require.True(t, ok)
	assert.Equal(t, earlier.Meta[bridge.AgentSessionIDMeta], agentID)
}
