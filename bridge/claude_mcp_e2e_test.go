//go:build slowagents

package bridge_test

import (
	"encoding/json"
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
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

// The slow tier of issue 19: claude-code-acp with a local MCP server
// configured through the bridge (an agent's mcpServers), and its real
// sign-in methods.

// TestClaudeCodeACPUsesConfiguredMcpServer: as a new user would, configure
// a local stdio MCP server for the agent; the model is offered that
// server's tool, calls it, and the answer reaches the client. Then the
// agent's real sign-in methods (checkClaudeCodeAuthMethods).
func TestClaudeCodeACPUsesConfiguredMcpServer(t *testing.T) {
	t.Parallel()
	ag := claudeAgents[0] // claude-code-acp
	llm := mockllm.Start(func(req mockllm.Request) mockllm.Reply {
		if lastUserText(req) == "probe" && len(req.ToolResults()) == 0 {
			if name := toolNamed(req, scriptagent.MCPToolName); name != "" {
				return mockllm.Reply{ToolUses: []mockllm.ToolUse{{Name: name, Input: map[string]any{}}}}
			}
		}
		return scripted(req)
	})
	t.Cleanup(llm.Close)
	// What `"mcpServers": {"probe": {"command": …, "env": {…}}}` in the
	// agent's config gives (cmd/ahp-bridge; TestConfigAgentMcpServers).
	cfg, err := json.Marshal(map[string]any{"probe": map[string]any{"command": bridgetest.ScriptAgent(t),
		"env": map[string]string{scriptagent.MCPEnv: "probe"}}})
	require.NoError(t, err)
	servers, err := backend.ParseMcpServers(cfg)
	require.NoError(t, err)
	p := claudeProviderWith(t, ag, llm, servers)
	r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
	ch := r.session(ag.name, t.TempDir())

	turnID := bridgetest.StartTurn(t, r.c, ch, "probe")
	turn := approveAll(t, r, ch, turnID)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	req := mainRequest(t, llm, "probe")
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	assert.Contains(t, names, "mcp__probe__"+scriptagent.MCPToolName, "the model is offered the MCP server's tool")
	assert.Contains(t, acpTurnText(turn.ResponseParts), scriptagent.MCPToolAnswer, "the tool ran in the MCP server")

	st, err := r.c.Session(ch)
	require.NoError(t, err)
	require.Len(t, st.Customizations, 1)
	m := st.Customizations[0].Value.(*wire.McpServerCustomization)
	assert.Equal(t, "probe", m.Name)
	_, ready := m.State.Value.(*wire.McpServerReadyState)
	assert.True(t, ready, "%+v", m.State.Value)

	checkClaudeCodeAuthMethods(t, r)
}

// checkClaudeCodeAuthMethods: claude-code-acp's real sign-in method ("Run
// `claude /login` in the terminal") became a protected resource that says
// it is done on the agent's machine; authenticating with it is refused with
// the agent's words, since the agent cannot do it when asked. (Part of the
// test above: one agent start less in the slow tier.)
func checkClaudeCodeAuthMethods(t *testing.T, r *acpRig) {
	t.Helper()
	root, err := r.c.WaitForRoot(r.ctx(), func(s *wire.RootState) bool {
		return len(s.Agents) == 1 && len(s.Agents[0].ProtectedResources) > 0
	})
	require.NoError(t, err)
	res := root.Agents[0].ProtectedResources
	require.Len(t, res, 1)
	assert.Equal(t, "ahp-bridge:/agents/claude-code-acp/auth/claude-login", res[0].Resource)
	assert.Contains(t, *res[0].ResourceName, "Log in with Claude Code: Run `claude /login` in the terminal")
	assert.Contains(t, *res[0].ResourceName, "done on the agent's machine")
	assert.False(t, *res[0].Required, "the agent works with its API key")

	err = r.c.Call(r.ctx(), wire.MethodAuthenticate, wire.AuthenticateParams{Channel: client.RootChannel, Resource: res[0].Resource, Token: "-"}, nil)
	var rpcErr *client.RPCError
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, host.CodeAuthRequired, rpcErr.Code)
	assert.True(t, strings.Contains(rpcErr.Message, "on the agent's machine"), rpcErr.Message)
}
