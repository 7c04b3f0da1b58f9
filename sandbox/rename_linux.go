package sandbox

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameat renames with renameat2, whose RENAME_NOREPLACE makes "fail if
// the destination exists" one atomic step. File systems without it (it
// answers EINVAL) fall back to a check just before the rename.
func renameat(oldFD int, oldName string, newFD int, newName string, noReplace bool) error {
	if !noReplace {
		return unix.Renameat(oldFD, oldName, newFD, newName)
	}
	err := unix.Renameat2(oldFD, oldName, newFD, newName, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	return checkedRenameat(oldFD, oldName, newFD, newName)
}
