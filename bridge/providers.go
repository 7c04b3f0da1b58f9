package bridge

import (
	"context"
	"errors"
	"sort"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// This file lets the set of providers change while the bridge runs (a
// configuration reload): sessions keep the provider they started on, and a
// provider nobody can choose any more is closed once its sessions end.

// errBridgeClosed is returned by SetProviders after Close.
var errBridgeClosed = errors.New("bridge: closed")

// SetProviders replaces the providers the bridge offers, in the order
// given, and republishes the root agent list. A provider whose instance is
// in ps is kept as it is (its agent keeps running). One that is not — a
// provider removed, or replaced by another instance with the same id — is
// retired: the sessions already running on it keep it until they end,
// new sessions cannot choose it, and it is closed (its agent stopped) once
// its last session is disposed, or at once when it has none.
func (b *Bridge) SetProviders(ctx context.Context, ps []backend.Provider) error {
	providers := map[string]backend.Provider{}
	order := make([]string, 0, len(ps))
	for _, p := range ps {
		id := p.Info().ID
		if _, dup := providers[id]; dup {
			return errors.New("bridge: provider id " + id + " is given twice")
		}
		providers[id] = p
		order = append(order, id)
	}
	kept := map[backend.Provider]bool{}
	for _, p := range ps {
		kept[p] = true
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errBridgeClosed
	}
	var fresh []string // ids new to this run: their models may be stored or probed
	for _, id := range order {
		if _, had := b.providers[id]; !had {
			fresh = append(fresh, id)
		}
	}
	for id, old := range b.providers {
		if !kept[old] {
			b.retired = append(b.retired, old)
			// What the old agent reported is not the new one's.
			delete(b.models, id)
			delete(b.options, id)
		}
	}
	b.providers, b.order = providers, order
	idle := b.takeIdleRetiredLocked()
	b.mu.Unlock()
	b.closeProviders(ctx, idle)
	b.seedModels(fresh) // models.go
	return b.publishAgents()
}

// provider returns the provider for id ("" = the first one) and the ids
// configured, read under the lock SetProviders changes them under.
func (b *Bridge) provider(id string) (backend.Provider, string, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id == "" && len(b.order) > 0 {
		id = b.order[0]
	}
	return b.providers[id], id, append([]string(nil), b.order...)
}

// takeIdleRetiredLocked removes and returns the retired providers no
// session runs on any more. Called with b.mu held.
func (b *Bridge) takeIdleRetiredLocked() []backend.Provider {
	if len(b.retired) == 0 {
		return nil
	}
	busy := map[backend.Provider]bool{}
	for _, s := range b.sessions {
		busy[s.provider] = true
	}
	var idle []backend.Provider
	kept := b.retired[:0]
	for _, p := range b.retired {
		if busy[p] {
			kept = append(kept, p)
		} else {
			idle = append(idle, p)
		}
	}
	b.retired = kept
	return idle
}

// closeIdleRetired closes the retired providers whose last session has
// ended.
func (b *Bridge) closeIdleRetired(ctx context.Context) {
	b.mu.Lock()
	idle := b.takeIdleRetiredLocked()
	b.mu.Unlock()
	b.closeProviders(ctx, idle)
}

// closeRetired closes every retired provider (at Close, after their
// sessions have been shut down).
func (b *Bridge) closeRetired(ctx context.Context) {
	b.mu.Lock()
	all := b.retired
	b.retired = nil
	b.mu.Unlock()
	b.closeProviders(ctx, all)
}

func (b *Bridge) closeProviders(ctx context.Context, ps []backend.Provider) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Info().ID < ps[j].Info().ID })
	for _, p := range ps {
		if err := p.Close(ctx); err != nil {
			b.log.Warn().Err(err).Str("provider", p.Info().ID).Msg("closing a provider the configuration no longer has")
			continue
		}
		b.log.Info().Str("provider", p.Info().ID).Msg("closed a provider the configuration no longer has")
	}
}
