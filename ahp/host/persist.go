package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file is what the host writes to its store (Options.Store), and when:
//
//   - A catalogue change (createSession, the session's lifecycle, title,
//     config, working directories, read and archived flags, a chat added or
//     removed, a turn started, and any change of the root-catalogue summary
//     beyond its activity and modification time) rewrites the session's row
//     and its chats' rows before the action is broadcast.
//   - A completed turn (turnComplete, turnCancelled, error) is appended with
//     those rows in one transaction, also before the action is broadcast.
//   - Both are written through the session's commit pipeline
//     (pipeline.go): encoded under the session's lock, written by the
//     session's drainer without it, the action (and every later one of the
//     session) held until the write is done, and broadcast in order then.
//     Writes queued meanwhile go as one batch.
//   - A streaming turn is handed to the store's Checkpointer on every
//     action that changes it; the Checkpointer writes what the turn gained
//     since its last checkpoint, off the hot path, at least every 250 ms or
//     64 KiB (checkpoint.go). Its encoding happens on the Checkpointer's
//     goroutine from a copy taken under the session's lock, so the lock is
//     never held across an encoding or I/O. A new chat's turn waits for the
//     chat's row to be written (chatData.rowStored).
//   - disposeSession of a session without turns deletes its rows before
//     sessionRemoved is announced, after the session's held actions went
//     out, off the lock; a session with turns is archived instead, a
//     catalogue change like any other (archive.go), and never deleted but
//     by `ahp-bridge sessions delete` or Options.ArchiveRetention.
//   - Each client's dialect and subscriptions go to the clients table
//     (clients.go), by a writer of their own, off every session's path.
//   - serverSeq is taken from a store.SeqReserve's blocks, covered, before
//     each broadcast (seqblocks.go).
//
// A failed write never fails the action: the host keeps serving from
// memory, logs the failure (at most once a minute while writes keep
// failing), and shows a warning in the root state's _meta under
// StateWarningMeta until a write succeeds. Turns whose write failed are
// written with the session's next write (chatData.unstored says which).

// StateWarningMeta is the root state's _meta key that carries a warning
// while writes to the state store fail: {"message": "…", "since": ISO
// time}. It is absent while writes succeed. Root _meta changes through no
// action, so a client sees it in root snapshots (initialize, subscribe,
// reconnect) taken while writes fail.
const StateWarningMeta = "ahp-bridge/stateWarning"

// storeWriteTimeout bounds one write, so that a stalled disk holds a
// session's broadcasts (and whoever waits for them) for a bounded time
// rather than for ever.
const storeWriteTimeout = 10 * time.Second

// failureLogEvery is how often a store that keeps failing is logged again.
const failureLogEvery = time.Minute

// storedFormat versions the JSON the host keeps in the store's blobs.
const storedFormat = 1

// durable is the host's side of its store. It exists only when
// Options.Store is set.
type durable struct {
	st  store.Store // wrapped: every write is observed (observedStore)
	seq *store.SeqReserve
	cp  *store.Checkpointer

	mu sync.Mutex
	// failing is set from a failed write until one succeeds; failedAt is
	// when it started, lastLog when it was last logged and since how many
	// failures.
	failing  bool
	failedAt time.Time
	lastLog  time.Time
	failures int
	// seqFailAt is when an uncovered serverSeq was last logged (Unix ns).
	// Atomic, not under mu: it is set under Host.mu, which may be held
	// with the root's lock, and mu is taken before the root's.
	seqFailAt atomic.Int64
	// chatIndex maps every stored chat to its session, for a client that
	// names a chat of a session that is not in memory. nil until first
	// needed (see restore.go).
	chatIndex map[string]string
	// loading holds the sessions being brought back from the store, so
	// that concurrent requests wait for one load (restore.go).
	loading map[string]chan struct{}
	// mirrors are the sessions held by other bridges loaded read-only
	// (mirror.go), refreshed and unloaded by the poller (others.go).
	mirrors map[string]*sessionGroup
	// warning is what the root's _meta should show, nil while writes
	// succeed (rootMetaLocked).
	warning atomic.Pointer[stateWarning]
	// clients queues the client records to write (clients.go).
	clients *clientBook
}

