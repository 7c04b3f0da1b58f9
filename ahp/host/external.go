package host

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file shows sessions the host does not hold: the agents' own (every
// Claude Code session a user ran in a terminal, say), which a Handler that
// implements ExternalSessions knows of. listSessions includes their
// summaries among the host's, and the first request that names one (a
// subscription to it or to its default chat) makes it a session of the
// host: ready, with an empty default chat whose agent session is the
// agent's, taken over by the Handler like a restored session
// (SessionRestorer) and stored like any other.

// ExternalSessions is implemented by a Handler that knows sessions the
// host does not hold.
type ExternalSessions interface {
	// ExternalSummaries returns the catalogue entries of sessions the host
	// may not hold, for listSessions (the host drops those it holds), and
	// whether more are to be had by paging on (ExternalQuery.More). It may
	// block on the agents briefly.
	ExternalSummaries(ctx context.Context, q ExternalQuery) (items []wire.SessionSummary, more bool)
	// OpenExternal returns what the session named session is, when it is
	// one of the handler's external sessions; the host then creates it and
	// hands it over with SessionRestorer.RestoreSession. It must not block
	// on an agent.
	OpenExternal(ctx context.Context, session string) (ExternalSession, bool)
	// ExternalOpened is called once the session OpenExternal described is
	// a session of the host that clients can see.
	ExternalOpened(ctx context.Context, session string)
}

// ExternalAgentSessionIDMeta is the key of an external summary's `_meta`
// that holds the agent's id of the session: the host leaves out those a
// stored chat of the same provider already talks to (a session the bridge
// made before a restart, not loaded since), so that no session is listed
// twice.
const ExternalAgentSessionIDMeta = "ahp-bridge/agentSessionId"

// ExternalQuery is what a listSessions asks of the external sessions.
type ExternalQuery struct {
	// WorkingDirectory is the client's (listSessions
	// `_meta.workingDirectory`), or "" for every session.
	WorkingDirectory string
	// More is set when the client pages on (a cursor): a source that pages
	// its sessions lazily fetches its next page.
	More bool
}

// ExternalSession is what the host needs to make an external session its
// own.
type ExternalSession struct {
	Provider           string
	Title              string
	WorkingDirectories []string
	// CreatedAt and ModifiedAt are ISO 8601 times ("" for now).
	CreatedAt, ModifiedAt string
	// AgentSessionID is the agent's id of the session, the default chat's
	// (RestoredChat.AgentSessionID).
	AgentSessionID string
}

// externalState is the host's side of external sessions.
type externalState struct {
	// mu serialises making external sessions the host's own.
	mu sync.Mutex
	// stored are the external URIs found in the state store (a session
	// opened before the restart, not loaded yet); absent says when each
	// URI the store did not hold was looked up. Guarded by mu.
	stored map[string]bool
	absent map[string]time.Time
	// announced are the external URIs root subscribers were told of
	// (root/sessionAdded), so that each is announced once. Guarded by mu.
	announced map[string]bool
}

// absentFor is how long a URI the state store did not hold is taken to be
// absent before the store is asked again (another bridge on the file may
// have opened it meanwhile): an agent's list can hold a thousand sessions.
const absentFor = 30 * time.Second

