package store

import "golang.org/x/sys/unix"

// processStart asks the kernel for the process's start time (µs since the
// epoch); 0 if it cannot.
func processStart(pid int) int64 {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp.Proc.P_pid != int32(pid) {
		return 0
	}
	tv := kp.Proc.P_starttime
	return int64(tv.Sec)*1_000_000 + int64(tv.Usec)
}
