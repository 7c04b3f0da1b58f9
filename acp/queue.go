package acp

import (
	"context"
	"encoding/json"
	"sync"
)

// queueItem is one entry of a session's event queue: a raw session/update
// to decode, a ready event, or a barrier to signal.
type queueItem struct {
	raw     json.RawMessage
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
}

// newEventQueue starts the draining goroutine; stop ends it.
func newEventQueue(handle func(queueItem)) *eventQueue {
	q := &eventQueue{wake: make(chan struct{}, 1), stopped: make(chan struct{}), handle: handle}
	go q.run()
	return q
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
		q.mu.Unlock()
		for _, it := range batch {
			if it.barrier != nil {
				close(it.barrier)
				continue
			}
			q.handle(it)
		}
		if len(batch) > 0 {
			continue
		}
		if closed {
			return
		}
		<-q.wake
	}
}
