// Package mockopenai is a local stand-in for the OpenAI Responses API, so
// that Codex (and codex-acp, the ACP agent built on it) can run in tests
// without a network or a key.
//
// It answers POST /v1/responses with server-sent events (response.created,
// response.output_item.added, response.output_text.delta,
// response.output_item.done, response.completed), or with one JSON
// response when the request does not ask to stream. What it answers is
// decided by a Responder from the request; every request is recorded, so a
// test can see what the agent asked for (which model, which tools it
// offered, what the tool results were). Other paths are answered with an
// empty JSON object and recorded too (Other). Point Codex at it with a
// model provider whose base_url is Server.URL+"/v1" and wire_api
// "responses".
package mockopenai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ahp-bridge/ahp-bridge/internal/mockserver"
)

// Request is what the agent sent to /v1/responses, as far as tests need
// it.
type Request struct {
	Model        string `json:"model"`
	Stream       bool   `json:"stream"`
	Instructions string `json:"instructions"`
	Input        []Item `json:"input"`
	Tools        []Tool `json:"tools"`
	// Raw is the whole request body.
	Raw json.RawMessage `json:"-"`
}

// Item is one item of the conversation: a message, a tool call of the
// model, or a tool's output.
type Item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Name      string          `json:"name,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Input     string          `json:"input,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// Text is the text of a message item's content.
func (it Item) Text() string {
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "")
}

// OutputText is a tool output item's output as text (the API takes a
// string or a list of content parts).
func (it Item) OutputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Output, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "")
}

// Tool is a tool the agent offers the model: Type "function" takes JSON
// arguments, "custom" free-form input (Codex offers apply_patch so).
type Tool struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// Tool returns the offered tool called name (zero when there is none).
func (r Request) Tool(name string) Tool {
	for _, t := range r.Tools {
		if t.Name == name {
			return t
		}
	}
	return Tool{}
}

// ToolOutputs returns the tool outputs that follow the last message of
// the input (the results of the model's last calls).
func (r Request) ToolOutputs() []Item {
	var out []Item
	for i := len(r.Input) - 1; i >= 0; i-- {
		it := r.Input[i]
		switch it.Type {
		case "function_call_output", "custom_tool_call_output":
			out = append([]Item{it}, out...)
		case "function_call", "custom_tool_call", "reasoning":
		default:
			return out
		}
	}
	return out
}

// LastUserText is the text of the last user message (the turn's prompt),
// trimmed.
func (r Request) LastUserText() string {
	for i := len(r.Input) - 1; i >= 0; i-- {
		it := r.Input[i]
		if it.Type == "message" && it.Role == "user" {
			return strings.TrimSpace(it.Text())
		}
	}
	return ""
}

// Reply is what the model answers: text (streamed in Chunks pieces, Delay
// apart), tool calls after it, or both.
type Reply struct {
	Text  string
	Calls []Call
	// Chunks is how many pieces the text is streamed in (at least 1).
	Chunks int
	// Delay is the pause before each streamed piece after the first, so
	// that a test can cancel mid-stream.
	Delay time.Duration
}

// Call is a call of an offered tool: Arguments (marshalled to JSON) for a
// function tool, Input for a custom one. The mock sends the kind of call
// the request's tool of that name is.
type Call struct {
	CallID    string
	Name      string
	Arguments any
	Input     string
}

// Responder decides the reply to a request.
type Responder func(Request) Reply

// Server is a running mock of the Responses API.
type Server struct {
	URL string

	srv     *httptest.Server
	respond Responder

	// Log has the model calls received (Requests) and the other
	// requests answered empty (Other).
	mockserver.Log[Request]
}

// Start runs a mock answering with respond on a loopback port; Close stops
// it.
func Start(respond Responder) *Server {
	s := &Server{respond: respond}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("/", s.Empty)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "the request is not JSON: "+err.Error())
		return
	}
	req.Raw = body
	n := s.Add(req)

	reply := s.respond(req)
	id := fmt.Sprintf("resp_mock%04d", n)
	msgID := fmt.Sprintf("msg_mock%04d", n)
	var items []map[string]any // the output items, in order
	if reply.Text != "" {
		items = append(items, map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
	}
	for i, c := range reply.Calls {
		callID := c.CallID
		if callID == "" {
			callID = fmt.Sprintf("call_mock%04d_%d", n, i)
		}
		itemID := fmt.Sprintf("fc_mock%04d_%d", n, i)
		if req.Tool(c.Name).Type == "custom" {
			items = append(items, map[string]any{"type": "custom_tool_call", "id": itemID, "status": "completed",
				"call_id": callID, "name": c.Name, "input": c.Input})
			continue
		}
		args, _ := json.Marshal(c.Arguments)
		items = append(items, map[string]any{"type": "function_call", "id": itemID, "status": "completed",
			"call_id": callID, "name": c.Name, "arguments": string(args)})
	}
	usage := map[string]any{"input_tokens": len(body)/4 + 1, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": len(reply.Text)/4 + 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": len(body)/4 + len(reply.Text)/4 + 2}
	response := map[string]any{"id": id, "object": "response", "status": "completed", "model": req.Model,
		"output": items, "usage": usage}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(response)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	seq := 0
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	event("response.created", map[string]any{"response": map[string]any{"id": id, "object": "response",
		"status": "in_progress", "model": req.Model, "output": []any{}}})
	for index, item := range items {
		if item["type"] == "message" {
			event("response.output_item.added", map[string]any{"output_index": index, "item": map[string]any{
				"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []any{}}})
			for i, piece := range split(reply.Text, reply.Chunks) {
				if i > 0 && reply.Delay > 0 {
					select {
					case <-r.Context().Done():
						return // the agent stopped reading (a cancelled turn)
					case <-time.After(reply.Delay):
					}
				}
				event("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": index,
					"content_index": 0, "delta": piece})
			}
		} else {
			event("response.output_item.added", map[string]any{"output_index": index, "item": item})
		}
		event("response.output_item.done", map[string]any{"output_index": index, "item": item})
	}
	event("response.completed", map[string]any{"response": response})
}

// split cuts text into n pieces of about the same size.
func split(text string, n int) []string {
	runes := []rune(text)
	n = max(1, min(n, len(runes)))
	var out []string
	size := (len(runes) + n - 1) / n
	for len(runes) > 0 {
		k := min(size, len(runes))
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}
