package persist

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// WriteTimeout bounds one write, so that a stalled disk holds a session's
// broadcasts (and whoever waits for them) for a bounded time rather than
// for ever.
const WriteTimeout = 10 * time.Second

// FailureLogEvery is how often a store that keeps failing is logged again.
const FailureLogEvery = time.Minute

// WriteCtx is the context of one write (or read) of the store.
func WriteCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), WriteTimeout)
}

// Options configure a Store.
type Options struct {
	// OnWrite, when set, is told how long every write took and how it
	// ended (Options.OnStoreWrite of the host: the ops metrics).
	OnWrite func(time.Duration, error)
	// Logger logs failures and recoveries.
	Logger zerolog.Logger
}

// Store is the state store as the host uses it: every write is timed for
// Options.OnWrite and its outcome noted, so that the failure warning
// (Warning) and the metrics cover the checkpointer's and the serverSeq
// reserve's writes as well as the host's own. Reads go to the store
// unchanged. Its methods may be called concurrently, under any of the
// host's locks: it takes none of them.
type Store struct {
	store.Store
	opts Options

	mu sync.Mutex
	// failing is set from a failed write until one succeeds; failedAt is
	// when it started, lastLog when it was last logged and since how many
	// failures.
	failing  bool
	failedAt time.Time
	lastLog  time.Time
	failures int
	// warning is what the root's _meta should show, nil while writes
	// succeed.
	warning atomic.Pointer[Warning]
}

// Observe wraps st.
func Observe(st store.Store, opts Options) *Store {
	return &Store{Store: st, opts: opts}
}

// Warning is what a client is shown while writes fail (the host's
// StateWarningMeta).
type Warning struct {
	Message string `json:"message"`
	Since   string `json:"since"`
}

// Warning returns the warning to show, nil while writes succeed.
func (s *Store) Warning() *Warning { return s.warning.Load() }

func (s *Store) done(start time.Time, err error) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrHeld) {
		// The caller's business (a row not there, a session another
		// bridge drives), not the file failing.
		return err
	}
	if f := s.opts.OnWrite; f != nil {
		f(time.Since(start), err)
	}
	if err == nil {
		s.recovered()
	} else if !errors.Is(err, store.ErrClosed) && !errors.Is(err, context.Canceled) {
		s.failed(err)
	}
	return err
}

// PutSession implements store.Store, observed.
func (s *Store) PutSession(ctx context.Context, sess store.Session, chats ...store.Chat) error {
	start := time.Now()
	return s.done(start, s.Store.PutSession(ctx, sess, chats...))
}

// PutChat implements store.Store, observed.
func (s *Store) PutChat(ctx context.Context, c store.Chat) error {
	start := time.Now()
	return s.done(start, s.Store.PutChat(ctx, c))
}

// AppendTurn implements store.Store, observed.
func (s *Store) AppendTurn(ctx context.Context, c store.TurnCommit) error {
	start := time.Now()
	return s.done(start, s.Store.AppendTurn(ctx, c))
}

// DeleteSession implements store.Store, observed.
func (s *Store) DeleteSession(ctx context.Context, uri string) error {
	start := time.Now()
	return s.done(start, s.Store.DeleteSession(ctx, uri))
}

// PutCheckpoints implements store.Store, observed.
func (s *Store) PutCheckpoints(ctx context.Context, cps []store.Checkpoint) error {
	start := time.Now()
	return s.done(start, s.Store.PutCheckpoints(ctx, cps))
}

// PutClient implements store.Store, observed.
func (s *Store) PutClient(ctx context.Context, c store.Client) error {
	start := time.Now()
	return s.done(start, s.Store.PutClient(ctx, c))
}

// RaiseSeqHighWater implements store.Store, observed.
func (s *Store) RaiseSeqHighWater(ctx context.Context, v int64) error {
	start := time.Now()
	return s.done(start, s.Store.RaiseSeqHighWater(ctx, v))
}

// ReserveSeqBlock lets the serverSeq reserve reserve blocks through the
// observed store, its writes timed and noted like the others. Bridges
// sharing a state file hand out serverSeq values from blocks each reserves
// for itself (store.SeqBlocks), so that two of them never hand out the
// same value. A store that reserves no blocks of its own (one the host
// alone uses) gets the same from reading and raising its mark.
func (s *Store) ReserveSeqBlock(ctx context.Context, n int64) (int64, error) {
	start := time.Now()
	if sb, ok := s.Store.(store.SeqBlocks); ok {
		mark, err := sb.ReserveSeqBlock(ctx, n)
		return mark, s.done(start, err)
	}
	h, err := s.Store.SeqHighWater(ctx)
	if err == nil {
		err = s.Store.RaiseSeqHighWater(ctx, h+n)
	}
	return h + n, s.done(start, err)
}

var _ store.SeqBlocks = (*Store)(nil)

// failed notes a failed write: the first one of a run is logged at once
// and raises the warning; later ones are logged once a minute. It takes
// no host lock (writes happen on a session's drainer, or under the host's
// sequencer lock when SeqReserve.Cover waits for one), so the warning
// reaches the root state when the root is next read.
func (s *Store) failed(err error) {
	now := time.Now()
	s.mu.Lock()
	s.failures++
	first := !s.failing
	if first {
		s.failing, s.failedAt = true, now
	}
	logNow := first || now.Sub(s.lastLog) >= FailureLogEvery
	n := s.failures
	if logNow {
		s.lastLog, s.failures = now, 0
	}
	if first {
		// Under s.mu, so that a success racing with this failure cannot
		// clear the warning before it is raised.
		s.warning.Store(&Warning{
			Message: "ahp-bridge cannot write its state file: " + err.Error() + "; sessions are served from memory, and what changes now may be lost if the bridge restarts",
			Since:   reducer.FormatTime(now.UnixMilli()),
		})
	}
	s.mu.Unlock()
	if logNow {
		s.opts.Logger.Error().Err(err).Int("failedWrites", n).Msg("the state store cannot be written; sessions are served from memory and what changes now may be lost at a restart (logged again in a minute while this lasts)")
	}
}

// recovered notes a successful write: a run of failures ends.
func (s *Store) recovered() {
	s.mu.Lock()
	if !s.failing {
		s.mu.Unlock()
		return
	}
	s.failing = false
	n, since := s.failures, s.failedAt
	s.failures = 0
	s.warning.Store(nil)
	s.mu.Unlock()
	s.opts.Logger.Info().Dur("failedFor", time.Since(since)).Int("failedWritesSinceLastLog", n).Msg("the state store is written again")
}
