package host

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file brings sessions back from the store after a restart, lazily:
// nothing is loaded at start, listSessions reads the catalogue a page at a
// time, and a session is loaded (its chats, the last RestoredTurns turns of
// each, its agent session ids) the first time a client names it or one of
// its chats in a request, a subscription or an action. A turn that was
// streaming when the process died ends as cancelled, with a system
// notification saying so, and is committed as such. A loaded session is
// `ready` (one whose creation had failed stays failed), with no active
// clients and no running turns; the Handler takes it over through
// SessionRestorer.

// RestoredTurns is how many of each chat's latest turns a restored session
// holds in memory; the older ones stay in the store and are paged in with
// fetchTurns (the chat's state carries turnsNextCursor).
const RestoredTurns = 20

// SessionRestorer is implemented by a Handler that can take over sessions
// the host brings back from its store after a restart. Without it a
// restored session shows its history but refuses new turns and chats,
// saying why.
type SessionRestorer interface {
	// RestoreSession is called when a stored session is loaded into
	// memory, before any client can see it or act on it (so the host's
	// Read* methods do not find it yet: everything the handler needs is in
	// s). The session is ready and no turn is running. The handler must
	// re-attach each chat's agent session when that chat next gets a turn
	// (for ACP: session/resume, else session/load with the chat's
	// AgentSessionID, else a fresh session and a notice in the chat), and
	// report a new agent session id with Host.SetAgentSessionID. It must
	// not block on starting an agent.
	//
	// It is also called for a live session that disposeSession archived
	// (archive.go: its agent sessions were closed through DisposeSession)
	// when a client acts on it again, before that action is handed over;
	// the host's Read* methods find that session.
	RestoreSession(ctx context.Context, s RestoredSession)
}

// RestoredSession is a session brought back from the store.
type RestoredSession struct {
	Session  string
	Provider string
	// WorkingDirectories are the session's, as createSession gave them.
	WorkingDirectories []string
	// Config is the session's current config values (nil when it has
	// none).
	Config map[string]any
	// Failed is set for a session whose creation had failed; it takes no
	// turns.
	Failed bool
	// Chats are the session's chats, the default one first.
	Chats []RestoredChat
}

// RestoredChat is one chat of a RestoredSession.
type RestoredChat struct {
	Chat string
	// Default is set for the session's default chat.
	Default bool
	// WorkingDirectories are the chat's own subset of the session's, or
	// nil when it has them all.
	WorkingDirectories []string
	// AgentSessionID is the agent's session id as last given to
	// SetAgentSessionID; empty when none was.
	AgentSessionID string
	// Model is the model the chat's draft selects, if any.
	Model *wire.ModelSelection
}

// SetAgentSessionID records the agent's session id behind a chat (for
// ACP, the sessionId of session/new, session/load or session/resume), so
// that a restart can hand it back in RestoredChat. With a store it is
// written before SetAgentSessionID returns; a failed write is logged and
// retried with the session's next write. It fails for an unknown chat.
func (h *Host) SetAgentSessionID(chat, id string) error {
	ch, err := h.lockLive(chat, chanChat)
	if err != nil {
		return fmt.Errorf("host: recording the agent session of chat %s: %s", chat, err.Message)
	}
	defer ch.mu.Unlock()
	if ch.chat.agentSessionID == id {
		return nil
	}
	ch.chat.agentSessionID = id
	if h.ds == nil {
		return nil
	}
	// The session's rows with its chats', in the group's pipeline, so the
	// lock is not held across the write (pipeline.go).
	h.storeNowLocked(ch.group, true)
	return nil
}

// AgentSessionID returns the agent's session id recorded for a chat with
// SetAgentSessionID (or restored with it), and whether the chat exists.
func (h *Host) AgentSessionID(chat string) (string, bool) {
	ch, err := h.lockLive(chat, chanChat)
	if err != nil {
		return "", false
	}
	defer ch.mu.Unlock()
	return ch.chat.agentSessionID, true
}

// --- finding what a URI names ---

// restore brings back from the store the session uri names (the session
// or one of its chats) when it is not in memory. Without a store, for a
// live channel or for a URI the store does not hold, it does nothing.
func (h *Host) restore(uri string) {
	defer h.openExternal(uri) // external.go: when neither live nor stored
	if h.ds == nil || uri == "" || uri == RootURI {
		return
	}
	if h.lookup(uri) != nil {
		return
	}
	session := uri
	if strings.HasPrefix(uri, "ahp-chat:") {
		var ok bool
		if session, ok = h.sessionOfChat(uri); !ok {
			return
		}
	} else if !validSessionURI(uri) {
		return
	}
	h.loadSession(session)
}