// openDurable starts the host's durable side over st: the serverSeq
// reserve and the checkpointer. It reads the stored serverSeq high-water
// mark, which is why it can fail.
func (h *Host) openDurable(st store.Store) error {
	d := &durable{loading: map[string]chan struct{}{}, mirrors: map[string]*sessionGroup{}}
	d.st = &observedStore{Store: st, h: h}
	// Set before the reserve's first write starts, which notes its outcome.
	h.ds = d
	seq, err := store.NewSeqReserve(context.Background(), d.st, 0)
	if err != nil {
		h.ds = nil
		return fmt.Errorf("host: opening the state store: %w", err)
	}
	d.seq = seq
	d.cp = store.NewCheckpointer(d.st, store.CheckpointerOptions{OnError: func(err error) {
		// A failed write was noted by observedStore already; what is left
		// is a turn that ended before its checkpoint was taken (nothing
		// wrong) or one that could not be encoded (a bug, logged).
		if !onlyTurnGone(err) {
			h.log.Debug().Err(err).Msg("a checkpoint of a streaming turn was not written")
		}
	}})
	h.seq = seq.Start()
	h.startClientBook()
	return nil
}

// closeDurable writes what the checkpointer holds and stops it and the
// serverSeq reserve. The store itself is the caller's to close.
func (h *Host) closeDurable() {
	if h.ds == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeWriteTimeout)
	defer cancel()
	if err := h.ds.cp.Close(ctx); err != nil && !onlyTurnGone(err) {
		h.log.Warn().Err(err).Msg("the last checkpoints of streaming turns could not be written at shutdown")
	}
	_ = h.ds.seq.Close()
}

// observedStore is the store as the host uses it: every write is timed for
// Options.OnStoreWrite and its outcome noted, so that the failure warning
// and the metrics cover the checkpointer's and the serverSeq reserve's
// writes as well as the host's own.
type observedStore struct {
	store.Store
	h *Host
}

func (o *observedStore) done(start time.Time, err error) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrHeld) {
		// The caller's business (a row not there, a session another
		// bridge drives), not the file failing.
		return err
	}
	if f := o.h.opts.OnStoreWrite; f != nil {
		f(time.Since(start), err)
	}
	if err == nil {
		o.h.storeRecovered()
	} else if !errors.Is(err, store.ErrClosed) && !errors.Is(err, context.Canceled) {
		o.h.storeFailed(err, "")
	}
	return err
}

func (o *observedStore) PutSession(ctx context.Context, s store.Session, chats ...store.Chat) error {
	start := time.Now()
	return o.done(start, o.Store.PutSession(ctx, s, chats...))
}

func (o *observedStore) PutChat(ctx context.Context, c store.Chat) error {
	start := time.Now()
	return o.done(start, o.Store.PutChat(ctx, c))
}

func (o *observedStore) AppendTurn(ctx context.Context, c store.TurnCommit) error {
	start := time.Now()
	return o.done(start, o.Store.AppendTurn(ctx, c))
}

func (o *observedStore) DeleteSession(ctx context.Context, uri string) error {
	start := time.Now()
	return o.done(start, o.Store.DeleteSession(ctx, uri))
}

func (o *observedStore) PutCheckpoints(ctx context.Context, cps []store.Checkpoint) error {
	start := time.Now()
	return o.done(start, o.Store.PutCheckpoints(ctx, cps))
}

func (o *observedStore) PutClient(ctx context.Context, c store.Client) error {
	start := time.Now()
	return o.done(start, o.Store.PutClient(ctx, c))
}

func (o *observedStore) RaiseSeqHighWater(ctx context.Context, v int64) error {
	start := time.Now()
	return o.done(start, o.Store.RaiseSeqHighWater(ctx, v))
}

