package agentchan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Channel names of the workspace socket. Only ChannelAgent is spoken here;
// frames of the other channels are ignored.
const (
	ChannelAgent    = "agent"
	ChannelTerminal = "terminal"
	ChannelFiles    = "files"
	ChannelPorts    = "ports"
	ChannelConfig   = "config"
)

// Server → client frame types of the agent channel.
const (
	TypeText           = "text"
	TypeThinking       = "thinking"
	TypeToolInvocation = "tool_invocation"
	TypeToolResult     = "tool_result"
	TypeQuestion       = "question"
	TypeResult         = "result"
	TypeError          = "error"
)

// Client → server frame types of the agent channel.
const (
	TypePrompt       = "prompt"
	TypeSettings     = "settings"
	TypeAbort        = "abort"
	TypeToolResponse = "tool_response"
	TypeApprove      = "approve"
	TypeReject       = "reject"
)

// Frame is one message of the workspace socket, decoded as far as this
// package understands it. Fields the frame does not carry are zero. For
// frames of channels other than ChannelAgent only Channel, Type and Raw are
// set.
type Frame struct {
	Channel string
	Type    string

	TaskID     string
	Content    string
	ToolCallID string
	ToolName   string
	// Args is the tool invocation's arguments, verbatim (nil when absent).
	Args json.RawMessage
	// Result is a tool result (a JSON string or any other JSON value),
	// verbatim (nil when absent).
	Result    json.RawMessage
	Questions []string
	Summary   string
	Message   string
	// RequestID marks a permission request (see IsPermissionRequest).
	RequestID   string
	Description string
	Title       string

	// Raw is the whole frame as received.
	Raw json.RawMessage
}

// IsPermissionRequest reports whether f asks the user to approve something.
// The agent channel documents `approve`/`reject {requestId}` answers but not
// the request itself, so any agent frame that carries a requestId is read as
// one, whatever its type (`permission`, `permission_request`,
// `approval_request`, …). The frame types whose meaning is already known
// and that cannot be answered (`text`, `thinking`, `tool_result`, `question`,
// `result`, `error`) are excluded; a `tool_invocation` with a requestId is
// both a tool call and a permission request for it.
func (f Frame) IsPermissionRequest() bool {
	if f.Channel != ChannelAgent || f.RequestID == "" {
		return false
	}
	switch f.Type {
	case TypeText, TypeThinking, TypeToolResult, TypeQuestion, TypeResult, TypeError:
		return false
	}
	return true
}

// ErrNotAFrame is wrapped by DecodeFrame's errors for input that is not a
// frame at all (not a JSON object, or without channel and type).
var ErrNotAFrame = errors.New("not an agent-channel frame")

// DecodeFrame decodes one WebSocket text message. It fails with a clear
// error when the message is not a JSON object with string `channel` and
// `type` fields, or when a known field of an agent frame has the wrong JSON
// type. Unknown fields are ignored. Identifiers (taskId, toolCallId,
// requestId) may be JSON strings or numbers; numbers are kept as their text.
func DecodeFrame(data []byte) (Frame, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return Frame{}, fmt.Errorf("%w: the message is not a JSON object: %w", ErrNotAFrame, err)
	}
	if fields == nil {
		return Frame{}, fmt.Errorf("%w: the message is JSON null", ErrNotAFrame)
	}
	d := decoder{fields: fields}
	f := Frame{
		Channel: d.required("channel"),
		Type:    d.required("type"),
		Raw:     append(json.RawMessage(nil), bytes.TrimSpace(data)...),
	}
	if d.err != nil {
		return Frame{}, fmt.Errorf("%w: %w", ErrNotAFrame, d.err)
	}
	if f.Channel != ChannelAgent {
		return f, nil
	}
	f.TaskID = d.id("taskId")
	f.Content = d.str("content")
	f.ToolCallID = d.id("toolCallId")
	f.ToolName = d.str("toolName")
	f.Args = d.raw("args")
	f.Result = d.raw("result")
	f.Questions = d.strings("questions")
	f.Summary = d.str("summary")
	f.Message = d.str("message")
	f.RequestID = d.id("requestId")
	f.Description = d.str("description")
	f.Title = d.str("title")
	if d.err != nil {
		return Frame{}, fmt.Errorf("agent-channel %q frame: %w", f.Type, d.err)
	}
	return f, nil
}

// decoder pulls typed fields out of a frame's object, keeping the first
// error so that the caller checks once.
type decoder struct {
	fields map[string]json.RawMessage
	err    error
}

func (d *decoder) fail(key, want string, v json.RawMessage) {
	if d.err == nil {
		d.err = fmt.Errorf("field %q is %s, want %s", key, jsonKind(v), want)
	}
}

// present returns the field's value, or nil when it is absent or null.
func (d *decoder) present(key string) json.RawMessage {
	v, ok := d.fields[key]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	return v
}

