package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Store is what the host needs from durable storage. It is deliberately
// narrow and knows nothing of AHP wire types, so that a server database can
// implement it later without the host changing. Every method is safe for
// concurrent use.
//
// Writes return when the change is committed: a caller that broadcasts only
// after a nil error never shows a client something a restart would take back.
// A write that fails leaves the stored state as it was, and the next write
// that succeeds needs no repair first.
type Store interface {
	// PutSession creates or replaces a session's catalogue row, and with it
	// the given chats, in one transaction. Replacing a session keeps its
	// chats, turns and checkpoints.
	PutSession(ctx context.Context, s Session, chats ...Chat) error
	// PutChat creates or replaces one chat row, for changes that touch only
	// the chat (its summary, or the ACP session id after the agent
	// restarted). Its session must be stored: otherwise ErrNotFound.
	PutChat(ctx context.Context, c Chat) error
	// AppendTurn commits a completed turn after the chat's earlier ones,
	// together with the catalogue rows the turn changed, and drops the
	// chat's checkpoint of that turn. Storing a turn id again replaces its
	// content and keeps its place. ErrNotFound if the chat is not stored.
	AppendTurn(ctx context.Context, c TurnCommit) error
	// DeleteSession deletes a session with its chats, turns and checkpoints.
	// ErrNotFound if there was nothing to delete.
	DeleteSession(ctx context.Context, uri string) error
	// PutCheckpoints writes the newest state of several active turns in one
	// transaction: each checkpoint replaces the chat's Data and appends its
	// Texts to what earlier checkpoints of the same turn stored (or, with
	// Replace, drops those first). A checkpoint whose chat is no longer
	// stored, or whose turn has already been committed as completed, is
	// dropped: it arrived too late to matter.
	PutCheckpoints(ctx context.Context, cps []Checkpoint) error
	// RaiseSeqHighWater raises the stored serverSeq high-water mark to v; it
	// never lowers it. See SeqReserve for the rule built on it.
	RaiseSeqHighWater(ctx context.Context, v int64) error

	// ListSessions returns a page of the catalogue, most recently modified
	// first.
	ListSessions(ctx context.Context, q ListQuery) (SessionPage, error)
	// GetSession returns a session's catalogue row and its chats, without
	// turns. ErrNotFound if it is not stored.
	GetSession(ctx context.Context, uri string) (SessionRecord, error)
	// Turns returns a page of a chat's completed turns, walking backwards
	// from the newest. ErrNotFound if the chat is not stored.
	Turns(ctx context.Context, chatURI string, q TurnQuery) (TurnPage, error)
	// Checkpoint returns what is stored of a chat's active turn: the last
	// Data written and the texts appended to it, one
	// CheckpointText per string, in Pointer order (Checkpoint.Merged joins
	// them). ErrNotFound if there is none.
	Checkpoint(ctx context.Context, chatURI string) (Checkpoint, error)
	// SeqHighWater returns the stored serverSeq high-water mark: no value
	// above it was ever handed out under the SeqReserve rule.
	SeqHighWater(ctx context.Context) (int64, error)

	// PutProviderModels remembers the models a provider's agent last
	// offered, as a JSON array (AHP 1.0.0 model infos; the store does not
	// read it), replacing what was stored for the provider. A restarted
	// bridge publishes them before the provider's first session.
	PutProviderModels(ctx context.Context, provider string, models json.RawMessage) error
	// ProviderModels returns the models stored for a provider.
	// ErrNotFound if none are.
	ProviderModels(ctx context.Context, provider string) (json.RawMessage, error)

	// HasAgentSession reports whether a stored chat of a session of
	// provider talks to the agent's session agentSessionID.
	HasAgentSession(ctx context.Context, provider, agentSessionID string) (bool, error)

	// PutClient creates or replaces a client's record: the protocol
	// dialect it negotiated and what it subscribed to, so that a restarted
	// bridge can answer its `reconnect` (clients.go).
	PutClient(ctx context.Context, c Client) error
	// GetClient returns a client's record. ErrNotFound if there is none.
	GetClient(ctx context.Context, clientID string) (Client, error)
	// PruneClients deletes the records of clients last seen before t, and
	// says how many it deleted.
	PruneClients(ctx context.Context, before time.Time) (int, error)

	// Health reports whether writes are failing, for a warning the host
	// shows until they succeed again.
	Health() Health
	// Close releases the store. Calls after Close fail with ErrClosed.
	Close() error
}

// Session is a session's catalogue row: what a session list shows and what
// the host needs to bring the session back after a restart.
type Session struct {
	URI      string
	Provider string
	Title    string
	// WorkingDirs are the session's working directories, in order.
	WorkingDirs []string
	// Config is the session's configuration as the host encodes it; nil is
	// stored as absent.
	Config json.RawMessage
	// Summary is the host's summary of the session (the listSessions item);
	// nil is stored as absent.
	Summary  json.RawMessage
	Created  time.Time
	Modified time.Time
}

// Chat is a chat's row. Each chat keeps the id of the ACP session behind it,
// so that the agent can be asked to resume or load that session later.
type Chat struct {
	URI        string
	SessionURI string
	// ACPSessionID is the agent's session id, empty until the agent gave one.
	ACPSessionID string
	// Summary is the host's summary of the chat; nil is stored as absent.
	Summary json.RawMessage
	// Created orders the chats of a session.
	Created time.Time
}

