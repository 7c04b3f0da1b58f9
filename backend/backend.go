// Package backend is the neutral vocabulary spoken between the bridge and the
// agents behind it.
//
// Backends (ACP agents in package acp, agent-channel servers in package
// agentchan) translate their own wire protocol into the Events defined here
// and accept the commands of the Session interface. Package mapping turns the
// Events into AHP actions; package bridge owns sessions and turns and joins
// the pieces. Nothing here does I/O, and nothing here knows AHP or ACP wire
// shapes, so a new kind of backend only has to speak this vocabulary.
package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Provider is one configured agent: an ACP command or an agent-channel URL.
// A provider may host many sessions.
type Provider interface {
	// Info describes the provider for the AHP root state. It must not block
	// on starting the agent.
	Info() ProviderInfo

	// OpenSession creates a backend session. Events for the session are
	// delivered to sink, in order, from the moment OpenSession is called
	// until the Session is closed. OpenSession may start the agent process
	// or dial the backend; its error text is shown to the user as the
	// session's creation failure, so it must say what the agent said.
	OpenSession(ctx context.Context, opts SessionOptions, sink Sink) (Session, error)

	// Close stops every process or connection the provider owns.
	Close(ctx context.Context) error
}

// ProviderInfo is what the root state shows about a provider.
type ProviderInfo struct {
	ID          string
	DisplayName string
	Description string
	Models      []ModelInfo
	// McpServers are the MCP servers the provider's configuration gives
	// every session (the bridge's `mcpServers` key), passed in
	// SessionOptions.McpServers by the bridge together with those the
	// client brings. Their env and headers are secrets: shown nowhere.
	McpServers []McpServer
	// Auth is how the agent lets users sign in, once it has said so (an
	// ACP agent: its authMethods, and whether session/new asked for
	// authentication); nil when it has not, or has no sign-in.
	Auth *AuthInfo
	// ProbeModels allows the bridge to open one throwaway session at start
	// to learn the models (Models is empty until a session opens), when
	// none are known from an earlier run. It costs starting the agent.
	ProbeModels bool
}

// ModelInfo is one model a provider offers.
type ModelInfo struct {
	ID   string
	Name string
}

// SessionOptions are the parameters of a new backend session.
type SessionOptions struct {
	// SessionID is the bridge's identifier for the session (the UUID of the
	// AHP session URI). Backends use it only for logging and correlation.
	SessionID string
	// Cwd is the working directory; fs and terminal requests are confined to it.
	Cwd string
	// Model is the requested model id, or "" for the agent's default. A
	// backend that could not switch the new session to it still opens the
	// session, on the agent's model, and reports a SettingRefused.
	Model string
	// Roots are all the session's working directories (Cwd among them;
	// empty means Cwd alone): the files a prompt's attachments may name.
	Roots []string
	// McpServers are passed to the agent as far as it takes them; the
	// backend reports each one's state with McpServerStatus events.
	McpServers []McpServer
	// Resume is the agent's id of an earlier conversation to continue (an
	// Attached event's ID, kept across a restart of the bridge), or "" for
	// a new one. A backend that cannot continue it opens a new one and
	// reports Attached with AttachFresh and why.
	Resume string
	// Import says Resume is one of the agent's own sessions the bridge
	// holds no history of (agentsessions.go): the backend prefers having
	// the agent replay it (ACP session/load), passing the replay on
	// between Replay events, and else continues it without its history.
	Import bool
	// Fork is the agent's id of a conversation the new session starts as
	// a copy of (ACP session/fork), or "" for none. A backend whose agent
	// cannot fork fails OpenSession.
	Fork string
}

// Sink receives events from a backend session. Implementations must return
// quickly and never block on the network: backends call it from their read
// loops.
type Sink interface {
	Event(ev Event)
}

// SinkFunc adapts a function to the Sink interface.
type SinkFunc func(Event)

// Event calls f(ev).
func (f SinkFunc) Event(ev Event) { f(ev) }

// Session is one conversation with an agent.
type Session interface {
	// Prompt runs one turn. It returns when the agent ends the turn (or the
	// turn fails); the events of the turn have been delivered to the sink
	// before Prompt returns. A cancelled turn returns StopCancelled.
	Prompt(ctx context.Context, p Prompt) (TurnResult, error)

	// Cancel asks the agent to stop the running turn. It does not wait for
	// the turn to end; Prompt returns when it has.
	Cancel(ctx context.Context) error

	// SetConfig changes a session setting (model, mode or another config
	// option) on the agent. It returns an error when the agent refused the
	// change or has no way to make it; the setting is then unchanged and
	// the caller must say so rather than show the new value.
	SetConfig(ctx context.Context, key, value string) error

	// Close ends the session on the agent when the agent supports it.
	Close(ctx context.Context) error
}

