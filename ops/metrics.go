package ops

import (
	"fmt"
	"net/http"
	"runtime"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/bridge"
)

// Metrics are the bridge's Prometheus metrics. Most are read from the
// host's and the bridge's counters on each scrape (see collector); the
// histograms are fed as things happen.
type Metrics struct {
	eventLatency  prometheus.Histogram
	storeWrite    prometheus.Histogram
	storeFailures prometheus.Counter
}

// NewMetrics registers the bridge's metrics with reg and makes the host
// measure the agent event → frame written latency. version labels
// ahp_bridge_build_info.
func NewMetrics(reg prometheus.Registerer, h *host.Host, b *bridge.Bridge, version string) (*Metrics, error) {
	m := &Metrics{
		eventLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ahp_bridge_agent_event_write_latency_seconds",
			Help: "Time from the host sequencing the action an agent event became to writing its frame to a client, " +
				"for one in 16 server-originated envelopes, per client.",
			// 50 µs to 13 s: a frame on loopback, to a client that has
			// fallen minutes behind.
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10),
		}),
		storeWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ahp_bridge_store_write_duration_seconds",
			Help:    "Time a write to the state store took.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 4, 8),
		}),
		storeFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ahp_bridge_store_write_failures_total",
			Help: "Writes to the state store that failed.",
		}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "ahp_bridge_build_info",
		Help:        "Always 1; its labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	build.Set(1)
	for _, c := range []prometheus.Collector{m.eventLatency, m.storeWrite, m.storeFailures, build, newCollector(h, b)} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the bridge's metrics: %w", err)
		}
	}
	h.ObserveWriteLatency(m.eventLatency.Observe)
	return m, nil
}

// ObserveStoreWrite records one write to the state store: how long it
// took, and whether it failed.
func (m *Metrics) ObserveStoreWrite(d time.Duration, err error) {
	m.storeWrite.Observe(d.Seconds())
	if err != nil {
		m.storeFailures.Inc()
	}
}

// MetricsHandler serves the metrics gathered from g in the Prometheus
// exposition formats.
func MetricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// collector reads the host's and the bridge's counters on each scrape, so
// that counting costs the hot path one atomic add (or nothing: the
// serverSeq is the count of actions sequenced) instead of a metric update
// per event.
type collector struct {
	h *host.Host
	b *bridge.Bridge

	clients, sessions                       *prometheus.Desc
	turnsStarted, turnsEnded                *prometheus.Desc
	sequenced, framesWritten, bytesWritten  *prometheus.Desc
	slowDropped, reconnects                 *prometheus.Desc
	procStarted, procCrashed, procRestarted *prometheus.Desc
	procRunning, permissions                *prometheus.Desc
}

func newCollector(h *host.Host, b *bridge.Bridge) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		h: h, b: b,
		clients:       d("ahp_bridge_clients", "Connected AHP clients by negotiated protocol version (\"none\" before initialize).", "protocol_version"),
		sessions:      d("ahp_bridge_sessions", "Live sessions by state.", "state"),
		turnsStarted:  d("ahp_bridge_turns_started_total", "Turns started, by provider.", "provider"),
		turnsEnded:    d("ahp_bridge_turns_ended_total", "Turns ended, by provider and outcome (completed, cancelled, failed).", "provider", "outcome"),
		sequenced:     d("ahp_bridge_actions_sequenced_total", "Actions sequenced (the last serverSeq handed out)."),
		framesWritten: d("ahp_bridge_frames_written_total", "Frames written to AHP clients."),
		bytesWritten:  d("ahp_bridge_written_bytes_total", "Bytes of the frames written to AHP clients."),
		slowDropped:   d("ahp_bridge_slow_clients_dropped_total", "Connections closed because their outbound queue overflowed."),
		reconnects:    d("ahp_bridge_reconnects_total", "Reconnects by how they were answered: replay of the missed envelopes, or fresh snapshots.", "kind"),
		procStarted:   d("ahp_bridge_agent_processes_started_total", "ACP agent processes started, by provider.", "provider"),
		procCrashed:   d("ahp_bridge_agent_processes_crashed_total", "ACP agent processes that ended without being asked to, by provider.", "provider"),
		procRestarted: d("ahp_bridge_agent_processes_restarted_total", "ACP agent processes started after an earlier one ended, by provider.", "provider"),
		procRunning:   d("ahp_bridge_agent_processes_running", "Whether the provider's ACP agent process is running.", "provider"),
		permissions:   d("ahp_bridge_permission_requests_total", "Permission requests by outcome: approved or denied by a client, cancelled, or auto (the --approve policy).", "outcome"),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.clients, c.sessions, c.turnsStarted, c.turnsEnded, c.sequenced,
		c.framesWritten, c.bytesWritten, c.slowDropped, c.reconnects, c.procStarted, c.procCrashed,
		c.procRestarted, c.procRunning, c.permissions} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}

	versions := map[string]int{}
	for _, cl := range c.h.Clients() {
		v := cl.ProtocolVersion
		if v == "" {
			v = "none"
		}
		versions[v]++
	}
	for v, n := range versions {
		gauge(c.clients, n, v)
	}
	states := map[string]int{}
	for _, s := range host.SessionStates() {
		states[s] = 0
	}
	for _, s := range c.h.Sessions() {
		states[s.State]++
	}
	for s, n := range states {
		gauge(c.sessions, n, s)
	}

	hs, oc := c.h.Stats(), c.h.OpsCounters()
	counter(c.sequenced, hs.ServerSeq)
	counter(c.framesWritten, oc.FramesWritten)
	counter(c.bytesWritten, oc.BytesWritten)
	counter(c.slowDropped, hs.SlowConnectionsClosed)
	counter(c.reconnects, oc.ReplayReconnects, "replay")
	counter(c.reconnects, oc.SnapshotReconnects, "snapshot")

	bs := c.b.Stats()
	providers := make([]string, 0, len(bs.Turns))
	for id := range bs.Turns {
		providers = append(providers, id)
	}
	sort.Strings(providers)
	for _, id := range providers {
		t := bs.Turns[id]
		counter(c.turnsStarted, t.Started, id)
		counter(c.turnsEnded, t.Completed, id, bridge.TurnCompleted)
		counter(c.turnsEnded, t.Cancelled, id, bridge.TurnCancelled)
		counter(c.turnsEnded, t.Failed, id, bridge.TurnFailed)
	}
	counter(c.permissions, bs.Permissions.Approved, bridge.PermissionApproved)
	counter(c.permissions, bs.Permissions.Denied, bridge.PermissionDenied)
	counter(c.permissions, bs.Permissions.Cancelled, bridge.PermissionCancelled)
	counter(c.permissions, bs.Permissions.Auto, bridge.PermissionAuto)

	// Only the configured providers: a retired one may share its id with
	// its replacement, and a series per id is what a dashboard wants.
	for _, p := range c.b.Providers() {
		ps, ok := processStats(p.Provider)
		if p.Retired || !ok {
			continue
		}
		counter(c.procStarted, ps.Starts, p.ID)
		counter(c.procCrashed, ps.Crashes, p.ID)
		counter(c.procRestarted, ps.Restarts, p.ID)
		running := 0
		if ps.Running {
			running = 1
		}
		gauge(c.procRunning, running, p.ID)
	}
}

// processStats returns the agent process state of a provider that runs
// one (ACP).
func processStats(p any) (acp.ProcessStats, bool) {
	r, ok := p.(interface{ ProcessStats() acp.ProcessStats })
	if !ok {
		return acp.ProcessStats{}, false
	}
	return r.ProcessStats(), true
}
