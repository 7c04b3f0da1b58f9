package acp

import (
	"encoding/json"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

func TestAuthMethodsOf(t *testing.T) {
	var ms []sdk.AuthMethod
	require.NoError(t, json.Unmarshal([]byte(`[
		{"id": "claude-login", "name": "Log in with Claude Code", "description": "Run `+"`claude /login`"+` in the terminal"},
		{"id": "oauth", "name": "OAuth", "description": "Signs in itself"},
		{"id": "cli", "name": "CLI login", "type": "terminal", "args": ["--login"]},
		{"id": "key", "name": "API key", "type": "env_var", "vars": [{"name": "API_KEY"}]}
	]`), &ms))
	got := authMethodsOf(ms)
	require.Len(t, got, 4)
	assert.Equal(t, backend.AuthMethod{ID: "claude-login", Name: "Log in with Claude Code", Description: "Run `claude /login` in the terminal",
		Kind: backend.AuthAgent, OnAgentMachine: true}, got[0], "an agent method that sends the user to a terminal")
	assert.Equal(t, backend.AuthMethod{ID: "oauth", Name: "OAuth", Description: "Signs in itself", Kind: backend.AuthAgent}, got[1])
	assert.Equal(t, backend.AuthMethod{ID: "cli", Name: "CLI login", Kind: backend.AuthTerminal, OnAgentMachine: true, Args: []string{"--login"}}, got[2])
	assert.Equal(t, backend.AuthMethod{ID: "key", Name: "API key", Kind: backend.AuthEnvVar, OnAgentMachine: true, Vars: []string{"API_KEY"}}, got[3])
}

func TestMcpServersAsFarAsCapabilitiesAllow(t *testing.T) {
	servers := []backend.McpServer{
		{ID: "a", Name: "a", Transport: backend.McpStdio, Command: "c", Env: []backend.NameValue{{Name: "K", Value: "v"}}},
		{ID: "b", Name: "b", Transport: backend.McpHTTP, URL: "https://h", Headers: []backend.NameValue{{Name: "H", Value: "v"}}},
		{ID: "c", Name: "c", Transport: backend.McpSSE, URL: "https://s"},
	}
	out, left := mcpServers(servers, sdk.McpCapabilities{Http: true})
	b, err := json.Marshal(out)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"name":"a","command":"c","args":[],"env":[{"name":"K","value":"v"}]},
		{"type":"http","name":"b","url":"https://h","headers":[{"name":"H","value":"v"}]}]`, string(b))
	require.Len(t, left, 1)
	assert.Equal(t, "c", left[0].ID)
	assert.Equal(t, backend.McpError, left[0].Status)
	assert.Contains(t, left[0].Message, "mcpCapabilities.sse")

	out, left = mcpServers(servers, sdk.McpCapabilities{})
	assert.Len(t, out, 1, "every agent takes stdio servers")
	assert.Len(t, left, 2)
}
