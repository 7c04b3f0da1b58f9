package bridge

import (
	"sync"
	"sync/atomic"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// This file is what operators see of the bridge (package ops reads it for
// metrics and the status page): counters kept where turns and permission
// requests are decided, and a read-only view of the providers.

// Turn outcomes, as TurnCounts and the metrics name them.
const (
	TurnCompleted = "completed"
	TurnCancelled = "cancelled"
	TurnFailed    = "failed"
)

// Permission request outcomes, as PermissionCounts and the metrics name
// them.
const (
	PermissionApproved  = "approved"
	PermissionDenied    = "denied"
	PermissionCancelled = "cancelled"
	PermissionAuto      = "auto"
)

// opsCounters are the bridge's operational counters. Turns are counted
// under a mutex (a turn is rare next to its events); permission requests
// with atomics.
type opsCounters struct {
	mu    sync.Mutex
	turns map[string]*TurnCounts // by provider id

	approved, denied, cancelled, auto atomic.Int64
}

// TurnCounts counts one provider's turns. Started = Completed + Cancelled
// + Failed + the turns running now.
type TurnCounts struct {
	Started, Completed, Cancelled, Failed int64
}

// PermissionCounts counts permission requests by how they were answered:
// by a client (approved, denied), by nobody (cancelled: the turn ended
// first, or the agent asked again), or by the --approve policy (auto).
type PermissionCounts struct {
	Approved, Denied, Cancelled, Auto int64
}

// Stats are the bridge's counters.
type Stats struct {
	// Turns by provider id.
	Turns       map[string]TurnCounts
	Permissions PermissionCounts
}

func (o *opsCounters) turnCounts(provider string) *TurnCounts {
	if o.turns == nil {
		o.turns = map[string]*TurnCounts{}
	}
	tc := o.turns[provider]
	if tc == nil {
		tc = &TurnCounts{}
		o.turns[provider] = tc
	}
	return tc
}

func (o *opsCounters) turnStarted(provider string) {
	o.mu.Lock()
	o.turnCounts(provider).Started++
	o.mu.Unlock()
}

func (o *opsCounters) turnEnded(provider, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	tc := o.turnCounts(provider)
	switch outcome {
	case TurnCompleted:
		tc.Completed++
	case TurnCancelled:
		tc.Cancelled++
	default:
		tc.Failed++
	}
}

// turnOutcome classifies how a turn that reached the agent ended; gone
// says the clients had cancelled it already.
func turnOutcome(res backend.TurnResult, err error, gone bool) string {
	switch {
	case err != nil:
		return TurnFailed
	case gone || res.StopReason == backend.StopCancelled:
		return TurnCancelled
	}
	return TurnCompleted
}

// confirmOutcome names a client's answer to a permission request.
func confirmOutcome(approved bool) string {
	if approved {
		return PermissionApproved
	}
	return PermissionDenied
}

func (o *opsCounters) permission(outcome string) {
	switch outcome {
	case PermissionApproved:
		o.approved.Add(1)
	case PermissionDenied:
		o.denied.Add(1)
	case PermissionAuto:
		o.auto.Add(1)
	default:
		o.cancelled.Add(1)
	}
}

// Stats returns a snapshot of the bridge's counters.
func (b *Bridge) Stats() Stats {
	o := &b.ops
	st := Stats{Turns: map[string]TurnCounts{}, Permissions: PermissionCounts{
		Approved:  o.approved.Load(),
		Denied:    o.denied.Load(),
		Cancelled: o.cancelled.Load(),
		Auto:      o.auto.Load(),
	}}
	o.mu.Lock()
	for id, tc := range o.turns {
		st.Turns[id] = *tc
	}
	o.mu.Unlock()
	return st
}

// ProviderStatus describes one provider for operators.
type ProviderStatus struct {
	ID          string
	DisplayName string
	// Provider is the backend itself, for what only its kind can tell
	// (an ACP provider's agent process).
	Provider backend.Provider
	// Sessions is the number of the bridge's sessions running on it.
	Sessions int
	// Retired is true for a provider a reload removed or replaced that
	// still serves the sessions started on it.
	Retired bool
}

// Providers returns the configured providers in their configured order,
// then the retired ones still serving sessions.
func (b *Bridge) Providers() []ProviderStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	count := map[backend.Provider]int{}
	for _, s := range b.sessions {
		count[s.provider]++
	}
	out := make([]ProviderStatus, 0, len(b.order)+len(b.retired))
	for _, id := range b.order {
		p := b.providers[id]
		info := p.Info()
		out = append(out, ProviderStatus{ID: id, DisplayName: firstNonEmpty(info.DisplayName, id), Provider: p, Sessions: count[p]})
	}
	for _, p := range b.retired {
		info := p.Info()
		out = append(out, ProviderStatus{ID: info.ID, DisplayName: firstNonEmpty(info.DisplayName, info.ID), Provider: p, Sessions: count[p], Retired: true})
	}
	return out
}
