package main

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// TestConfigListAgentSessions: agents[].listAgentSessions reaches the ACP
// provider: true lets it start the agent to list its own sessions; unset
// and false do not (false also hides them, checked in package acp).
func TestConfigListAgentSessions(t *testing.T) {
	file := writeConfig(t, `{"agents": [
		{"id": "a", "command": "agent-a", "listAgentSessions": true},
		{"id": "b", "command": "agent-b", "listAgentSessions": false},
		{"id": "c", "command": "agent-c"}]}`)
	cfg, err := parseServeConfig([]string{"--config", file})
	require.NoError(t, err)
	require.Len(t, cfg.Agents, 3)
	want := map[string]bool{"a": true, "b": false, "c": false}
	for _, a := range cfg.Agents {
		bp, err := buildAgent(a, false, zerolog.Nop())
		require.NoError(t, err)
		as, ok := bp.provider.(backend.AgentSessions)
		require.True(t, ok)
		assert.Equal(t, want[a.ID], as.ListsWithoutRunning(), a.ID)
	}
	_, err = parseServeConfig([]string{"--config", writeConfig(t, `{"agents": [{"id": "a", "command": "x", "listAgentSessions": "yes"}]}`)})
	assert.ErrorContains(t, err, "listAgentSessions")
}
