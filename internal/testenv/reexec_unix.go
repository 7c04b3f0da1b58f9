//go:build unix

package testenv

import (
	"fmt"
	"os"
	"syscall"
)

// reexec replaces this process's image with the same executable, the same
// arguments and env. On failure the process carries on as it is, with the
// sleep, and says so once.
func reexec(env []string) {
	exe, err := os.Executable()
	if err == nil {
		err = syscall.Exec(exe, os.Args, env)
	}
	fmt.Fprintf(os.Stderr, "testenv: could not restart the test binary without the race runtime's exit sleep: %v\n", err)
}
