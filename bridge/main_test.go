package bridge_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running: every goroutine the bridge, host, providers and clients start
// must be stopped by whoever owns it. Run with SCRIPTAGENT_REPLAY set, the
// test binary is instead an ACP agent replaying that file (replay rigs,
// fidelity_test.go).
//
// The package's parallel tests mostly wait on agents in other processes
// (the SDKs' example agents pause a second between steps; Claude's CLI
// waits about half of its run), so more of them run at once than the
// default GOMAXPROCS; its CPU-bound parallel tests take deadlines that
// allow for the sharing.
func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()

	if path := os.Getenv(scriptagent.ReplayEnv); path != "" {
		if err := scriptagent.Replay(path, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "replay agent:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	testenv.WaitingParallel(8)
	goleak.VerifyTestMain(m)
}
