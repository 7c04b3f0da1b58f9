package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running (issue #7: no goroutine leaks). Bridges the tests start, in
// process or as the built binary, keep their sessions in a state directory
// of the test run's own ($XDG_STATE_HOME, inherited by the binaries), never
// in the user's; tests that run two bridges at once give them --state
// files of their own.
func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	// The parallel tests here wait on bridge processes and the demo's
	// timers, not on this process's CPU: all of them at once.
	testenv.WaitingParallel(4)

	dir, err := os.MkdirTemp("", "ahp-bridge-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Setenv("XDG_STATE_HOME", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}