func (d *decoder) required(key string) string {
	v := d.present(key)
	if v == nil {
		if d.err == nil {
			d.err = fmt.Errorf("field %q is missing", key)
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		d.fail(key, "a string", v)
		return ""
	}
	if s == "" && d.err == nil {
		d.err = fmt.Errorf("field %q is empty", key)
	}
	return s
}

func (d *decoder) str(key string) string {
	v := d.present(key)
	if v == nil {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		d.fail(key, "a string", v)
	}
	return s
}

// id reads an identifier, which some servers send as a number.
func (d *decoder) id(key string) string {
	v := d.present(key)
	if v == nil {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err == nil {
		return n.String()
	}
	d.fail(key, "a string or number", v)
	return ""
}

func (d *decoder) raw(key string) json.RawMessage {
	v := d.present(key)
	if v == nil {
		return nil
	}
	return append(json.RawMessage(nil), bytes.TrimSpace(v)...)
}

// strings reads an array of strings; a lone string is taken as a one-element
// array because nothing is lost by being lenient here.
func (d *decoder) strings(key string) []string {
	v := d.present(key)
	if v == nil {
		return nil
	}
	var one string
	if err := json.Unmarshal(v, &one); err == nil {
		return []string{one}
	}
	var many []string
	if err := json.Unmarshal(v, &many); err != nil {
		d.fail(key, "an array of strings", v)
		return nil
	}
	return many
}

// jsonKind names the JSON type of v for error messages.
func jsonKind(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		if bytes.HasPrefix(t, []byte("[\"")) || bytes.Equal(t, []byte("[]")) {
			return "an array"
		}
		return "an array (not of strings)"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// ResultText renders a tool result for display: a JSON string is returned
// as its text; any other JSON value is returned as compact JSON text.
func ResultText(result json.RawMessage) string {
	t := bytes.TrimSpace(result)
	if len(t) == 0 || string(t) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(t, &s); err == nil {
		return s
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, t); err != nil {
		return string(t)
	}
	return buf.String()
}

// ClientMessage is a frame the client sends on the agent channel. Build it
// with the constructors below (PromptMessage, …) and send Encode's bytes.
type ClientMessage struct {
	Type       string
	Prompt     *string
	TaskID     *string
	Provider   *string
	Model      *string
	ToolCallID *string
	Result     *string
	RequestID  *string
}

type clientWire struct {
	Channel    string  `json:"channel"`
	Type       string  `json:"type"`
	Prompt     *string `json:"prompt,omitempty"`
	TaskID     *string `json:"taskId,omitempty"`
	Provider   *string `json:"provider,omitempty"`
	Model      *string `json:"model,omitempty"`
	ToolCallID *string `json:"toolCallId,omitempty"`
	Result     *string `json:"result,omitempty"`
	RequestID  *string `json:"requestId,omitempty"`
}

// Encode returns the message as JSON, with channel "agent".
func (m ClientMessage) Encode() ([]byte, error) {
	if m.Type == "" {
		return nil, errors.New("agent-channel client message without a type")
	}
	b, err := json.Marshal(clientWire{
		Channel: ChannelAgent, Type: m.Type, Prompt: m.Prompt, TaskID: m.TaskID,
		Provider: m.Provider, Model: m.Model, ToolCallID: m.ToolCallID,
		Result: m.Result, RequestID: m.RequestID,
	})
	if err != nil {
		return nil, fmt.Errorf("encode agent-channel %q message: %w", m.Type, err)
	}
	return b, nil
}

func ptr(s string) *string { return &s }

// PromptMessage starts a task. taskID is always sent so that the server's
// frames can be matched to the turn.
func PromptMessage(text, taskID string) ClientMessage {
	return ClientMessage{Type: TypePrompt, Prompt: ptr(text), TaskID: ptr(taskID)}
}

// SettingsMessage changes the provider and/or model; empty values are left
// out.
func SettingsMessage(provider, model string) ClientMessage {
	m := ClientMessage{Type: TypeSettings}
	if provider != "" {
		m.Provider = ptr(provider)
	}
	if model != "" {
		m.Model = ptr(model)
	}
	return m
}

// AbortMessage cancels a running task.
func AbortMessage(taskID string) ClientMessage {
	return ClientMessage{Type: TypeAbort, TaskID: ptr(taskID)}
}

// ToolResponseMessage answers a tool call that asked for user input.
func ToolResponseMessage(toolCallID, result string) ClientMessage {
	return ClientMessage{Type: TypeToolResponse, ToolCallID: ptr(toolCallID), Result: ptr(result)}
}

// ApproveMessage approves a permission request.
func ApproveMessage(requestID string) ClientMessage {
	return ClientMessage{Type: TypeApprove, RequestID: ptr(requestID)}
}

// RejectMessage rejects a permission request.
func RejectMessage(requestID string) ClientMessage {
	return ClientMessage{Type: TypeReject, RequestID: ptr(requestID)}
}

// firstNonEmpty returns the first argument that is not blank.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}
