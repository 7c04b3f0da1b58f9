package scriptagent

import (
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchFlood(t *testing.T) {
	chunk := regexp.MustCompile(`^T(\d{19})#(\d{8})x*$`)
	tests := []struct {
		name      string
		prompt    string
		chunks    int
		size      int
		tools     int
		minLength time.Duration
	}{
		{name: "unpaced", prompt: "bench 5 64", chunks: 5, size: 64},
		{name: "size below the stamp is raised", prompt: "bench 2 3", chunks: 2, size: benchMinSize},
		{name: "paced with tool calls", prompt: "bench 6 40 100 3", chunks: 6, size: 40, tools: 2, minLength: 50 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t)
			sid := c.newSession()
			before := time.Now()
			ms, resp := c.prompt(sid, tc.prompt)
			assert.Equal(t, "end_turn", stopReason(t, resp))
			assert.GreaterOrEqual(t, time.Since(before), tc.minLength)
			var got, tools, completed int
			for _, m := range ms {
				var p struct {
					SessionID string `json:"sessionId"`
					Update    struct {
						SessionUpdate string `json:"sessionUpdate"`
						Status        string `json:"status"`
						Content       json.RawMessage
					} `json:"update"`
				}
				if m.Method != "session/update" || json.Unmarshal(m.Params, &p) != nil {
					continue
				}
				require.Equal(t, sid, p.SessionID)
				switch p.Update.SessionUpdate {
				case "agent_message_chunk":
					var blk struct{ Type, Text string }
					require.NoError(t, json.Unmarshal(p.Update.Content, &blk))
					require.Len(t, blk.Text, tc.size)
					sm := chunk.FindStringSubmatch(blk.Text)
					require.NotNil(t, sm, "chunk %q", blk.Text)
					ns, err := strconv.ParseInt(sm[1], 10, 64)
					require.NoError(t, err)
					stamp := time.Unix(0, ns)
					assert.False(t, stamp.Before(before.Add(-time.Second)) || stamp.After(time.Now()), "stamp %v", stamp)
					assert.Equal(t, got, mustAtoi(t, sm[2]))
					got++
				case "tool_call":
					assert.Equal(t, "pending", p.Update.Status)
					tools++
				case "tool_call_update":
					assert.Equal(t, "completed", p.Update.Status)
					completed++
				}
			}
			assert.Equal(t, tc.chunks, got)
			assert.Equal(t, tc.tools, tools)
			assert.Equal(t, tc.tools, completed)
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestBenchFloodSizesAndPermission checks the scale form of the flood:
// chunk sizes from BenchChunkSize, and every PERMEVERY-th tool call waiting
// for the client's answer before the stream goes on.
func TestBenchFloodSizesAndPermission(t *testing.T) {
	c := start(t)
	sid := c.newSession()
	id := c.request("session/prompt", map[string]any{"sessionId": sid,
		"prompt": []any{map[string]any{"type": "text", "text": "bench 12 20 0 2 3 200"}}})
	got, tools, asked := 0, 0, 0
	sizes := map[int]bool{}
	for {
		m := c.next()
		if m.Method == "" && string(m.ID) == id {
			assert.Equal(t, "end_turn", stopReason(t, m))
			break
		}
		switch m.Method {
		case "session/request_permission":
			asked++
			assert.Equal(t, 6*asked, got, "every third tool call (after every 6th chunk) asks, and the stream waits for the answer")
			c.send(map[string]any{"id": m.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow"}}})
		case "session/update":
			switch u := string(gjson(t, m.Params, "update", "sessionUpdate")); u {
			case `"agent_message_chunk"`:
				var text string
				require.NoError(t, json.Unmarshal(gjson(t, m.Params, "update", "content", "text"), &text))
				want := max(BenchChunkSize(got, 20, 200), benchMinSize)
				require.Len(t, text, want, "chunk %d", got)
				sizes[len(text)] = true
				got++
			case `"tool_call"`:
				tools++
			}
		}
	}
	assert.Equal(t, 12, got)
	assert.Equal(t, 6, tools)
	assert.Equal(t, 2, asked)
	assert.Greater(t, len(sizes), 5, "the sizes vary")
	for i := range 1000 {
		n := BenchChunkSize(i, 20, 200)
		require.True(t, n >= 20 && n <= 200, "size %d of chunk %d", n, i)
	}
}