// Prompt is the user's message for one turn.
type Prompt struct {
	TurnID      string
	Text        string
	Attachments []Attachment
}

// AttachmentKind tells how an attachment is carried.
type AttachmentKind string

// Attachment kinds.
const (
	// AttachResourceLink refers to a resource by URI (a file the agent
	// may read itself), with an optional Selection in it.
	AttachResourceLink AttachmentKind = "resource_link"
	// AttachEmbedded carries the resource inline: Text when it is UTF-8
	// text, else Data (base64). With AsText set, Text is not a resource
	// but a rendering of the attachment for the model (a simple
	// attachment's model representation, a chat transcript, a reference
	// to annotations), to be given to the agent as text.
	AttachEmbedded AttachmentKind = "embedded"
)

// Attachment is a file, resource or other context attached to a prompt.
type Attachment struct {
	Kind     AttachmentKind
	URI      string
	Name     string
	MimeType string
	Text     string // AttachEmbedded: the text, or the model's text (AsText)
	// Data is the base64 bytes of an embedded attachment that is not
	// UTF-8 text (an image, audio, a PDF); Text is then empty.
	Data string
	// Selection is the part of a textual resource the user selected, or
	// nil for all of it.
	Selection *Range
	// AsText says Text renders the attachment for the model (see
	// AttachEmbedded).
	AsText bool
	// Meta is the attachment's `_meta`, carried to the agent.
	Meta map[string]any
}

// Range is a span of a text: zero-based lines, and characters counted in
// UTF-16 code units within the line (LSP's and AHP's TextRange); End is
// exclusive.
type Range struct {
	StartLine, StartChar int
	EndLine, EndChar     int
}

// Select returns the part of text that r covers. Positions past the end
// of a line or of the text are clamped to it, so a range is never an
// error: a stale selection still gives what is there.
func (r Range) Select(text string) string {
	lines := strings.SplitAfter(text, "\n")
	offset := func(line, char int) int {
		if line < 0 {
			return 0
		}
		pos := 0
		for i := 0; i < line && i < len(lines); i++ {
			pos += len(lines[i])
		}
		if line >= len(lines) {
			return len(text)
		}
		l := strings.TrimSuffix(lines[line], "\n")
		units := 0
		for i, c := range l {
			if units >= char {
				return pos + i
			}
			units += len(utf16.Encode([]rune{c}))
		}
		return pos + len(l)
	}
	start, end := offset(r.StartLine, r.StartChar), offset(r.EndLine, r.EndChar)
	if end < start {
		return ""
	}
	return text[start:end]
}

// AttachmentError says which attachments of a prompt the agent was not
// sent, and why: the backend sends no part of such a prompt, so the user
// never believes the agent saw what it did not.
type AttachmentError struct {
	Refused []RefusedAttachment
}

// RefusedAttachment is one attachment a backend could not give the agent.
type RefusedAttachment struct {
	Name   string // the attachment's label, else its URI
	Reason string
}

func (e *AttachmentError) Error() string {
	parts := make([]string, 0, len(e.Refused))
	for _, r := range e.Refused {
		parts = append(parts, fmt.Sprintf("%q: %s", r.Name, r.Reason))
	}
	return "the message was not sent to the agent, which cannot take every attachment: " + strings.Join(parts, "; ")
}

// StopReason tells why a turn ended.
type StopReason string

// Stop reasons, named after ACP's.
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// TurnResult is how a turn ended.
type TurnResult struct {
	StopReason StopReason
	Usage      *Usage
	// Summary is final text that was not streamed (agent-channel `result`).
	Summary string
}

// Usage is what one turn spent, in tokens, as the agent counted it (ACP:
// the `usage` of the session/prompt result). It is not the context window:
// how full the model's context is comes as ContextUsage.
//
// Reported says which counts the agent sent. A count not in it is 0 only
// because Go has no absent integer: it must not be shown as a figure, so no
// count is ever made up. A Usage whose Reported is 0 comes from a backend
// that does not fill it in (agent-channel); its InputTokens and
// OutputTokens are then reported. Backends that fill it in never hand out a
// Usage with no count at all (they give none).
type Usage struct {
	InputTokens       int64
	OutputTokens      int64
	CachedInputTokens int64 // input tokens read from the prompt cache
	CacheWriteTokens  int64 // input tokens written to the prompt cache
	ThoughtTokens     int64 // reasoning tokens
	TotalTokens       int64 // the agent's own sum of all of them
	Model             string
	Reported          UsageFields
}

// UsageFields is a set of Usage counts.
type UsageFields uint8

// The counts of a Usage.
const (
	UsageInput UsageFields = 1 << iota
	UsageOutput
	UsageCacheRead
	UsageCacheWrite
	UsageThought
	UsageTotal
)

