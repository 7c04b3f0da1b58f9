//go:build unix

package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processAlive sends signal 0, which checks that the pid exists without
// touching it: EPERM means it exists but belongs to another user.
func processAlive(pid int) (alive, known bool) {
	if pid <= 0 {
		return false, false
	}
	err := unix.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, unix.EPERM):
		return true, true
	case errors.Is(err, unix.ESRCH):
		return false, true
	default:
		return false, false
	}
}
