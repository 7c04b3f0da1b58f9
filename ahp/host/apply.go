package host

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Dispatch submits a server-originated action on channel through the same
// sequencer as client actions and returns its serverSeq. With a store, an
// action that must be durable before it is broadcast (or one that follows
// such an action of the same session) is held until that write is done and
// broadcast in order then; Dispatch does not wait for it and returns 0
// (its serverSeq is assigned at the broadcast), so a slow disk never
// blocks the caller. The envelope carries no origin. It fails for an unknown channel or an action that
// does not belong to the channel's kind (root/…, session/…, chat/…,
// terminal/…).
//
// Dispatch takes ownership of the action: the reducer may keep parts of it
// in the channel state, so the caller must not modify it afterwards.
func (h *Host) Dispatch(channel string, a wire.StateAction) (int64, error) {
	a = wire.NewStateAction(a.Value) // variant values become pointers
	ch := h.lookup(channel)
	if ch == nil {
		return 0, errUnknownChannel(channel)
	}
	if err := checkScope(ch, a); err != nil {
		return 0, err
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return 0, errUnknownChannel(channel)
	}
	return h.dispatchLocked(ch, a)
}

// dispatchLocked applies a server action and its follow-ups. A panic on
// the way (a bug) fails this action instead of taking the server down.
func (h *Host) dispatchLocked(ch *channel, a wire.StateAction) (seq int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			h.stats.panics.Add(1)
			h.log.Error().Interface("panic", r).Str("channel", ch.uri).Str("action", a.Type()).Msg("internal error while applying a server action")
			err = fmt.Errorf("host: internal error applying %s to %s: %v", a.Type(), ch.uri, r)
		}
	}()
	seq, err = h.applyLocked(ch, a, nil, nil)
	if err != nil {
		return 0, err
	}
	h.settleLocked(ch)
	return seq, nil
}

// checkScope refuses actions whose type prefix does not match the channel.
func checkScope(ch *channel, a wire.StateAction) error {
	t := a.Type()
	if t == "" {
		return fmt.Errorf("host: the action has no known type (%T)", a.Value)
	}
	if !strings.HasPrefix(t, ch.kind.actionPrefix()) {
		return fmt.Errorf("host: action %s cannot be applied to %s channel %s", t, ch.kind, ch.uri)
	}
	return nil
}

// applyLocked reduces an (already validated) action into ch's state,
// sequences and broadcasts it (or holds it behind its session's store
// write, and returns 0: pipeline.go), then runs the follow-ups the action makes
// due elsewhere (the chat catalogue, inputNeeded, the root catalogue).
// Called with ch.mu held.
func (h *Host) applyLocked(ch *channel, a wire.StateAction, origin *wire.ActionOrigin, sender *conn) (int64, error) {
	actionJSON, err := encodeAction(a)
	if err != nil {
		return 0, fmt.Errorf("host: encoding action %s for %s: %w", a.Type(), ch.uri, err)
	}
	if err := h.reduce(ch, a); err != nil {
		return 0, fmt.Errorf("host: applying %s to %s: %w", a.Type(), ch.uri, err)
	}
	var write, catalogue bool
	if h.ds != nil && (ch.group == nil || !ch.group.mirror) { // a mirror's holder writes it (mirror.go)
		write, catalogue = h.persistLocked(ch, a, len(actionJSON))
	}
	// Durable before it is broadcast: held until its write is done
	// (pipeline.go).
	seq := h.sequenceLocked(ch, actionJSON, origin, sender, write, catalogue)
	h.followUp(ch, a)
	return seq, nil
}

// reduce applies a to ch's state with the package reducer. Called with
// ch.mu held. A reducer panic (a bug, or an action shape it cannot handle)
// is turned into an error so a bad action never takes the server down.
func (h *Host) reduce(ch *channel, a wire.StateAction) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the reducer failed: %v", r)
		}
	}()
	clock := reducer.Clock(h.opts.Clock)
	switch ch.kind {
	case chanRoot:
		reducer.Root(ch.root, a, clock)
	case chanSession:
		reducer.Session(ch.session, a, clock)
	case chanChat:
		collectBeforeJoin(&ch.chat.stream, a)
		ch.chat.stream.Chat(ch.chat.st, a, clock)
		switch a.Value.(type) {
		case *wire.ChatDeltaAction, *wire.ChatReasoningAction: // only a text grew
		default:
			ch.chat.turnRev++
		}
	case chanTerminal:
		reducer.Terminal(ch.terminal, a, clock)
	case chanResourceWatch:
		reducer.ResourceWatch(ch.watch, a, clock)
	case chanChangeset:
		reducer.Changeset(ch.changes, a, clock)
	default:
		return fmt.Errorf("channel %s has no reducer", ch.uri)
	}
	return nil
}

