package bridge_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// TestACPProbeModelsBeforeTheFirstSession: with probeModels, a client sees
// the agent's models in AgentInfo.models before any session exists (VS
// Code shows "No models available" otherwise): the bridge started the real
// agent and asked it with a throwaway session,.
func TestACPProbeModelsBeforeTheFirstSession(t *testing.T) {
	r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) { c.ProbeModels = true }})
	root, err := r.c.WaitForRoot(r.ctx(), func(s *wire.RootState) bool {
		return len(s.Agents) == 1 && len(s.Agents[0].Models) == 2
	})
	require.NoError(t, err, "the agent's models are published before any session")
	assert.Equal(t, "script-fast", root.Agents[0].Models[0].ID)
	sessions, err := r.c.ListSessions(r.ctx())
	require.NoError(t, err)
	assert.Empty(t, sessions, "the probe is no session of the bridge")

	// The first real session runs as before.
	ch := r.session("script", acpProjectDir(t))
	st, err := r.c.Session(ch)
	require.NoError(t, err)
	require.NotNil(t, st.Config)
	assert.Contains(t, st.Config.Schema.Properties, "model", "the probe's settings seed the first session's schema")
}
