package logfield_test

import (
	"os"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	os.Exit(m.Run())
}