// withExternal adds to live (the host's summaries, sorted) the external
// sessions it does not hold, in the same order; more says a client that
// pages on gets more of them.
func (h *Host) withExternal(live []wire.SessionSummary, p wire.ListSessionsParams) (items []wire.SessionSummary, more bool) {
	src, ok := h.handler.(ExternalSessions)
	if !ok {
		return live, false
	}
	q := ExternalQuery{More: p.Cursor != nil}
	if wd, ok := p.Meta["workingDirectory"].(string); ok {
		q.WorkingDirectory = wd
	}
	ext, more := src.ExternalSummaries(h.ctx, q)
	if len(ext) == 0 {
		return live, more
	}
	held := make(map[string]bool, len(live))
	for _, s := range live {
		held[s.Resource] = true
	}
	out := live
	var fresh []wire.SessionSummary
	for _, s := range ext {
		if held[s.Resource] || h.lookup(s.Resource) != nil || h.inStore(s.Resource) || h.agentSessionStored(s) {
			continue
		}
		held[s.Resource] = true
		out = append(out, s)
		h.ext.mu.Lock()
		if !h.ext.announced[s.Resource] {
			if h.ext.announced == nil {
				h.ext.announced = map[string]bool{}
			}
			h.ext.announced[s.Resource] = true
			fresh = append(fresh, s)
		}
		h.ext.mu.Unlock()
	}
	// The root's session summaries include them too: subscribers of the
	// root hear of each agent session the first time a listing finds it,
	// as of any session another bridge or a client adds.
	if len(fresh) > 0 {
		h.mu.Lock()
		for _, s := range fresh {
			h.broadcastRootLocked("root/sessionAdded", wire.SessionAddedParams{Channel: RootURI, Summary: s})
		}
		h.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b wire.SessionSummary) int {
		return cmp.Or(-cmp.Compare(a.ModifiedAt, b.ModifiedAt), -cmp.Compare(a.Resource, b.Resource))
	})
	return out, more
}

// inStore reports whether the state store holds a session uri.
func (h *Host) inStore(uri string) bool {
	if h.ds == nil {
		return false
	}
	h.ext.mu.Lock()
	known := h.ext.stored[uri]
	at, absent := h.ext.absent[uri]
	h.ext.mu.Unlock()
	if known {
		return true
	}
	if absent && time.Since(at) < absentFor {
		return false
	}
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	_, err := h.ds.st.GetSession(ctx, uri)
	if errors.Is(err, store.ErrNotFound) {
		h.ext.mu.Lock()
		if h.ext.absent == nil {
			h.ext.absent = map[string]time.Time{}
		}
		h.ext.absent[uri] = time.Now()
		h.ext.mu.Unlock()
		return false
	}
	if err != nil {
		h.log.Debug().Err(err).Str("session", uri).Msg("the state store could not say whether it holds a session")
		return false
	}
	h.ext.mu.Lock()
	if h.ext.stored == nil {
		h.ext.stored = map[string]bool{}
	}
	h.ext.stored[uri] = true
	h.ext.mu.Unlock()
	return true
}

// agentSessionStored reports whether a stored chat of the summary's
// provider talks to the agent session the summary stands for. Answers are
// kept like inStore's: a found one for good, a missing one for absentFor.
func (h *Host) agentSessionStored(s wire.SessionSummary) bool {
	id, _ := s.Meta[ExternalAgentSessionIDMeta].(string)
	if h.ds == nil || id == "" {
		return false
	}
	key := "agent\x00" + s.Provider + "\x00" + id
	h.ext.mu.Lock()
	known := h.ext.stored[key]
	at, absent := h.ext.absent[key]
	h.ext.mu.Unlock()
	if known {
		return true
	}
	if absent && time.Since(at) < absentFor {
		return false
	}
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	has, err := h.ds.st.HasAgentSession(ctx, s.Provider, id)
	if err != nil {
		h.log.Debug().Err(err).Str("agent_session", id).Msg("the state store could not say whether a chat talks to an agent session")
		return false
	}
	h.ext.mu.Lock()
	defer h.ext.mu.Unlock()
	if has {
		if h.ext.stored == nil {
			h.ext.stored = map[string]bool{}
		}
		h.ext.stored[key] = true
	} else {
		if h.ext.absent == nil {
			h.ext.absent = map[string]time.Time{}
		}
		h.ext.absent[key] = time.Now()
	}
	return has
}

