//go:build !linux

package watch

import (
	"errors"
	"fmt"
	"syscall"
)

// osLimitError explains running out of watches where each costs an open
// file (kqueue) or kernel memory.
func osLimitError(dir string, err error) error {
	return &LimitError{
		Dir: dir, Setting: "the open-file limit", Limit: -1, Err: err,
		Hint: "raise it with `ulimit -n` (or the system's per-process file limit), " +
			"or exclude directories such as .git and node_modules from the watch",
	}
}

// instancesError explains a failure to start a watcher.
func instancesError(dir string, err error) error {
	if errors.Is(err, syscall.EMFILE) {
		return osLimitError(dir, err)
	}
	return fmt.Errorf("watching %s: %w", dir, err)
}