// storeFailed notes a failed write: the first one of a run is logged at
// once and raises the root warning; later ones are logged once a minute.
// what, when not empty, says what was being written (the store's own
// errors say which file). It takes no host lock (writes happen on a
// session's drainer, or under Host.mu when SeqReserve.Cover waits for one),
// so the warning reaches the root state when the root is next read
// (rootMetaLocked).
func (h *Host) storeFailed(err error, what string) {
	d := h.ds
	now := time.Now()
	d.mu.Lock()
	d.failures++
	first := !d.failing
	if first {
		d.failing, d.failedAt = true, now
	}
	logNow := first || now.Sub(d.lastLog) >= failureLogEvery
	n := d.failures
	if logNow {
		d.lastLog, d.failures = now, 0
	}
	if first {
		// Under d.mu, so that a success racing with this failure cannot
		// clear the warning before it is raised.
		d.warning.Store(&stateWarning{
			Message: "ahp-bridge cannot write its state file: " + err.Error() + "; sessions are served from memory, and what changes now may be lost if the bridge restarts",
			Since:   reducer.FormatTime(now.UnixMilli()),
		})
	}
	d.mu.Unlock()
	if logNow {
		ev := h.log.Error().Err(err).Int("failedWrites", n)
		if what != "" {
			ev = ev.Str("writing", what)
		}
		ev.Msg("the state store cannot be written; sessions are served from memory and what changes now may be lost at a restart (logged again in a minute while this lasts)")
	}
}

// storeRecovered notes a successful write: a run of failures ends.
func (h *Host) storeRecovered() {
	d := h.ds
	d.mu.Lock()
	if !d.failing {
		d.mu.Unlock()
		return
	}
	d.failing = false
	n, since := d.failures, d.failedAt
	d.failures = 0
	d.warning.Store(nil)
	d.mu.Unlock()
	h.log.Info().Dur("failedFor", time.Since(since)).Int("failedWritesSinceLastLog", n).Msg("the state store is written again")
}

// stateWarning is the value of the root's StateWarningMeta.
type stateWarning struct {
	Message string `json:"message"`
	Since   string `json:"since"`
}

// rootMetaLocked brings the store warning in the root state's _meta up to
// date: shown while writes fail, removed once they succeed. Called with the
// root's lock held, before the root state is read. The map is replaced,
// never changed in place.
func (h *Host) rootMetaLocked() {
	if h.ds == nil {
		return
	}
	w := h.ds.warning.Load()
	cur, shown := h.root.root.Meta[StateWarningMeta].(map[string]any)
	if w == nil && !shown || w != nil && shown && cur["message"] == w.Message && cur["since"] == w.Since {
		return
	}
	meta := make(map[string]any, len(h.root.root.Meta)+1)
	for k, v := range h.root.root.Meta {
		meta[k] = v
	}
	if w == nil {
		delete(meta, StateWarningMeta)
	} else {
		meta[StateWarningMeta] = map[string]any{"message": w.Message, "since": w.Since}
	}
	if len(meta) == 0 {
		meta = nil
	}
	h.root.root.Meta = meta
}

// storeCtx is the context of one write.
func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeWriteTimeout)
}

// --- what is written ---

// storedSession is the JSON the host keeps in a session row's Summary:
// the root-catalogue entry listSessions serves without loading the
// session, and the session's state (without its config, which has a
// column of its own, and without what lives only while the process does:
// active clients, inputs needed).
type storedSession struct {
	V       int                 `json:"v"`
	Summary wire.SessionSummary `json:"summary"`
	State   *wire.SessionState  `json:"state"`
	// ArchivedAt is when the session was last archived (Unix ms), for
	// Options.ArchiveRetention; absent when it is not archived or was
	// archived by a bridge that did not record it.
	ArchivedAt int64 `json:"archivedAt,omitempty"`
}

