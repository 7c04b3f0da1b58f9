package watch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// osLimitError explains inotify's ENOSPC: the per-user count of watches
// is used up.
func osLimitError(dir string, err error) error {
	const setting = "fs.inotify.max_user_watches"
	return &LimitError{
		Dir: dir, Setting: setting, Limit: procInt("/proc/sys/fs/inotify/max_user_watches"), Err: err,
		Hint: fmt.Sprintf("raise it with `sudo sysctl %s=524288` (and a line in /etc/sysctl.d/ to keep it), "+
			"or exclude directories such as .git and node_modules from the watch", setting),
	}
}

// instancesError explains inotify_init's EMFILE: the per-user count of
// inotify instances is used up.
func instancesError(dir string, err error) error {
	const setting = "fs.inotify.max_user_instances"
	if !errors.Is(err, syscall.EMFILE) {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	return &LimitError{
		Dir: dir, Setting: setting, Limit: procInt("/proc/sys/fs/inotify/max_user_instances"), Err: err,
		Hint: fmt.Sprintf("raise it with `sudo sysctl %s=1024` (and a line in /etc/sysctl.d/ to keep it), "+
			"or close other watches", setting),
	}
}

func procInt(name string) int {
	b, err := os.ReadFile(name)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}
