//go:build windows

package acp

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// Windows has no process groups to signal: the agent gets a console
// process group of its own (so a Ctrl-C meant for the bridge does not reach
// it), and its tree is ended with taskkill /T. The graceful path is the
// same as elsewhere: the agent's stdin is closed first (agentProc.stop).

// setProcessGroup starts cmd in a new process group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// taskkill ends the process tree rooted at pid; force kills rather than
// asks. A tree that is already gone is not an error worth reporting.
func taskkill(pid int, force bool) error {
	if pid <= 0 {
		return nil
	}
	args := []string{"/T", "/PID", strconv.Itoa(pid)}
	if force {
		args = append([]string{"/F"}, args...)
	}
	_ = exec.Command("taskkill", args...).Run()
	return nil
}

// killGroup kills the process tree rooted at pid.
func killGroup(pid int) error { return taskkill(pid, true) }

// termGroup asks the process tree rooted at pid to end.
func termGroup(pid int) error { return taskkill(pid, false) }

// isDevice reports whether fi is a device, pipe or socket: files fs
// requests must not read from or write to.
func isDevice(fi os.FileInfo) bool {
	return fi.Mode()&(os.ModeDevice|os.ModeCharDevice|os.ModeNamedPipe|os.ModeSocket|os.ModeIrregular) != 0
}

// exitSignal returns "": Windows processes do not end by signals.
func exitSignal(*os.ProcessState) string { return "" }