// storedChat is the JSON the host keeps in a chat row's Summary: the
// chat's state without its turns (rows of their own) and without what
// lives only while the process does. Its active turn, when it has one, is
// kept without its response parts: the turn's start (the user's message)
// is durable from the moment it is announced; its content is in the
// chat's checkpoint.
type storedChat struct {
	V     int             `json:"v"`
	State *wire.ChatState `json:"state"`
}

// sessionRowLocked encodes a session's catalogue row. Called with the
// group's mutex held.
func (h *Host) sessionRowLocked(g *sessionGroup) (store.Session, []byte, error) {
	src := g.session.session
	st := *src
	st.Config, st.ActiveClients, st.InputNeeded = nil, nil, nil
	sum := liveSummary(g)
	blob, err := json.Marshal(storedSession{V: storedFormat, Summary: sum, State: &st, ArchivedAt: g.archivedAt})
	if err != nil {
		return store.Session{}, nil, fmt.Errorf("encoding session %s for the state store: %w", g.session.uri, err)
	}
	var cfg json.RawMessage
	if src.Config != nil {
		if cfg, err = json.Marshal(src.Config); err != nil {
			return store.Session{}, nil, fmt.Errorf("encoding the config of session %s for the state store: %w", g.session.uri, err)
		}
	}
	row := store.Session{
		URI:         g.session.uri,
		Provider:    src.Provider,
		Title:       src.Title,
		WorkingDirs: src.WorkingDirectories,
		Config:      cfg,
		Summary:     blob,
		Created:     isoTime(sum.CreatedAt),
		Modified:    isoTime(sum.ModifiedAt),
	}
	return row, blob, nil
}

// chatRowLocked encodes a chat's row. Called with the group's mutex held.
func (h *Host) chatRowLocked(g *sessionGroup, ch *channel) (store.Chat, error) {
	st := *ch.chat.st
	st.Turns, st.TurnsNextCursor, st.BackgroundWork, st.SteeringMessage, st.QueuedMessages = nil, nil, nil, nil, nil
	if t := st.ActiveTurn; t != nil {
		st.ActiveTurn = &wire.ActiveTurn{ID: t.ID, StartedAt: t.StartedAt, Message: t.Message, ResponseParts: []wire.ResponsePart{}}
	}
	blob, err := json.Marshal(storedChat{V: storedFormat, State: &st})
	if err != nil {
		return store.Chat{}, fmt.Errorf("encoding chat %s for the state store: %w", ch.uri, err)
	}
	return store.Chat{
		URI:          ch.uri,
		SessionURI:   g.session.uri,
		ACPSessionID: ch.chat.agentSessionID,
		Summary:      blob,
		Created:      time.UnixMilli(ch.chat.created),
	}, nil
}

