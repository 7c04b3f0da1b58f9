//go:build unix && !aix

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes flock(2), which belongs to the open file description: a
// second open of the same file in this very process conflicts too, unlike
// POSIX record locks.
func tryLock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errLockHeld
		default:
			return err
		}
	}
}

func unlock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
