package acp

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// queueItem is one entry of a session's event queue: a raw session/update
// to decode, a session/update already decoded (update: a text chunk read
// by scanTextUpdate, which is coalesced like any decoded update), a ready
// event, or a barrier to signal. The handler is also
// called with the zero item at the end of every drain of the queue and
// before a barrier is signalled, to pass on anything it held back.
type queueItem struct {
	raw     json.RawMessage
	update  backend.Event
	event   any // backend.Event; any so that the zero item is cheap
	barrier chan struct{}
}

// eventQueue is an unbounded FIFO drained by one goroutine at a time. The
// agent's stdout reader only appends to it, so a slow sink can never stall
// the connection (acp-go-sdk drops the connection when its own bounded
// notification queue overflows).
//
// The draining goroutine runs only while there is work: the first push to
// an empty, undrained queue starts it, and it ends once the queue has
// stayed empty for queueLinger. An idle session (most of them, most of the
// time) then costs no goroutine and no stack (issue 17: idle memory),
// while a streaming one keeps its drainer, and its grown stack, between
// chunks.
type eventQueue struct {
	mu      sync.Mutex
	items   []queueItem
	closed  bool
	running bool // a drainer goroutine exists; true whenever items is not empty
	wake    chan struct{}
	drainer sync.WaitGroup // the drainer goroutine, for stop
	handle  func(queueItem)
	room    *sync.Cond // signalled (on mu) when items is taken or the queue closes
}

// maxQueuedUpdates is how many items pushWait lets queue up before it
// waits for the draining goroutine: the agent's output then waits in the
// pipe (the agent blocks writing), so memory stays bounded however much
// faster than the bridge an agent streams.
const maxQueuedUpdates = 4096

// queueLinger is how long the drainer waits for more work before it
// ends: long enough to span the gaps of a paced stream (a new goroutine
// would start with a small stack and grow it again for every chunk),
// short next to a session's idle life.
const queueLinger = time.Second

// newEventQueue returns an empty queue; its drainer starts with the first
// push, and stop ends it.
func newEventQueue(handle func(queueItem)) *eventQueue {
	q := &eventQueue{wake: make(chan struct{}, 1), handle: handle}
	q.room = sync.NewCond(&q.mu)
	return q
}

// pushWait is push for the agent's stdout reader: it first waits while
// maxQueuedUpdates items are queued. Call it without holding locks the
// sink may need.
func (q *eventQueue) pushWait(it queueItem) {
	q.mu.Lock()
	for len(q.items) >= maxQueuedUpdates && !q.closed {
		q.room.Wait()
	}
	q.mu.Unlock()
	q.push(it)
}

// push appends an item; it never blocks. Items pushed after stop are
// dropped (the session is gone), except that barriers are released.
func (q *eventQueue) push(it queueItem) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		if it.barrier != nil {
			close(it.barrier)
		}
		return
	}
	q.items = append(q.items, it)
	start := !q.running
	if start {
		// Added under mu while not closed: stop, which sets closed under
		// mu before it waits, cannot miss this goroutine.
		q.running = true
		q.drainer.Add(1)
	}
	q.mu.Unlock()
	if start {
		go q.run()
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// flush waits until everything pushed before it has been handled.
func (q *eventQueue) flush(ctx context.Context) error {
	b := make(chan struct{})
	q.push(queueItem{barrier: b})
	select {
	case <-b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop drains what is queued, then ends the drainer and waits for it.
func (q *eventQueue) stop() {
	q.mu.Lock()
	already := q.closed
	q.closed = true
	q.room.Broadcast()
	q.mu.Unlock()
	if !already {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	q.drainer.Wait()
}

// run is the drainer: it handles batches until the queue is closed, or
// has been empty for queueLinger, and is empty.
func (q *eventQueue) run() {
	defer q.drainer.Done()
	var idle *time.Timer
	lingered := false
	for {
		q.mu.Lock()
		batch := q.items
		q.items = nil
		if len(batch) == 0 && (q.closed || lingered) {
			// Under mu: a push from now on starts a new drainer.
			q.running = false
			q.mu.Unlock()
			if idle != nil {
				idle.Stop()
			}
			return
		}
		q.room.Broadcast()
		q.mu.Unlock()
		for _, it := range batch {
			if it.barrier != nil {
				q.handle(queueItem{}) // everything before the barrier is out
				close(it.barrier)
				continue
			}
			q.handle(it)
		}
		if len(batch) > 0 {
			q.handle(queueItem{}) // end of this drain
			lingered = false
			continue
		}
		if idle == nil {
			idle = time.NewTimer(queueLinger)
		} else {
			idle.Reset(queueLinger)
		}
		select {
		case <-q.wake:
		case <-idle.C:
			lingered = true
		}
	}
}
