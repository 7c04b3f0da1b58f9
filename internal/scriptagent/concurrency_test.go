package scriptagent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentRequestsGetDistinctIDs: many sessions asking permission at
// once must send requests with distinct ids, or a client's answer reaches
// the wrong session and another turn waits forever (found by the soak
// test, docs/reliability.md). Under -race the unsynchronised read of the id
// counter was also reported directly.
func TestConcurrentRequestsGetDistinctIDs(t *testing.T) {
	const n = 20
	c := start(t)
	sessions := make([]string, n)
	for i := range sessions {
		sessions[i] = c.newSession()
	}
	prompts := map[string]bool{}
	for _, sid := range sessions {
		id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "permission"}}})
		prompts[id] = true
	}
	seen := map[string]string{} // request id -> session
	answered := 0
	for answered < n {
		m := c.next()
		switch {
		case m.Method == "session/request_permission":
			var p struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			prev, dup := seen[string(m.ID)]
			require.False(t, dup, "request id %s used for %s and %s", m.ID, prev, p.SessionID)
			seen[string(m.ID)] = p.SessionID
			c.send(map[string]any{"id": m.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-once"}}})
		case m.Method == "" && prompts[string(m.ID)]:
			assert.Equal(t, "end_turn", stopReason(t, m))
			answered++
		}
	}
	assert.Len(t, seen, n)
}
