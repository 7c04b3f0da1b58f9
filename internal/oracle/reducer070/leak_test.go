package reducer070

import (
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running (issue #7: no goroutine leaks).
func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	goleak.VerifyTestMain(m)
}
