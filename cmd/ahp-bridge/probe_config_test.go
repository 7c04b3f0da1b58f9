package main

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agents[].probeModels: an ACP agent is probed for its models unless its
// configuration says false; --acp agents are probed.
func TestConfigAgentProbeModels(t *testing.T) {
	cfg, err := parseServeConfig([]string{"--config", writeConfig(t, `{"agents": [
		{"id": "on", "command": "agent"},
		{"id": "off", "command": "agent", "probeModels": false}]}`)})
	require.NoError(t, err)
	flags, err := parseServeConfig([]string{"--acp", "flag=agent"})
	require.NoError(t, err)
	probes := map[string]bool{}
	for _, a := range append(cfg.Agents, flags.Agents...) {
		bp, err := buildAgent(a, false, zerolog.Nop())
		require.NoError(t, err)
		probes[a.ID] = bp.provider.Info().ProbeModels
	}
	assert.Equal(t, map[string]bool{"flag": true, "on": true, "off": false}, probes)

	_, err = parseServeConfig([]string{"--config", writeConfig(t, `{"agents": [{"id": "a", "command": "agent", "probeModels": "no"}]}`)})
	require.Error(t, err)
}
