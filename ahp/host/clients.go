package host

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file remembers clients across restarts (issue 23). With a store,
// each clientId's negotiated dialect and subscriptions are written to it
// when the client initializes, reconnects, subscribes or unsubscribes, so
// that a restarted bridge answers the client's `reconnect` with snapshots
// in that dialect rather than "unknown client" (VS Code's older clients
// retry reconnect for ever, and only its newest falls back to initialize,
// on -32008). The writes are off the request path: noteClient copies the
// record under Host.mu and hands it to persist.ClientBook, whose one writer
// goroutine writes the newest record of each client, so a burst of
// subscriptions costs one write. No session lock is ever held across the
// write. Records of clients not seen for 30 days are pruned at start and
// once a day.

// startClientBook starts the writer of client records (persist.ClientBook);
// it runs until the host's context ends, then writes what is pending.
// Called by openDurable.
func (h *Host) startClientBook() {
	b := persist.NewClientBook(h.ds.st, h.opts.Clock, h.log)
	h.ds.clients = b
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		b.Run(h.ctx)
	}()
}

// noteClient queues c's record (its dialect and subscriptions as they are
// now) for writing. It takes Host.mu briefly: call it without it.
func (h *Host) noteClient(c *conn) {
	if h.ds == nil || h.ds.clients == nil {
		return
	}
	h.mu.Lock()
	if !c.initialized || c.clientID == "" {
		h.mu.Unlock()
		return
	}
	rec := store.Client{ID: c.clientID, ProtocolVersion: c.version.String(), Seen: time.UnixMilli(h.opts.Clock())}
	rec.Subscriptions = make([]string, 0, len(c.subs))
	for uri := range c.subs {
		rec.Subscriptions = append(rec.Subscriptions, uri)
	}
	h.mu.Unlock()
	slices.SortFunc(rec.Subscriptions, func(a, b string) int {
		return cmp.Or(cmp.Compare(subscriptionRank(a), subscriptionRank(b)), cmp.Compare(a, b))
	})
	h.ds.clients.Note(rec)
}

// subscriptionRank orders a client's subscriptions as VS Code restores
// them: the root, then sessions, then chats, then the rest.
func subscriptionRank(uri string) int {
	switch {
	case uri == RootURI || strings.HasPrefix(uri, "ahp-root:"):
		return 0
	case validSessionURI(uri):
		return 1
	case strings.HasPrefix(uri, "ahp-chat:"):
		return 2
	}
	return 3
}

// storedClient returns the dialect and subscriptions the store remembers
// of a client, for a reconnect the host does not know from this process.
// ok is false for a client it never saw (or whose dialect this bridge no
// longer speaks).
func (h *Host) storedClient(clientID string) (v codec.Version, subs []string, ok bool) {
	if h.ds == nil {
		return codec.Version{}, nil, false
	}
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	rec, err := h.ds.st.GetClient(ctx, clientID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.Warn().Err(err).Str("client", clientID).Msg("the client's record could not be read; it is treated as unknown")
		}
		return codec.Version{}, nil, false
	}
	pv, err := codec.ParseVersion(rec.ProtocolVersion)
	if err != nil {
		return codec.Version{}, nil, false
	}
	d, known := codec.DialectOf(pv)
	if !known {
		return codec.Version{}, nil, false
	}
	return d, rec.Subscriptions, true
}
