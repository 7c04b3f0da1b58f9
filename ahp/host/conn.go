package host

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/host/workspace"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
)

// Conn is the transport-agnostic connection the host serves: read one
// message, write one message, close. See transport.Conn for the
// concurrency contract.
type Conn = transport.Conn

// outFrame is one queued outbound frame. closeAfter asks the writer to
// close the connection once this frame (if any) has been written.
type outFrame struct {
	b          []byte
	closeAfter string     // non-empty: close after writing, for this reason
	at         int64      // non-zero: a latency sample's stamp (ops.go)
	stream     *streamOut // instead of b: a response written as it is produced (stream.go)
}

// conn is the host's side of one client connection.
type conn struct {
	h   *Host
	id  uint64
	tc  Conn
	log zerolog.Logger

	killOnce sync.Once
	kill     chan struct{}  // closed when the connection must end
	closing  sync.WaitGroup // the transport Close started by terminate
	reason   string         // why; written once before kill is closed

	// Handshake state, written by the read loop under h.mu, read by
	// other goroutines under h.mu.
	initialized bool
	clientID    string
	version     codec.Version
	// codec translates between the host's dialect and the connection's;
	// nil when the connection speaks the host's own (codec.Current).
	codec codec.Codec

	// subs is the set of channels this connection is subscribed to,
	// guarded by h.mu (it mirrors channel.subs).
	subs map[string]*channel
	// tails are the chats this connection subscribed to with a view of
	// their last turns only (it may lack older ones), guarded by h.mu.
	tails map[string]bool

	// qmu guards the queue hand-off state below.
	qmu sync.Mutex
	// queue is the bounded outbound queue (at most qcap frames) drained
	// by writeLoop. A slice, not a buffered channel, so that an idle
	// connection holds no queue memory (docs/performance.md).
	queue   []outFrame
	qcap    int
	wake    chan struct{} // capacity 1: tells writeLoop that frames were queued
	dead    bool          // no more frames are accepted
	drained bool          // the peer's input ended; the writer is flushing what is owed
	idle    chan struct{} // made by drain: told when pending drops to zero
	holding bool          // frames are parked in held (see hold)
	held    [][]byte      // frames parked while holding

	reqWG   sync.WaitGroup // asynchronous requests still running
	pending atomic.Int32   // how many of them; bounded by MaxPendingRequests

	streams streamSet       // streamed responses not yet written (stream.go)
	files   workspace.Files // what this connection may touch on disk (workspace.go)
}

// isInitialized reports whether the connection has completed initialize
// (or reconnect).
func (c *conn) isInitialized() bool {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	return c.initialized
}

// send queues a frame for writing. It never blocks: when the queue is full
// the connection is closed (the client can reconnect and replay), so a slow
// reader never slows the session or other connections.
func (c *conn) send(frame []byte) { c.sendAt(frame, 0) }

// sendAt is send for a frame stamped for latency measurement (ops.go).
func (c *conn) sendAt(frame []byte, at int64) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.dead {
		return
	}
	if c.holding {
		if len(c.held) >= c.qcap {
			c.overflowLocked()
			return
		}
		c.held = append(c.held, frame)
		return
	}
	c.pushLocked(outFrame{b: frame, at: at})
}

// sendAndClose queues a final frame; the connection is closed, for reason,
// after it has been written (used after a failed protocol negotiation).
func (c *conn) sendAndClose(frame []byte, reason string) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.dead {
		return
	}
	c.pushLocked(outFrame{b: frame, closeAfter: reason})
	c.dead = true
}

// hold parks subsequent frames until release, so a response assembled from
// several channel snapshots reaches the client before any action sequenced
// after those snapshots.
func (c *conn) hold() {
	c.qmu.Lock()
	c.holding = true
	c.qmu.Unlock()
}

// release queues first, then every frame parked since hold.
func (c *conn) release(first []byte) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	held := c.held
	c.held, c.holding = nil, false
	if c.dead {
		return
	}
	if first != nil {
		c.pushLocked(outFrame{b: first})
	}
	for _, f := range held {
		if c.dead {
			return
		}
		c.pushLocked(outFrame{b: f})
	}
}