// restoreAll is restore for a list of URIs, sessions first, so that a
// client re-subscribing to a session and its chats needs no chat lookup.
func (h *Host) restoreAll(uris []string) {
	if h.ds == nil {
		return
	}
	for _, chats := range []bool{false, true} {
		for _, u := range uris {
			if strings.HasPrefix(u, "ahp-chat:") == chats {
				h.restore(u)
			}
		}
	}
}

// sessionOfChat finds the stored session of a chat that is not in memory.
// The first call reads the session catalogue once to index every stored
// chat (a few dozen bytes each); the index is kept up to date afterwards.
func (h *Host) sessionOfChat(chat string) (string, bool) {
	d := h.ds
	d.mu.Lock()
	idx := d.chatIndex
	d.mu.Unlock()
	if idx == nil {
		built := map[string]string{}
		ctx, cancel := persist.WriteCtx()
		err := store.EachSession(ctx, d.st, func(s store.Session) error {
			var ss persist.StoredSession
			if json.Unmarshal(s.Summary, &ss) != nil {
				return nil
			}
			for _, c := range ss.Summary.Chats {
				built[c.Resource] = s.URI
			}
			if ss.Summary.DefaultChat != nil {
				built[*ss.Summary.DefaultChat] = s.URI
			}
			return nil
		})
		cancel()
		if err != nil {
			h.log.Warn().Err(err).Str("chat", chat).Msg("the state store's catalogue could not be read to find a chat's session")
			return "", false
		}
		d.mu.Lock()
		if d.chatIndex == nil {
			d.chatIndex = built
		}
		idx = d.chatIndex
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := idx[chat]
	return s, ok
}

// indexChat records a new chat's session in the chat index, once built.
func (h *Host) indexChat(chat, session string) {
	if h.ds == nil {
		return
	}
	h.ds.mu.Lock()
	if h.ds.chatIndex != nil {
		h.ds.chatIndex[chat] = session
	}
	h.ds.mu.Unlock()
}

// unindexSession forgets a deleted session's chats.
func (h *Host) unindexSession(session string) {
	h.ds.mu.Lock()
	defer h.ds.mu.Unlock()
	if h.ds.chatIndex == nil {
		return
	}
	for c, s := range h.ds.chatIndex {
		if s == session {
			delete(h.ds.chatIndex, c)
		}
	}
}

// --- loading ---

// loadSession loads a stored session into memory, once however many
// requests ask for it at the same time.
func (h *Host) loadSession(uri string) {
	d := h.ds
	d.mu.Lock()
	if wait, busy := d.loading[uri]; busy {
		d.mu.Unlock()
		<-wait
		return
	}
	done := make(chan struct{})
	d.loading[uri] = done
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.loading, uri)
		d.mu.Unlock()
		close(done)
	}()
	if h.lookup(uri) != nil {
		return // loaded (or created) while this one waited its turn
	}
	// A session another live bridge drives is loaded read-only, as a
	// mirror of what that bridge writes (mirror.go).
	unclaim, cerr := h.claimNew(uri) // holders.go
	mirror := cerr != nil
	// A URI that names no stored session (a typo, a session about to be
	// created) or one that does not come back must not stay held.
	kept := false
	defer func() {
		if !kept {
			unclaim()
		}
	}()
	g, rs, err := h.readSession(uri, mirror)
	if errors.Is(err, store.ErrNotFound) {
		return
	}
	if err != nil {
		h.log.Error().Err(err).Str("session", uri).Msg("a stored session could not be restored")
		return
	}
	h.mu.Lock()
	full := h.sessions >= h.opts.MaxSessions
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return
	}
	if full {
		h.log.Warn().Str("session", uri).Int("limit", h.opts.MaxSessions).
			Msg("a stored session was not restored: the session limit is reached")
		return
	}
	switch r, ok := h.handler.(SessionRestorer); {
	case mirror:
		g.mirror = true
	case ok:
		r.RestoreSession(h.ctx, rs)
	default:
		g.detached = true
	}
	h.mu.Lock()
	if h.closed || h.channels[uri] != nil {
		kept = h.channels[uri] != nil // created here meanwhile: its hold
		h.mu.Unlock()
		return
	}
	kept = true
	h.channels[uri] = g.session
	for _, c := range g.chats {
		h.channels[c.uri] = c
	}
	h.sessions++
	h.dir.add(uri, g.defaultChat().uri)
	h.mu.Unlock()
	for _, c := range g.chats {
		h.indexChat(c.uri, uri)
	}
	if mirror {
		h.ds.mu.Lock()
		h.ds.mirrors[uri] = g
		h.ds.mu.Unlock()
		h.log.Debug().Str("session", uri).Msg("watching a session another bridge drives, read-only")
	}
	h.updateActiveSessions()
	h.log.Debug().Str("session", uri).Int("chats", len(g.chats)).Msg("restored a session from the state store")
}

