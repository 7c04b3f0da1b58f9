package acp

import (
	"context"
	"encoding/json"
	"sync"

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

// eventQueue is an unbounded FIFO drained by one goroutine. The agent's
// stdout reader only appends to it, so a slow sink can never stall the
// connection (acp-go-sdk drops the connection when its own bounded
// notification queue overflows).
type eventQueue struct {
	mu      sync.Mutex
	items   []queueItem
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
	handle  func(queueItem)
	room    *sync.Cond // signalled (on mu) when items is taken or the queue closes
}

// maxQueuedUpdates is how many items pushWait lets queue up before it
// waits for the draining goroutine: the agent's output then waits in the
// pipe (the agent blocks writing), so memory stays bounded however much
// faster than the bridge an agent streams.
const maxQueuedUpdates = 4096

// newEventQueue starts the draining goroutine; stop ends it.
func newEventQueue(handle func(queueItem)) *eventQueue {
	q := &eventQueue{wake: make(chan struct{}, 1), stopped: make(chan struct{}), handle: handle}
	q.room = sync.NewCond(&q.mu)
	go q.run()
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
	q.mu.Unlock()
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

// stop drains what is queued, then ends the goroutine and waits for it.
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
	<-q.stopped
}

func (q *eventQueue) run() {
	defer close(q.stopped)
	for {
		q.mu.Lock()
		batch := q.items
		q.items = nil
		closed := q.closed
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
			continue
		}
		if closed {
			return
		}
		<-q.wake
	}
}
