package store

import (
	"errors"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not exited (STILL_ACTIVE).
const stillActive = 259

// processAlive opens the process for a query: a pid no process has fails
// with ERROR_INVALID_PARAMETER; one that exited but is still referenced
// reports an exit code.
func processAlive(pid int) (alive, known bool) {
	if pid <= 0 {
		return false, false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return false, true
	}
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return true, true
	}
	if err != nil {
		return false, false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false, false
	}
	return code == stillActive, true
}

// processStart is the process's creation time (100 ns since 1601); 0 if it
// cannot be read.
func processStart(pid int) int64 {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	return int64(created.HighDateTime)<<32 | int64(created.LowDateTime)
}