// persistLocked notes what an action just reduced into ch makes durable
// (see the top of this file): write is set when a write must precede the
// action's broadcast, catalogue when that write rewrites the session's and
// its chats' rows (a completed turn is found by chatData.unstored). The
// streaming turn's checkpoint is handed to the checkpointer here. size is
// the action's encoded length, the measure of a streaming turn's growth.
// Called with ch.mu held, from applyLocked; it does no I/O.
func (h *Host) persistLocked(ch *channel, a wire.StateAction, size int) (write, catalogue bool) {
	switch ch.kind {
	case chanChat:
		switch a.Value.(type) {
		case *wire.ChatTurnCompleteAction, *wire.ChatTurnCancelledAction, *wire.ChatErrorAction:
			if ch.chat.unstored < len(ch.chat.st.Turns) {
				h.ds.cp.Forget(ch.uri) // the completed turn supersedes its checkpoint
				ch.chat.snapshot = nil
				return true, false
			}
			return false, false
		case *wire.ChatTurnStartedAction:
			if t := ch.chat.st.ActiveTurn; t != nil {
				ch.chat.snapshot = h.activeTurnSnapshot(ch, t.ID)
				ch.chat.turnBytes = 0
			}
			return true, true
		case *wire.ChatIsReadChangedAction, *wire.ChatIsArchivedChangedAction,
			*wire.ChatWorkingDirectorySetAction, *wire.ChatWorkingDirectoryRemovedAction:
			return true, true
		case *wire.ChatDraftChangedAction, *wire.ChatPendingMessageSetAction, *wire.ChatPendingMessageRemovedAction,
			*wire.ChatQueuedMessagesReorderedAction, *wire.ChatActivityChangedAction:
			return false, false // not part of the turn, and not a catalogue change
		}
		if t := ch.chat.st.ActiveTurn; t != nil && ch.chat.snapshot != nil {
			grew := size
			switch a.Value.(type) {
			case *wire.ChatDeltaAction, *wire.ChatReasoningAction:
				// Appended to the store, never rewritten: counts whole.
			default:
				ch.chat.turnBytes += size
				grew = checkpointGrowth(size, ch.chat.turnBytes)
			}
			if !ch.chat.rowStored {
				// The store drops a checkpoint of a chat it does not hold
				// (and the checkpointer would never write that text
				// again): handed over once the chat's row is written.
				ch.chat.deferred += grew
				return false, false
			}
			h.ds.cp.PutFunc(ch.uri, t.ID, grew, ch.chat.snapshot)
		}
	case chanSession:
		switch a.Value.(type) {
		case *wire.SessionReadyAction, *wire.SessionCreationFailedAction, *wire.SessionTitleChangedAction,
			*wire.SessionConfigChangedAction, *wire.SessionWorkingDirectorySetAction,
			*wire.SessionWorkingDirectoryRemovedAction, *wire.SessionWorkingDirectoryReplacedAction,
			*wire.SessionChatAddedAction, *wire.SessionChatRemovedAction, *wire.SessionIsReadChangedAction,
			*wire.SessionIsArchivedChangedAction, *wire.SessionDefaultChatChangedAction, *wire.SessionChatsReorderedAction:
			return true, true
		}
	}
	return false, false
}

// summaryWriteDueLocked reports whether the session's rows must be written
// before root/sessionSummaryChanged announces changes: its root-catalogue
// entry changed in more than its activity and modification time, and the
// change is not stored yet. Called with the group's mutex held, from
// refreshSummaryLocked.
func (h *Host) summaryWriteDueLocked(g *sessionGroup, changes map[string]json.RawMessage) bool {
	if h.ds == nil || g.mirror { // a mirror's rows are its holder's to write
		return false
	}
	material := false
	for k := range changes {
		if k != "activity" && k != "modifiedAt" {
			material = true
			break
		}
	}
	if !material {
		return false
	}
	sum := liveSummary(g)
	b, err := json.Marshal(&sum)
	return err != nil || string(b) != string(g.storedSummary) // else the action's own write stored it already
}

// errTurnGone is what a checkpoint's snapshot says when its turn ended (or
// its chat went) before the checkpointer got to it: nothing to write, and
// nothing wrong.
var errTurnGone = errors.New("the turn is no longer active")

// onlyTurnGone reports whether err (possibly a join) holds only
// errTurnGone.
func onlyTurnGone(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if e != nil && !onlyTurnGone(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, errTurnGone)
}

// activeTurnSnapshot returns the checkpointer's snapshot function for the
// active turn turnID of chat ch: under the session's lock it copies the turn
// (a copy of its parts, whose texts are immutable strings, so O(parts) and
// no encoding) and takes its texts from where the checkpointer needs them,
// as the pieces the lazy reducer keeps them in, without syncing them
// (readTurnTexts); it encodes the copy after releasing it, on the
// checkpointer's goroutine, and hands the store those pieces as they are
// (checkpoint.go: what is encoded, and what the checkpointer makes of it).
func (h *Host) activeTurnSnapshot(ch *channel, turnID string) store.SnapshotFunc {
	parts := new(partCache) // the turn's tool calls, encoded once each (checkpoint.go)
	return func(from map[string]int) (store.TurnSnapshot, error) {
		ch.mu.Lock()
		t := ch.chat.st.ActiveTurn // its texts are read below, not synced
		if ch.removed || t == nil || t.ID != turnID {
			ch.mu.Unlock()
			return store.TurnSnapshot{}, errTurnGone
		}
		rev := ch.chat.turnRev
		texts := readTurnTexts(&ch.chat.stream, t, from)
		if data, ok := parts.data(rev, t); ok {
			// Only texts grew since the last snapshot: its data stands.
			ch.mu.Unlock()
			return store.TurnSnapshot{Data: data, Texts: checkpointTexts(texts)}, nil
		}
		cp := copyActiveTurn(t)
		ch.mu.Unlock()
		snap, err := turnSnapshotCached(cp, parts)
		if err != nil {
			return store.TurnSnapshot{}, fmt.Errorf("encoding the active turn %s of chat %s: %w", turnID, ch.uri, err)
		}
		parts.keep(rev, t, snap.Data)
		snap.Texts = checkpointTexts(texts)
		return snap, nil
	}
}

