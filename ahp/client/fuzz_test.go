package client

import (
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/fakehost"
)

// FuzzHandleFrame feeds arbitrary frames to the client's message handling,
// as if the server had sent them, on a client subscribed to a session. Any
// frame may be refused with an error, but none may panic, and the state
// must stay encodable.
func FuzzHandleFrame(f *testing.F) {
	// The seed corpus is testdata/fuzz/FuzzHandleFrame.
	h := fakehost.New(fakehost.Options{})
	defer h.Close()
	ctx := f.Context()
	c, err := Dial(ctx, h.URL(), Options{MaxQueuedEvents: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx); err != nil {
		f.Fatal(err)
	}
	uri := "ahp-session:/s"
	if err := c.CreateSession(ctx, wire.CreateSessionParams{Channel: uri}); err != nil {
		f.Fatal(err)
	}
	if _, err := c.Subscribe(ctx, uri); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		_ = c.handleFrame(frame)
		if _, err := c.Session(uri); err != nil && !strings.Contains(err.Error(), "no state") {
			t.Fatalf("the session state no longer round-trips after %q: %v", frame, err)
		}
		if _, err := c.Chat(uri); err != nil && !strings.Contains(err.Error(), "no state") && !strings.Contains(err.Error(), "no default chat") {
			t.Fatalf("the chat state no longer round-trips after %q: %v", frame, err)
		}
		if _, err := c.Root(); err != nil && !strings.Contains(err.Error(), "no state") {
			t.Fatalf("the root state no longer round-trips after %q: %v", frame, err)
		}
		// Keep the queue from growing without bound across iterations.
		for {
			c.mu.Lock()
			n := len(c.events)
			c.mu.Unlock()
			if n == 0 {
				break
			}
			if _, err := c.Next(ctx); err != nil {
				break
			}
		}
	})
}
