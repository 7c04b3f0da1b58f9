package bridge_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// TestSettingsOfTheFirstSessionReachTheAgent: the first session after the
// agent starts is created before the agent reported any settings, and its
// agent session takes a while to exist (a slow session/new). A setting a
// client changes meanwhile must reach the agent once its session exists,
// and one the agent does not have must be refused with a reason, never
// kept in the session's state as if applied (issue 26, finding 2).
func TestSettingsOfTheFirstSessionReachTheAgent(t *testing.T) {
	log := filepath.Join(t.TempDir(), "agent.log")
	r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) {
		c.Env = []string{"SCRIPTAGENT_LOG=" + log, "SCRIPTAGENT_NEW_DELAY_MS=300"}
	}})
	ch := client.NewSessionURI()
	require.NoError(t, r.c.CreateSession(r.ctx(), wire.CreateSessionParams{Channel: ch, Provider: wire.Ptr("script")}))
	_, err := r.c.Subscribe(r.ctx(), ch)
	require.NoError(t, err)
	_, err = r.c.Confirm(r.ctx(), ch, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"mode": "plan"}}))
	require.NoError(t, err, "a change before the agent's settings are known is taken")
	_, err = r.c.Confirm(r.ctx(), ch, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"bogus": "x"}}))
	require.NoError(t, err)
	st, err := r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool { return s.Lifecycle != wire.SessionLifecycleCreating })
	require.NoError(t, err)
	require.Equal(t, wire.SessionLifecycleReady, st.Lifecycle)

	st, err = r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool {
		_, refused := s.Meta[mapping.MetaConfigRejected]
		return refused && s.Config.Values["mode"] == "plan"
	})
	require.NoError(t, err, "the mode is applied and the unknown setting refused")
	assert.NotContains(t, st.Config.Values, "bogus", "a refused setting is not kept in the state")
	b, err := json.Marshal(st.Meta[mapping.MetaConfigRejected])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"key":"bogus"`)
	assert.Contains(t, string(b), "no setting")

	var modes []string
	for _, p := range agentLog(t, log, "session/set_mode") {
		var m struct {
			ModeID string `json:"modeId"`
		}
		require.NoError(t, json.Unmarshal(p, &m))
		modes = append(modes, m.ModeID)
	}
	assert.Equal(t, []string{"plan"}, modes, "what the agent received")

	// Later changes of the same session go straight to the agent.
	_, err = r.c.Confirm(r.ctx(), ch, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"mode": "default"}}))
	require.NoError(t, err)
	_, err = r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool { return s.Config.Values["mode"] == "default" })
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(agentLog(t, log, "session/set_mode")) == 2 }, 5*time.Second, 20*time.Millisecond)
}
