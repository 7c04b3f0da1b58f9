package host

import (
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// This file is what operators see of the host (package ops reads it for
// metrics and the status page): counters kept where the events happen,
// read on scrape, and read-only snapshots of the connections and
// sessions. Nothing here changes state, and nothing of a session's
// content but its title leaves it.

// latencySampleMask picks which server-originated envelopes have their
// sequenced → written latency measured: one in 16. Timing every envelope
// costs two clock reads and a histogram update per frame on the hot path;
// one in 16 keeps the distribution and costs a mask test per envelope.
const latencySampleMask = 15

// opsCounters are the operational counters that Stats does not carry.
// The fields are only ever added to.
type opsCounters struct {
	framesWritten atomic.Int64
	bytesWritten  atomic.Int64
	replays       atomic.Int64
	snapshots     atomic.Int64
	// probe, when set, receives the sampled latencies.
	probe atomic.Pointer[latencyProbe]
}

// latencyProbe measures sampled envelopes from sequencing to written.
// Times are nanoseconds since epoch (monotonic), so a queued frame carries
// an int64 rather than a time.Time.
type latencyProbe struct {
	epoch   time.Time
	observe func(seconds float64)
}

// OpsCounters are counters for metrics, beside Stats.
type OpsCounters struct {
	// FramesWritten and BytesWritten count frames written to
	// connections and their bytes.
	FramesWritten, BytesWritten int64
	// ReplayReconnects counts `reconnect`s answered by replaying the
	// missed envelopes; SnapshotReconnects those answered with fresh
	// snapshots because the gap was no longer in the replay ring.
	ReplayReconnects, SnapshotReconnects int64
}

// OpsCounters returns a snapshot of the operational counters.
func (h *Host) OpsCounters() OpsCounters {
	return OpsCounters{
		FramesWritten:      h.ops.framesWritten.Load(),
		BytesWritten:       h.ops.bytesWritten.Load(),
		ReplayReconnects:   h.ops.replays.Load(),
		SnapshotReconnects: h.ops.snapshots.Load(),
	}
}

// ObserveWriteLatency makes the host measure, for a sample of the
// server-originated envelopes (the actions agent events become), the time
// from sequencing the envelope to writing its frame to each connection,
// and hand it to observe in seconds. observe is called from the
// connections' write loops concurrently and must be cheap and safe for
// concurrent use. Call it before serving connections.
func (h *Host) ObserveWriteLatency(observe func(seconds float64)) {
	h.ops.probe.Store(&latencyProbe{epoch: time.Now(), observe: observe})
}

// sampleAt returns the stamp an envelope's frames carry to their write
// loops: zero (not measured) unless it is a sampled server-originated one
// and a probe is installed.
func (h *Host) sampleAt(seq int64, origin *wire.ActionOrigin) int64 {
	if origin != nil || seq&latencySampleMask != 0 {
		return 0
	}
	p := h.ops.probe.Load()
	if p == nil {
		return 0
	}
	return int64(time.Since(p.epoch)) + 1 // never 0
}

// written counts a frame the write loop wrote and, for a sampled one,
// observes its latency.
func (h *Host) written(f outFrame) {
	h.ops.framesWritten.Add(1)
	h.ops.bytesWritten.Add(int64(len(f.b)))
	if f.at != 0 {
		if p := h.ops.probe.Load(); p != nil {
			p.observe(float64(int64(time.Since(p.epoch))-f.at) / 1e9)
		}
	}
}

// ClientInfo describes one connection for operators.
type ClientInfo struct {
	// Conn numbers the connections in the order they were accepted.
	Conn uint64
	// ProtocolVersion is the version negotiated, "" before initialize.
	ProtocolVersion string
	// RemoteAddr is the peer's address when the transport knows it
	// (WebSocket), else "".
	RemoteAddr string
	// QueueDepth is the number of frames waiting to be written.
	QueueDepth int
	// Subscriptions is the number of channels subscribed to.
	Subscriptions int
}

// Clients returns the connections being served, in the order they were
// accepted.
func (h *Host) Clients() []ClientInfo {
	h.mu.Lock()
	out := make([]ClientInfo, 0, len(h.conns))
	for c := range h.conns {
		ci := ClientInfo{Conn: c.id, Subscriptions: len(c.subs)}
		if c.initialized {
			ci.ProtocolVersion = c.version.String()
		}
		if ra, ok := c.tc.(interface{ RemoteAddr() net.Addr }); ok {
			if a := ra.RemoteAddr(); a != nil {
				ci.RemoteAddr = a.String()
			}
		}
		// Host.mu before a connection's qmu is the order send already
		// takes them in (commit queues under Host.mu).
		c.qmu.Lock()
		ci.QueueDepth = len(c.queue) + len(c.held)
		c.qmu.Unlock()
		out = append(out, ci)
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b ClientInfo) int { return int(a.Conn - b.Conn) })
	return out
}

