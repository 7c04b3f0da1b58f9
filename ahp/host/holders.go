package host

import (
	"errors"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// Several bridges may share one state file (each editor window runs its
// own `serve --stdio`). A session is driven by one of them at a time, the
// one holding it (store.Holding): this bridge claims a session when it
// creates it and when it brings a stored one into memory to serve a
// client, and its store releases them all when it closes. A session
// another live bridge holds is loaded here read-only (mirror.go); an
// action a client sends to it is rejected with a reason naming that
// bridge. A session whose
// holder is gone (exited, killed) is taken over by the first bridge that
// wants it.

// holding is the store's side of sharing, or nil without one that shares.
func (h *Host) holding() store.Holding {
	if h.opts.Store == nil {
		return nil
	}
	hs, _ := h.opts.Store.(store.Holding)
	return hs
}

// claimSession makes this bridge the holder of the session uri. It fails
// with a *store.HeldError when another live bridge holds it; any other
// failure of the store is logged and does not stop the session being
// served (the store may be failing for writes, and a session must stay
// usable then, as everything else is).
func (h *Host) claimSession(uri string) error {
	hs := h.holding()
	if hs == nil || hs.Holds(uri) {
		return nil
	}
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	took, err := hs.Claim(ctx, uri)
	var he *store.HeldError
	switch {
	case errors.As(err, &he):
		return he
	case err != nil:
		h.log.Warn().Err(err).Str("session", uri).Msg("could not record that this bridge drives the session in the state file")
	case took != nil:
		h.log.Info().Str("session", uri).Str("from", took.String()).Msg("took the session over from a bridge that is gone")
	}
	return nil
}

// claimNew is claimSession for a session that may not come to be here
// after all (not stored, refused, a race lost): undo gives the hold up
// again when this call made it, and does nothing when this bridge already
// held the session (something else here relies on that hold).
func (h *Host) claimNew(uri string) (undo func(), err error) {
	hs := h.holding()
	if hs == nil || hs.Holds(uri) {
		return func() {}, nil
	}
	if err := h.claimSession(uri); err != nil {
		return func() {}, err
	}
	return func() { h.releaseSession(uri) }, nil
}

// heldElsewhere says why an action on a channel that is not in memory
// cannot run here: the session (or the chat's session) is held by another
// live bridge. Empty when that is not the reason.
func (h *Host) heldElsewhere(channel string) string {
	hs := h.holding()
	if hs == nil || h.ds == nil {
		return ""
	}
	session := channel
	if strings.HasPrefix(channel, "ahp-chat:") {
		var ok bool
		if session, ok = h.sessionOfChat(channel); !ok {
			return ""
		}
	}
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	holder, held, err := hs.HolderOf(ctx, session)
	if err != nil || !held || hs.Holds(session) {
		return ""
	}
	return heldReason(&store.HeldError{Session: session, Holder: holder})
}

// heldReason is why a session another live bridge holds takes no action
// here, for the client that sent one.
func heldReason(he *store.HeldError) string {
	return he.Error() + "; continue it in that bridge's window, or close that bridge to take it over here"
}

// notFoundOrHeld is the error for a channel that is not here: not found,
// or, for a session another bridge holds that could not be loaded
// read-only (mirror.go), a message naming that bridge.
func (h *Host) notFoundOrHeld(uri string) *Error {
	err := notFoundError(uri)
	if reason := h.heldElsewhere(uri); reason != "" {
		err.Message = reason
	}
	return err
}

// releaseSession gives up this bridge's hold of a session that left its
// memory (disposed), so that another bridge may continue it. A failure is
// logged: the hold then lasts until this bridge exits.
func (h *Host) releaseSession(uri string) {
	hs := h.holding()
	if hs == nil || !hs.Holds(uri) {
		return
	}
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	if err := hs.Release(ctx, uri); err != nil {
		h.log.Warn().Err(err).Str("session", uri).Msg("could not release a disposed session in the state file; other bridges can take it once this one exits")
	}
}
