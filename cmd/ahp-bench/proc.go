package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// procUsage is what /proc says about one process.
type procUsage struct {
	CPU     time.Duration // user + system time so far
	RSS     int64         // resident set size now, bytes
	PeakRSS int64         // high-water mark of the resident set, bytes
}

// readProc reads a process's CPU time and memory from /proc.
func readProc(pid int) (procUsage, error) {
	var u procUsage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) may contain spaces; fields after its
	// closing parenthesis are space-separated. utime and stime are fields
	// 14 and 15, i.e. the 12th and 13th after the parenthesis.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return u, fmt.Errorf("/proc/%d/stat has %d fields after the command name, want at least 13", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
	}
	u.CPU = time.Duration(ut+st) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, fmt.Errorf("reading the memory use of process %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &u.RSS
		case "VmHWM":
			dst = &u.PeakRSS
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return u, fmt.Errorf("parsing %s in /proc/%d/status: %w", k, pid, err)
		}
		*dst = kb << 10
	}
	return u, nil
}

// childPIDs lists the direct children of pid (the bridge's agent
// processes). The kernel lists children per thread, and Go starts
// processes from whichever thread runs, so every thread is read.
func childPIDs(pid int) []int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// bridgeProc is one `ahp-bridge serve` process started for a scenario.
type bridgeProc struct {
	cmd      *exec.Cmd
	URL      string        // ws://…/ from the READY line
	Startup  time.Duration // exec to READY line
	stderr   *tailBuffer
	waited   chan error
	stateDir string // the bridge's state file's directory, removed by stop
}

// floodProvider is the provider id under which the bench agent is served.
const floodProvider = "flood"

// startBridge runs `BIN serve` on a free loopback port with the scripted
// agent as provider "flood" and waits for its READY line. The bridge keeps
// its sessions in a fresh state file (never the user's), or in memory with
// cfg.StateNone.
func startBridge(ctx context.Context, cfg Config, extra ...string) (*bridgeProc, error) {
	bin, agent := cfg.Bin, cfg.Agent
	if agent == "" {
		agent = bin
	}
	state, stateDir := "none", ""
	if !cfg.StateNone {
		dir, err := os.MkdirTemp("", "ahp-bench-state-")
		if err != nil {
			return nil, fmt.Errorf("making the bridge's state directory: %w", err)
		}
		state, stateDir = dir+"/state.db", dir
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--no-token", "--log-level", "warn", "--state", state,
		"--acp", floodProvider + "=" + shellQuote(agent) + " demo-agent"}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the bridge: %w", err)
	}
	tail := &tailBuffer{max: 8 << 10}
	cmd.Stderr = tail
	start := time.Now()
	if err := cmd.Start(); err != nil {
		if stateDir != "" {
			_ = os.RemoveAll(stateDir)
		}
		return nil, fmt.Errorf("starting the bridge %s: %w", bin, err)
	}
	p := &bridgeProc{cmd: cmd, stderr: tail, waited: make(chan error, 1), stateDir: stateDir}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() { p.waited <- cmd.Wait() }()
	select {
	case line := <-lines:
		p.Startup = time.Since(start)
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "READY ")
		if !ok {
			p.stop()
			return nil, fmt.Errorf("the bridge printed %q instead of a READY line; its log ends with: %s", line, tail.String())
		}
		p.URL = url
		return p, nil
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		p.stop()
		return nil, fmt.Errorf("the bridge printed no READY line within 10s; its log ends with: %s", tail.String())
	}
}

func (p *bridgeProc) pid() int { return p.cmd.Process.Pid }

// usage sums the bridge's own figures; agent is its children's CPU time.
func (p *bridgeProc) usage() (bridge procUsage, agentCPU time.Duration, err error) {
	bridge, err = readProc(p.pid())
	if err != nil {
		return bridge, 0, err
	}
	for _, c := range childPIDs(p.pid()) {
		if cu, err := readProc(c); err == nil {
			agentCPU += cu.CPU
		}
	}
	return bridge, agentCPU, nil
}

// stop ends the bridge with SIGTERM (SIGKILL after 5s) and waits for it.
func (p *bridgeProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.waited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.waited
	}
	if p.stateDir != "" {
		_ = os.RemoveAll(p.stateDir)
	}
}

// shellQuote quotes s for the POSIX-like splitting of --acp.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