// Turn is a completed turn. Data is the whole turn as the host encodes it
// (message, parts, tool calls, usage, timing); the store keeps its bytes
// exactly and does not parse them, but Export expects valid JSON.
type Turn struct {
	ID   string
	Data json.RawMessage
	// Encode, if not nil, writes the turn's data in place of Data, for
	// AppendTurn: the store writes it in chunks as it comes, so that a long
	// turn is never held whole, by the caller or by SQLite. It is called
	// once, within the write's transaction, and must write the same bytes
	// every time it is called (a write may be retried); its error fails the
	// write. The store does not retain what is passed to w.
	Encode  func(w io.Writer) error
	EndedAt time.Time
}

// TurnCommit is a completed turn with the catalogue changes it caused, so
// that both are committed in a single transaction.
type TurnCommit struct {
	ChatURI string
	Turn    Turn
	// Session, when not nil, replaces the session's catalogue row (its
	// modified time and summary usually changed with the turn).
	Session *Session
	// Chat, when not nil, replaces the chat's row.
	Chat *Chat
}

// Checkpoint is the newest stored state of a chat's active (streaming) turn.
// After a crash it is what is left of the turn; the host shows it as ended.
//
// A checkpoint is incremental: Data is the turn's JSON document in which the
// strings that keep growing (a streaming answer's text) are left short, and
// Texts carry what those strings gained since the previous checkpoint of the
// turn. The store does not parse Data; only Merged, for readers that want
// the whole document (export), does.
type Checkpoint struct {
	ChatURI string
	TurnID  string
	// Data replaces the Data of the previous checkpoint of the turn.
	Data json.RawMessage
	// Replace drops whatever earlier checkpoints of the chat stored,
	// appended texts included, before this one is written: Data and Texts
	// are then the whole state.
	Replace bool
	// Texts are appended to strings inside Data.
	Texts []CheckpointText
	// Updated is when the host produced this state.
	Updated time.Time
}

// CheckpointText is a piece of a string inside a checkpoint's Data.
type CheckpointText struct {
	// Pointer names the string, as an RFC 6901 JSON pointer into Data
	// ("/responseParts/2/content").
	Pointer string
	// Offset is the byte offset in the (decoded) string at which Text
	// goes: what the string holds from Offset on is replaced by Text, so
	// writing a piece again is harmless. A piece whose Offset is beyond the
	// string's end cannot be placed and is ignored.
	Offset int
	// Text is the string's bytes from Offset on: UTF-8 text, which the
	// store joins with the pieces of the same string that follow it
	// before anything decodes it, so a piece may cut a rune in two.
	Text string
}

// TurnSnapshot is an active turn as a snapshot function gives it: Data as in
// Checkpoint, and for each string named by Texts its current content from
// Offset on, in one or more consecutive pieces: from 0, or from where the
// snapshot function was asked to start it (SnapshotFunc). The Checkpointer works out what is new
// since the last write.
type TurnSnapshot struct {
	Data  json.RawMessage
	Texts []CheckpointText
}

// SessionRecord is a session with its chats, without their turns.
type SessionRecord struct {
	Session Session
	// Chats are ordered by creation.
	Chats []ChatRecord
}

// ChatRecord is a chat with the number of its stored completed turns.
type ChatRecord struct {
	Chat
	Turns int
}

// ListQuery asks for one page of the session catalogue.
type ListQuery struct {
	// Cursor is a SessionPage.NextCursor from an earlier call, or empty for
	// the first page.
	Cursor string
	// Limit bounds the page; zero or less means DefaultPageSize, and it is
	// capped at MaxPageSize.
	Limit int
}

// SessionPage is one page of the catalogue.
type SessionPage struct {
	Sessions []Session
	// NextCursor fetches the following page; empty when this is the last.
	NextCursor string
}

// TurnQuery asks for one page of a chat's completed turns, which are served
// backwards from the newest, as fetchTurns wants them.
type TurnQuery struct {
	// Cursor is a TurnPage.NextCursor from an earlier call; empty starts
	// from the newest turn.
	Cursor string
	// BeforeTurnID, when Cursor is empty, starts below that turn instead
	// (AHP 0.3.0's fetchTurns names a turn, not a cursor).
	BeforeTurnID string
	// Limit bounds the page; zero or less means every remaining turn.
	Limit int
}

// TurnPage is one page of completed turns, oldest first.
type TurnPage struct {
	Turns []Turn
	// NextCursor fetches the older turns before this page; empty when there
	// are none.
	NextCursor string
}

// Health says whether the store's writes are failing.
type Health struct {
	// WriteFailures counts failed writes since the store was opened.
	WriteFailures uint64
	// Failing is true from a failed write until the next successful one.
	Failing bool
	// LastError is the most recent write failure, kept after recovery.
	LastError   error
	LastErrorAt time.Time
}

// Page sizes of ListSessions.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// Errors a caller can test for with errors.Is.
var (
	// ErrNotFound: the session, chat, turn or checkpoint is not stored.
	ErrNotFound = errors.New("not stored")
	// ErrBadCursor: a paging cursor was not made by this store.
	ErrBadCursor = errors.New("not a cursor this store made")
	// ErrFull: the disk (or the database's size limit) is full.
	ErrFull = errors.New("no space left for the state file")
	// ErrReadOnly: the store was opened for inspection only.
	ErrReadOnly = errors.New("state file is open read-only")
	// ErrClosed: the store, checkpointer or reserve was closed.
	ErrClosed = errors.New("state store is closed")
)

// MovedAside reports a state file that Open could not use and moved out of
// the way before starting empty. Its String is meant for stderr.
type MovedAside struct {
	// Path is the state file; MovedTo is where it went. Its -wal and -shm
	// files, if any, went next to it with the same suffixes.
	Path, MovedTo string
	// Reason says why the file could not be used.
	Reason error
}

func (m *MovedAside) String() string {
	return fmt.Sprintf("state file %s could not be used (%v); moved it to %s and started with an empty store",
		m.Path, m.Reason, m.MovedTo)
}
