package acp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// TestProcessStatsCountStartsCrashesAndRestarts: an agent not yet needed
// is ready and idle; the first session starts it; a crash is counted, and
// the next use restarts it.
func TestProcessStatsCountStartsCrashesAndRestarts(t *testing.T) {
	p := scriptProvider(t, nil)
	assert.Equal(t, ProcessStats{}, p.ProcessStats(), "nothing started before the first session")
	require.NoError(t, p.Ready(), "an agent not needed yet is ready")

	s, _, _ := openSession(t, p)
	st := p.ProcessStats()
	assert.True(t, st.Running)
	assert.Positive(t, st.PID)
	assert.False(t, st.StartedAt.IsZero())
	assert.Equal(t, int64(1), st.Starts)
	assert.Equal(t, int64(0), st.Restarts)
	assert.Equal(t, 1, st.Sessions)

	require.Error(t, prompt(t, s, "crash").err)
	st = p.ProcessStats()
	assert.False(t, st.Running)
	assert.Equal(t, int64(1), st.Crashes)
	require.NoError(t, p.Ready(), "a crashed agent restarts on next use")

	require.NoError(t, prompt(t, s, "echo again").err)
	st = p.ProcessStats()
	assert.True(t, st.Running)
	assert.Equal(t, int64(2), st.Starts)
	assert.Equal(t, int64(1), st.Restarts)
	assert.Equal(t, int64(1), st.Crashes)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	assert.Equal(t, int64(1), p.ProcessStats().Crashes, "stopping the agent on Close is no crash")
}

// TestReadyReportsAFailedStart: an agent that cannot be started makes the
// provider not ready, saying why, until a start succeeds.
func TestReadyReportsAFailedStart(t *testing.T) {
	p := scriptProvider(t, func(c *Config) { c.Command = []string{"/nonexistent/agent-binary"} })
	_, err := p.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: "s", Cwd: t.TempDir()}, newRecorder())
	require.Error(t, err)
	st := p.ProcessStats()
	assert.False(t, st.Running)
	assert.Equal(t, int64(0), st.Starts)
	assert.Contains(t, st.LastStartError, "/nonexistent/agent-binary")
	rerr := p.Ready()
	require.Error(t, rerr)
	assert.Contains(t, rerr.Error(), "its agent failed to start")
}
