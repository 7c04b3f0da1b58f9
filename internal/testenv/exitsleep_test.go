package testenv

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	SkipRaceExitSleep()
	os.Exit(m.Run())
}

// TestRaceExitSleepIsOff checks that TestMain's SkipRaceExitSleep restarted
// this race-built binary with the exit sleep set (off, unless GORACE already
// chose a value). Without -race or exec there is nothing to check.
func TestRaceExitSleepIsOff(t *testing.T) {
	if !Race || runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		return
	}
	if os.Getenv("TESTENV_PRINT_GORACE") == "1" {
		t.Logf("GORACE=%s", os.Getenv(raceOptionsEnv))
	}
	if !strings.Contains(os.Getenv(raceOptionsEnv), exitSleepOption) {
		t.Fatalf("GORACE = %q in a race-built test binary: SkipRaceExitSleep did not restart it with %s=0", os.Getenv(raceOptionsEnv), exitSleepOption)
	}
}

// TestRaceExitSleepKeepsOtherOptions runs this test binary again with
// GORACE set to another option only: it must restart once, keep that
// option and finish (a second GORACE entry would go unread and restart it
// for ever).
func TestRaceExitSleepKeepsOtherOptions(t *testing.T) {
	if !Race || runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRaceExitSleepIsOff$", "-test.v")
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, raceOptionsEnv+"=") })
	cmd.Env = append(env, raceOptionsEnv+"=halt_on_error=1", "TESTENV_PRINT_GORACE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "GORACE=halt_on_error=1 atexit_sleep_ms=0")
}
