package acp

import (
	"context"
	"errors"
	"strings"
	"time"
)

// This file is what operators see of a provider's agent process (metrics,
// the status page, readiness): counted where the process starts and ends,
// read on demand.

// procCounters is the history of a provider's agent processes. Guarded by
// Provider.mu.
type procCounters struct {
	starts, crashes, restarts int64
	startedAt                 time.Time // of the current process
	lastStartErr              string    // of the last failed start; cleared by a successful one
	lastStartErrAt            time.Time
}

// started records a process that finished its initialize handshake; after
// says whether an earlier process of the provider had ended before it.
func (c *procCounters) started(after bool) {
	c.starts++
	if after {
		c.restarts++
	}
	c.startedAt = time.Now()
	c.lastStartErr, c.lastStartErrAt = "", time.Time{}
}

// ensure is ensureProc that remembers why a start failed, for readiness
// and the status page. A start given up because the caller went away or
// the provider is closing says nothing about the agent.
func (p *Provider) ensure(ctx context.Context) (*agentProc, error) {
	a, err := p.ensureProc(ctx)
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		p.mu.Lock()
		if !p.closed {
			p.ops.lastStartErr, p.ops.lastStartErrAt = err.Error(), time.Now()
		}
		p.mu.Unlock()
	}
	return a, err
}

// noteExit counts a process that ended while it was the provider's
// current one: nobody asked it to stop (Close forgets the process before
// stopping it), so it crashed, or was killed for being stuck.
func (p *Provider) noteExit(a *agentProc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == a && !p.closed {
		p.ops.crashes++
	}
}

// ProcessStats describes a provider's agent process and its history.
type ProcessStats struct {
	// Running is true while an initialized agent process is alive; PID and
	// StartedAt describe it then.
	Running   bool
	PID       int
	StartedAt time.Time
	// Starts counts processes started (initialized), Restarts those of
	// them started after an earlier one had ended, Crashes the processes
	// that ended without being asked to.
	Starts, Restarts, Crashes int64
	// LastStartError is why the last attempt to start the agent failed,
	// "" when the last attempt succeeded (or none was made yet); its
	// first line is the reason, later ones the agent's last stderr lines.
	LastStartError   string
	LastStartErrorAt time.Time
	// Sessions is the number of open ACP sessions.
	Sessions int
}

// ProcessStats returns a snapshot of the agent process's state.
func (p *Provider) ProcessStats() ProcessStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := ProcessStats{
		Starts:           p.ops.starts,
		Restarts:         p.ops.restarts,
		Crashes:          p.ops.crashes,
		LastStartError:   p.ops.lastStartErr,
		LastStartErrorAt: p.ops.lastStartErrAt,
		Sessions:         len(p.sessions),
	}
	if a := p.proc; a != nil && !a.isExited() {
		st.Running, st.PID, st.StartedAt = true, a.pid, p.ops.startedAt
	}
	return st
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Ready reports an error when the agent was needed and could not be
// started: until a start succeeds, sessions of this provider fail. A
// provider whose agent has not been needed yet, or crashed and will be
// restarted on next use, is ready.
func (p *Provider) Ready() error {
	st := p.ProcessStats()
	if st.LastStartError == "" {
		return nil
	}
	return errors.New("its agent failed to start: " + firstLine(st.LastStartError))
}
