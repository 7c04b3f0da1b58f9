package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the AHP version these types describe.
const ProtocolVersion = "0.7.0"

// Ptr returns a pointer to a copy of v; handy for optional fields:
// wire.Ptr("title").
func Ptr[T any](v T) *T { return &v }

// Action wraps an action struct (or a pointer to one) in a StateAction:
//
//	wire.Action(&wire.SessionTitleChangedAction{Title: "Fix the build"})
//
// The action's "type" is filled in when it is encoded.
func Action(v any) StateAction { return NewStateAction(v) }

// Marshal encodes v like json.Marshal, but leaves <, > and & as they are
// instead of escaping them as \u003c and so on. Unknown variants, kept as raw
// JSON, then encode back byte for byte (modulo whitespace); json.Marshal
// would produce equivalent JSON with those characters escaped.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// StringOrMarkdown is text that is either plain (encoded as a JSON string) or
// Markdown (encoded as {"markdown": "…"}). The zero value is the empty plain
// string.
type StringOrMarkdown struct {
	// Text is the plain text or the Markdown source.
	Text string
	// Markdown says Text is Markdown.
	Markdown bool
}

// PlainText returns plain (non-Markdown) text.
func PlainText(s string) StringOrMarkdown { return StringOrMarkdown{Text: s} }

// MarkdownText returns text to be rendered as Markdown.
func MarkdownText(s string) StringOrMarkdown { return StringOrMarkdown{Text: s, Markdown: true} }

// String returns the text, Markdown or not.
func (s StringOrMarkdown) String() string { return s.Text }

// MarshalJSON encodes plain text as a string and Markdown as {"markdown": …}.
func (s StringOrMarkdown) MarshalJSON() ([]byte, error) {
	if s.Markdown {
		return json.Marshal(struct {
			Markdown string `json:"markdown"`
		}{s.Text})
	}
	return json.Marshal(s.Text)
}