// followUp keeps what is derived from a channel's state in step after an
// action: a chat's entry in its session's catalogue and the session's
// inputNeeded list, the session's entry in the root catalogue, the root
// terminal list, createSession's progress. Text streaming (the hot path)
// changes none of them. Called with ch.mu held.
func (h *Host) followUp(ch *channel, a wire.StateAction) {
	switch ch.kind {
	case chanChat:
		switch a.Value.(type) {
		case *wire.ChatDeltaAction, *wire.ChatReasoningAction, *wire.ChatToolCallDeltaAction:
			return
		}
		h.mirrorChatLocked(ch)
		h.refreshInputsLocked(ch)
		h.markUnreadLocked(ch, a)
		h.refreshSummaryLocked(ch.group)
	case chanSession:
		noteArchivedLocked(ch.group, h.opts.Clock()) // archive.go
		h.refreshSummaryLocked(ch.group)
		switch a.Value.(type) {
		case *wire.SessionReadyAction:
			h.finishProgressLocked(ch.group)
			// Messages queued while the session was being created start now.
			for _, c := range ch.group.chats {
				h.settleLocked(c)
			}
		case *wire.SessionCreationFailedAction:
			h.finishProgressLocked(ch.group)
		}
	case chanTerminal:
		switch a.Value.(type) {
		case *wire.TerminalTitleChangedAction, *wire.TerminalClaimedAction, *wire.TerminalExitedAction:
			h.refreshTerminalInfo(ch)
		}
	}
}

// settleLocked runs the server's follow-ups once a chat action has been
// applied: a queued message starts the next turn when the chat is idle
// (spec: Pending Message Consumption). Called with ch.mu held.
func (h *Host) settleLocked(ch *channel) {
	if ch.kind != chanChat || ch.removed {
		return
	}
	st := ch.chat.st
	if st.ActiveTurn != nil || len(st.QueuedMessages) == 0 {
		return
	}
	if sess := ch.group.session; sess == nil || sess.session.Lifecycle != wire.SessionLifecycleReady || ch.group.detached || ch.group.mirror {
		return
	}
	q := st.QueuedMessages[0]
	removed := wire.Action(&wire.ChatPendingMessageRemovedAction{Kind: wire.PendingMessageKindQueued, ID: q.ID})
	if _, err := h.applyLocked(ch, removed, nil, nil); err != nil {
		h.log.Error().Err(err).Str("channel", ch.uri).Msg("failed to consume a queued message")
		return
	}
	started := wire.Action(&wire.ChatTurnStartedAction{
		TurnID:          h.opts.NewID(),
		StartedAt:       reducer.FormatTime(h.opts.Clock()),
		Message:         q.Message,
		QueuedMessageID: wire.Ptr(q.ID),
	})
	if _, err := h.applyLocked(ch, started, nil, nil); err != nil {
		h.log.Error().Err(err).Str("channel", ch.uri).Msg("failed to start a turn from a queued message")
		return
	}
	h.handoff(ch, started, wire.ActionOrigin{})
}

// workerFor returns ch's hand-off worker, starting it on first use.
// Called with ch.mu held.
func (h *Host) workerFor(ch *channel) *worker {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch.worker != nil || h.closed {
		return ch.worker
	}
	w := newWorker(ch.uri)
	ch.worker = w
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		w.run(h.ctx, h.deliver)
	}()
	return w
}

// handoff queues an accepted client action for Handler.ClientAction.
// Called with ch.mu held, so jobs are queued in serverSeq order.
func (h *Host) handoff(ch *channel, a wire.StateAction, origin wire.ActionOrigin) {
	if h.handler == nil {
		return
	}
	if w := h.workerFor(ch); w != nil {
		w.push(handoffJob{action: a, origin: origin, attach: h.reattachLocked(ch.group)})
	}
}

func (h *Host) deliver(ctx context.Context, channel string, j handoffJob) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error().Interface("panic", r).Str("channel", channel).Str("action", j.action.Type()).
				Msg("the handler panicked handling a client action")
		}
	}()
	j.attach.run(h)
	h.handler.ClientAction(ctx, channel, j.action, j.origin)
}

// removeChannel marks ch removed, forgets it and its subscriptions, and
// stops its worker. Called with ch.mu held.
func (h *Host) removeChannelLocked(ch *channel) {
	ch.removed = true
	h.mu.Lock()
	delete(h.channels, ch.uri)
	for c := range ch.subs {
		delete(c.subs, ch.uri)
	}
	ch.subs = nil
	w := ch.worker
	ch.worker = nil
	h.mu.Unlock()
	if w != nil {
		w.close()
	}
}

// joinCollectAbove is the lazy text a turn's end joins beyond which the
// garbage is collected first.
const joinCollectAbove = 16 << 20

// collectBeforeJoin runs a garbage collection before a turn's end joins a
// long lazy text into strings. The join allocates the whole text while its
// pieces are still live; with the garbage the stream left since the last
// collection on top, the heap, and the process's peak RSS, would reach
// three times the text (docs/performance.md, "The long response with the
// state file"). Collected first, the peak is the pieces and the joined
// text. It costs one collection per turn whose text is over 16 MiB.
func collectBeforeJoin(st *reducer.Streaming, a wire.StateAction) {
	switch a.Value.(type) {
	case *wire.ChatTurnCompleteAction, *wire.ChatTurnCancelledAction, *wire.ChatErrorAction:
		if st.Pending() > joinCollectAbove {
			runtime.GC()
		}
	}
}
