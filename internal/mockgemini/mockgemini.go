// Package mockgemini is a local stand-in for the Gemini API
// (generativelanguage.googleapis.com), so that Gemini CLI can run in tests
// without a network or a key.
//
// It answers POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent (server-sent events with ?alt=sse, a JSON array
// without) and :countTokens. What it answers is decided by a Responder from
// the request; every generateContent request is recorded, so a test can see
// what the agent asked for (which model, which tools it offered, what the
// function results were). Other paths are answered with an empty JSON
// object and recorded too (Other), so that a test can see what else the
// agent called. Point Gemini CLI at it with GOOGLE_GEMINI_BASE_URL=Server.URL
// and any GEMINI_API_KEY.
package mockgemini

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

// Request is what the agent sent to generateContent, as far as tests need
// it.
type Request struct {
	// Model is the model named in the path ("gemini-2.5-pro").
	Model string `json:"-"`
	// Stream is true for streamGenerateContent.
	Stream            bool      `json:"-"`
	Contents          []Content `json:"contents"`
	SystemInstruction *Content  `json:"systemInstruction,omitempty"`
	Tools             []Tool    `json:"tools"`
	GenerationConfig  struct {
		ResponseMimeType   string          `json:"responseMimeType,omitempty"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
		ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	} `json:"generationConfig"`
	// Raw is the whole request body.
	Raw json.RawMessage `json:"-"`
	// PromptTokens and CandidatesTokens are the usage the mock reported
	// for the request (Requests has them once the reply was sent).
	PromptTokens, CandidatesTokens int `json:"-"`
}

// Content is one turn of the conversation: role "user" or "model".
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one part of a content: text, a function call or a function's
// result.
type Part struct {
	Text             string            `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is the model's call of a declared function.
type FunctionCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// FunctionResponse is the agent's answer to a function call.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// Tool is a group of function declarations the agent offers.
type Tool struct {
	FunctionDeclarations []struct {
		Name string `json:"name"`
	} `json:"functionDeclarations"`
}

// HasFunction reports whether the request declares the function name.
func (r Request) HasFunction(name string) bool {
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

// WantsJSON reports whether the agent asked for a JSON answer (Gemini CLI's
// side questions: which model to route to, who speaks next).
func (r Request) WantsJSON() bool { return r.GenerationConfig.ResponseMimeType == "application/json" }

// FunctionResponses returns the function results of the last content.
func (r Request) FunctionResponses() []FunctionResponse {
	if len(r.Contents) == 0 {
		return nil
	}
	var out []FunctionResponse
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			out = append(out, *p.FunctionResponse)
		}
	}
	return out
}

// LastUserText is the text of the last user content that has text (the
// prompt of the turn), trimmed.
func (r Request) LastUserText() string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range c.Parts {
			if p.Text != "" && !p.Thought {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			return strings.TrimSpace(texts[len(texts)-1])
		}
	}
	return ""
}

// Reply is what the model answers: text (streamed in Chunks pieces, Delay
// apart), function calls after it, or both.
type Reply struct {
	Text  string
	Calls []FunctionCall
	// Chunks is how many pieces the text is streamed in (at least 1).
	Chunks int
	// Delay is the pause before each streamed piece after the first, so
	// that a test can cancel mid-stream.
	Delay time.Duration
}

// Responder decides the reply to a request.
type Responder func(Request) Reply

