package tui

import (
	"context"
	"os"
	"os/signal"
)

// WatchInterrupts turns Ctrl-C presses into values on the returned
// channel: the first is the cancellation of ctx (main's
// signal.NotifyContext), the next a further SIGINT, caught here once ctx
// is done. stop ends the watcher goroutine and waits for it.
func WatchInterrupts(ctx context.Context) (presses <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 2) // never more than two sends: no blocking
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
		case <-quit:
			return
		}
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt)
		defer signal.Stop(sigs)
		ch <- struct{}{}
		select {
		case <-sigs:
			ch <- struct{}{}
		case <-quit:
		}
	}()
	return ch, func() { close(quit); <-done }
}