// readSession reads a stored session and builds it as it comes back: its
// chats with their latest turns, interrupted turns ended and committed.
// Nothing of it is reachable yet. A mirror (a session another live bridge
// drives) has its completed turns only: its running turn is its holder's,
// and nothing is written.
func (h *Host) readSession(uri string, mirror bool) (*sessionGroup, RestoredSession, error) {
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	rec, err := h.ds.st.GetSession(ctx, uri)
	if err != nil {
		return nil, RestoredSession{}, err
	}
	ss, err := persist.DecodeSession(rec.Session)
	if err != nil {
		return nil, RestoredSession{}, err
	}
	st := ss.State
	// What lived only in the process: nobody is connected, nothing waits.
	st.ActiveClients, st.InputNeeded = []wire.SessionActiveClient{}, nil
	st.Status = reducer.WithInputNeeded(st.Status, false)
	if st.Lifecycle != wire.SessionLifecycleFailed {
		st.Lifecycle = wire.SessionLifecycleReady
	}

	g := &sessionGroup{stored: true, archivedAt: ss.ArchivedAt}
	sess := newChannel(uri, chanSession)
	sess.mu, sess.group, sess.session = &g.mu, g, st
	g.session = sess

	rows := map[string]store.ChatRecord{}
	for _, c := range rec.Chats {
		rows[c.URI] = c
	}
	// The catalogue's order, and only its chats: a disposed chat's rows
	// stay in the store until its session goes.
	order := make([]string, 0, len(st.Chats))
	for _, c := range st.Chats {
		order = append(order, c.Resource)
	}
	if st.DefaultChat != nil && !slices.Contains(order, *st.DefaultChat) {
		order = append([]string{*st.DefaultChat}, order...)
	}
	now := h.opts.Clock()
	var recovered []*channel
	for _, curi := range order {
		row, ok := rows[curi]
		if !ok {
			continue
		}
		ch, interrupted, err := h.readChat(ctx, g, row, now, mirror)
		if err != nil {
			return nil, RestoredSession{}, err
		}
		g.chats = append(g.chats, ch)
		if interrupted {
			recovered = append(recovered, ch)
		}
	}
	if len(g.chats) == 0 {
		return nil, RestoredSession{}, fmt.Errorf("session %s in the state store has no chats", uri)
	}
	if st.DefaultChat == nil || *st.DefaultChat != g.chats[0].uri {
		st.DefaultChat = wire.Ptr(g.chats[0].uri)
	}
	st.Chats = make([]wire.ChatSummary, 0, len(g.chats))
	for _, c := range g.chats {
		st.Chats = append(st.Chats, c.chat.mirrored)
	}
	g.summary = ss.Summary
	g.summary = summaryOf(g)
	g.storedSummary = nil
	g.lastSummaryNote = now

	if len(recovered) > 0 && !mirror {
		// The interrupted turns, now ended, replace their checkpoints;
		// the group is nobody else's yet, so this only waits for the write.
		g.mu.Lock()
		h.storeNowLocked(g, false)
		g.mu.Unlock()
	}

	return g, restoredSessionOf(g), nil
}

// restoredSessionOf is what a SessionRestorer is handed of g: a session
// loaded from the store, or one disposeSession archived that takes a turn
// again (archive.go). Called with the group's mutex held, or before
// anyone else can reach the group.
func restoredSessionOf(g *sessionGroup) RestoredSession {
	st := g.session.session
	rs := RestoredSession{
		Session: g.session.uri, Provider: st.Provider, WorkingDirectories: slices.Clone(st.WorkingDirectories),
		Failed: st.Lifecycle == wire.SessionLifecycleFailed,
	}
	if st.Config != nil {
		rs.Config = maps.Clone(st.Config.Values)
	}
	for i, c := range g.chats {
		rc := RestoredChat{Chat: c.uri, Default: i == 0, WorkingDirectories: slices.Clone(c.chat.st.WorkingDirectories),
			AgentSessionID: c.chat.agentSessionID}
		if d := c.chat.st.Draft; d != nil && d.Model != nil {
			m := *d.Model
			rc.Model = &m
		}
		rs.Chats = append(rs.Chats, rc)
	}
	return rs
}