// Has reports whether the agent reported the count f (see Usage.Reported).
func (u Usage) Has(f UsageFields) bool {
	if u.Reported == 0 {
		return f&(UsageInput|UsageOutput) == f
	}
	return u.Reported&f == f
}

// Event is something a backend session reports. The concrete types below
// are the whole set; a backend that has something else to say uses Custom.
type Event interface{ isEvent() }

// TextChunk is a piece of the agent's visible answer.
type TextChunk struct{ Text string }

// ThoughtChunk is a piece of the agent's reasoning.
type ThoughtChunk struct{ Text string }

// ContentBlock is non-text content in the agent's answer (an image, audio, a
// resource or resource link). Raw is the backend's JSON for the block.
type ContentBlock struct {
	Type     string // "image", "audio", "resource", "resource_link"
	URI      string
	Name     string
	MimeType string
	Text     string // embedded resource text, if any
	Data     string // base64 data for image/audio
	Raw      json.RawMessage
}

// ToolStatus is a tool call's status, named after ACP's. Backend-specific
// statuses (ACP v2 `_`-prefixed) are passed through unchanged.
type ToolStatus string

// Tool call statuses.
const (
	ToolPending    ToolStatus = "pending"
	ToolInProgress ToolStatus = "in_progress"
	ToolCompleted  ToolStatus = "completed"
	ToolFailed     ToolStatus = "failed"
)

// ToolCall starts a tool call or updates it (upsert by ID). Nil or empty
// fields in an update mean "unchanged", except Content, whose handling is
// given by ContentMode.
//
// A later event may change any field, Title and RawInput included: agents
// first report a call with a placeholder (claude-code-acp titles it
// "Terminal" or "Read File" with an empty input while the model still
// streams the input) and then the real title and input. When an agent
// re-sends the full description of a call it already reported, the backend
// passes it on as an update (Update true) carrying every field it had, so
// that a consumer never starts the same call twice.
type ToolCall struct {
	ID     string
	Title  string
	Kind   string // ACP tool kind: read, edit, delete, move, search, execute, think, fetch, switch_mode, other, or a custom `_` kind
	Status ToolStatus
	// Update is true for a tool_call_update (only set fields change) and
	// false for a tool_call (the full description of the call).
	Update      bool
	ContentMode ContentMode
	Content     []ToolContent
	// Locations replaces the files the call touches when non-nil; an empty,
	// non-nil slice clears them.
	Locations []Location
	// RawInput is the tool's input as JSON. An empty input (`{}` or null)
	// says nothing yet and is left out (nil), never sent as "{}".
	RawInput  json.RawMessage
	RawOutput json.RawMessage
	// Meta is the call's `_meta` as merged so far over all its events
	// (objects merged key by key, later values winning, a null removing the
	// key), or nil when this event carried none. A consumer may replace its
	// copy with it: nothing an earlier event said is missing from it, e.g.
	// claude-code-acp's `_meta.claudeCode.toolResponse`, which a later
	// update's `_meta.claudeCode.toolName` alone would otherwise overwrite.
	Meta map[string]any
}

// ContentMode says what a ToolCall's Content does to the content so far.
type ContentMode int

// Content modes.
const (
	// ContentUnchanged leaves the content as it is (the field was absent).
	ContentUnchanged ContentMode = iota
	// ContentReplace replaces the content; an empty Content clears it.
	ContentReplace
	// ContentAppend appends Content (ACP v2 tool_call_content_chunk).
	ContentAppend
)

// ToolContent is one item of a tool call's content.
type ToolContent struct {
	Type string // "content", "diff", "terminal", or a backend-specific type
	// For Type "content": the content block, text or otherwise.
	Text  string
	Block *ContentBlock
	// For Type "diff". Created says the file did not exist before the agent
	// wrote it in this turn (ACP: fs/write_text_file made it): the diff
	// creates the file even when its OldText is not nil (agents give "" for
	// an edit of a file that does not exist yet). With Created false, an
	// OldText of nil also means a new file.
	Path    string
	OldText *string
	NewText string
	Created bool
	// For Type "terminal".
	TerminalID string
	Raw        json.RawMessage
}

// Location is a file a tool call touches.
type Location struct {
	Path string
	Line *int
}

// PermissionOptionKind is ACP's option kind.
type PermissionOptionKind string

// Permission option kinds.
const (
	AllowOnce    PermissionOptionKind = "allow_once"
	AllowAlways  PermissionOptionKind = "allow_always"
	RejectOnce   PermissionOptionKind = "reject_once"
	RejectAlways PermissionOptionKind = "reject_always"
)

// PermissionOption is one answer the agent offers.
type PermissionOption struct {
	ID   string
	Name string
	Kind PermissionOptionKind
}

// PermissionOutcome is the answer to a permission request. OptionID is ""
// when the request is cancelled.
type PermissionOutcome struct {
	Cancelled bool
	OptionID  string
}

