package host

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// Bridges sharing a state file see each other's sessions: listSessions
// reads the store, and the root's subscribers hear of a session another
// bridge creates, changes or deletes (root/sessionAdded,
// root/sessionSummaryChanged, root/sessionRemoved) within about a second. The host polls the store's change counter, which
// every catalogue write of any bridge raises, and when it moved reads the
// catalogue back to the newest row it had seen.

// othersPollEvery is how often the change counter is read.
const othersPollEvery = time.Second

// othersWatch is what the poller remembers between polls.
type othersWatch struct {
	since   time.Time         // this host's start: sessions created later are new to every client
	count   int64             // the change counter last read
	mark    time.Time         // the newest modification time handled
	summary map[string][]byte // the summary last announced of each session, to announce a change once
}

// watchOthers starts the poller when the store is shared. It ends with the
// host (Close waits for it).
func (h *Host) watchOthers() {
	hs := h.holding()
	if hs == nil || h.ds == nil {
		return
	}
	ctx, cancel := persist.WriteCtx()
	n, err := hs.ChangeCount(ctx)
	cancel()
	if err != nil {
		h.log.Warn().Err(err).Msg("cannot watch the state file for other bridges' sessions")
		return
	}
	now := time.Now()
	w := &othersWatch{since: now, count: n, mark: now, summary: map[string][]byte{}}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(othersPollEvery)
		defer t.Stop()
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-t.C:
			}
			h.pollMirrors(h.pollOthers(hs, w)) // mirror.go
		}
	}()
}

// pollOthers announces what other bridges changed since the last poll,
// and reports whether anything did (the change counter moved).
func (h *Host) pollOthers(hs store.Holding, w *othersWatch) bool {
	ctx, cancel := context.WithTimeout(h.ctx, persist.WriteTimeout)
	defer cancel()
	n, err := hs.ChangeCount(ctx)
	if err != nil || n == w.count {
		return false
	}
	removed, err := hs.RemovedSince(ctx, w.count)
	if err != nil {
		return true // read again at the next poll
	}
	w.count = n
	for _, uri := range removed {
		h.announceRemoved(w, uri)
	}
	var changed []store.Session
	newest := w.mark
	q := store.ListQuery{Limit: 50}
scan:
	for {
		page, err := h.ds.st.ListSessions(ctx, q)
		if err != nil {
			return true // read again at the next poll: the counter is still ahead
		}
		for _, s := range page.Sessions {
			if s.Modified.Before(w.mark) {
				break scan
			}
			newest = maxTime(newest, s.Modified)
			changed = append(changed, s)
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	w.mark = newest
	for i := len(changed) - 1; i >= 0; i-- { // oldest first
		h.announceOther(w, changed[i])
	}
	return true
}

// announceRemoved tells the root's subscribers that another bridge (or
// `ahp-bridge sessions delete`) deleted a session this host does not have
// in memory.
func (h *Host) announceRemoved(w *othersWatch, uri string) {
	delete(w.summary, uri)
	if h.dropMirror(uri) { // mirror.go: announced there
		return
	}
	if h.lookup(uri) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.broadcastRootLocked("root/sessionRemoved", map[string]any{"channel": RootURI, "session": uri})
}

// indexOther adds the chats of a session another bridge wrote to the chat
// index (restore.go), which was built from the catalogue as it was then,
// so that a client naming one of them here finds its session.
func (h *Host) indexOther(uri string, sum *persist.StoredSession) {
	for _, c := range sum.Summary.Chats {
		h.indexChat(c.Resource, uri)
	}
	if sum.Summary.DefaultChat != nil {
		h.indexChat(*sum.Summary.DefaultChat, uri)
	}
}

// announceOther tells the root's subscribers of a session row that changed
// in the store, unless it is one this host drives (it announced that
// itself) or nothing a client sees changed.
func (h *Host) announceOther(w *othersWatch, s store.Session) {
	var ss persist.StoredSession
	if h.lookup(s.URI) != nil || h.holding().Holds(s.URI) {
		if g := h.mirrorOf(s.URI); g != nil && json.Unmarshal(s.Summary, &ss) == nil {
			h.retitleMirror(g, ss.Summary.Title) // mirror.go; it announces itself
		}
		return
	}
	if json.Unmarshal(s.Summary, &ss) != nil {
		return
	}
	h.indexOther(s.URI, &ss)
	body, err := json.Marshal(ss.Summary)
	if err != nil {
		return
	}
	prev, known := w.summary[s.URI]
	if known && string(prev) == string(body) {
		return
	}
	w.summary[s.URI] = body
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if !known && !s.Created.Before(w.since) {
		h.broadcastRootLocked("root/sessionAdded", map[string]any{"channel": RootURI, "summary": json.RawMessage(body)})
		return
	}
	var changes map[string]any
	if json.Unmarshal(body, &changes) != nil {
		return
	}
	// Identity fields never change and must not be sent.
	delete(changes, "resource")
	delete(changes, "provider")
	delete(changes, "createdAt")
	h.broadcastRootLocked("root/sessionSummaryChanged", map[string]any{"channel": RootURI, "session": s.URI, "changes": changes})
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