// copyActiveTurn copies what the reducer changes in place in an active
// turn: the turn, its list of parts, and each part's own struct (a delta
// replaces a text part's string; a tool call's or an input request's
// update replaces their fields). Everything below that the reducer only
// ever replaces, never changes (strings, tool call states, answer maps),
// is shared.
func copyActiveTurn(t *wire.ActiveTurn) *wire.ActiveTurn {
	cp := *t
	cp.ResponseParts = make([]wire.ResponsePart, len(t.ResponseParts))
	for i, p := range t.ResponseParts {
		switch v := p.Value.(type) {
		case *wire.MarkdownResponsePart:
			c := *v
			cp.ResponseParts[i] = wire.ResponsePart{Value: &c}
		case *wire.ReasoningResponsePart:
			c := *v
			cp.ResponseParts[i] = wire.ResponsePart{Value: &c}
		case *wire.ToolCallResponsePart:
			c := *v
			cp.ResponseParts[i] = wire.ResponsePart{Value: &c}
		case *wire.InputRequestResponsePart:
			c := *v
			cp.ResponseParts[i] = wire.ResponsePart{Value: &c}
		case *wire.ResourceResponsePart:
			c := *v
			cp.ResponseParts[i] = wire.ResponsePart{Value: &c}
		case *wire.SystemNotificationResponsePart:
			c := *v
			cp.ResponseParts[i] = wire.ResponsePart{Value: &c}
		case *wire.ErrorResponsePart:
			c := *v
			cp.ResponseParts[i] = wire.ResponsePart{Value: &c}
		default:
			cp.ResponseParts[i] = p // raw JSON or a value: never changed in place
		}
	}
	return &cp
}

// liveSummary is the session's root-catalogue entry as its chats' live
// states make it: what it is once the action being stored has been
// followed up (the session's chat catalogue is updated after it), so that
// the write before the action and the summary announced after it agree.
// Called with the group's mutex held.
func liveSummary(g *sessionGroup) wire.SessionSummary {
	chats := make([]wire.ChatSummary, len(g.chats))
	for i, c := range g.chats {
		chats[i] = chatSummaryOf(c.chat.st)
	}
	return summaryWith(g, chats)
}

// summaryJSON extracts the summary's encoding from a session row's blob,
// for summaryWriteDueLocked's comparison.
func summaryJSON(blob []byte) []byte {
	var s struct {
		Summary json.RawMessage `json:"summary"`
	}
	if json.Unmarshal(blob, &s) != nil {
		return nil
	}
	return s.Summary
}

// turnEnd is when a completed turn ended: its start plus its duration, else
// now.
func turnEnd(t *wire.Turn, now int64) time.Time {
	if t.StartedAt != nil && t.Duration != nil {
		if start, ok := reducer.ParseTime(*t.StartedAt); ok {
			return time.UnixMilli(start + *t.Duration)
		}
	}
	return time.UnixMilli(now)
}

// isoTime parses an AHP timestamp; the zero time when it does not parse.
func isoTime(s string) time.Time {
	ms, ok := reducer.ParseTime(s)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
