// Package ops is what operators and orchestrators see of a running bridge:
// health endpoints (/healthz for liveness, /readyz for readiness), Prometheus
// metrics (/metrics) and a small read-only status page (/), served on the
// AHP listener or on a listener of their own (`serve --ops-listen`).
//
// It reads the host's and the bridge's counters and snapshots when asked
// (on a scrape, a probe or a page load) rather than doing work per event:
// the metrics are collectors over counters the host and the bridge keep
// anyway, so that they cost the streaming hot path next to nothing
// (docs/performance.md measures it). Nothing here changes the bridge's
// state, and nothing of a session's content but its title is shown.
package ops
