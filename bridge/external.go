package bridge

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// This file shows the agents' own sessions (host.ExternalSessions): for
// each provider whose agent lists its sessions (backend.AgentSessions,
// ACP session/list), listSessions includes those the bridge does not
// hold, named `<provider>:/<agent session id>` and marked in `_meta` with
// AgentSessionMeta. The list is paged lazily (the first page on the first
// listSessions, or at start for a provider configured to list without
// running, the next one each time a client pages on) and fetched again at
// most every listRefresh. An agent is never started only to list, unless
// its provider allows it (listAgentSessions: true).
//
// Naming one opens it (OpenExternal): the host makes it a session of its
// own, and its default chat opens the agent's session at once, asking for
// its history (SessionOptions.Import: ACP session/load, whose replay
// becomes the chat's turns, else session/resume and a notice that the
// earlier turns live in the agent).

// AgentSessionMeta marks, in a session summary's `_meta`, one of an
// agent's own sessions that no client has opened yet; AgentSessionIDMeta
// holds the agent's id of it.
const (
	AgentSessionMeta   = "ahp-bridge/agentSession"
	AgentSessionIDMeta = host.ExternalAgentSessionIDMeta
)

// listRefresh is how often at most an agent's session list is fetched
// again (Options.ListRefresh); listTimeout bounds one fetch (which may
// start the agent).
const (
	listRefresh = 3 * time.Second
	listTimeout = 15 * time.Second
)

// resumedNotice is the notice of a chat opened on one of the agent's own
// sessions that the agent continued without replaying it.
const resumedNotice = "This is one of the agent's own sessions: the agent continued it and remembers its earlier turns, but could not show them here."

var _ host.ExternalSessions = (*Bridge)(nil)

// externals is the bridge's state of the agents' own sessions.
type externals struct {
	mu       sync.Mutex
	listings map[listingKey]*listing
	// held are the agent sessions behind the bridge's chats, by provider.
	held map[listingKey]bool
	// importing are the sessions OpenExternal described, until restored.
	importing map[string]bool
	// agentOf is the agent session behind each chat, by chat URI; forks
	// the agent session a new chat forks, until it opens.
	agentOf, forks map[string]string
}

// listingKey names a provider's list for a working directory ("" all), or
// (in held) a provider's agent session.
type listingKey struct{ provider, key string }

// listing is one provider's session list for one working directory.
type listing struct {
	fetching sync.Mutex // held while fetching; the rest is guarded by externals.mu
	fetched  time.Time
	pages    int    // how many pages the clients asked for
	next     string // the cursor of the next page, "" after the last
	sessions []backend.AgentSession
}

func (e *externals) init() {
	if e.listings == nil {
		e.listings = map[listingKey]*listing{}
		e.held = map[listingKey]bool{}
		e.importing = map[string]bool{}
		e.agentOf = map[string]string{}
		e.forks = map[string]string{}
	}
}

// noteAgentSession records that chat c talks to the agent session id: the
// agent's list no longer shows it, and a fork of the chat forks it.
func (b *Bridge) noteAgentSession(c *chat, id string) {
	if id == "" {
		return
	}
	b.ext.mu.Lock()
	b.ext.init()
	b.ext.held[listingKey{c.sess.providerID, id}] = true
	b.ext.agentOf[c.uri] = id
	b.ext.mu.Unlock()
}

// holdAgentSession keeps an agent session the bridge opened for itself
// (the models probe's) out of the agent's list.
func (b *Bridge) holdAgentSession(provider, id string) {
	if id == "" {
		return
	}
	b.ext.mu.Lock()
	b.ext.init()
	b.ext.held[listingKey{provider, id}] = true
	b.ext.mu.Unlock()
}

// noteFork records the agent session a new chat forks (createChat with a
// fork source, which the host accepted only where the agent can fork): the
// source chat's, as it last reported it or as it was restored with.
func (b *Bridge) noteFork(chatURI string, params wire.CreateChatParams) {
	if params.Source == nil {
		return
	}
	src, ok := params.Source.Value.(*wire.ForkChatSource)
	if !ok {
		return
	}
	from := ""
	if c := b.chat(src.Chat); c != nil && c.restored != nil {
		from = c.restored.agentID
	}
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	b.ext.init()
	b.ext.forks[chatURI] = cmp.Or(b.ext.agentOf[src.Chat], from)
}

