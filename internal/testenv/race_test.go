package testenv

import (
	"runtime/debug"
	"testing"
)

// TestRaceMatchesTheBuild guards the build tags of race.go and norace.go:
// Race must say what the toolchain recorded about this very binary.
func TestRaceMatchesTheBuild(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("the test binary carries no build information")
	}
	built := false
	for _, s := range info.Settings {
		if s.Key == "-race" {
			built = s.Value == "true"
		}
	}
	if Race != built {
		t.Errorf("Race = %v, but the binary was built with -race=%v", Race, built)
	}
}
