package host

import (
	"context"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// handoffJob is one accepted client action waiting for Backend.ClientAction.
type handoffJob struct {
	action wire.StateAction
	origin wire.ActionOrigin
	// attach, when set, re-attaches an archived session's agent before
	// the action is delivered (archive.go).
	attach *reattach
}

// worker delivers one channel's accepted client actions to the backend in
// serverSeq order, outside every host lock, so a slow backend never holds
// up sequencing. Jobs are queued under the channel lock (hence in order)
// and drained by a single goroutine owned by the host.
type worker struct {
	channel string
	mu      sync.Mutex
	queue   []handoffJob
	wake    chan struct{}
	stop    chan struct{}
	stopped bool
}

func newWorker(channel string) *worker {
	return &worker{channel: channel, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// push queues a job; it never blocks.
func (w *worker) push(j handoffJob) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, j)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// close stops the worker; jobs not yet delivered are dropped (the channel
// is gone or the host is shutting down).
func (w *worker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.stopped = true
		w.queue = nil
		close(w.stop)
	}
}

// run delivers jobs until close.
func (w *worker) run(ctx context.Context, deliver func(ctx context.Context, channel string, j handoffJob)) {
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		}
		for {
			w.mu.Lock()
			if w.stopped || len(w.queue) == 0 {
				w.mu.Unlock()
				break
			}
			j := w.queue[0]
			w.queue[0] = handoffJob{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
			deliver(ctx, w.channel, j)
		}
	}
}
