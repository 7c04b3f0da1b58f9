package host

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"
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
// record under Host.mu and hands it to one writer goroutine, which writes
// the newest record of each client, so a burst of subscriptions costs one
// write. No session lock is ever held across the write. Records of clients
// not seen for clientRetention are pruned at start and once a day.

// clientRetention is how long a client's record is kept after it was last
// seen.
const clientRetention = 30 * 24 * time.Hour

// clientPruneEvery is how often records are pruned while the bridge runs.
const clientPruneEvery = 24 * time.Hour

// clientWriteDelay lets a burst of subscriptions (VS Code subscribes to a
// session, then each chat) go as one write.
const clientWriteDelay = 100 * time.Millisecond

// clientBook queues the client records to write.
type clientBook struct {
	mu      sync.Mutex
	pending map[string]store.Client // newest record of each client, not written yet
	wake    chan struct{}
}

// startClientBook starts the writer of client records; it runs until the
// host's context ends, then writes what is pending. Called by openDurable.
func (h *Host) startClientBook() {
	b := &clientBook{pending: map[string]store.Client{}, wake: make(chan struct{}, 1)}
	h.ds.clients = b
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.runClientBook(b)
	}()
}

func (h *Host) runClientBook(b *clientBook) {
	h.pruneClients()
	prune := time.NewTicker(clientPruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-h.ctx.Done():
			h.writeClients(b) // what the last moments changed
			return
		case <-prune.C:
			h.pruneClients()
		case <-b.wake:
			select {
			case <-h.ctx.Done():
			case <-time.After(clientWriteDelay):
			}
			h.writeClients(b)
		}
	}
}

// writeClients writes the pending records. Failures are noted like any
// other write (persist.Store) and not retried: the next change of the
// client writes it again.
func (h *Host) writeClients(b *clientBook) {
	b.mu.Lock()
	recs := b.pending
	b.pending = map[string]store.Client{}
	b.mu.Unlock()
	for _, rec := range recs {
		ctx, cancel := persist.WriteCtx()
		if err := h.ds.st.PutClient(ctx, rec); err != nil && !errors.Is(err, store.ErrClosed) {
			h.log.Debug().Err(err).Str("client", rec.ID).Msg("the client's record was not written; a restarted bridge may not know it")
		}
		cancel()
	}
}

func (h *Host) pruneClients() {
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	cut := time.UnixMilli(h.opts.Clock()).Add(-clientRetention)
	n, err := h.ds.st.PruneClients(ctx, cut)
	switch {
	case err != nil && !errors.Is(err, store.ErrClosed):
		h.log.Warn().Err(err).Msg("old client records could not be pruned from the state store")
	case n > 0:
		h.log.Debug().Int("clients", n).Msg("pruned the records of clients not seen for 30 days")
	}
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
	b := h.ds.clients
	b.mu.Lock()
	b.pending[rec.ID] = rec
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
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
