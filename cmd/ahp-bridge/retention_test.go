package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

func TestParseRetention(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"90d", 90 * 24 * time.Hour, true}, {"720h", 720 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true}, {"-1h", 0, false}, {"soon", 0, false}, {"1.5d", 0, false}, {"-3d", 0, false},
	} {
		got, err := parseRetention(tc.in)
		if tc.ok {
			require.NoError(t, err, tc.in)
			assert.Equal(t, tc.want, got, tc.in)
		} else {
			assert.Error(t, err, tc.in)
		}
	}
}

// TestArchiveRetentionSetting: the config key and the flag (which wins),
// off by default, and a bad value named by where it came from.
func TestArchiveRetentionSetting(t *testing.T) {
	cfg, err := parseServeConfig(nil)
	require.NoError(t, err)
	assert.Empty(t, cfg.ArchiveRetention, "off by default")
	path := writeConfig(t, `{"archiveRetention": "30d"}`)
	cfg, err = parseServeConfig([]string{"--config", path})
	require.NoError(t, err)
	assert.Equal(t, "30d", cfg.ArchiveRetention)
	cfg, err = parseServeConfig([]string{"--config", path, "--archive-retention", "12h"})
	require.NoError(t, err)
	assert.Equal(t, "12h", cfg.ArchiveRetention)
	_, err = parseServeConfig([]string{"--archive-retention", "soon"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--archive-retention "soon"`)
	_, err = parseServeConfig([]string{"--config", writeConfig(t, `{"archiveRetention": "-2d"}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "archiveRetention")
}

// TestStateArchiveRetention: a bridge started with --archive-retention
// deletes the archived sessions older than that from its state file at
// start; the sessions that are not archived stay.
func TestStateArchiveRetention(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.db")
	url, bridge, _ := serveState(t, state)
	c := dialBridge(t, url)
	archived := bridgetest.CreateSession(t, c, "demo", demoDir(t))
	kept := bridgetest.CreateSession(t, c, "demo", demoDir(t))
	for _, s := range []string{archived, kept} {
		turn := bridgetest.StartTurn(t, c, s, "echo hello")
		bridgetest.WaitTurnEnd(t, c, s, turn, 30*time.Second)
	}
	require.NoError(t, c.DisposeSession(bridgetest.Context(t, 30*time.Second), archived))
	stopServe(t, bridge)

	bin := bridgetest.Binary(t)
	url, bridge, _ = startBinary(t, "serve", "--listen", "127.0.0.1:0", "--state", state,
		"--acp", "demo="+bin+" demo-agent", "--archive-retention", "1ms")
	c = dialBridge(t, url)
	require.Eventually(t, func() bool {
		sessions, err := c.ListSessions(bridgetest.Context(t, 30*time.Second))
		return err == nil && len(sessions) == 1 && sessions[0].Resource == kept
	}, 30*time.Second, 20*time.Millisecond, "the archived session is deleted at start, the other kept")
	stopServe(t, bridge)
	code, out, errOut := runBin(t, 30*time.Second, "", "sessions", "list", "--state", state)
	require.Equal(t, exitOK, code, errOut)
	assert.NotContains(t, out, archived)
	assert.Contains(t, out, kept)
}
