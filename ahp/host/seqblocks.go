package host

import (
	"errors"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// Bridges sharing a state file hand out serverSeq values from blocks each
// reserves for itself (store.SeqBlocks), so that two of them never hand
// out the same value (persist.Store.ReserveSeqBlock); the host takes each
// value from its reserve's Next.

// nextSeqLocked is the serverSeq to hand out next, covered by the stored
// mark. Called with Host.mu held. A failure is logged, at most once a
// minute: the bridge keeps serving, and a restart before the mark is
// raised could hand the value out again.
func (h *Host) nextSeqLocked() int64 {
	if h.ds == nil {
		return h.seq + 1
	}
	v, err := h.ds.seq.Next(h.seq)
	if err != nil && !errors.Is(err, store.ErrClosed) {
		now, last := time.Now().UnixNano(), h.ds.seqFailAt.Load()
		if now-last >= int64(persist.FailureLogEvery) && h.ds.seqFailAt.CompareAndSwap(last, now) {
			h.log.Error().Err(err).Msg("serverSeq is not covered by the state store; a restart now could repeat serverSeq values (logged again in a minute while this lasts)")
		}
	}
	return max(v, h.seq+1)
}
