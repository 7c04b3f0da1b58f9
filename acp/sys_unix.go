//go:build unix

package acp

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group so that the
// whole tree it spawns can be signalled at once.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the process group led by pid. A group that is
// already gone is not an error.
func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// killGroup kills the process group led by pid.
func killGroup(pid int) error { return signalGroup(pid, syscall.SIGKILL) }

// termGroup asks the process group led by pid to terminate.
func termGroup(pid int) error { return signalGroup(pid, syscall.SIGTERM) }

// exitSignal returns the name of the signal that ended the process, if any.
func exitSignal(st *os.ProcessState) string {
	if st == nil {
		return ""
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
