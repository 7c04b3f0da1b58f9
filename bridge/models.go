package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file makes AgentInfo.models non-empty before a provider's first
// session. ACP agents tell their models only in the result of session/new,
// and a client such as VS Code shows "No models available" (and cannot
// start a turn) for a provider whose catalogue has none. So the bridge
// remembers each provider's models in the state store, publishes them at
// start, and, for a provider it has never seen run, opens one throwaway
// agent session in the background to learn them (when the provider allows
// it: backend.ProviderInfo.ProbeModels).

// ModelStore keeps each provider's models across restarts of the bridge
// (*store.SQLite). The models are stored as a JSON array of AHP model infos.
type ModelStore interface {
	PutProviderModels(ctx context.Context, provider string, models json.RawMessage) error
	ProviderModels(ctx context.Context, provider string) (json.RawMessage, error)
}

// modelStoreTimeout bounds one read or write of a provider's models.
const modelStoreTimeout = 10 * time.Second

// probeTimeout bounds a probe: starting the agent, its session/new, and the
// settings report that follows.
const probeTimeout = 2 * time.Minute

// seedModels gives each of the providers without known models the models
// stored for it, and starts a probe for those that still have none and
// allow one. It does not publish: the caller does.
func (b *Bridge) seedModels(ids []string) {
	var probe []backend.Provider
	for _, id := range ids {
		b.mu.Lock()
		p := b.providers[id]
		known := len(b.models[id]) > 0
		b.mu.Unlock()
		if p == nil || known {
			continue
		}
		info := p.Info()
		if len(info.Models) > 0 {
			continue
		}
		if models := b.storedModels(id); len(models) > 0 {
			b.mu.Lock()
			if len(b.models[id]) == 0 {
				b.models[id] = models
			}
			b.mu.Unlock()
			continue
		}
		if info.ProbeModels {
			probe = append(probe, p)
		}
	}
	for _, p := range probe {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.probeModels(p)
		}()
	}
}

// storedModels reads a provider's models from the store; none when there
// is no store, nothing stored, or the stored value cannot be read (said in
// the log: the provider's next session stores them again).
func (b *Bridge) storedModels(provider string) []backend.ModelInfo {
	if b.opts.Models == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(b.ctx, modelStoreTimeout)
	defer cancel()
	raw, err := b.opts.Models.ProviderModels(ctx, provider)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		b.log.Warn().Err(err).Str("provider", provider).Msg("could not read the models this provider offered before")
		return nil
	}
	var infos []wire.SessionModelInfo
	if err := json.Unmarshal(raw, &infos); err != nil {
		b.log.Warn().Err(err).Str("provider", provider).Msg("the stored models of this provider cannot be read; they are learned again from its next session")
		return nil
	}
	out := make([]backend.ModelInfo, 0, len(infos))
	for _, m := range infos {
		if m.ID == "" {
			continue
		}
		name := m.Name
		if name == m.ID {
			name = ""
		}
		out = append(out, backend.ModelInfo{ID: m.ID, Name: name})
	}
	return out
}

// storeModels remembers a provider's models for the next start, in the
// background: it is called under a chat's lock, and a write to the state
// file must not hold up the chat's events. Each write stores the models the
// provider has when it runs (storeMu orders them), so the last one stored is
// the newest. A failure is logged: the models are still published for this
// run.
func (b *Bridge) storeModels(provider string) {
	if b.opts.Models == nil {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		b.storeMu.Lock()
		defer b.storeMu.Unlock()
		b.mu.Lock()
		models := slices.Clone(b.models[provider])
		b.mu.Unlock()
		if len(models) == 0 {
			return
		}
		raw, err := json.Marshal(modelInfos(provider, models))
		if err != nil {
			b.log.Warn().Err(err).Str("provider", provider).Msg("could not encode the provider's models")
			return
		}
		ctx, cancel := context.WithTimeout(b.ctx, modelStoreTimeout)
		defer cancel()
		if err := b.opts.Models.PutProviderModels(ctx, provider, raw); err != nil {
			b.log.Warn().Err(err).Str("provider", provider).Msg("could not store the provider's models for the next start")
		}
	}()
}

// modelInfos is how models are published in AgentInfo.models.
func modelInfos(provider string, models []backend.ModelInfo) []wire.SessionModelInfo {
	out := make([]wire.SessionModelInfo, 0, len(models))
	for _, m := range models {
		out = append(out, wire.SessionModelInfo{ID: m.ID, Provider: provider, Name: firstNonEmpty(m.Name, m.ID)})
	}
	return out
}

// probeModels opens one agent session that nobody asked for, in an empty
// directory of its own, only to learn the models (and the other settings)
// its agent offers; then closes it. A probe that fails — the agent cannot
// start, or wants a sign-in first — only logs: the provider's first real
// session reports the models as before, and nothing waits for the probe.
func (b *Bridge) probeModels(p backend.Provider) {
	id := p.Info().ID
	log := b.log.With().Str("provider", id).Logger()
	ctx, cancel := context.WithTimeout(b.ctx, probeTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "ahp-bridge-models-")
	if err != nil {
		log.Warn().Err(err).Msg("could not make a directory to ask the agent for its models")
		return
	}
	defer os.RemoveAll(dir)
	settings := make(chan []backend.ConfigOption, 1)
	sink := backend.SinkFunc(func(ev backend.Event) {
		if e, ok := ev.(backend.Attached); ok {
			b.holdAgentSession(id, e.ID) // external.go: not one to list
		}
		if e, ok := ev.(backend.ConfigChanged); ok {
			select {
			case settings <- e.Options:
			default:
			}
		}
	})
	log.Info().Msg("starting the agent once to learn its models (no session of this provider is stored yet)")
	sess, err := p.OpenSession(ctx, backend.SessionOptions{SessionID: "models-" + NewUUID(), Cwd: dir}, sink)
	if err != nil {
		log.Info().Err(err).Msg("could not learn the agent's models before its first session; they show once a session opens")
		return
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), configTimeout)
		defer ccancel()
		if err := sess.Close(cctx); err != nil {
			log.Debug().Err(err).Msg("closing the session that asked for the models")
		}
	}()
	wait := time.NewTimer(configTimeout)
	defer wait.Stop()
	select {
	case opts := <-settings:
		b.learnModels(id, opts, true)
	case <-wait.C:
		log.Info().Msg("the agent reported no settings; its models show once a session opens")
	case <-ctx.Done():
	}
}