// forkSource is the agent session the chat forks when it opens, "" for
// none (SessionOptions.Fork).
func (c *chat) forkSource() string {
	c.b.ext.mu.Lock()
	defer c.b.ext.mu.Unlock()
	return c.b.ext.forks[c.uri]
}

// listAtStart fetches the first page of the agents' lists of the
// providers that may start their agent for it, in the background.
func (b *Bridge) listAtStart() {
	for _, id := range b.providerIDs() {
		p, _, _ := b.provider(id)
		if as, ok := p.(backend.AgentSessions); ok && as.ListsWithoutRunning() {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.fetchListing(b.ctx, id, as, "", false)
				b.authChanged(id) // what the agent can do is known now
			}()
		}
	}
}

// providerIDs returns the configured providers in order.
func (b *Bridge) providerIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.order...)
}

// ExternalSummaries implements host.ExternalSessions.
func (b *Bridge) ExternalSummaries(ctx context.Context, q host.ExternalQuery) (items []wire.SessionSummary, more bool) {
	cwd := ""
	if q.WorkingDirectory != "" {
		if d, err := mapping.WorkingDirectory([]string{q.WorkingDirectory}, nil); err == nil {
			cwd = d
		}
	}
	var out []wire.SessionSummary
	for _, id := range b.providerIDs() {
		p, _, _ := b.provider(id)
		as, ok := p.(backend.AgentSessions)
		if !ok {
			continue
		}
		list, next := b.fetchListing(ctx, id, as, cwd, q.More)
		for _, s := range list {
			out = append(out, externalSummary(id, s))
		}
		more = more || next
	}
	return out, more
}

// fetchListing returns what is known of provider's list for cwd, not held
// by the bridge, after fetching it again when it is stale (or its next
// page when more), as far as the agent may be asked; next says the agent
// has more pages.
func (b *Bridge) fetchListing(ctx context.Context, provider string, as backend.AgentSessions, cwd string, more bool) (list []backend.AgentSession, next bool) {
	key := listingKey{provider, cwd}
	b.ext.mu.Lock()
	b.ext.init()
	l := b.ext.listings[key]
	if l == nil {
		l = &listing{}
		b.ext.listings[key] = l
	}
	b.ext.mu.Unlock()

	l.fetching.Lock()
	caps, _, running := as.SessionCaps()
	askable := (running && caps.List) || (!running && as.ListsWithoutRunning())
	b.ext.mu.Lock()
	pages, stale, cursor := l.pages, time.Since(l.fetched) >= cmp.Or(b.opts.ListRefresh, listRefresh), l.next
	b.ext.mu.Unlock()
	switch {
	case !askable:
	case pages == 0 || stale:
		n := max(pages, 1)
		if more && cursor != "" {
			n++
		}
		b.walkListing(ctx, provider, as, cwd, l, "", n)
	case more && cursor != "":
		b.walkListing(ctx, provider, as, cwd, l, cursor, 1)
	}
	l.fetching.Unlock()

	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	for _, s := range l.sessions {
		if !b.ext.held[listingKey{provider, s.ID}] {
			list = append(list, s)
		}
	}
	return list, askable && l.next != ""
}

// walkListing fetches pages of a list: from the first, replacing what it
// held, or from cursor, adding them. It keeps the list as it was when the
// agent fails. Called with l.fetching held.
func (b *Bridge) walkListing(ctx context.Context, provider string, as backend.AgentSessions, cwd string, l *listing, cursor string, pages int) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var got []backend.AgentSession
	from, n := cursor, 0
	for n < pages {
		page, err := as.ListAgentSessions(ctx, cwd, cursor)
		if err != nil {
			b.log.Info().Err(err).Str("provider", provider).Msg("the agent's own sessions could not be listed")
			return
		}
		n++
		got = append(got, page.Sessions...)
		cursor = page.Next
		if cursor == "" {
			break
		}
	}
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	if from != "" {
		// The next page: the rest of the list is as fresh as it was.
		l.sessions, l.next, l.pages = append(l.sessions, got...), cursor, l.pages+n
		return
	}
	l.sessions, l.next, l.pages, l.fetched = got, cursor, max(n, 1), time.Now()
}

