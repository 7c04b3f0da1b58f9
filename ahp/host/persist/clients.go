package persist

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/store"
)

// ClientRetention is how long a client's record is kept after it was last
// seen.
const ClientRetention = 30 * 24 * time.Hour

// clientPruneEvery is how often records are pruned while the bridge runs.
const clientPruneEvery = 24 * time.Hour

// clientWriteDelay lets a burst of subscriptions (VS Code subscribes to a
// session, then each chat) go as one write.
const clientWriteDelay = 100 * time.Millisecond

// ClientBook writes clients' records (their dialect and subscriptions) to
// the store off every request's path: Note queues a record, and Run, the
// book's one writer, writes the newest record of each client, so a burst
// of subscriptions costs one write. It prunes the records of clients not
// seen for ClientRetention at start and once a day.
type ClientBook struct {
	st    *Store
	clock func() int64 // Unix ms
	log   zerolog.Logger

	mu      sync.Mutex
	pending map[string]store.Client // newest record of each client, not written yet
	wake    chan struct{}
}

// NewClientBook returns a book writing to st; clock is the host's (Unix
// ms), which says when a record is too old.
func NewClientBook(st *Store, clock func() int64, log zerolog.Logger) *ClientBook {
	return &ClientBook{st: st, clock: clock, log: log, pending: map[string]store.Client{}, wake: make(chan struct{}, 1)}
}

// Note queues rec for writing, replacing any record of the same client not
// written yet. It never blocks.
func (b *ClientBook) Note(rec store.Client) {
	b.mu.Lock()
	b.pending[rec.ID] = rec
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Run writes the records noted until ctx ends, then writes what is still
// pending and returns. Its caller owns it (the host runs it in a goroutine
// it waits for).
func (b *ClientBook) Run(ctx context.Context) {
	b.prune()
	prune := time.NewTicker(clientPruneEvery)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			b.write() // what the last moments changed
			return
		case <-prune.C:
			b.prune()
		case <-b.wake:
			select {
			case <-ctx.Done():
			case <-time.After(clientWriteDelay):
			}
			b.write()
		}
	}
}

// write writes the pending records. Failures are noted like any other
// write (Store) and not retried: the next change of the client writes it
// again.
func (b *ClientBook) write() {
	b.mu.Lock()
	recs := b.pending
	b.pending = map[string]store.Client{}
	b.mu.Unlock()
	for _, rec := range recs {
		ctx, cancel := WriteCtx()
		if err := b.st.PutClient(ctx, rec); err != nil && !errors.Is(err, store.ErrClosed) {
			b.log.Debug().Err(err).Str("client", rec.ID).Msg("the client's record was not written; a restarted bridge may not know it")
		}
		cancel()
	}
}

func (b *ClientBook) prune() {
	ctx, cancel := WriteCtx()
	defer cancel()
	cut := time.UnixMilli(b.clock()).Add(-ClientRetention)
	n, err := b.st.PruneClients(ctx, cut)
	switch {
	case err != nil && !errors.Is(err, store.ErrClosed):
		b.log.Warn().Err(err).Msg("old client records could not be pruned from the state store")
	case n > 0:
		b.log.Debug().Int("clients", n).Msg("pruned the records of clients not seen for 30 days")
	}
}
