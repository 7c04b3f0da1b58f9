package main

import (
	"context"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/store"
)

// stateNone is the --state value that keeps everything in memory.
const stateNone = "none"

// statePath is the state file cfg names: --state, the config's state key,
// else the default one. "" with a nil error means none.
func statePath(state string) (string, error) {
	switch state {
	case stateNone:
		return "", nil
	case "":
		p, err := store.DefaultPath()
		if err != nil {
			return "", usagef("%v; name one with --state FILE, or keep sessions in memory with --state none", err)
		}
		return p, nil
	}
	return state, nil
}

// openStateStore opens the state file serve keeps its sessions in, or
// returns nil for --state none. A file that could not be used and was moved
// aside is said on stderr (through the log), and the bridge starts empty.
// Other bridges may use the same file at once; each drives the sessions it
// holds (store.Holding).
func openStateStore(cfg Config, log zerolog.Logger) (*store.SQLite, error) {
	path, err := statePath(cfg.State)
	if err != nil || path == "" {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), stateOpenTimeout)
	defer cancel()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return nil, err
	}
	if m := st.MovedAside(); m != nil {
		log.Warn().Str("state", st.Path()).Str("movedTo", m.MovedTo).Msg(m.String())
	}
	log.Info().Str("state", st.Path()).Msg("keeping sessions in the state file")
	return st, nil
}

// announceAddress puts the address this bridge listens on into its holds
// of sessions, so that another bridge refusing a turn on one of them can
// say where it is driven.
func (s *server) announceAddress(url string) {
	if s.state == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stateOpenTimeout)
	defer cancel()
	if err := s.state.SetAddress(ctx, strings.TrimSuffix(url, "/")); err != nil {
		s.log.Warn().Err(err).Msg("could not record this bridge's address in the state file")
	}
}

// stateOpenTimeout bounds opening (and migrating) the state file.
const stateOpenTimeout = time.Minute
