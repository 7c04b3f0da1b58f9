//go:build slowagents

package bridge_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/mockllm"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// memoryFact is what the user tells the agent before the bridge restarts.
const memoryFact = "The name of my cat is Quetzal."

// rememberer answers the question about the fact from the conversation the
// agent sends, as a model would: only an agent that still has the earlier
// turn in its messages can answer it.
func rememberer(req mockllm.Request) mockllm.Reply {
	prompt := lastUserText(req)
	if strings.Contains(prompt, "name of my cat?") {
		if strings.Contains(req.Text("user"), memoryFact) {
			return mockllm.Reply{Text: "Your cat is called Quetzal."}
		}
		return mockllm.Reply{Text: "I do not know your cat."}
	}
	return scripted(req)
}

// TestClaudeAgentRemembersAcrossABridgeRestart (slow tier): claude-agent-acp
// advertises session/resume (and loadSession). A fact told before the
// bridge restarts is in the conversation the restarted agent sends to the
// model after the restored chat's next prompt.
func TestClaudeAgentRemembersAcrossABridgeRestart(t *testing.T) {
	t.Parallel()
	ag := claudeAgents[1]
	require.Equal(t, "claude-agent-acp", ag.name)
	llm := mockllm.Start(rememberer)
	t.Cleanup(llm.Close)
	home, dir := t.TempDir(), t.TempDir()
	state := filepath.Join(t.TempDir(), "state.db")

	start := func() (*bridgetest.Env, *store.SQLite, *client.Client) {
		ctx, cancel := context.WithTimeout(t.Context(), acpTimeout)
		defer cancel()
		st, err := store.Open(ctx, state, store.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		p := claudeProviderIn(t, ag, llm, home, nil)
		env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{Host: host.Options{Store: st}})
		return env, st, env.Client(t)
	}
	env, st, c := start()
	session := bridgetest.CreateSession(t, c, ag.name, dir)
	chat, err := c.DefaultChat(session)
	require.NoError(t, err)
	id := bridgetest.StartTurn(t, c, chat, memoryFact)
	first := bridgetest.WaitTurnEnd(t, c, chat, id, acpTimeout)
	require.Equal(t, wire.TurnStateComplete, first.State, "error: %+v", client.TurnError(&first))
	agentSession, ok := env.Host.AgentSessionID(chat)
	require.True(t, ok)
	require.NotEmpty(t, agentSession, "the bridge recorded the agent session")

	_ = c.Close()
	env.Close()
	require.NoError(t, st.Close())
	env, _, c = start()
	_, err = c.Subscribe(bridgetest.Context(t, acpTimeout), session)
	require.NoError(t, err)
	_, err = c.Subscribe(bridgetest.Context(t, acpTimeout), chat)
	require.NoError(t, err)

	id = bridgetest.StartTurn(t, c, chat, "What is the name of my cat?")
	second := bridgetest.WaitTurnEnd(t, c, chat, id, acpTimeout)
	require.Equal(t, wire.TurnStateComplete, second.State, "error: %+v", client.TurnError(&second))
	assert.Contains(t, acpTurnText(second.ResponseParts), "Quetzal", "the agent remembers the fact")
	assert.Empty(t, acpPartsOf[wire.SystemNotificationResponsePart](second.ResponseParts), "no notice: the agent remembers")
	req := mainRequest(t, llm, "What is the name of my cat?")
	assert.Contains(t, req.Text("user"), memoryFact, "the earlier turn is in the model's messages")
	now, _ := env.Host.AgentSessionID(chat)
	assert.Equal(t, agentSession, now, "the same agent session continues")
}