// PermissionRequest asks the user to approve a tool call. ToolCall carries
// the tool call as the agent described it in the request; it may be the first
// the bridge hears of it. Respond must be called exactly once; calls after
// the first are ignored.
type PermissionRequest struct {
	ToolCall ToolCall
	Options  []PermissionOption
	Respond  func(PermissionOutcome)
}

// Question asks the user for free-form answers (agent-channel `question`).
// Respond must be called exactly once with the answers, or with declined
// set when the user declined or the turn ended.
type Question struct {
	Questions []string
	Respond   func(answers []string, declined bool)
}

// PlanEntry is one item of the agent's plan.
type PlanEntry struct {
	Content  string
	Priority string
	Status   string
}

// Plan replaces the agent's whole plan.
type Plan struct{ Entries []PlanEntry }

// UsageUpdate reports the tokens a turn has spent so far, while it runs.
// ACP agents never produce it: their usage_update is a ContextUsage.
type UsageUpdate struct{ Usage Usage }

// ContextUsage reports the agent's context window and the session's cost
// (ACP usage_update). Used is how many tokens the conversation occupies now
// and Size how many fit: these are not tokens a turn spent (Usage is), and
// Used falls when the agent compacts the conversation. Cost is cumulative
// for the session. A nil field was not reported (ACP agents send `used:
// null` at times); an update that reports nothing is not passed on.
type ContextUsage struct {
	Used *int64
	Size *int64
	Cost *Cost
	// Meta is the update's `_meta`, e.g. claude-agent-acp's
	// "_claude/model" (the model the figures belong to).
	Meta map[string]any
}

// Cost is an amount of money.
type Cost struct {
	Amount   float64
	Currency string // ISO 4217, e.g. "USD"
}

// TitleChanged sets the session title.
type TitleChanged struct{ Title string }

// ConfigOption is one session setting the agent exposes (a mode, a model or
// another ACP config option). Agents that announce their modes or models
// outside config options (ACP session/new `modes`, claude-code-acp's
// `models`) get an option of category "mode" or "model" for them.
type ConfigOption struct {
	ID          string
	Name        string
	Description string
	Category    string // "mode", "model", or another category
	Current     string
	Values      []ConfigValue
}

// ConfigValue is one choice of a ConfigOption.
type ConfigValue struct {
	ID          string
	Name        string
	Description string
}

// ConfigChanged replaces the agent's session settings: Options is the
// whole new list, and a setting missing from it no longer exists (the
// agent removed it), so a consumer mirrors the list rather than merging
// it into what it had.
type ConfigChanged struct{ Options []ConfigOption }

// SettingRefused says the agent would not take a setting the bridge asked
// for when it opened the session (SessionOptions.Model): the session runs
// with the value its settings show instead. A SetConfig that fails returns
// its error instead.
type SettingRefused struct {
	Key   string
	Value string
	Err   error
}

// CommandsChanged replaces the agent's slash commands.
type CommandsChanged struct{ Commands []Command }

// Command is one slash command the agent offers.
type Command struct {
	Name        string
	Description string
	InputHint   string
}

// TerminalStarted says a terminal was created for the session; its output
// follows as TerminalOutput events.
type TerminalStarted struct {
	TerminalID string
	Command    string
	Cwd        string
}

// TerminalOutput is output of a terminal.
type TerminalOutput struct {
	TerminalID string
	Data       string
}

// TerminalExited says a terminal's command ended.
type TerminalExited struct {
	TerminalID string
	ExitCode   *int
	Signal     string
}

// TerminalReleased says the agent released a terminal.
type TerminalReleased struct{ TerminalID string }

// Custom is an update kind the backend does not know. It is kept so that
// nothing the agent says is silently lost.
type Custom struct {
	Kind string
	Raw  json.RawMessage
}

// Disconnected says the backend connection or process is gone; any running
// turn is over. Err explains why in words for the user.
type Disconnected struct{ Err error }

func (TextChunk) isEvent()         {}
func (ThoughtChunk) isEvent()      {}
func (ContentBlock) isEvent()      {}
func (ToolCall) isEvent()          {}
func (PermissionRequest) isEvent() {}
func (Question) isEvent()          {}
func (Plan) isEvent()              {}
func (UsageUpdate) isEvent()       {}
func (ContextUsage) isEvent()      {}
func (TitleChanged) isEvent()      {}
func (ConfigChanged) isEvent()     {}
func (CommandsChanged) isEvent()   {}
func (SettingRefused) isEvent()    {}
func (TerminalStarted) isEvent()   {}
func (TerminalOutput) isEvent()    {}
func (TerminalExited) isEvent()    {}
func (TerminalReleased) isEvent()  {}
func (Custom) isEvent()            {}
func (Disconnected) isEvent()      {}
