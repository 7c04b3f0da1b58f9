package agentchan

import (
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()

	goleak.VerifyTestMain(m)
}