func (c *conn) pushLocked(f outFrame) {
	if len(c.queue) >= c.qcap {
		c.overflowLocked()
		return
	}
	c.queue = append(c.queue, f)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// takeQueued removes and returns every queued frame, reusing spare (whose
// contents are done with) as the next queue.
func (c *conn) takeQueued(spare []outFrame) []outFrame {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.takeQueuedLocked(spare)
}

func (c *conn) takeQueuedLocked(spare []outFrame) []outFrame {
	out := c.queue
	c.queue = spare[:0]
	return out
}

func (c *conn) overflowLocked() {
	c.dead = true
	c.h.stats.slowClosed.Add(1)
	reason := "the client is not reading fast enough: its outbound queue of " + itoa(c.qcap) + " messages is full"
	c.log.Warn().Str("reason", reason).Msg("dropping a slow AHP connection; it may reconnect and replay")
	c.terminate(reason)
}

// terminate ends the connection; the first reason given is logged.
func (c *conn) terminate(reason string) {
	c.killOnce.Do(func() {
		c.reason = reason
		c.log.Info().Str("reason", reason).Msg("closing AHP connection")
		close(c.kill)
		// Close the transport now, from a goroutine (terminate may run
		// under qmu, and Close may block briefly): a writer blocked on a
		// slow peer and the read loop both return at once. ServeConn
		// waits for it.
		if c.tc != nil {
			c.closing.Add(1)
			go func() {
				defer c.closing.Done()
				_ = c.tc.Close()
			}()
		}
	})
}

// drain ends a connection whose peer has closed its input cleanly. Such a
// peer may still be reading (`printf '...' | ahp-bridge serve --stdio`
// closes stdin at once and waits for the answers on stdout), so the
// requests it made are answered and every frame queued so far is written
// before the transport is closed. Frames produced later (a turn still
// streaming) are dropped: the peer can no longer act on them. A peer that
// stops reading cannot hold the connection open: after timeout it is
// closed with whatever is still queued.
func (c *conn) drain(reason string, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// Whichever way this ends, terminate runs last: when the connection
	// has already ended, it returns only once that first terminate has
	// finished, which ServeConn relies on (see its c.closing.Wait).
	final := reason
	defer func() { c.terminate(final) }()
	// The read loop has stopped, so no request can start now; wait for
	// the asynchronous ones still running to queue their answers. idle is
	// made here rather than with the connection, which would cost every
	// idle connection a channel (docs/performance.md).
	idle := make(chan struct{}, 1)
	c.qmu.Lock()
	c.idle = idle
	c.qmu.Unlock()
	for c.pending.Load() > 0 {
		select {
		case <-idle:
		case <-c.kill:
			return
		case <-deadline.C:
			final = fmt.Sprintf("%s; gave up after %s waiting for %d requests to be answered", reason, timeout, c.pending.Load())
			return
		}
	}
	c.qmu.Lock()
	if !c.dead {
		// The marker carries no frame, so it is queued even into a full
		// queue: it only tells the writer where to stop.
		c.queue = append(c.queue, outFrame{closeAfter: reason})
		c.dead, c.drained = true, true
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.qmu.Unlock()
	select {
	case <-c.kill:
	case <-deadline.C:
		final = fmt.Sprintf("%s and did not read the replies owed to it within %s", reason, timeout)
	}
}

// writeFailed ends the connection after a failed write. Once the peer's
// input has ended, a write failing means it went away without reading
// everything, which is its choice rather than a fault of ours.
func (c *conn) writeFailed(err error) {
	c.qmu.Lock()
	drained := c.drained
	c.qmu.Unlock()
	if drained {
		c.terminate("the client disconnected before reading every reply (write: " + err.Error() + ")")
		return
	}
	c.terminate("write failed: " + err.Error())
}

// writeLoop writes queued frames in order until the connection ends. It
// takes everything queued at once, so a burst costs one hand-off, and
// writes consecutive plain frames of it with one write when the transport
// can (writeRun). It never waits for more frames: a frame queued on an
// idle connection is written at once.
func (c *conn) writeLoop() {
	var batch []outFrame
	var msgs [][]byte
	bw, _ := c.tc.(transport.BatchWriter)
	for {
		select {
		case <-c.kill:
			return
		case <-c.wake:
		}
		batch = c.takeQueued(batch)
		for i := 0; i < len(batch); {
			select {
			case <-c.kill:
				return
			default:
			}
			f := batch[i]
			if f.stream != nil {
				batch[i] = outFrame{}
				i++
				if !c.writeStream(f.stream) {
					return
				}
				if f.closeAfter != "" {
					c.terminate(f.closeAfter)
					return
				}
				continue
			}
			// A run of plain frames, up to and including one that closes
			// the connection.
			j := i
			for j < len(batch) && batch[j].stream == nil {
				j++
				if batch[j-1].closeAfter != "" {
					break
				}
			}
			var ok bool
			if msgs, ok = c.writeRun(bw, batch[i:j], msgs); !ok {
				return
			}
			last := batch[j-1].closeAfter
			clear(batch[i:j]) // the writer is done with them: the frames may go
			i = j
			if last != "" {
				c.terminate(last)
				return
			}
		}
		if cap(batch) > 64 {
			batch, msgs = nil, nil // an idle connection keeps no large queue
		}
	}
}

// writeRun writes the frames of run that carry bytes, with one
// WriteMessages when bw is set and there are several, else one
// WriteMessage each; msgs is scratch space, returned for reuse. It reports
// false when a write failed (the connection is then ending).
func (c *conn) writeRun(bw transport.BatchWriter, run []outFrame, msgs [][]byte) ([][]byte, bool) {
	msgs = msgs[:0]
	for _, f := range run {
		if f.b != nil {
			c.h.wireLog("out", f.b)
			msgs = append(msgs, f.b)
		}
	}
	var err error
	switch {
	case len(msgs) == 0:
	case bw != nil && len(msgs) > 1:
		err = bw.WriteMessages(msgs)
	default:
		for _, m := range msgs {
			if err = c.tc.WriteMessage(m); err != nil {
				break
			}
		}
	}
	clear(msgs)
	if err != nil {
		c.writeFailed(err)
		return msgs, false
	}
	for _, f := range run {
		if f.b != nil {
			c.h.written(f)
		}
	}
	return msgs, true
}

// endRequest ends one asynchronous request; the last one wakes a drain
// waiting for the connection's answers.
func (c *conn) endRequest() {
	if c.pending.Add(-1) == 0 {
		c.qmu.Lock()
		if c.idle != nil {
			select {
			case c.idle <- struct{}{}:
			default:
			}
		}
		c.qmu.Unlock()
	}
	c.reqWG.Done()
}
