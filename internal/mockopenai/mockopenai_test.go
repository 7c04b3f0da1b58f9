package mockopenai

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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

// event is one server-sent event, as far as the tests read it.
type event struct {
	Type  string         `json:"type"`
	Delta string         `json:"delta"`
	Item  map[string]any `json:"item"`
	Seq   int            `json:"sequence_number"`
}

func events(t *testing.T, body io.Reader) []event {
	t.Helper()
	var out []event
	sc := bufio.NewScanner(body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev event
			require.NoError(t, json.Unmarshal([]byte(data), &ev))
			require.Equal(t, name, ev.Type, "the event's name is its data's type")
			out = append(out, ev)
		}
	}
	return out
}

// TestStreamedTextThenCalls: a streamed reply is the Responses API's event
// sequence: the message's text in deltas, a function_call for a function
// tool and a custom_tool_call for a custom one, then response.completed;
// the next request's tool outputs are readable by the responder.
func TestStreamedTextThenCalls(t *testing.T) {
	s := Start(func(r Request) Reply {
		if out := r.ToolOutputs(); len(out) > 0 {
			return Reply{Text: "done: " + out[0].OutputText()}
		}
		return Reply{Text: "let me", Chunks: 2, Calls: []Call{
			{Name: "exec_command", Arguments: map[string]any{"cmd": "echo hi"}},
			{Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch\n"},
		}}
	})
	t.Cleanup(s.Close)

	resp := post(t, s.URL+"/v1/responses", `{"model":"m1","stream":true,
		"tools":[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"}],
		"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]}]}`)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	evs := events(t, resp.Body)
	var types []string
	text := ""
	for i, ev := range evs {
		types = append(types, ev.Type)
		text += ev.Delta
		assert.Equal(t, i, ev.Seq)
	}
	assert.Equal(t, []string{"response.created",
		"response.output_item.added", "response.output_text.delta", "response.output_text.delta", "response.output_item.done",
		"response.output_item.added", "response.output_item.done",
		"response.output_item.added", "response.output_item.done",
		"response.completed"}, types)
	assert.Equal(t, "let me", text)
	msg := evs[4].Item
	assert.Equal(t, "message", msg["type"])
	fc := evs[6].Item
	assert.Equal(t, "function_call", fc["type"])
	assert.Equal(t, "exec_command", fc["name"])
	assert.JSONEq(t, `{"cmd":"echo hi"}`, fc["arguments"].(string))
	custom := evs[8].Item
	assert.Equal(t, "custom_tool_call", custom["type"])
	assert.Equal(t, "*** Begin Patch\n*** End Patch\n", custom["input"])
	assert.NotEqual(t, fc["call_id"], custom["call_id"])

	resp = post(t, s.URL+"/v1/responses", `{"model":"m1","input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]},
		{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"hi\n"}]}`)
	var one struct {
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
		Usage map[string]any `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&one))
	assert.Equal(t, "done: hi\n", one.Output[0].Content[0].Text)
	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "m1", reqs[0].Model)
	assert.Equal(t, "run it", reqs[0].LastUserText())
	assert.Equal(t, "custom", reqs[0].Tool("apply_patch").Type)
	assert.Equal(t, "run it", reqs[1].LastUserText())
	assert.Empty(t, reqs[0].ToolOutputs())
}

// TestOther: any other path is answered empty and recorded.
func TestOther(t *testing.T) {
	s := Start(func(Request) Reply { return Reply{} })
	t.Cleanup(s.Close)
	resp := post(t, s.URL+"/v1/models", `{}`)
	b, _ := io.ReadAll(resp.Body)
	assert.JSONEq(t, `{}`, string(b))
	assert.Equal(t, []string{"POST /v1/models"}, s.Other())
}

// TestSlowStreamStopsWhenTheReaderLeaves: a slow reply can be read piece
// by piece, and the server stops sending when the client goes away.
func TestSlowStreamStopsWhenTheReaderLeaves(t *testing.T) {
	s := Start(func(Request) Reply {
		return Reply{Text: strings.Repeat("x", 1000), Chunks: 1000, Delay: 50 * time.Millisecond}
	})
	t.Cleanup(s.Close)
	resp := post(t, s.URL+"/v1/responses", `{"stream":true,"input":[]}`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "output_text.delta") {
	}
	start := time.Now()
	_ = resp.Body.Close()
	s.Close() // waits for the handler, which must notice the closed connection
	assert.Less(t, time.Since(start), 25*time.Second, "the handler stopped instead of streaming 50 s more")
}
