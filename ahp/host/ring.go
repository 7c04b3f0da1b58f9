package host

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// ringEntry is one sequenced action envelope kept for replay.
type ringEntry struct {
	seq     int64
	channel string
	// env is the encoded envelope (a sub-slice of the broadcast frame),
	// reused verbatim in reconnect replies to the host's own dialect;
	// action (a sub-slice of env) and origin are what a codec translates
	// for the others.
	env    []byte
	action []byte
	origin *wire.ActionOrigin
}

// replayRing keeps the most recent sequenced envelopes. Every accepted
// action gets the next serverSeq and is pushed here, so the retained
// entries always have consecutive sequence numbers.
//
// It is bounded by count and by bytes: a long response streamed in large
// coalesced frames would otherwise keep a second copy of itself here (the
// session's state holds the first), which is most of the bridge's peak
// memory over such a response (docs/performance.md). A client that
// reconnects from before the oldest retained entry gets a snapshot.
type replayRing struct {
	buf      []ringEntry
	start    int // index of the oldest entry
	n        int // number of retained entries
	bytes    int // sum of len(env) over the retained entries
	maxBytes int
}

func newReplayRing(size, maxBytes int) *replayRing {
	if size < 1 {
		size = 1
	}
	return &replayRing{buf: make([]ringEntry, size), maxBytes: maxBytes}
}

// push appends e, evicting the oldest entries while the ring is full by
// count or by bytes. The newest entry is always kept, whatever its size.
func (r *replayRing) push(e ringEntry) {
	for r.n > 0 && (r.n == len(r.buf) || r.bytes+len(e.env) > r.maxBytes) {
		r.evictOldest()
	}
	r.buf[(r.start+r.n)%len(r.buf)] = e
	r.n++
	r.bytes += len(e.env)
}

// evictOldest drops the oldest entry and its reference to the frame.
func (r *replayRing) evictOldest() {
	r.bytes -= len(r.buf[r.start].env)
	r.buf[r.start] = ringEntry{}
	r.start = (r.start + 1) % len(r.buf)
	r.n--
}

// oldest returns the smallest retained serverSeq.
func (r *replayRing) oldest() (int64, bool) {
	if r.n == 0 {
		return 0, false
	}
	return r.buf[r.start].seq, true
}

// canReplayFrom reports whether every envelope after lastSeen, up to
// current (the latest assigned serverSeq), is still retained.
func (r *replayRing) canReplayFrom(lastSeen, current int64) bool {
	if lastSeen < 0 || lastSeen > current {
		return false // a sequence number this server never issued
	}
	if lastSeen == current {
		return true // nothing missed
	}
	oldest, ok := r.oldest()
	return ok && lastSeen >= oldest-1
}

// after calls fn for every retained entry with seq > lastSeen, in order.
func (r *replayRing) after(lastSeen int64, fn func(*ringEntry)) {
	for i := 0; i < r.n; i++ {
		e := &r.buf[(r.start+i)%len(r.buf)]
		if e.seq > lastSeen {
			fn(e)
		}
	}
}

// len reports the number of retained entries.
func (r *replayRing) len() int { return r.n }
