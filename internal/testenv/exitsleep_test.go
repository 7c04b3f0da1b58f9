package testenv

import (
	"os"
	"runtime"
	"strings"
	"testing"
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
	if !strings.Contains(os.Getenv(raceOptionsEnv), exitSleepOption) {
		t.Fatalf("GORACE = %q in a race-built test binary: SkipRaceExitSleep did not restart it with %s=0", os.Getenv(raceOptionsEnv), exitSleepOption)
	}
}
