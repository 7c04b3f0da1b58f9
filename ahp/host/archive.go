package host

import (
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// This file is disposeSession for a session with history (issue 23).
// VS Code sends disposeSession for a new session it abandons, when its
// connection drops, when a window changes and when the user deletes a
// session, and the wire does not tell these apart; so disposeSession never
// destroys a turn. A session with at least one turn (completed or active,
// in any chat) is archived instead:
//
//   - its status gets the IsArchived flag (session/isArchivedChanged, and
//     root/sessionSummaryChanged rather than root/sessionRemoved): it stays
//     in listSessions, which clients show apart;
//   - its agent is released: Handler.DisposeSession closes its agent
//     sessions (a running turn is cancelled; one the handler leaves
//     running is ended here, as cancelled);
//   - with a store, once its rows are written and nobody is subscribed to
//     it, it leaves memory like a stored session never loaded; a client
//     that names it again loads it from the store (restore.go), and its
//     handler takes it over through SessionRestorer. While a client is
//     still subscribed it stays in memory, released, and leaves when the
//     last subscription ends (unloadReleased); without a store it stays in
//     memory. The next client action on a released session hands it to
//     SessionRestorer first (reattach), so that a turn re-attaches the
//     agent as after a restart.
//
// A session without turns is removed as before. Deleting for good is
// `ahp-bridge sessions delete`, or Options.ArchiveRetention (retention.go).

// hasTurnsLocked reports whether any chat of g has a turn, completed (in
// memory or only in the store) or active. Called with g.mu held.
func hasTurnsLocked(g *sessionGroup) bool {
	for _, c := range g.chats {
		st := c.chat.st
		if len(st.Turns) > 0 || st.ActiveTurn != nil || c.chat.olderInStore {
			return true
		}
	}
	return false
}

// archiveSession archives the live session of g for disposeSession and
// answers r. Called with g.mu held, after the group's held actions went
// out; it releases it.
func (h *Host) archiveSession(r *request, g *sessionGroup) {
	uri := g.session.uri
	if g.releasing {
		// Another disposeSession is archiving it.
		g.mu.Unlock()
		h.reply(r, nil, nil)
		return
	}
	if !g.session.session.Status.Has(wire.SessionStatusIsArchived) {
		if _, err := h.dispatchLocked(g.session, wire.Action(&wire.SessionIsArchivedChangedAction{IsArchived: true})); err != nil {
			g.mu.Unlock()
			h.reply(r, nil, Errorf(CodeInternalError, "session %s could not be archived: %v", uri, err))
			return
		}
	}
	// Until the handler has let go, a turn could be handed to an agent
	// session being closed: validateChat refuses turns meanwhile.
	g.releasing = true
	g.released, g.attach = false, nil
	g.progress = nil
	g.mu.Unlock()

	h.filesDisposed(uri) // its creation no longer grants its directories
	if h.handler != nil {
		h.handler.DisposeSession(h.ctx, uri)
	}

	g.mu.Lock()
	g.releasing = false
	if g.session.removed {
		g.mu.Unlock()
		h.reply(r, nil, nil)
		return
	}
	if _, ok := h.handler.(SessionRestorer); ok {
		g.released = true
	} else if h.handler != nil {
		g.detached = true // nobody can take it over: history only
	}
	h.endLeftoverTurnsLocked(g)
	h.awaitHeldLocked(g)
	unloaded := false
	if !g.session.removed && h.ds != nil {
		unloaded = h.unloadLocked(g)
	}
	g.mu.Unlock()
	if unloaded {
		h.releaseSession(uri) // holders.go: another bridge may continue it
		h.updateActiveSessions()
		h.log.Debug().Str("session", uri).Msg("disposeSession archived the session and released it from memory; it stays in the state store")
	} else {
		h.log.Debug().Str("session", uri).Msg("disposeSession archived the session and released its agent")
	}
	h.reply(r, nil, nil)
}

// endLeftoverTurnsLocked ends, as cancelled, the turns the handler left
// running when it released the session's agent. Called with g.mu held.
func (h *Host) endLeftoverTurnsLocked(g *sessionGroup) {
	for _, c := range g.chats {
		t := c.chat.st.ActiveTurn
		if t == nil {
			continue
		}
		dur := int64(0)
		if start, ok := reducer.ParseTime(t.StartedAt); ok {
			dur = max(0, h.opts.Clock()-start)
		}
		if _, err := h.dispatchLocked(c, wire.Action(&wire.ChatTurnCancelledAction{TurnID: t.ID, Duration: dur})); err != nil {
			h.log.Warn().Err(err).Str("chat", c.uri).Str("turn", t.ID).Msg("the turn of an archived session could not be ended")
		}
	}
}

// unloadLocked takes an archived session out of memory when its state is
// all in the store and nobody is subscribed to it; it reports whether it
// did. Its rows and its chats' entries in the chat index stay, so that the
// next request naming it loads it back. Called with g.mu held, with no
// action of the group held.
func (h *Host) unloadLocked(g *sessionGroup) bool {
	if !g.stored || g.pipe.held() {
		return false
	}
	for _, c := range g.chats {
		if !c.chat.rowStored || c.chat.unstored < len(c.chat.st.Turns) || c.chat.st.ActiveTurn != nil {
			return false // a failed write left something only in memory
		}
	}
	chans := append([]*channel{g.session}, g.chats...)
	h.mu.Lock()
	for _, c := range chans {
		if len(c.subs) > 0 {
			h.mu.Unlock()
			return false
		}
	}
	var workers []*worker
	for _, c := range chans {
		c.removed = true
		delete(h.channels, c.uri)
		if c.worker != nil {
			workers = append(workers, c.worker)
			c.worker = nil
		}
	}
	h.sessions--
	h.dir.remove(g.session.uri)
	h.mu.Unlock()
	for _, w := range workers {
		w.close()
	}
	for _, c := range g.chats {
		h.ds.cp.Forget(c.uri)
	}
	return true
}

// reattach hands a released session back to the handler once, before the
// first handler call about it after it was archived.
type reattach struct {
	once sync.Once
	rs   RestoredSession
}

// run calls SessionRestorer.RestoreSession the first time; later calls,
// from any goroutine, wait for that one. Nil-safe.
func (r *reattach) run(h *Host) {
	if r == nil {
		return
	}
	r.once.Do(func() {
		if sr, ok := h.handler.(SessionRestorer); ok {
			sr.RestoreSession(h.ctx, r.rs)
		}
	})
}

// reattachLocked returns what must run before the next handler call about
// g: nil for a session whose agent was never released, else the re-attach
// of the released session (made at the first call after the release).
// Called with g.mu held.
func (h *Host) reattachLocked(g *sessionGroup) *reattach {
	if g == nil {
		return nil
	}
	if g.released {
		g.released = false
		g.attach = &reattach{rs: restoredSessionOf(g)}
		h.log.Debug().Str("session", g.session.uri).Msg("an archived session is acted on again: its agent is re-attached")
	}
	return g.attach
}

// noteArchivedLocked keeps g.archivedAt in step with the session's
// archived flag, whoever set it: the time it was set, 0 once cleared.
// Called with g.mu held, after each session action.
func noteArchivedLocked(g *sessionGroup, now int64) {
	switch archived := g.session.session.Status.Has(wire.SessionStatusIsArchived); {
	case archived && g.archivedAt == 0:
		g.archivedAt = now
	case !archived:
		g.archivedAt = 0
	}
}

// unloadReleased takes out of memory the archived, released sessions
// among groups that nobody is subscribed to any more (with a store; see
// unloadLocked), after a subscription to them ended. Called without locks.
func (h *Host) unloadReleased(groups []*sessionGroup) {
	if h.ds == nil || h.ctx.Err() != nil { // none, or the host is closing
		return
	}
	for _, g := range groups {
		g.mu.Lock()
		if !g.released || g.releasing || g.session.removed {
			g.mu.Unlock()
			continue
		}
		h.awaitHeldLocked(g)
		unloaded := g.released && !g.session.removed && h.unloadLocked(g)
		g.mu.Unlock()
		if unloaded {
			h.releaseSession(g.session.uri) // holders.go
			h.updateActiveSessions()
			h.log.Debug().Str("session", g.session.uri).Msg("an archived session nobody watches any more left memory; it stays in the state store")
		}
	}
}

// groupsOf returns the session groups of the given channels, once each.
// Called with Host.mu held.
func groupsOf(chans []*channel) []*sessionGroup {
	var out []*sessionGroup
	seen := map[*sessionGroup]bool{}
	for _, ch := range chans {
		if g := ch.group; g != nil && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}