// Server is a running mock of the Gemini API.
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
	mux.HandleFunc("POST /v1beta/models/{call}", s.model)
	mux.HandleFunc("/", s.Empty)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "no method in "+r.URL.Path)
		return
	}
	switch method {
	case "countTokens":
		w.Header().Set("Content-Type", "application/json")
		// A rough count is enough: the agent uses it to decide when to
		// compress its history.
		fmt.Fprintf(w, `{"totalTokens":%d}`, len(body)/4+1)
		return
	case "generateContent", "streamGenerateContent":
	default:
		writeError(w, http.StatusNotFound, "method "+method+" is not mocked")
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "the request is not JSON: "+err.Error())
		return
	}
	req.Model, req.Stream, req.Raw = model, method == "streamGenerateContent", body
	n := s.Add(req)
	defer func() {
		s.Update(n, func(r *Request) { r.PromptTokens, r.CandidatesTokens = req.PromptTokens, req.CandidatesTokens })
	}()

	var reply Reply
	if req.WantsJSON() {
		// Side questions (how complex is the prompt, who speaks next)
		// are answered by the mock itself, from their schema: a test
		// scripts the conversation, not the agent's housekeeping.
		b, _ := json.Marshal(fromSchema(req.schema()))
		reply = Reply{Text: string(b)}
	} else {
		reply = s.respond(req)
	}
	for i := range reply.Calls {
		if reply.Calls[i].ID == "" {
			reply.Calls[i].ID = fmt.Sprintf("call_mock%04d_%d", n, i)
		}
	}
	req.PromptTokens, req.CandidatesTokens = len(body)/4+1, len(reply.Text)/4+1
	usage := map[string]any{"promptTokenCount": req.PromptTokens, "candidatesTokenCount": req.CandidatesTokens,
		"totalTokenCount": req.PromptTokens + req.CandidatesTokens}
	var chunks []map[string]any
	for _, piece := range split(reply.Text, reply.Chunks) {
		chunks = append(chunks, candidate([]any{map[string]any{"text": piece}}, nil))
	}
	var calls []any
	for _, c := range reply.Calls {
		calls = append(calls, map[string]any{"functionCall": c})
	}
	if len(calls) > 0 || len(chunks) == 0 {
		chunks = append(chunks, candidate(calls, nil))
	}
	last := chunks[len(chunks)-1]
	last["candidates"].([]any)[0].(map[string]any)["finishReason"] = "STOP"
	for _, c := range chunks {
		c["usageMetadata"] = usage
		c["modelVersion"] = model
		c["responseId"] = fmt.Sprintf("resp_mock%04d", n)
	}
	if !req.Stream {
		// One response holding every part.
		var parts []any
		for _, c := range chunks {
			parts = append(parts, c["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)...)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"candidates": candidate(parts, "STOP")["candidates"],
			"usageMetadata": usage, "modelVersion": model})
		return
	}
	sse := r.URL.Query().Get("alt") == "sse"
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "[")
	}
	flusher, _ := w.(http.Flusher)
	for i, c := range chunks {
		if i > 0 && reply.Delay > 0 {
			select {
			case <-r.Context().Done():
				return // the agent stopped reading (a cancelled turn)
			case <-time.After(reply.Delay):
			}
		}
		b, _ := json.Marshal(c)
		switch {
		case sse:
			fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		case i > 0:
			fmt.Fprintf(w, ",%s", b)
		default:
			_, _ = w.Write(b)
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if !sse {
		_, _ = io.WriteString(w, "]")
	}
}

func (r Request) schema() json.RawMessage {
	if len(r.GenerationConfig.ResponseJSONSchema) > 0 {
		return r.GenerationConfig.ResponseJSONSchema
	}
	return r.GenerationConfig.ResponseSchema
}

// schemaNode is the part of a JSON schema fromSchema reads (Gemini writes
// types in upper case: "OBJECT", "STRING").
type schemaNode struct {
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Enum       []any                      `json:"enum"`
	Minimum    *float64                   `json:"minimum"`
}

// fromSchema is the plainest value a JSON schema accepts: every property
// set, the first of an enum (Gemini CLI lists "user" first when it asks
// who speaks next, which ends the turn), the minimum of a number, "mock"
// for a string.
func fromSchema(raw json.RawMessage) any {
	var n schemaNode
	if json.Unmarshal(raw, &n) != nil {
		return map[string]any{}
	}
	if len(n.Enum) > 0 {
		return n.Enum[0]
	}
	switch strings.ToLower(n.Type) {
	case "object", "":
		out := map[string]any{}
		for k, v := range n.Properties {
			out[k] = fromSchema(v)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		if n.Minimum != nil {
			return *n.Minimum
		}
		return 1
	case "boolean":
		return false
	default:
		return "mock"
	}
}

// candidate is a response with one candidate of the given parts.
func candidate(parts []any, finish any) map[string]any {
	if parts == nil {
		parts = []any{}
	}
	c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != nil {
		c["finishReason"] = finish
	}
	return map[string]any{"candidates": []any{c}}
}

// split cuts text into n pieces of about the same size (none for "").
func split(text string, n int) []string {
	if text == "" {
		return nil
	}
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
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": "INVALID_ARGUMENT"}})
}
