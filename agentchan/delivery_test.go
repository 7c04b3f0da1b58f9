package agentchan

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
	fake "github.com/ahp-bridge/ahp-bridge/internal/fakeagentchan"
)

// A Cancel ends the turn at once, possibly while the socket's goroutine is
// still giving one of the turn's events to the sink; Prompt must not return
// before that event is delivered, or it would reach the bridge after the
// end of its turn.
func TestPromptReturnsAfterItsLastDelivery(t *testing.T) {
	f := open(t, fake.Options{Script: func(fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Permission("permission", "r1", "", "Go on?"), fake.Await("abort")}
	}})
	inSink := make(chan struct{})
	release := make(chan struct{})
	var delivered atomic.Bool
	f.rec.permission = func(backend.PermissionRequest) {
		close(inSink)
		<-release
		delivered.Store(true)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.prompt(t, "turn-d", "x")
		done <- err
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	select {
	case <-inSink:
	case <-ctx.Done():
		t.Fatal("the permission request never reached the sink")
	}
	require.NoError(t, f.sess.Cancel(ctx))
	// Prompt may return only after this; with the delivery not waited for,
	// it returns at once, long before.
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(release)
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Prompt did not return after Cancel")
	}
	assert.True(t, delivered.Load(), "Prompt returned while an event of its turn was still being delivered")
}
