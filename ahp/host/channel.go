package host

import (
	"strings"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

type chanKind int

const (
	chanRoot chanKind = iota
	chanSession
	chanChat
	chanTerminal
	chanResourceWatch
	chanChangeset // changeset.go
)

func (k chanKind) String() string {
	switch k {
	case chanRoot:
		return "root"
	case chanSession:
		return "session"
	case chanChat:
		return "chat"
	case chanTerminal:
		return "terminal"
	case chanResourceWatch:
		return "resource watch"
	case chanChangeset:
		return "changeset"
	}
	return "unknown"
}

// actionPrefix is the type prefix of the actions a channel kind takes.
func (k chanKind) actionPrefix() string {
	switch k {
	case chanRoot:
		return "root/"
	case chanSession:
		return "session/"
	case chanChat:
		return "chat/"
	case chanTerminal:
		return "terminal/"
	case chanResourceWatch:
		return "resourceWatch/"
	case chanChangeset:
		return "changeset/"
	}
	return "\x00"
}

// channel is one state-bearing channel. Its critical section {validate →
// reduce → sequence → broadcast} runs under *mu (with a store, sequence and
// broadcast may come later, on the group's drainer, still under *mu); the host's sequencer lock
// (Host.mu) is only ever taken inside it.
//
// A session and its chats share one mutex (their group's): a chat action
// changes session state too (the chat catalogue, inputNeeded, the root
// catalogue's aggregate), and one lock makes those follow-ups atomic with
// the action without a lock order between them. Lock order: a group's or a
// terminal's mutex, then the root channel's, then Host.mu. No lock is held
// across the store's I/O: a group's writes are made by its drainer with the
// group's mutex released, and the actions that wait for them are held in
// the group's pipeline, in order (pipeline.go).
type channel struct {
	uri  string
	kind chanKind
	mu   *sync.Mutex

	// group is the session group of a session or chat channel.
	group *sessionGroup

	root     *wire.RootState
	session  *wire.SessionState
	chat     *chatData
	terminal *wire.TerminalState
	watch    *wire.ResourceWatchState
	changes  *wire.ChangesetState // changeset.go
	removed  bool

	// Guarded by Host.mu. Nil while nobody subscribes (addSub, dropSub):
	// most sessions are idle, and a map that had a subscriber keeps its
	// table after the last one leaves (issue 17: idle memory).
	subs   map[*conn]struct{}
	worker *worker
}

// sessionGroup is what a session and its chats share. Guarded by mu.
type sessionGroup struct {
	mu      sync.Mutex
	session *channel
	// chats in catalogue order; chats[0] is the default chat for life.
	chats []*channel
	// settingsUnknown: the session was created before its agent had
	// reported any settings (a ConfigResolver knew none), so its schema,
	// fixed at creation, is empty; the handler applies a client's change
	// once the agent runs, or refuses it with a reason (validateSession).
	settingsUnknown bool
	// summary is the session's entry in the root catalogue, aggregated
	// from the session and its chats (root/sessionSummaryChanged).
	summary wire.SessionSummary
	// lastSummaryNote is when a modifiedAt-only summary change was last
	// announced; such changes are coalesced to one per second.
	lastSummaryNote int64
	// progress reports createSession's progress to the connection that
	// asked for it, until the session is ready or has failed.
	progress *progressWatch
	// changes is the session's SessionSummary.changes as its handler
	// last set it (SetSessionChanges, changeset.go).
	changes *wire.ChangesSummary

	// With a store (persist.go): stored is set once the session's row is
	// written, storedSummary is the summary as last written, and detached
	// marks a session brought back from the store that the handler cannot
	// take over (restore.go).
	stored        bool
	storedSummary []byte
	detached      bool
	// mirror marks a stored session another live bridge holds, loaded
	// read-only for clients that watch it (mirror.go): nothing of it is
	// written, the handler does not know it, and it takes no action until
	// this bridge takes it over.
	mirror bool
	// An archived session's agent (archive.go): releasing while
	// disposeSession has the handler let go of it, released once it has,
	// and attach, from the first handler call after that, the re-attach
	// that call and every later one run first.
	releasing, released bool
	attach              *reattach
	// archivedAt is when the session was last archived (Unix ms), 0 while
	// it is not (Options.ArchiveRetention, retention.go).
	archivedAt int64
	// pipe holds the actions waiting for a store write, in order
	// (pipeline.go).
	pipe pipeline
}

// chatData is a chat channel's state and the host's bookkeeping about it.
type chatData struct {
	st *wire.ChatState
	// stream reduces text deltas in amortised O(1) (docs/performance.md).
	// It is Lazy: a streaming part's Content in st is current only after
	// stream.Sync, which synced does; whatever reads a part's text goes
	// through it (the delta path itself never reads one).
	stream reducer.Streaming
	// mirrored is the chat's summary as last written to the session's
	// chat catalogue (session/chatUpdated), and mirroredAt when.
	mirrored   wire.ChatSummary
	mirroredAt int64
	// inputs are the session/inputNeeded entries this chat raised, by id,
	// with their encoding, so a change is re-announced and a resolution
	// removed.
	inputs map[string]string

	// With a store (persist.go): created orders the chat's row among its
	// session's; unstored is the index in st.Turns of the first turn not
	// written yet; snapshot encodes the active turn for the checkpointer;
	// agentSessionID is the agent's session id behind the chat
	// (SetAgentSessionID); olderInStore is set for a restored chat whose
	// oldest turns are only in the store (restore.go).
	created        int64
	unstored       int
	snapshot       store.SnapshotFunc
	agentSessionID string
	olderInStore   bool
	// turnBytes is the encoded size of the active turn's actions so far,
	// its text deltas left out, for the checkpointer's byte trigger
	// (persist/turn.go).
	turnBytes int
	// rowStored is set once the chat's row is known to be in the store;
	// until then its turn's checkpoints wait, and deferred is the growth
	// they would have reported (pipeline.go: handOverDeferredLocked).
	rowStored bool
	deferred  int

	// turnRev counts the chat's actions but its text deltas (reduce): while
	// it has not moved, the active turn's snapshot data has not either.
	turnRev uint64
}

// synced returns the chat's state with the text its lazy reducer keeps
// aside written into it; called with the channel's mutex held.
func (c *chatData) synced() *wire.ChatState {
	c.stream.Sync()
	return c.st
}

func newChannel(uri string, kind chanKind) *channel {
	ch := &channel{uri: uri, kind: kind}
	ch.mu = new(sync.Mutex)
	return ch
}

// addSub subscribes c to ch. Called with Host.mu held.
func (ch *channel) addSub(c *conn) {
	if ch.subs == nil {
		ch.subs = make(map[*conn]struct{})
	}
	ch.subs[c] = struct{}{}
}

// dropSub unsubscribes c from ch, dropping the map with the last
// subscriber. Called with Host.mu held.
func (ch *channel) dropSub(c *conn) {
	delete(ch.subs, c)
	if len(ch.subs) == 0 {
		ch.subs = nil
	}
}

// lookup returns the live channel for uri, or nil. The root answers to
// both of its spellings (canonicalChannel).
func (h *Host) lookup(uri string) *channel {
	uri = canonicalChannel(uri)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.channels[uri]
}

// canonicalChannel returns the name the host keeps a channel under: the
// root's as AHP writes it (RootURI) for `ahp-root:`, the form VS Code may
// send after its URI class dropped the empty authority; any other URI
// as it is.
func canonicalChannel(uri string) string {
	if uri != RootURI && wire.IsRootChannel(uri) {
		return RootURI
	}
	return uri
}

// state returns a pointer to the channel's state, for encoding and for
// codecs; called with ch.mu held.
func (ch *channel) state() any {
	switch ch.kind {
	case chanRoot:
		return ch.root
	case chanSession:
		return ch.session
	case chanChat:
		return ch.chat.synced()
	case chanTerminal:
		return ch.terminal
	case chanResourceWatch:
		return ch.watch
	case chanChangeset:
		return ch.changes
	}
	return nil
}

// defaultChat returns the session's default chat channel; called with the
// group's mutex held.
func (g *sessionGroup) defaultChat() *channel {
	if len(g.chats) == 0 {
		return nil
	}
	return g.chats[0]
}

func notFoundError(uri string) *Error {
	switch {
	case wire.IsChatURI(uri):
		return Errorf(CodeNotFound, "chat %s does not exist", uri)
	case strings.HasPrefix(uri, "ahp-") && !strings.HasPrefix(uri, "ahp-session:"), wire.IsTerminalURI(uri):
		// terminals, automations, canvases, …: AHP's own channel schemes
		return Errorf(CodeNotFound, "channel %s does not exist on this server", uri)
	}
	return Errorf(CodeSessionNotFound, "session %s does not exist", uri)
}
