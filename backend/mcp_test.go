package backend

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMcpServers(t *testing.T) {
	servers, err := ParseMcpServers([]byte(`{"mcpServers": {
		"z": {"command": "run", "env": {"B": "2", "A": "1"}},
		"y": {"type": "streamable-http", "url": "https://y"},
		"x": {"type": "sse", "url": "https://x", "headers": {"Authorization": "Bearer t"}}}}`))
	require.NoError(t, err)
	require.Len(t, servers, 3)
	assert.Equal(t, McpServer{ID: "x", Name: "x", Transport: McpSSE, URL: "https://x", Args: []string{},
		Headers: []NameValue{{"Authorization", "Bearer t"}}}, servers[0])
	assert.Equal(t, McpHTTP, servers[1].Transport)
	assert.Equal(t, []NameValue{{"A", "1"}, {"B", "2"}}, servers[2].Env, "in name order")

	_, err = ParseMcpServers([]byte(`{"bad": {"type": "websocket", "url": "wss://secret-token@host"}, "none": {"env": {"K": "secret-value"}}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MCP server "bad": unknown type "websocket"`)
	assert.Contains(t, err.Error(), `MCP server "none": needs a "command"`)
	assert.NotContains(t, err.Error(), "secret", "errors never carry values")
}

func TestRangeSelect(t *testing.T) {
	text := "first\nsé😀cond line\nthird"
	// Characters count UTF-16 code units: the emoji is two.
	assert.Equal(t, "😀cond", Range{StartLine: 1, StartChar: 2, EndLine: 1, EndChar: 8}.Select(text))
	assert.Equal(t, "st\nsé", Range{StartLine: 0, StartChar: 3, EndLine: 1, EndChar: 2}.Select(text))
	assert.Equal(t, "third", Range{StartLine: 2, EndLine: 9, EndChar: 99}.Select(text), "clamped to the end")
	assert.Equal(t, "", Range{StartLine: 2, EndLine: 1}.Select(text), "an inverted range selects nothing")
}