// readChat builds one chat of a restored session: its stored state, its
// latest turns, and the turn that was running when the process died ended
// as cancelled (interrupted is then set, and the turn is still to be
// committed). For a mirror the running turn is left out: it is still
// running in the bridge that holds the session.
func (h *Host) readChat(ctx context.Context, g *sessionGroup, row store.ChatRecord, now int64, mirror bool) (ch *channel, interrupted bool, err error) {
	st, err := persist.DecodeChat(row)
	if err != nil {
		return nil, false, err
	}
	page, err := h.ds.st.Turns(ctx, row.URI, store.TurnQuery{Limit: RestoredTurns})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, false, fmt.Errorf("reading the turns of chat %s: %w", row.URI, err)
	}
	if st.Turns, err = persist.DecodeTurns("chat "+row.URI, page.Turns); err != nil {
		return nil, false, err
	}
	stored := len(st.Turns)
	older := page.NextCursor != ""

	// The turn that was running: its last checkpoint, else its start as
	// the chat's row kept it.
	known := func(id string) bool {
		return slices.ContainsFunc(st.Turns, func(t wire.Turn) bool { return t.ID == id })
	}
	stub := st.ActiveTurn
	st.ActiveTurn = nil
	clock := reducer.Clock(h.opts.Clock)
	cp, cerr := store.Checkpoint{}, error(store.ErrNotFound)
	if mirror {
		stub = nil
	} else {
		cp, cerr = h.ds.st.Checkpoint(ctx, row.URI)
	}
	switch {
	case cerr == nil && !known(cp.TurnID):
		var at wire.ActiveTurn
		if err := json.Unmarshal(cp.Data, &at); err == nil && at.ID == cp.TurnID {
			if n := persist.PlaceTexts(&at, cp.Texts); n > 0 {
				h.log.Warn().Str("chat", row.URI).Str("turn", cp.TurnID).Int("texts", n).Msg("texts of an interrupted turn's checkpoint name no text part of it; they are left out")
			}
			persist.EndInterrupted(st, &at, cp.Updated.UnixMilli(), clock)
			interrupted = true
		} else {
			h.log.Warn().Str("chat", row.URI).Str("turn", cp.TurnID).Msg("the checkpoint of an interrupted turn cannot be read; the turn is lost")
		}
	case cerr != nil && !errors.Is(cerr, store.ErrNotFound):
		return nil, false, fmt.Errorf("reading the checkpoint of chat %s: %w", row.URI, cerr)
	}
	if stub != nil && !known(stub.ID) {
		started, ok := reducer.ParseTime(stub.StartedAt)
		if !ok {
			started = now
		}
		persist.EndInterrupted(st, stub, started, clock)
		interrupted = true
	}
	if a := st.Status.Activity(); a == wire.SessionStatusInProgress || a == wire.SessionStatusInputNeeded {
		st.Status = st.Status.WithActivity(wire.SessionStatusIdle)
	}
	st.TurnsNextCursor = nil
	if older && len(st.Turns) > 0 {
		st.TurnsNextCursor = wire.Ptr(turnsCursor(row.URI, st.Turns[0].ID))
	}

	ch = newChannel(row.URI, chanChat)
	ch.mu, ch.group = &g.mu, g
	ch.chat = &chatData{st: st, stream: reducer.Streaming{Lazy: true}, created: row.Created.UnixMilli(), unstored: stored, agentSessionID: row.ACPSessionID, olderInStore: older, rowStored: true}
	ch.chat.mirrored = chatSummaryOf(st)
	ch.chat.mirroredAt = now
	return ch, interrupted, nil
}

// --- listSessions over the store ---

