package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// A session another live bridge holds (holders.go) can be watched here
// read-only. The first request naming it loads it from the store as a
// mirror (restore.go: its chats' completed turns, as after a restart, but
// without the running turn, which is its holder's), without a hold: the
// handler is not told of it, no agent starts, nothing of it is written.
// Subscribing to it works as to any session. When the store's change
// counter moves (others.go polls it each second) every mirror reads its
// chats' newest stored turns and applies the ones it lacks as the actions
// that make a turn (chat/turnStarted, chat/responsePart…, chat/usage, and
// chat/turnComplete, chat/turnCancelled or chat/error; a new title as
// session/titleChanged; a chat the holder added as session/chatAdded),
// sequenced with
// this bridge's own serverSeq: every subscriber's reducer, in every
// dialect, sees an ordinary turn start and end, and a client that
// reconnects replays them like any other action.
//
// An action or a request that changes the session makes this bridge take
// it over when its holder is gone (takeOver: claimed, the turns the holder
// completed since the last poll and the one it was running when it died
// applied, then handed to the handler like an archived session that is
// acted on again), and is refused naming the holder while it lives. A
// mirror nobody subscribes to any more leaves memory at the next poll.

// mirrorTurns is how many of a chat's newest stored turns a refresh reads:
// more than a bridge completes in a poll's second.
const mirrorTurns = RestoredTurns

// mayChange is what a request that changes the session uri names (the
// session or one of its chats) needs first: see mayChangeChannel.
func (h *Host) mayChange(uri string) string {
	ch := h.lookup(uri)
	if ch == nil {
		return ""
	}
	return h.mayChangeChannel(ch)
}

// mayChangeChannel is what an action on ch needs first: for a channel of
// a mirror, this bridge takes the session over when its holder is gone.
// It returns why it cannot when the holder lives (or the takeover
// failed), "" otherwise. Called without ch's lock.
func (h *Host) mayChangeChannel(ch *channel) string {
	g := ch.group
	if g == nil {
		return ""
	}
	g.mu.Lock()
	mirror := g.mirror && !g.session.removed
	g.mu.Unlock()
	if !mirror {
		return ""
	}
	return h.takeOver(g)
}

