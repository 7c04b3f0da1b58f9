package main

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sync"
	"syscall"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// reloadOnHangup reloads the configuration on every SIGHUP until the
// returned stop is called; stop waits for a reload in progress. The
// settings are read again exactly as at start-up (the same flags, which
// still win over the file), so a reload changes what the file changes.
func (s *server) reloadOnHangup(args []string) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-hup:
				s.reload(args)
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		wg.Wait()
	}
}

// reload applies the providers of the configuration args describe now:
// new ones are offered at once, removed ones are no longer offered, and
// changed ones are replaced; sessions keep the agent they started with
// until they end. Other settings take effect at the next start, which it
// says. A configuration that does not parse or validate changes nothing.
func (s *server) reload(args []string) {
	log := s.log.With().Str("component", "reload").Logger()
	cfg, _, err := parseServe(args)
	if err != nil {
		log.Error().Err(err).Msg("SIGHUP: the configuration is not valid; keeping the running one")
		return
	}
	if keys := restartOnlyChanges(s.cfg, cfg); len(keys) > 0 {
		log.Warn().Strs("keys", keys).Msg("SIGHUP: these settings changed; they take effect at the next start (a reload applies only agents and agentChannels)")
	}

	built := map[string]builtProvider{}
	var order []backend.Provider
	var added, changed, fresh []string
	var made []backend.Provider // built for this reload, closed if it fails
	add := func(id string, spec any, build func() (builtProvider, error)) error {
		old, ok := s.providers[id]
		if ok && reflect.DeepEqual(old.spec, spec) {
			built[id] = old
			order = append(order, old.provider)
			return nil
		}
		bp, err := build()
		if err != nil {
			return err
		}
		made = append(made, bp.provider)
		built[id] = bp
		order = append(order, bp.provider)
		if ok {
			changed = append(changed, id)
		} else {
			added = append(added, id)
		}
		fresh = append(fresh, id)
		return nil
	}
	for _, a := range cfg.Agents {
		spec := a
		spec.flag = ""
		if err := add(a.ID, spec, func() (builtProvider, error) { return buildAgent(a, s.cfg.ReadOnlyFiles, s.log) }); err != nil {
			log.Error().Err(err).Msg("SIGHUP: the configuration is not valid; keeping the running one")
			s.closeProviders(made)
			return
		}
	}
	for _, c := range cfg.AgentChannels {
		spec := c
		spec.flag = ""
		_ = add(c.ID, spec, func() (builtProvider, error) { return buildAgentChan(c, s.log), nil })
	}
	var removed []string
	for id := range s.providers {
		if _, ok := built[id]; !ok {
			removed = append(removed, id)
		}
	}
	slices.Sort(removed)
	ids := make([]string, 0, len(order))
	for _, p := range order {
		ids = append(ids, p.Info().ID)
	}
	if len(fresh) == 0 && len(removed) == 0 && slices.Equal(ids, s.order) {
		log.Info().Msg("SIGHUP: the providers are unchanged")
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*shutdownGrace)
	defer cancel()
	if err := s.bridge.SetProviders(ctx, order); err != nil {
		log.Error().Err(err).Msg("SIGHUP: could not apply the providers; keeping the running ones")
		s.closeProviders(made)
		return
	}
	s.providers, s.order = built, ids
	ev := log.Info()
	if added != nil {
		ev = ev.Strs("added", added)
	}
	if removed != nil {
		ev = ev.Strs("removed", removed)
	}
	if changed != nil {
		ev = ev.Strs("changed", changed)
	}
	ev.Msg("SIGHUP: reloaded the providers; running sessions keep their agent until they end")
}

func (s *server) closeProviders(ps []backend.Provider) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*shutdownGrace)
	defer cancel()
	for _, p := range ps {
		_ = p.Close(ctx)
	}
}

// restartOnlyChanges lists the settings other than the providers that
// differ between two configurations, by config key (never their values:
// some are secrets).
func restartOnlyChanges(was, now Config) []string {
	flatten := func(c Config) map[string]json.RawMessage {
		c.Agents, c.AgentChannels = nil, nil
		b, _ := json.Marshal(c)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		return m
	}
	a, b := flatten(was), flatten(now)
	var keys []string
	for k := range a {
		if string(a[k]) != string(b[k]) {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