// Session states as SessionInfo.State names them.
const (
	SessionCreating       = "creating"
	SessionCreationFailed = "creation_failed"
	SessionIdle           = "idle"
	SessionWorking        = "working"
	SessionInputNeeded    = "input_needed"
	SessionError          = "error"
)

// SessionStates lists every SessionInfo.State, so that a gauge can show
// the states no session is in as 0.
func SessionStates() []string {
	return []string{SessionCreating, SessionCreationFailed, SessionIdle, SessionWorking, SessionInputNeeded, SessionError}
}

// SessionInfo describes one session for operators: its title and
// counters, none of its content.
type SessionInfo struct {
	URI      string
	Title    string
	Provider string
	// State is one of SessionStates(): the lifecycle while the session is
	// not ready, then what its chats are doing.
	State string
	// Clients is the number of connections subscribed to the session or
	// one of its chats.
	Clients int
	// Turns counts the turns of its chats the host holds, the running
	// ones included.
	Turns int
	// LastActivity is when the session or one of its chats last changed.
	LastActivity time.Time
}

// Sessions returns the live sessions, most recently active first.
func (h *Host) Sessions() []SessionInfo {
	h.mu.Lock()
	var groups []*sessionGroup
	for _, ch := range h.channels {
		if ch.kind == chanSession {
			groups = append(groups, ch.group)
		}
	}
	h.mu.Unlock()
	out := make([]SessionInfo, 0, len(groups))
	for _, g := range groups {
		g.mu.Lock()
		if g.session.removed {
			g.mu.Unlock()
			continue
		}
		sum := summaryOf(g)
		si := SessionInfo{URI: g.session.uri, Title: sum.Title, Provider: sum.Provider}
		si.State = sessionState(g.session.session.Lifecycle, sum.Status)
		if t, err := time.Parse(time.RFC3339Nano, sum.ModifiedAt); err == nil {
			si.LastActivity = t
		}
		for _, c := range g.chats {
			si.Turns += len(c.chat.st.Turns)
			if c.chat.st.ActiveTurn != nil {
				si.Turns++
			}
		}
		// A group's mutex before Host.mu is the lock order.
		h.mu.Lock()
		clients := map[*conn]struct{}{}
		for c := range g.session.subs {
			clients[c] = struct{}{}
		}
		for _, ch := range g.chats {
			for c := range ch.subs {
				clients[c] = struct{}{}
			}
		}
		h.mu.Unlock()
		si.Clients = len(clients)
		g.mu.Unlock()
		out = append(out, si)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := b.LastActivity.Compare(a.LastActivity); c != 0 {
			return c
		}
		return strings.Compare(a.URI, b.URI)
	})
	return out
}

// sessionState names what a session is doing.
func sessionState(lc wire.SessionLifecycle, st wire.SessionStatus) string {
	switch lc {
	case wire.SessionLifecycleCreating:
		return SessionCreating
	case wire.SessionLifecycleFailed:
		return SessionCreationFailed
	}
	switch {
	case st&wire.SessionStatusInputNeeded == wire.SessionStatusInputNeeded:
		return SessionInputNeeded
	case st&wire.SessionStatusInProgress != 0:
		return SessionWorking
	case st&wire.SessionStatusError != 0:
		return SessionError
	}
	return SessionIdle
}