// UnmarshalJSON accepts a string, an object with a string "markdown" member,
// or null (the empty plain string).
func (s *StringOrMarkdown) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case isJSONNull(b):
		*s = StringOrMarkdown{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var t string
		if err := json.Unmarshal(b, &t); err != nil {
			return fmt.Errorf("decoding StringOrMarkdown: %w", err)
		}
		*s = PlainText(t)
		return nil
	case len(b) > 0 && b[0] == '{':
		var m struct {
			Markdown *string `json:"markdown"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("decoding StringOrMarkdown: %w", err)
		}
		if m.Markdown == nil {
			return fmt.Errorf("decoding StringOrMarkdown: object without a \"markdown\" string: %.60s", b)
		}
		*s = MarkdownText(*m.Markdown)
		return nil
	}
	return fmt.Errorf("decoding StringOrMarkdown: want a string or {\"markdown\": …}, got %.60s", b)
}

// ToolInput is a tool call's input: inline text, encoded as a JSON string,
// or a reference to content stored outside the state tree (a ContentRef
// object) when the input is large. The zero value is the empty text.
type ToolInput struct {
	// Text is the input when Ref is nil.
	Text string
	// Ref, when not nil, points at the input's content.
	Ref *ContentRef
}

// ToolInputText returns an inline tool input.
func ToolInputText(s string) ToolInput { return ToolInput{Text: s} }

// ToolInputRef returns a tool input stored as content.
func ToolInputRef(r ContentRef) ToolInput { return ToolInput{Ref: &r} }

// MarshalJSON encodes the reference as an object, or else the text as a string.
func (t ToolInput) MarshalJSON() ([]byte, error) {
	if t.Ref != nil {
		return json.Marshal(*t.Ref)
	}
	return json.Marshal(t.Text)
}

// UnmarshalJSON accepts a string, a ContentRef object, or null (the empty
// text).
func (t *ToolInput) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case isJSONNull(b):
		*t = ToolInput{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decoding ToolInput: %w", err)
		}
		*t = ToolInputText(s)
		return nil
	case len(b) > 0 && b[0] == '{':
		var r ContentRef
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("decoding ToolInput: %w", err)
		}
		*t = ToolInputRef(r)
		return nil
	}
	return fmt.Errorf("decoding ToolInput: want a string or a content reference, got %.60s", b)
}

// SessionStatus is the bitset summarising what a session (or chat) is doing.
// It is an unsigned 32-bit integer on the wire, as in every AHP client; bits
// this package does not know are kept as they are.
type SessionStatus uint32

// SessionStatus bits (TypeScript SessionStatus). InputNeeded includes the
// InProgress bit: a session waiting for the user is still in progress.
const (
	SessionStatusIdle        SessionStatus = 1
	SessionStatusError       SessionStatus = 1 << 1
	SessionStatusInProgress  SessionStatus = 1 << 3
	SessionStatusInputNeeded SessionStatus = 1<<3 | 1<<4
	SessionStatusIsRead      SessionStatus = 1 << 5
	SessionStatusIsArchived  SessionStatus = 1 << 6
)

// sessionStatusKnown is every bit named above.
const sessionStatusKnown = SessionStatusIdle | SessionStatusError | SessionStatusInputNeeded |
	SessionStatusIsRead | SessionStatusIsArchived

// sessionStatusActivity are bits 0–4, which say what the session is doing, as
// opposed to the IsRead/IsArchived flags.
const sessionStatusActivity SessionStatus = 1<<5 - 1

// Has reports whether every bit of f is set in s.
func (s SessionStatus) Has(f SessionStatus) bool { return s&f == f }

// With returns s with the bits of f set.
func (s SessionStatus) With(f SessionStatus) SessionStatus { return s | f }

// Without returns s with the bits of f cleared.
func (s SessionStatus) Without(f SessionStatus) SessionStatus { return s &^ f }

// Unknown returns the bits of s this package has no name for.
func (s SessionStatus) Unknown() SessionStatus { return s &^ sessionStatusKnown }

// Activity returns only the activity bits of s (Idle, Error, InProgress,
// InputNeeded), dropping the IsRead/IsArchived flags and unknown bits.
func (s SessionStatus) Activity() SessionStatus { return s & sessionStatusActivity }

// WithActivity replaces the activity bits of s with a, keeping the flags and
// unknown bits.
func (s SessionStatus) WithActivity(a SessionStatus) SessionStatus {
	return s&^sessionStatusActivity | a&sessionStatusActivity
}

// Standard JSON-RPC 2.0 error codes (TypeScript JsonRpcErrorCodes).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// AHP application error codes (TypeScript AhpErrorCodes; the schemas'
// AhpErrorCode enum stops at -32010 and misses Conflict).
const (
	CodeSessionNotFound            = -32001
	CodeProviderNotFound           = -32002
	CodeSessionAlreadyExists       = -32003
	CodeTurnInProgress             = -32004
	CodeUnsupportedProtocolVersion = -32005 // data: UnsupportedProtocolVersionErrorData
	CodeContentNotFound            = -32006
	CodeAuthRequired               = -32007 // data: AuthRequiredErrorData
	CodeNotFound                   = -32008
	CodePermissionDenied           = -32009 // data: PermissionDeniedErrorData
	CodeAlreadyExists              = -32010
	CodeConflict                   = -32011
)

// Methods of the requests a client sends to the server (TypeScript CommandMap).
const (
	MethodInitialize               = "initialize"
	MethodPing                     = "ping"
	MethodReconnect                = "reconnect"
	MethodSubscribe                = "subscribe"
	MethodCreateSession            = "createSession"
	MethodDisposeSession           = "disposeSession"
	MethodCreateChat               = "createChat"
	MethodDisposeChat              = "disposeChat"
	MethodCreateTerminal           = "createTerminal"
	MethodDisposeTerminal          = "disposeTerminal"
	MethodCreateResourceWatch      = "createResourceWatch"
	MethodListSessions             = "listSessions"
	MethodResourceRead             = "resourceRead"
	MethodResourceWrite            = "resourceWrite"
	MethodResourceList             = "resourceList"
	MethodResourceCopy             = "resourceCopy"
	MethodResourceDelete           = "resourceDelete"
	MethodResourceMove             = "resourceMove"
	MethodResourceResolve          = "resourceResolve"
	MethodResourceMkdir            = "resourceMkdir"
	MethodResourceRequest          = "resourceRequest"
	MethodFetchTurns               = "fetchTurns"
	MethodAuthenticate             = "authenticate"
	MethodResolveSessionConfig     = "resolveSessionConfig"
	MethodSessionConfigCompletions = "sessionConfigCompletions"
	MethodCompletions              = "completions"
	MethodInvokeChangesetOperation = "invokeChangesetOperation"
)

// Methods of the notifications a client sends (TypeScript ClientNotificationMap).
const (
	MethodUnsubscribe    = "unsubscribe"
	MethodDispatchAction = "dispatchAction"
)

// Methods of the notifications the server sends (TypeScript ServerNotificationMap).
const (
	MethodAction                    = "action"
	MethodRootSessionAdded          = "root/sessionAdded"
	MethodRootSessionRemoved        = "root/sessionRemoved"
	MethodRootSessionSummaryChanged = "root/sessionSummaryChanged"
	MethodRootProgress              = "root/progress"
	MethodAuthRequired              = "auth/required"
	MethodOtlpExportLogs            = "otlp/exportLogs"
	MethodOtlpExportTraces          = "otlp/exportTraces"
	MethodOtlpExportMetrics         = "otlp/exportMetrics"
)

// RootChannel is the URI of the root channel.
const RootChannel = "ahp-root://"

// As decodes the snapshot's state into dst, a pointer to the state type the
// snapshot's resource calls for (*RootState for ahp-root://, *SessionState
// for a session, *ChatState for a chat, …). Decoding keeps the state as raw
// JSON because the variants share no discriminator.
func (s SnapshotState) As(dst any) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("re-encoding snapshot state: %w", err)
	}
	if err := json.Unmarshal(b, dst); err != nil {
		return fmt.Errorf("decoding snapshot state as %T: %w", dst, err)
	}
	return nil
}
