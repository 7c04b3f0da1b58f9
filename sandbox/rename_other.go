//go:build unix && !linux

package sandbox

import "golang.org/x/sys/unix"

// renameat renames relative to two directory descriptors. Without
// renameat2, "fail if the destination exists" is a check just before the
// rename.
func renameat(oldFD int, oldName string, newFD int, newName string, noReplace bool) error {
	if noReplace {
		return checkedRenameat(oldFD, oldName, newFD, newName)
	}
	return unix.Renameat(oldFD, oldName, newFD, newName)
}
