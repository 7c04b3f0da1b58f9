package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// errLockHeld is what tryLock says when another holder has the lock.
var errLockHeld = errors.New("lock held elsewhere")

// fileLock is an OS advisory lock on a sidecar file next to the state file.
// SQLite's own locks only guard single transactions; this one makes a second
// bridge on the same file refuse to start instead of interleaving with the
// first. It lives in its own file (state.db.lock) because SQLite's POSIX
// locks on the database are dropped when any descriptor of that file in the
// process is closed, and because the holder's pid can be written there for
// the error a second opener shows. The lock goes away with the process, so a
// crash never leaves a stale lock behind; the file itself is never removed,
// which would let two openers lock two different files.
type fileLock struct {
	f *os.File
}

func acquireLock(dbPath string) (*fileLock, error) {
	path := dbPath + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock file %s: %w", path, err)
	}
	if err := tryLock(f); err != nil {
		pid := readPID(f)
		cerr := f.Close()
		if errors.Is(err, errLockHeld) {
			return nil, &LockedError{Path: dbPath, LockPath: path, PID: pid}
		}
		return nil, errors.Join(fmt.Errorf("locking %s: %w", path, err), cerr)
	}
	// The pid is for the error message of whoever comes second; a failure
	// to write it weakens only that message.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &fileLock{f: f}, nil
}

func (l *fileLock) release() error {
	return errors.Join(unlock(l.f), l.f.Close())
}

// readPID reads the holder's pid from the lock file; 0 if it has not written
// one yet.
func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