// listSessionsStored answers listSessions from the live sessions merged
// with the store's catalogue (a live session's own summary wins over its
// row), without loading any stored session.
func (h *Host) listSessionsStored(r *request, p wire.ListSessionsParams) {
	var cur persist.ListCursor
	if p.Cursor != nil {
		b, err := base64.RawURLEncoding.DecodeString(*p.Cursor)
		if err != nil || json.Unmarshal(b, &cur) != nil || cur.R == "" {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for listSessions: the cursor is not one this server gave out"))
			return
		}
	}
	limit := -1
	if p.Limit != nil {
		if *p.Limit <= 0 {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for listSessions: limit must be positive"))
			return
		}
		limit = int(min(*p.Limit, int64(1<<30)))
	}
	live, extMore := h.withExternal(h.summaries(), p) // external.go
	isLive := make(map[string]bool, len(live))
	for _, s := range live {
		isLive[s.Resource] = true
	}
	if p.Cursor != nil {
		i := 0
		for i < len(live) && !cur.After(live[i].ModifiedAt, live[i].Resource) {
			i++
		}
		live = live[i:]
	}
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	want := store.MaxPageSize
	if limit > 0 {
		want = min(cur.K+limit+1, store.MaxPageSize)
	}
	rows := persist.WalkCatalogue(ctx, h.ds.st, cur.S, cur.K, want)
	res := wire.ListSessionsResult{Items: []wire.SessionSummary{}}
	var stored *wire.SessionSummary
	nextStored := func() *wire.SessionSummary {
		for stored == nil {
			row, ok := rows.Peek()
			if !ok {
				return nil
			}
			// The walk's position says which rows were served already; a
			// live session's row is skipped (its live summary is served).
			var ss persist.StoredSession
			if isLive[row.URI] || json.Unmarshal(row.Summary, &ss) != nil || ss.Summary.Resource == "" {
				rows.Pop()
				continue
			}
			stored = &ss.Summary
		}
		return stored
	}
	for limit < 0 || len(res.Items) < limit {
		s := nextStored()
		switch {
		case s == nil && len(live) == 0:
		case s == nil || len(live) > 0 && cmp.Or(-cmp.Compare(live[0].ModifiedAt, s.ModifiedAt), -cmp.Compare(live[0].Resource, s.Resource)) < 0:
			res.Items = append(res.Items, live[0])
			live = live[1:]
			continue
		default:
			res.Items = append(res.Items, *s)
			stored = nil
			rows.Pop()
			continue
		}
		break
	}
	if err := rows.Err(); err != nil {
		h.reply(r, nil, Errorf(CodeInternalError, "listing the stored sessions failed: %v", err))
		return
	}
	if len(res.Items) > 0 && (len(live) > 0 || nextStored() != nil || extMore && limit > 0) {
		last := res.Items[len(res.Items)-1]
		next := persist.ListCursor{M: last.ModifiedAt, R: last.Resource}
		next.S, next.K = rows.Position()
		b, _ := json.Marshal(next)
		res.NextCursor = wire.Ptr(base64.RawURLEncoding.EncodeToString(b))
	}
	h.reply(r, res, nil)
}

// --- fetchTurns over the store ---

// turnsBefore returns up to limit completed turns of a chat before the
// turn named before ("" for the newest), oldest first, from memory and,
// below what memory holds, from the store, with whether older ones remain.
// found is false when before names no turn of the chat. Called without
// the chat's lock; it takes it to read memory and reads the store after
// releasing it.
func (h *Host) turnsBefore(ch *channel, before string, limit int) (turns []wire.Turn, more, found bool, err error) {
	ch.mu.Lock()
	h.awaitHeldLocked(ch.group) // no turn whose end is not broadcast yet
	if ch.removed {
		ch.mu.Unlock()
		return nil, false, false, nil
	}
	st := ch.chat.synced()
	inMemory := before == "" || slices.ContainsFunc(st.Turns, func(t wire.Turn) bool { return t.ID == before })
	olderInStore := h.ds != nil && ch.chat.olderInStore
	storeBefore := before
	if inMemory {
		turns, more, found, err = turnsPage(st, before, limit)
		if err != nil || !found {
			ch.mu.Unlock()
			return turns, more, found, err
		}
		if more || !olderInStore || len(turns) == limit {
			ch.mu.Unlock()
			return turns, more || olderInStore, true, nil
		}
		// Memory is exhausted: the rest of the page is the store's,
		// below memory's oldest turn.
		storeBefore = st.Turns[0].ID
	} else if h.ds == nil || !olderInStore {
		ch.mu.Unlock()
		return nil, false, false, nil
	}
	ch.mu.Unlock()

	ctx, cancel := persist.WriteCtx()
	defer cancel()
	page, serr := h.ds.st.Turns(ctx, ch.uri, store.TurnQuery{BeforeTurnID: storeBefore, Limit: limit - len(turns)})
	if errors.Is(serr, store.ErrNotFound) {
		if inMemory {
			return turns, false, true, nil
		}
		return nil, false, false, nil
	}
	if serr != nil {
		return nil, false, true, fmt.Errorf("reading older turns of %s from the state store: %w", ch.uri, serr)
	}
	older, err := persist.DecodeTurns(ch.uri, page.Turns)
	if err != nil {
		return nil, false, true, err
	}
	return append(older, turns...), page.NextCursor != "", true, nil
}