// takeOver makes this bridge drive the mirrored session g, whose holder
// must be gone; it returns why not (naming the holder) otherwise.
func (h *Host) takeOver(g *sessionGroup) string {
	uri := g.session.uri
	unclaim, err := h.claimNew(uri)
	if err != nil {
		var he *store.HeldError
		if errors.As(err, &he) {
			return heldReason(he)
		}
		return err.Error()
	}
	h.refreshMirror(g)            // what the holder completed since the last poll
	ends := h.interruptedTurns(g) // and the turn it was running when it died
	gone := false
	defer func() {
		if gone {
			unclaim() // after g.mu: the store's write takes no host lock
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.session.removed {
		gone = true // unloaded or deleted meanwhile: nothing to drive
		return ""
	}
	if !g.mirror {
		return "" // taken over by a concurrent request
	}
	g.mirror = false
	interrupted := false
	for _, ch := range g.chats {
		t := ends[ch.uri]
		if t == nil || knownTurn(ch.chat.st.Turns, t.ID) {
			continue
		}
		// Stored here, now that the session is this bridge's: it stays
		// among the chat's unstored turns.
		h.replayLocked(ch, *t)
		interrupted = true
	}
	if _, ok := h.handler.(SessionRestorer); ok {
		g.released = true // re-attached before the handler's next call (archive.go)
	} else {
		g.detached = true
	}
	h.ds.mu.Lock()
	delete(h.ds.mirrors, uri)
	h.ds.mu.Unlock()
	h.log.Info().Str("session", uri).Msg("took over a session this bridge was watching read-only: the bridge that drove it is gone")
	if interrupted {
		h.storeNowLocked(g, false)
	}
	return ""
}

// interruptedTurns reads the turns g's chats were running when their
// holder died, as a restart finds them (restore.go readChat): the last
// checkpoint, else the turn's start the chat's row kept; each is ended as
// a restart ends it.
func (h *Host) interruptedTurns(g *sessionGroup) map[string]*wire.Turn {
	g.mu.Lock()
	chats := slices.Clone(g.chats)
	uri := g.session.uri
	g.mu.Unlock()
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	starts := map[string]*wire.ActiveTurn{} // the running turns the chats' rows kept
	if rec, err := h.ds.st.GetSession(ctx, uri); err == nil {
		for _, row := range rec.Chats {
			var sc persist.StoredChat
			if json.Unmarshal(row.Summary, &sc) == nil && sc.State != nil && sc.State.ActiveTurn != nil {
				starts[row.URI] = sc.State.ActiveTurn
			}
		}
	}
	clock := reducer.Clock(h.opts.Clock)
	out := map[string]*wire.Turn{}
	for _, ch := range chats {
		at, savedAt := starts[ch.uri], int64(0)
		if at != nil {
			savedAt, _ = reducer.ParseTime(at.StartedAt)
		}
		if cp, err := h.ds.st.Checkpoint(ctx, ch.uri); err == nil {
			var last wire.ActiveTurn
			if json.Unmarshal(cp.Data, &last) == nil && last.ID == cp.TurnID {
				persist.PlaceTexts(&last, cp.Texts)
				at, savedAt = &last, cp.Updated.UnixMilli()
			}
		}
		if at == nil {
			continue
		}
		scratch := &wire.ChatState{}
		if endInterruptedSafely(scratch, at, savedAt, clock) && len(scratch.Turns) == 1 {
			out[ch.uri] = &scratch.Turns[0]
		}
	}
	return out
}

// endInterruptedSafely is endInterrupted on a scratch state, reporting a
// reducer panic (a checkpoint it cannot handle) as false.
func endInterruptedSafely(st *wire.ChatState, at *wire.ActiveTurn, savedAt int64, clock reducer.Clock) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	persist.EndInterrupted(st, at, savedAt, clock)
	return true
}

// pollMirrors unloads the mirrors nobody watches any more and, when the
// store changed (moved), brings the others up to date. Called by the
// poller (others.go).
func (h *Host) pollMirrors(moved bool) {
	h.ds.mu.Lock()
	groups := make([]*sessionGroup, 0, len(h.ds.mirrors))
	for _, g := range h.ds.mirrors {
		groups = append(groups, g)
	}
	h.ds.mu.Unlock()
	for _, g := range groups {
		if h.unloadMirror(g) || !moved {
			continue
		}
		h.refreshMirror(g)
	}
}

// unloadMirror takes g out of memory when nobody is subscribed to it, and
// forgets it as a mirror when it is one no more; it reports whether g is
// no mirror left to refresh.
func (h *Host) unloadMirror(g *sessionGroup) bool {
	g.mu.Lock()
	gone := !g.mirror || g.session.removed
	unloaded := !gone && h.unloadLocked(g)
	g.mu.Unlock()
	if gone || unloaded {
		h.ds.mu.Lock()
		if h.ds.mirrors[g.session.uri] == g {
			delete(h.ds.mirrors, g.session.uri)
		}
		h.ds.mu.Unlock()
	}
	if unloaded {
		h.updateActiveSessions()
		h.log.Debug().Str("session", g.session.uri).Msg("a session another bridge drives is watched here no more")
	}
	return gone || unloaded
}

// refreshMirror applies to a mirror's chats the completed turns their
// holder stored since the mirror last looked.
func (h *Host) refreshMirror(g *sessionGroup) {
	g.mu.Lock()
	if !g.mirror || g.session.removed {
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	h.addMirroredChats(ctx, g)
	g.mu.Lock()
	chats := slices.Clone(g.chats)
	g.mu.Unlock()
	for _, ch := range chats {
		stored, err := h.storedTurns(ctx, ch.uri)
		if err != nil {
			h.log.Debug().Err(err).Str("chat", ch.uri).Msg("could not read the turns another bridge stored; reading them at the next poll")
			continue
		}
		g.mu.Lock()
		if !g.mirror || ch.removed {
			g.mu.Unlock()
			return
		}
		for _, t := range newTurns(ch.chat.st.Turns, stored) {
			h.replayLocked(ch, t)
		}
		ch.chat.unstored = len(ch.chat.st.Turns) // all in the store: they came from it
		g.mu.Unlock()
	}
}

// mirrorOf returns the mirror of the session uri, nil when there is none.
func (h *Host) mirrorOf(uri string) *sessionGroup {
	h.ds.mu.Lock()
	defer h.ds.mu.Unlock()
	return h.ds.mirrors[uri]
}

// retitleMirror applies to a mirror the title its holder gave the session
// (read from the catalogue's row, others.go), as session/titleChanged.
// addMirroredChats adds to the mirror g the chats its holder added to the
// session's catalogue since g was loaded, as restore reads them, each
// announced to g's subscribers (session/chatAdded): a takeover then writes
// the session with every chat the holder gave it.
func (h *Host) addMirroredChats(ctx context.Context, g *sessionGroup) {
	uri := g.session.uri
	rec, err := h.ds.st.GetSession(ctx, uri)
	if err != nil {
		return // deleted (the poller drops it) or unreadable until the next poll
	}
	ss, err := persist.DecodeSession(rec.Session)
	if err != nil {
		return
	}
	rows := map[string]store.ChatRecord{}
	for _, c := range rec.Chats {
		rows[c.URI] = c
	}
	now := h.opts.Clock()
	for _, summary := range ss.State.Chats {
		row, stored := rows[summary.Resource]
		if !stored || h.lookup(summary.Resource) != nil {
			continue
		}
		ch, _, err := h.readChat(ctx, g, row, now, true)
		if err != nil {
			h.log.Debug().Err(err).Str("chat", row.URI).Msg("could not read a chat another bridge added; reading it at the next poll")
			continue
		}
		g.mu.Lock()
		h.mu.Lock()
		if !g.mirror || g.session.removed || h.channels[ch.uri] != nil {
			h.mu.Unlock()
			g.mu.Unlock()
			continue
		}
		g.chats = append(g.chats, ch)
		h.channels[ch.uri] = ch
		h.mu.Unlock()
		h.indexChat(ch.uri, uri)
		if _, err := h.applyLocked(g.session, wire.Action(&wire.SessionChatAddedAction{Summary: ch.chat.mirrored}), nil, nil); err != nil {
			h.log.Warn().Err(err).Str("chat", ch.uri).Msg("a chat another bridge added could not be shown here")
		}
		g.mu.Unlock()
	}
}

func (h *Host) retitleMirror(g *sessionGroup, title string) {
	uri := g.session.uri
	if title == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.mirror || g.session.removed || g.session.session.Title == title {
		return
	}
	if _, err := h.dispatchLocked(g.session, wire.Action(&wire.SessionTitleChangedAction{Title: title})); err != nil {
		h.log.Warn().Err(err).Str("session", uri).Msg("the title another bridge gave a session could not be shown here")
	}
}

// storedTurns reads a chat's newest stored turns, oldest first.
func (h *Host) storedTurns(ctx context.Context, chat string) ([]wire.Turn, error) {
	page, err := h.ds.st.Turns(ctx, chat, store.TurnQuery{Limit: mirrorTurns})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return persist.DecodeTurns(chat, page.Turns)
}

// newTurns returns the turns of stored (oldest first) after the newest
// one have already holds: the holder's turns since.
func newTurns(have, stored []wire.Turn) []wire.Turn {
	if len(have) > 0 {
		last := have[len(have)-1].ID
		if i := slices.IndexFunc(stored, func(t wire.Turn) bool { return t.ID == last }); i >= 0 {
			return stored[i+1:]
		}
	}
	var out []wire.Turn
	for _, t := range stored {
		if !knownTurn(have, t.ID) {
			out = append(out, t)
		}
	}
	return out
}

func knownTurn(turns []wire.Turn, id string) bool {
	return slices.ContainsFunc(turns, func(t wire.Turn) bool { return t.ID == id })
}

// turnActions returns the actions that make the completed turn t happen
// in a chat, in order.
func turnActions(t wire.Turn, now string) []wire.StateAction {
	started := now
	if t.StartedAt != nil {
		started = *t.StartedAt
	}
	out := []wire.StateAction{wire.Action(&wire.ChatTurnStartedAction{TurnID: t.ID, StartedAt: started, Message: t.Message})}
	parts := t.ResponseParts
	var errPart *wire.ErrorResponsePart
	if n := len(parts); t.State == wire.TurnStateError && n > 0 {
		if e, ok := parts[n-1].Value.(*wire.ErrorResponsePart); ok {
			errPart, parts = e, parts[:n-1]
		}
	}
	for _, p := range parts {
		if _, isErr := p.Value.(*wire.ErrorResponsePart); isErr || p.Value == nil {
			continue // only chat/error carries one, and it ends the turn
		}
		out = append(out, wire.Action(&wire.ChatResponsePartAction{TurnID: t.ID, Part: p}))
	}
	if t.Usage != nil {
		out = append(out, wire.Action(&wire.ChatUsageAction{TurnID: t.ID, Usage: *t.Usage}))
	}
	var dur int64
	if t.Duration != nil {
		dur = *t.Duration
	}
	switch t.State {
	case wire.TurnStateCancelled:
		out = append(out, wire.Action(&wire.ChatTurnCancelledAction{TurnID: t.ID, Duration: dur}))
	case wire.TurnStateError:
		if errPart == nil {
			errPart = &wire.ErrorResponsePart{Kind: wire.ResponsePartKindError, Error: wire.ErrorInfo{Message: "the turn failed"}}
		}
		out = append(out, wire.Action(&wire.ChatErrorAction{TurnID: t.ID, Duration: dur, Part: *errPart}))
	default:
		out = append(out, wire.Action(&wire.ChatTurnCompleteAction{TurnID: t.ID, Duration: dur}))
	}
	return out
}

// replayLocked applies a completed turn another bridge ran to a chat of a
// mirror (or, at a takeover, the turn its holder was running) as the
// actions that make it. Called with the chat's group mutex held.
func (h *Host) replayLocked(ch *channel, t wire.Turn) {
	if ch.chat.st.ActiveTurn != nil {
		return // a mirror has none; a chat that has is not a mirror's
	}
	for _, a := range turnActions(t, reducer.FormatTime(h.opts.Clock())) {
		if _, err := h.dispatchLocked(ch, a); err != nil {
			h.log.Warn().Err(err).Str("chat", ch.uri).Str("turn", t.ID).Msg("a turn another bridge ran could not be shown here")
			return
		}
	}
}

// dropMirror takes out of memory a mirror whose session was deleted (by
// its holder, or by `ahp-bridge sessions delete`), telling its and the
// root's subscribers; it reports whether uri was a mirror.
func (h *Host) dropMirror(uri string) bool {
	h.ds.mu.Lock()
	g := h.ds.mirrors[uri]
	delete(h.ds.mirrors, uri)
	h.ds.mu.Unlock()
	if g == nil {
		return false
	}
	g.mu.Lock()
	if !g.mirror || g.session.removed {
		g.mu.Unlock()
		return false
	}
	for _, c := range g.chats {
		h.removeChannelLocked(c)
	}
	h.removeChannelLocked(g.session)
	g.mu.Unlock()
	h.unindexSession(uri)
	h.sessionGone(uri)
	return true
}
