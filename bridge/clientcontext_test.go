package bridge

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

func TestAuthResourceRoundTrip(t *testing.T) {
	r := authResource("my agent", "a/b")
	p, m, ok := parseAuthResource(r)
	require.True(t, ok, r)
	assert.Equal(t, "my agent", p)
	assert.Equal(t, "a/b", m)
	for _, bad := range []string{"https://x", "ahp-bridge:/agents/p", "ahp-bridge:/agents//auth/m", "ahp-bridge:/agents/p/auth/"} {
		_, _, ok := parseAuthResource(bad)
		assert.False(t, ok, bad)
	}
}

func TestProtectedResourcesDescribeWhereSignInHappens(t *testing.T) {
	res := protectedResources("p", &backend.AuthInfo{Required: true, Methods: []backend.AuthMethod{
		{ID: "agent", Name: "Agent", Kind: backend.AuthAgent},
		{ID: "term", Name: "Terminal", Kind: backend.AuthTerminal, OnAgentMachine: true, Args: []string{"--login"}},
		{ID: "env", Name: "Key", Kind: backend.AuthEnvVar, OnAgentMachine: true, Vars: []string{"API_KEY"}},
	}})
	require.Len(t, res, 3)
	assert.Equal(t, "Agent", *res[0].ResourceName)
	assert.Contains(t, *res[1].ResourceName, "in a terminal on the agent's machine: run the agent's command with --login there")
	assert.Contains(t, *res[2].ResourceName, "set API_KEY where the agent runs")
	for _, r := range res {
		assert.True(t, *r.Required)
	}
	res = protectedResources("p", &backend.AuthInfo{Required: true, Authenticated: true, Methods: []backend.AuthMethod{{ID: "a"}}})
	assert.False(t, *res[0].Required, "signed in")
	assert.Nil(t, protectedResources("p", nil))
}

func TestPluginMcpServers(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {
		"one": {"command": "${CLAUDE_PLUGIN_ROOT}/one", "env": {"SECRET": "s3cret"}},
		"two": {"url": "https://two", "headers": {"Authorization": "Bearer s3cret"}}}}`), 0o644))
	uri := (&url.URL{Scheme: "file", Path: dir}).String()

	m := &sessionMcp{}
	m.addPlugin(wire.ClientPluginCustomization{ID: "p", URI: uri, Name: "P"}, "client-1")
	require.Len(t, m.entries, 2, "all the manifest declares")
	assert.Equal(t, filepath.Join(dir, "one"), m.entries[0].server.Command)
	raw, err := json.Marshal(m.customizations)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "s3cret")

	// The client lists one server, and one the manifest does not declare.
	m = &sessionMcp{}
	m.addPlugin(wire.ClientPluginCustomization{ID: "p", URI: uri, Name: "P", Children: []wire.ChildCustomization{
		wire.NewChildCustomization(&wire.McpServerCustomization{ID: "c2", Name: "two"}),
		wire.NewChildCustomization(&wire.McpServerCustomization{ID: "c3", Name: "three"}),
	}}, "client-1")
	require.Len(t, m.entries, 1)
	assert.Equal(t, "c2", m.entries[0].server.ID)
	p := m.customizations[0].Value.(*wire.PluginCustomization)
	_, degraded := p.Load.Value.(*wire.CustomizationDegradedState)
	assert.True(t, degraded)

	// A plugin that cannot be read says why.
	m = &sessionMcp{}
	m.addPlugin(wire.ClientPluginCustomization{ID: "q", URI: "https://example.com/plugin", Name: "Q"}, "client-1")
	assert.Empty(t, m.entries)
	p = m.customizations[0].Value.(*wire.PluginCustomization)
	e, ok := p.Load.Value.(*wire.CustomizationErrorState)
	require.True(t, ok)
	assert.Contains(t, e.Message, "not a file URI of this machine")
}
