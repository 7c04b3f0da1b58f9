package store

import (
	"os"
	"strings"
)

// processID says which process holds a session: its pid and start time
// (which together survive the pid's reuse by a later process) and the
// machine it runs on, since a pid means nothing on another one.
type processID struct {
	pid     int
	started int64 // as the OS counts it; 0 where it cannot be read
	host    string
	machine string // host plus, where there is one, the pid namespace
}

// thisProcess identifies the calling process.
func thisProcess() processID {
	host, _ := os.Hostname() // a name for messages; empty if unknown
	pid := os.Getpid()
	return processID{pid: pid, started: processStart(pid), host: host, machine: machineKey(host)}
}

// machineKey names the pid space this process lives in: the host name, and
// on Linux the pid namespace, so that a bridge in a container sharing the
// file through a mount is not judged by pids it cannot see.
func machineKey(host string) string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return host
	}
	return host + "/" + strings.TrimSpace(ns)
}

// processGone reports whether the process p is known to have exited: its
// pid is free, or taken by a process started at another time. false means
// alive or unknown (a platform that cannot tell).
func processGone(p processID) bool {
	alive, known := processAlive(p.pid)
	if !known {
		return false
	}
	if !alive {
		return true
	}
	if p.started == 0 {
		return false
	}
	now := processStart(p.pid)
	return now != 0 && now != p.started
}
