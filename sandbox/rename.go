//go:build unix

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// renameIn renames oldRel in oldRoot to newRel in newRoot. The two parent
// directories are opened through their roots and the rename is made
// relative to those descriptors, so it cannot be led outside whatever
// happens to the paths meanwhile, and it works between two roots, which
// os.Root.Rename does not. With noReplace an existing newRel makes it fail
// with an error matching fs.ErrExist.
func renameIn(oldRoot *root, oldRel string, newRoot *root, newRel string, noReplace bool) error {
	return withDir(oldRoot, filepath.Dir(oldRel), func(oldFD int) error {
		return withDir(newRoot, filepath.Dir(newRel), func(newFD int) error {
			err := renameat(oldFD, filepath.Base(oldRel), newFD, filepath.Base(newRel), noReplace)
			if err != nil {
				return &os.LinkError{Op: "rename", Old: oldRel, New: newRel, Err: err}
			}
			return nil
		})
	})
}

// withDir calls fn with a descriptor of the directory rel inside r.
func withDir(r *root, rel string, fn func(fd int) error) error {
	d, err := r.dir.Open(rel)
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "open", Path: rel, Err: syscall.ENOTDIR}
	}
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// checkedRenameat refuses to replace an existing newName, checking just
// before renaming: a file created in between is replaced.
func checkedRenameat(oldFD int, oldName string, newFD int, newName string) error {
	var st unix.Stat_t
	err := unix.Fstatat(newFD, newName, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil {
		return unix.EEXIST
	}
	if !errors.Is(err, unix.ENOENT) {
		return err
	}
	return unix.Renameat(oldFD, oldName, newFD, newName)
}
