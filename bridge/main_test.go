package bridge_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running: every goroutine the bridge, host, providers and clients start
// must be stopped by whoever owns it. Run with SCRIPTAGENT_REPLAY set, the
// test binary is instead an ACP agent replaying that file (replay rigs,
// fidelity_test.go).
func TestMain(m *testing.M) {
	if path := os.Getenv(scriptagent.ReplayEnv); path != "" {
		if err := scriptagent.Replay(path, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "replay agent:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
