package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// moveAside renames an unusable state file to <path>.corrupt-<UTC time>, and
// its -wal, -shm and -journal files to the same name with the same suffixes,
// so that the set still opens together in the sqlite3 shell. The database
// goes first: if it cannot be moved nothing else is touched. A leftover
// -wal would be replayed into the fresh file, so failing to move one is as
// fatal as failing to move the database.
func moveAside(path string, now time.Time, reason error, rename func(string, string) error) (*MovedAside, error) {
	base := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	target := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			break
		}
		target = base + "." + strconv.Itoa(i)
	}
	if err := rename(path, target); err != nil {
		return nil, fmt.Errorf("state file %s cannot be used (%v) and cannot be moved aside to %s: %w; move or delete it by hand",
			path, reason, target, err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		err := rename(path+suffix, target+suffix)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("state file %s cannot be used (%v); it was moved to %s but its %s file could not follow: %w; move or delete %s by hand",
				path, reason, target, suffix, err, path+suffix)
		}
	}
	return &MovedAside{Path: path, MovedTo: target, Reason: reason}, nil
}