// openExternal makes the external session uri names (the session, or its
// default chat) a session of the host, when the host does not hold it.
func (h *Host) openExternal(uri string) {
	src, ok := h.handler.(ExternalSessions)
	if !ok || uri == "" || uri == RootURI {
		return
	}
	session := uri
	if name, ok := wire.ParseChatURI(uri); ok {
		if name.ChatID != wire.DefaultChatID {
			return
		}
		session = name.Session
	}
	if !validSessionURI(session) || h.lookup(session) != nil {
		return
	}
	h.ext.mu.Lock()
	defer h.ext.mu.Unlock()
	if h.lookup(session) != nil || h.ext.stored[session] {
		return
	}
	es, ok := src.OpenExternal(h.ctx, session)
	if !ok {
		return
	}
	unclaim, err := h.claimNew(session) // holders.go: another bridge opened it
	if err != nil {
		h.log.Debug().Err(err).Str("session", session).Msg("not opening an agent's session another bridge drives")
		return
	}
	now := h.opts.Clock()
	nowISO := reducer.FormatTime(now)
	created, modified := cmp.Or(es.CreatedAt, es.ModifiedAt, nowISO), cmp.Or(es.ModifiedAt, nowISO)
	st := &wire.SessionState{
		Provider:           es.Provider,
		Title:              es.Title,
		Status:             wire.SessionStatusIdle,
		WorkingDirectories: slices.Clone(es.WorkingDirectories),
		Lifecycle:          wire.SessionLifecycleReady,
		ActiveClients:      []wire.SessionActiveClient{},
	}
	cfg := h.resolveConfig(h.ctx, es.Provider, nil)
	st.Config = &cfg
	g := &sessionGroup{}
	sess := newChannel(session, chanSession)
	sess.mu, sess.group, sess.session = &g.mu, g, st
	g.session = sess
	chatURI := wire.DefaultChatURI(session)

	h.mu.Lock()
	if h.closed || h.channels[session] != nil || h.channels[chatURI] != nil || h.sessions >= h.opts.MaxSessions {
		opened := h.channels[session] != nil // opened here meanwhile: its hold
		h.mu.Unlock()
		if !opened {
			unclaim()
		}
		return
	}
	chat := h.newChatLocked(g, chatURI, wire.ChatState{
		Resource:   chatURI,
		Title:      "",
		Status:     wire.SessionStatusIdle,
		ModifiedAt: modified,
		Origin:     &wire.ChatOrigin{Value: &wire.ChatOriginUser{Kind: wire.ChatOriginKindUser}},
		Turns:      []wire.Turn{},
	})
	h.mu.Unlock()
	chat.chat.agentSessionID = es.AgentSessionID
	st.Chats = []wire.ChatSummary{chat.chat.mirrored}
	st.DefaultChat = wire.Ptr(chatURI)
	g.summary = wire.SessionSummary{Resource: session, Provider: es.Provider, CreatedAt: created, ModifiedAt: modified}
	g.summary = summaryOf(g)
	g.lastSummaryNote = now
	// The handler takes it over before anyone can reach it, as a restored
	// session: its chat opens the agent's session.
	if r, ok := h.handler.(SessionRestorer); ok {
		r.RestoreSession(h.ctx, restoredSessionOf(g))
	} else {
		g.detached = true
	}

	g.mu.Lock()
	h.mu.Lock()
	if h.closed || h.channels[session] != nil || h.channels[chatURI] != nil {
		opened := h.channels[session] != nil
		h.mu.Unlock()
		g.mu.Unlock()
		if !opened {
			unclaim()
		}
		return
	}
	h.channels[session] = sess
	h.channels[chatURI] = chat
	h.sessions++
	h.dir.add(session, chatURI)
	if h.ds != nil {
		h.mu.Unlock()
		h.indexChat(chatURI, session)
		h.storeNowLocked(g, true)
		h.mu.Lock()
	}
	h.broadcastRootLocked("root/sessionAdded", wire.SessionAddedParams{Channel: RootURI, Summary: g.summary})
	h.mu.Unlock()
	g.mu.Unlock()
	h.updateActiveSessions()
	h.log.Info().Str("session", session).Str("agent_session", es.AgentSessionID).Msg("opened one of the agent's own sessions")
	src.ExternalOpened(h.ctx, session)
}
