package vscodeclient

import (
	"context"
	"encoding/json"
	"fmt"
)

// Test-only doors into the client for the protocol scenario tests of the
// external test package: VS Code's conformance suite sends requests the
// windows themselves never send.

// CallWithoutParams sends a request with no params member at all, as a
// JavaScript client's call(method) does, and waits for its answer.
func (c *Client) CallWithoutParams(ctx context.Context, method string) (json.RawMessage, error) {
	ch := make(chan answer, 1)
	c.mu.Lock()
	conn := c.conn
	c.nextID++
	id := c.nextID
	c.pending[id] = pendingCall{ch: ch}
	c.mu.Unlock()
	if err := c.write(conn, map[string]any{"jsonrpc": "2.0", "id": id, "method": method}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, fmt.Errorf("%s: %w", method, a.err)
		}
		return a.result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}
