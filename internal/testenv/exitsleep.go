package testenv

import (
	"os"
	"slices"
	"strings"
)

// raceOptionsEnv is the environment variable the race runtime reads its
// options from, once, as the process starts.
const raceOptionsEnv = "GORACE"

// exitSleepOption is the race runtime's option for how long the process
// sleeps before it exits, so that threads still running can report races.
const exitSleepOption = "atexit_sleep_ms"

// SkipRaceExitSleep makes a test binary built with -race exit without the
// race runtime's one-second sleep at exit. Call it first in TestMain.
//
// The sleep costs a second for every test binary of `go test -race ./...`
// and for every race-built agent process a test starts and waits for (the
// test binary re-run as an agent), about 20 s of the README's two minutes
// on two cores. It exists for goroutines still running when the process
// exits; the packages here check with goleak that none are, so it buys
// nothing.
//
// The runtime reads its options only at start, so when GORACE does not
// already set atexit_sleep_ms, the binary starts itself again in place
// (exec, same process, arguments and open files) with atexit_sleep_ms=0
// added; the processes it starts inherit the setting. Without -race, on
// systems without exec, or when GORACE sets the option, it does nothing.
func SkipRaceExitSleep() {
	if !Race || strings.Contains(os.Getenv(raceOptionsEnv), exitSleepOption) {
		return
	}
	// The option joins GORACE's others in its one entry: a second GORACE
	// entry would go unread (the first wins), and the restarted binary
	// would restart again.
	opts := strings.TrimSpace(os.Getenv(raceOptionsEnv) + " " + exitSleepOption + "=0")
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, raceOptionsEnv+"=") })
	reexec(append(env, raceOptionsEnv+"="+opts))
}