// externalSummary is the catalogue entry of one of provider's agent
// sessions.
func externalSummary(provider string, s backend.AgentSession) wire.SessionSummary {
	at := agentTime(s.UpdatedAt)
	return wire.SessionSummary{
		Resource:           externalURI(provider, s.ID),
		Provider:           provider,
		Title:              cmp.Or(s.Title, "Agent session "+s.ID),
		Status:             wire.SessionStatusIdle,
		WorkingDirectories: externalDirs(s),
		CreatedAt:          at,
		ModifiedAt:         at,
		Meta:               map[string]any{AgentSessionMeta: true, AgentSessionIDMeta: s.ID},
	}
}

// externalURI names one of provider's agent sessions: `<provider>:/<id>`,
// VS Code's naming of a provider's sessions.
func externalURI(provider, id string) string { return provider + ":/" + id }

// externalDirs are an agent session's working directories as file URIs.
func externalDirs(s backend.AgentSession) []string {
	var out []string
	for _, d := range append([]string{s.Cwd}, s.AdditionalDirectories...) {
		if d != "" {
			out = append(out, (&url.URL{Scheme: "file", Path: d}).String())
		}
	}
	return out
}

// agentTime turns an agent's RFC 3339 time into the host's ISO form, so
// that catalogue entries sort together; "" (or a time that cannot be
// read) becomes the epoch, which sorts last.
func agentTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t = time.Unix(0, 0)
	}
	return reducer.FormatTime(t.UnixMilli())
}

// OpenExternal implements host.ExternalSessions: uri is one of an agent's
// own sessions when it is `<provider>:/<id>` and the provider's list
// holds id.
func (b *Bridge) OpenExternal(ctx context.Context, uri string) (host.ExternalSession, bool) {
	provider, id, ok := strings.Cut(uri, ":/")
	if !ok || id == "" {
		return host.ExternalSession{}, false
	}
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	if b.ext.held[listingKey{provider, id}] {
		return host.ExternalSession{}, false
	}
	for key, l := range b.ext.listings {
		if key.provider != provider {
			continue
		}
		var found *backend.AgentSession
		for i := range l.sessions {
			if l.sessions[i].ID == id {
				s := l.sessions[i]
				found = &s
				break
			}
		}
		if found == nil {
			continue
		}
		sum := externalSummary(provider, *found)
		b.ext.importing[uri] = true
		return host.ExternalSession{
			Provider: provider, Title: sum.Title, WorkingDirectories: sum.WorkingDirectories,
			CreatedAt: sum.CreatedAt, ModifiedAt: sum.ModifiedAt, AgentSessionID: id,
		}, true
	}
	return host.ExternalSession{}, false
}

// importing reports (once) whether a session being restored is one
// OpenExternal described.
func (b *Bridge) importing(session string) bool {
	b.ext.mu.Lock()
	defer b.ext.mu.Unlock()
	if !b.ext.importing[session] {
		return false
	}
	delete(b.ext.importing, session)
	return true
}

// ExternalOpened implements host.ExternalSessions: the default chat opens
// the agent's session now, so that its history shows.
func (b *Bridge) ExternalOpened(ctx context.Context, session string) {
	s := b.session(session)
	if s == nil {
		return
	}
	for _, c := range b.chatsOf(session) {
		if c.isDefault {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				c.openRestored()
			}()
		}
	}
}

// agentCapabilities are a provider's AHP agent capabilities: every chat is
// a backend session of its own, so a session can have several; an agent
// that said it can fork sessions forks chats, and one that takes
// additional directories has several working directories. What the agent
// can do is known once it has run (capsKey republishes it).
func agentCapabilities(p backend.Provider) *wire.AgentCapabilities {
	caps := &wire.AgentCapabilities{MultipleChats: &wire.MultipleChatsCapability{}}
	as, ok := p.(backend.AgentSessions)
	if !ok {
		return caps
	}
	sc, known, _ := as.SessionCaps()
	if !known {
		return caps
	}
	if sc.Fork {
		caps.MultipleChats.Fork = wire.Ptr(true)
	}
	if sc.AdditionalDirectories {
		caps.MultipleWorkingDirectories = &wire.MultipleWorkingDirectoriesCapability{}
	}
	return caps
}

// capsKey is what of a provider's capabilities the agent list shows, so
// that the list is published again once the agent said what it can do.
func capsKey(p backend.Provider) string {
	c := agentCapabilities(p)
	return fmt.Sprintf("|fork=%v|dirs=%v", c.MultipleChats.Fork != nil, c.MultipleWorkingDirectories != nil)
}

// imported reports whether the chat opens one of the agent's own sessions
// (SessionOptions.Import).
func (c *chat) imported() bool { return c.restored != nil && c.restored.imported }
