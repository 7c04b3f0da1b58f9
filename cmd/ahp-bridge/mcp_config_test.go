package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

func TestConfigAgentMcpServers(t *testing.T) {
	cfg, err := parseServeConfig([]string{"--config", writeConfig(t, `{"agents": [{"id": "a", "command": "agent",
		"mcpServers": {"docs": {"command": "docs-mcp", "args": ["--stdio"], "env": {"KEY": "k"}},
		               "web": {"url": "https://mcp.example/web", "headers": {"Authorization": "Bearer t"}},
		               "feed": {"type": "sse", "url": "https://mcp.example/sse"}}}]}`)})
	require.NoError(t, err)
	servers, err := cfg.Agents[0].mcpServers()
	require.NoError(t, err)
	assert.Equal(t, []backend.McpServer{
		{ID: "docs", Name: "docs", Transport: backend.McpStdio, Command: "docs-mcp", Args: []string{"--stdio"}, Env: []backend.NameValue{{Name: "KEY", Value: "k"}}},
		{ID: "feed", Name: "feed", Transport: backend.McpSSE, URL: "https://mcp.example/sse", Args: []string{}, Headers: []backend.NameValue{}},
		{ID: "web", Name: "web", Transport: backend.McpHTTP, URL: "https://mcp.example/web", Args: []string{}, Headers: []backend.NameValue{{Name: "Authorization", Value: "Bearer t"}}},
	}, servers)

	_, err = parseServeConfig([]string{"--config", writeConfig(t, `{"agents": [{"id": "a", "command": "agent",
		"mcpServers": {"broken": {"args": ["x"]}}}]}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `agents[0].mcpServers`)
	assert.Contains(t, err.Error(), `MCP server "broken": needs a "command" (stdio) or a "url" (http, sse)`)

	_, err = parseServeConfig([]string{"--config", writeConfig(t, `{"agents": [{"id": "a", "command": "agent",
		"mcpServers": {"x": {"command": "c", "typo": 1}}}]}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown key")
}
