package zzreltmp_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running: every goroutine the bridge, host, providers and clients start
// must be stopped by whoever owns it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
