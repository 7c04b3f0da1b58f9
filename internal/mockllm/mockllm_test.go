package mockllm

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// TestStreamedToolUseThenText: a streamed reply is the Messages API's event
// sequence, with the tool's input as one input_json_delta; the next
// request's tool result is readable by the responder.
func TestStreamedToolUseThenText(t *testing.T) {
	s := Start(func(r Request) Reply {
		if res := r.ToolResults(); len(res) > 0 {
			return Reply{Text: "done"}
		}
		return Reply{Text: "let me", ToolUses: []ToolUse{{Name: "Bash", Input: map[string]any{"command": "echo hi"}}}}
	})
	t.Cleanup(s.Close)

	resp := post(t, s.URL+"/v1/messages", `{"model":"m1","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"run it"}]}`)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var events []string
	var toolInput string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, name)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, "input_json_delta") {
			var ev struct {
				Delta struct {
					PartialJSON string `json:"partial_json"`
				} `json:"delta"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &ev))
			toolInput = ev.Delta.PartialJSON
		}
	}
	assert.Equal(t, []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}, events)
	assert.JSONEq(t, `{"command":"echo hi"}`, toolInput)

	resp = post(t, s.URL+"/v1/messages", `{"model":"m2","messages":[{"role":"user","content":"run it"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hi"}]}]}`)
	var msg struct {
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text string
		} `json:"content"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
	assert.Equal(t, "m2", msg.Model)
	assert.Equal(t, "end_turn", msg.StopReason)
	require.Len(t, msg.Content, 1)
	assert.Equal(t, "done", msg.Content[0].Text)

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.True(t, reqs[0].HasTool("Bash"))
	assert.Equal(t, "run it", reqs[0].Text("user"))
	assert.Equal(t, "m2", reqs[1].Model)

	resp = post(t, s.URL+"/v1/messages/count_tokens", `{"model":"m1","messages":[]}`)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&count))
	assert.Positive(t, count.InputTokens)
}
