package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// This file is what the host writes to its store (Options.Store), and when;
// how each thing is encoded, written and read back (rows, turns,
// checkpoint snapshots, a batch's write, the failure warning) is package
// persist's, which knows nothing of sessions' locks, channels or
// connections:
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
//     64 KiB (persist/turn.go). Its encoding happens on the Checkpointer's
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

// durable is the host's side of its store. It exists only when
// Options.Store is set.
type durable struct {
	st  *persist.Store // every write observed: timed, failures noted
	seq *store.SeqReserve
	cp  *store.Checkpointer

	mu sync.Mutex
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
	// clients queues the client records to write (clients.go).
	clients *persist.ClientBook
}

// openDurable starts the host's durable side over st: the serverSeq
// reserve and the checkpointer. It reads the stored serverSeq high-water
// mark, which is why it can fail.
func (h *Host) openDurable(st store.Store) error {
	d := &durable{loading: map[string]chan struct{}{}, mirrors: map[string]*sessionGroup{}}
	d.st = persist.Observe(st, persist.Options{OnWrite: h.opts.OnStoreWrite, Logger: h.log})
	seq, err := store.NewSeqReserve(context.Background(), d.st, 0)
	if err != nil {
		return fmt.Errorf("host: opening the state store: %w", err)
	}
	h.ds = d
	d.seq = seq
	d.cp = store.NewCheckpointer(d.st, store.CheckpointerOptions{OnError: func(err error) {
		// A failed write was noted by persist.Store already; what is left
		// is a turn that ended before its checkpoint was taken (nothing
		// wrong) or one that could not be encoded (a bug, logged).
		if !persist.OnlyTurnGone(err) {
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
	ctx, cancel := persist.WriteCtx()
	defer cancel()
	if err := h.ds.cp.Close(ctx); err != nil && !persist.OnlyTurnGone(err) {
		h.log.Warn().Err(err).Msg("the last checkpoints of streaming turns could not be written at shutdown")
	}
	_ = h.ds.seq.Close()
}

// rootMetaLocked brings the store warning in the root state's _meta up to
// date: shown while writes fail, removed once they succeed. Called with the
// root's lock held, before the root state is read. The map is replaced,
// never changed in place.
func (h *Host) rootMetaLocked() {
	if h.ds == nil {
		return
	}
	w := h.ds.st.Warning()
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

// --- what is written ---

// sessionRowLocked encodes a session's catalogue row. Called with the
// group's mutex held.
func (h *Host) sessionRowLocked(g *sessionGroup) (store.Session, []byte, error) {
	return persist.SessionRow(g.session.uri, g.session.session, liveSummary(g), g.archivedAt)
}

// chatRowLocked encodes a chat's row. Called with the group's mutex held.
func (h *Host) chatRowLocked(g *sessionGroup, ch *channel) (store.Chat, error) {
	return persist.ChatRow(g.session.uri, ch.uri, ch.chat.st, ch.chat.agentSessionID, ch.chat.created)
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
		switch persist.ChatDue(a) {
		case persist.DueTurnEnd:
			if ch.chat.unstored < len(ch.chat.st.Turns) {
				h.ds.cp.Forget(ch.uri) // the completed turn supersedes its checkpoint
				ch.chat.snapshot = nil
				return true, false
			}
			return false, false
		case persist.DueTurnStart:
			if t := ch.chat.st.ActiveTurn; t != nil {
				ch.chat.snapshot = h.activeTurnSnapshot(ch, t.ID)
				ch.chat.turnBytes = 0
			}
			return true, true
		case persist.DueCatalogue:
			return true, true
		case persist.DueNothing:
			return false, false
		}
		if t := ch.chat.st.ActiveTurn; t != nil && ch.chat.snapshot != nil {
			grew := size
			if !persist.AppendedWhole(a) {
				ch.chat.turnBytes += size
				grew = persist.CheckpointGrowth(size, ch.chat.turnBytes)
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
		if persist.SessionDue(a) == persist.DueCatalogue {
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

// activeTurnSnapshot returns the checkpointer's snapshot function for the
// active turn turnID of chat ch: under the session's lock it copies the turn
// (a copy of its parts, whose texts are immutable strings, so O(parts) and
// no encoding) and takes its texts from where the checkpointer needs them,
// as the pieces the lazy reducer keeps them in, without syncing them
// (persist.ReadTurnTexts); it encodes the copy after releasing it, on the
// checkpointer's goroutine, and hands the store those pieces as they are
// (persist/turn.go: what is encoded, and what the checkpointer makes of it).
func (h *Host) activeTurnSnapshot(ch *channel, turnID string) store.SnapshotFunc {
	parts := new(persist.PartCache) // the turn's tool calls, encoded once each (persist/turn.go)
	return func(from map[string]int) (store.TurnSnapshot, error) {
		ch.mu.Lock()
		t := ch.chat.st.ActiveTurn // its texts are read below, not synced
		if ch.removed || t == nil || t.ID != turnID {
			ch.mu.Unlock()
			return store.TurnSnapshot{}, persist.ErrTurnGone
		}
		rev := ch.chat.turnRev
		texts := persist.ReadTurnTexts(&ch.chat.stream, t, from)
		if data, ok := parts.Data(rev, t); ok {
			// Only texts grew since the last snapshot: its data stands.
			ch.mu.Unlock()
			return store.TurnSnapshot{Data: data, Texts: persist.CheckpointTexts(texts)}, nil
		}
		cp := persist.CopyActiveTurn(t)
		ch.mu.Unlock()
		snap, err := persist.TurnSnapshotCached(cp, parts)
		if err != nil {
			return store.TurnSnapshot{}, fmt.Errorf("encoding the active turn %s of chat %s: %w", turnID, ch.uri, err)
		}
		parts.Keep(rev, t, snap.Data)
		snap.Texts = persist.CheckpointTexts(texts)
		return snap, nil
	}
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
