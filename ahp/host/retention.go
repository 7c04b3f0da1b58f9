package host

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file deletes archived sessions once they are old, when
// Options.ArchiveRetention asks for it (off by default: disposeSession
// archives a session with turns, archive.go, and only `ahp-bridge sessions
// delete` deletes it). A session counts as old when it is archived (its
// status has IsArchived, whoever set it) and was last modified before the
// retention period; it is deleted at start and every hour (or every
// retention period, when shorter), with its rows, and announced with
// root/sessionRemoved. A live session is deleted only while nobody is
// subscribed to it and no turn runs in it.

// retentionSweepEvery is how often archived sessions are looked at.
const retentionSweepEvery = time.Hour

// startRetention runs the retention sweeps until the host closes. Called
// by Open when Options.ArchiveRetention is set.
func (h *Host) startRetention() {
	every := min(retentionSweepEvery, max(h.opts.ArchiveRetention, time.Minute))
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.sweepArchived()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-t.C:
				h.sweepArchived()
			}
		}
	}()
}

// sweepArchived deletes the archived sessions last modified before the
// retention period, live and stored, and returns how many it deleted.
func (h *Host) sweepArchived() int {
	if h.opts.ArchiveRetention <= 0 {
		return 0 // off
	}
	cut := time.UnixMilli(h.opts.Clock()).Add(-h.opts.ArchiveRetention)
	n := 0
	h.mu.Lock()
	var live []*sessionGroup
	for _, ch := range h.channels {
		if ch.kind == chanSession && ch.group != nil {
			live = append(live, ch.group)
		}
	}
	h.mu.Unlock()
	for _, g := range live {
		if h.expireLive(g, cut) {
			n++
		}
	}
	if h.ds != nil {
		n += h.expireStored(cut)
	}
	if n > 0 {
		h.log.Info().Int("sessions", n).Dur("retention", h.opts.ArchiveRetention).
			Msg("deleted archived sessions older than the archive retention")
	}
	return n
}

// expired reports whether a session's summary says it is archived, and
// it was neither archived (archivedAt, Unix ms, 0 when not known) nor
// modified since cut.
func expired(s wire.SessionSummary, archivedAt int64, cut time.Time) bool {
	if !s.Status.Has(wire.SessionStatusIsArchived) {
		return false
	}
	last := persist.ISOTime(s.ModifiedAt)
	if a := time.UnixMilli(archivedAt); archivedAt > 0 && a.After(last) {
		last = a
	}
	return !last.IsZero() && last.Before(cut)
}

// expireLive deletes a live archived session that is old, idle and
// unwatched.
func (h *Host) expireLive(g *sessionGroup, cut time.Time) bool {
	g.mu.Lock()
	if g.session.removed || g.releasing || g.mirror || g.pipe.held() || !expired(liveSummary(g), g.archivedAt, cut) {
		g.mu.Unlock()
		return false
	}
	for _, c := range g.chats {
		if c.chat.st.ActiveTurn != nil {
			g.mu.Unlock()
			return false
		}
	}
	h.mu.Lock()
	watched := len(g.session.subs) > 0
	for _, c := range g.chats {
		watched = watched || len(c.subs) > 0
	}
	h.mu.Unlock()
	if watched {
		g.mu.Unlock()
		return false
	}
	// A session whose agent was released has nothing left to let go of.
	h.removeSession(g, !g.released && !g.detached)
	return true
}

// expireStored deletes the old archived sessions that are only in the
// store.
func (h *Host) expireStored(cut time.Time) int {
	ctx, cancel := persist.WriteCtx()
	var old []string
	err := store.EachSession(ctx, h.ds.st, func(s store.Session) error {
		var ss persist.StoredSession
		if json.Unmarshal(s.Summary, &ss) == nil && expired(ss.Summary, ss.ArchivedAt, cut) {
			old = append(old, s.URI)
		}
		return nil
	})
	cancel()
	if err != nil {
		h.log.Warn().Err(err).Msg("the state store's catalogue could not be read to delete old archived sessions")
	}
	n := 0
	for _, uri := range old {
		release := h.holdLoad(uri) // nobody loads it while it goes
		if h.lookup(uri) != nil {
			release() // loaded meanwhile: the live sweep's business
			continue
		}
		ctx, cancel := persist.WriteCtx()
		err := h.ds.st.DeleteSession(ctx, uri)
		cancel()
		if err == nil {
			h.unindexSession(uri)
		}
		release()
		switch {
		case errors.Is(err, store.ErrNotFound):
		case errors.Is(err, store.ErrHeld):
			// Another bridge sharing the file drives it again: not old.
		case err != nil:
			h.log.Warn().Err(err).Str("session", uri).Msg("an old archived session could not be deleted")
		default:
			n++
			h.mu.Lock()
			h.broadcastRootLocked("root/sessionRemoved", wire.SessionRemovedParams{Channel: RootURI, Session: uri})
			h.mu.Unlock()
		}
	}
	return n
}
