package host

import (
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

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
	closeAfter string // non-empty: close after writing, for this reason
}

// conn is the host's side of one client connection.
type conn struct {
	h   *Host
	id  uint64
	tc  Conn
	log zerolog.Logger

	// out is the bounded outbound queue drained by writeLoop.
	out chan outFrame

	killOnce sync.Once
	kill     chan struct{} // closed when the connection must end
	reason   string        // why; written once before kill is closed

	// Handshake state, written by the read loop under h.mu, read by
	// other goroutines under h.mu.
	initialized bool
	clientID    string
	version     string
	codec       codec // set with version; nil means baseline

	// subs is the set of channels this connection is subscribed to,
	// guarded by h.mu (it mirrors channel.subs).
	subs map[string]*channel

	// qmu guards the queue hand-off state below.
	qmu     sync.Mutex
	dead    bool     // no more frames are accepted
	holding bool     // frames are parked in held (see hold)
	held    [][]byte // frames parked while holding

	reqWG   sync.WaitGroup // asynchronous requests still running
	pending atomic.Int32   // how many of them; bounded by MaxPendingRequests
}

// send queues a frame for writing. It never blocks: when the queue is full
// the connection is closed (the client can reconnect and replay), so a slow
// reader never slows the session or other connections.
func (c *conn) send(frame []byte) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.dead {
		return
	}
	if c.holding {
		if len(c.held) >= cap(c.out) {
			c.overflowLocked()
			return
		}
		c.held = append(c.held, frame)
		return
	}
	c.pushLocked(outFrame{b: frame})
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
	select {
	case c.out <- f:
	default:
		c.overflowLocked()
	}
}

func (c *conn) overflowLocked() {
	c.dead = true
	c.h.stats.slowClosed.Add(1)
	reason := "the client is not reading fast enough: its outbound queue of " + itoa(cap(c.out)) + " messages is full"
	c.log.Warn().Str("reason", reason).Msg("dropping a slow AHP connection; it may reconnect and replay")
	c.terminate(reason)
}

// terminate ends the connection; the first reason given is logged.
func (c *conn) terminate(reason string) {
	c.killOnce.Do(func() {
		c.reason = reason
		c.log.Info().Str("reason", reason).Msg("closing AHP connection")
		close(c.kill)
	})
}

// writeLoop writes queued frames in order until the connection ends.
func (c *conn) writeLoop() {
	for {
		select {
		case <-c.kill:
			return
		case f := <-c.out:
			if f.b != nil {
				c.h.wireLog("out", f.b)
				if err := c.tc.WriteMessage(f.b); err != nil {
					c.terminate("write failed: " + err.Error())
					return
				}
			}
			if f.closeAfter != "" {
				c.terminate(f.closeAfter)
				return
			}
		}
	}
}
