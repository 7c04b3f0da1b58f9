// Package mockllm is a local stand-in for the Anthropic Messages API, so
// that real agents built on it (claude-code-acp, claude-agent-acp and the
// Claude Code CLI under them) can run in tests without a network or a key.
//
// It answers POST /v1/messages, streaming (server-sent events:
// message_start, content_block_start/delta/stop for text and tool_use,
// message_delta, message_stop) or not, and POST /v1/messages/count_tokens.
// What it answers is decided by a Responder from the request; every
// request is recorded, so a test can see what the agent asked for (which
// model, which tools it offered, what the tool results were). Point an
// agent at it with ANTHROPIC_BASE_URL=Server.URL and any ANTHROPIC_API_KEY.
package mockllm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/internal/mockserver"
)

// Request is what the agent sent to /v1/messages, as far as tests need it.
type Request struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []Message       `json:"messages"`
	Tools    []Tool          `json:"tools"`
	// Raw is the whole request body.
	Raw json.RawMessage `json:"-"`
}

// Message is one message of the conversation. Content is a string or a
// list of blocks in the API; Blocks has it as blocks either way.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a tool_result's
	IsError   bool            `json:"is_error,omitempty"`
}

// Blocks returns the message's content as blocks (a string is one text
// block).
func (m Message) Blocks() []Block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var bs []Block
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// Tool is a tool the agent offers the model.
type Tool struct {
	Name string `json:"name"`
}

// HasTool reports whether the request offers the tool name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Last returns the last message (zero when there is none).
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// ToolResults returns the tool results of the last message, by tool_use id.
func (r Request) ToolResults() map[string]Block {
	out := map[string]Block{}
	for _, b := range r.Last().Blocks() {
		if b.Type == "tool_result" {
			out[b.ToolUseID] = b
		}
	}
	return out
}

// Text returns the text of every text block of the request's messages of
// role ("" for all), joined with newlines.
func (r Request) Text(role string) string {
	var parts []string
	for _, m := range r.Messages {
		if role != "" && m.Role != role {
			continue
		}
		for _, b := range m.Blocks() {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// Reply is what the model answers: text, tool uses, or both (text first).
type Reply struct {
	Text     string
	ToolUses []ToolUse
}

// ToolUse is a call of a tool the agent offered.
type ToolUse struct {
	ID    string
	Name  string
	Input any
}

// Responder decides the reply to a request.
type Responder func(Request) Reply

// Server is a running mock of the Messages API.
type Server struct {
	URL string

	srv     *httptest.Server
	respond Responder

	// Log has the model calls received (Requests) and the other
	// requests answered empty (Other).
	mockserver.Log[Request]
}

// Start runs a mock answering with respond on a loopback port; Close
// stops it.
func Start(respond Responder) *Server {
	s := &Server{respond: respond}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	// Anything else (telemetry, feature flags, account lookups) is
	// answered empty rather than left to fail: the agents treat those as
	// optional.
	mux.HandleFunc("/", s.Empty)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	// A rough count is enough: agents use it to decide when to compact.
	fmt.Fprintf(w, `{"input_tokens":%d}`, len(b)/4+1)
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the request is not JSON: "+err.Error())
		return
	}
	req.Raw = body
	n := s.Add(req)
	id := fmt.Sprintf("msg_mock%04d", n)

	reply := s.respond(req)
	for i := range reply.ToolUses {
		if reply.ToolUses[i].ID == "" {
			reply.ToolUses[i].ID = fmt.Sprintf("toolu_mock%04d_%d", n, i)
		}
	}
	usage := map[string]any{"input_tokens": len(body)/4 + 1, "output_tokens": len(reply.Text)/4 + 1,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	stop := "end_turn"
	if len(reply.ToolUses) > 0 {
		stop = "tool_use"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": contentOf(reply), "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": usage["input_tokens"], "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	index := 0
	if reply.Text != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		// Two deltas, as a model streams.
		half := len(reply.Text) / 2
		for _, part := range []string{reply.Text[:half], reply.Text[half:]} {
			if part != "" {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
					"delta": map[string]any{"type": "text_delta", "text": part}})
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, tu := range reply.ToolUses {
		input, _ := json.Marshal(tu.Input)
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// contentOf is a reply as the content of a non-streamed message.
func contentOf(r Reply) []any {
	var out []any
	if r.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": r.Text})
	}
	for _, tu := range r.ToolUses {
		out = append(out, map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": tu.Input})
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}
