package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

type chanKind int

const (
	chanRoot chanKind = iota
	chanSession
	chanTerminal
)

func (k chanKind) String() string {
	switch k {
	case chanRoot:
		return "root"
	case chanSession:
		return "session"
	case chanTerminal:
		return "terminal"
	}
	return "unknown"
}

// channel is one state-bearing channel. Its mu is the channel's critical
// section {validate → reduce → sequence → broadcast}; the host's sequencer
// lock (Host.mu) is only ever taken inside it.
type channel struct {
	uri  string
	kind chanKind

	mu       sync.Mutex
	root     *wire.RootState
	session  *wire.SessionState
	terminal *wire.TerminalState
	removed  bool

	// stream reduces the session's text deltas in amortised O(1)
	// (docs/performance.md); it is only used under mu.
	stream reducer.Streaming

	// deferred holds client model/agent changes received while a turn was
	// active; they are applied when the turn ends (spec: Server Validation
	// of Client Actions).
	deferred []deferredAction
	// lastSummaryNote is when a modifiedAt-only summary change was last
	// announced; such changes are coalesced to one per second.
	lastSummaryNote int64

	// Guarded by Host.mu.
	subs   map[*conn]struct{}
	worker *worker
}

type deferredAction struct {
	action wire.StateAction
	raw    []byte
	origin wire.ActionOrigin
	sender *conn
}

func newChannel(uri string, kind chanKind) *channel {
	return &channel{uri: uri, kind: kind, subs: make(map[*conn]struct{})}
}

// lookup returns the live channel for uri, or nil.
func (h *Host) lookup(uri string) *channel {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.channels[uri]
}

// stateJSON encodes the channel's state; called with ch.mu held.
func (ch *channel) stateJSON() ([]byte, error) {
	switch ch.kind {
	case chanRoot:
		return json.Marshal(ch.root)
	case chanSession:
		return json.Marshal(ch.session)
	case chanTerminal:
		return json.Marshal(ch.terminal)
	}
	return nil, fmt.Errorf("channel %s has no state", ch.uri)
}

// snapshotOut is the wire Snapshot with the state already encoded.
type snapshotOut struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

// snapshotAndSubscribe takes a snapshot of ch and subscribes c to it in
// one step with respect to the sequencer: every action on ch sequenced
// after the snapshot has serverSeq > FromSeq and reaches c.
func (h *Host) snapshotAndSubscribe(c *conn, ch *channel) (*snapshotOut, *Error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.removed {
		return nil, notFoundError(ch.uri)
	}
	st, err := ch.stateJSON()
	if err != nil {
		return nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("encoding the state of %s: %v", ch.uri, err)}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, already := c.subs[ch.uri]; !already && len(c.subs) >= h.opts.MaxSubscriptionsPerConn {
		return nil, Errorf(CodeInvalidRequest, "subscription limit reached: a connection may hold at most %d subscriptions", h.opts.MaxSubscriptionsPerConn)
	}
	ch.subs[c] = struct{}{}
	c.subs[ch.uri] = ch
	return &snapshotOut{Resource: ch.uri, State: st, FromSeq: h.seq}, nil
}

func notFoundError(uri string) *Error {
	if strings.HasPrefix(uri, "ahp-session:") {
		return Errorf(CodeSessionNotFound, "session %s does not exist", uri)
	}
	return Errorf(CodeNotFound, "channel %s does not exist on this server", uri)
}

// envelopeOut is how an ActionEnvelope is encoded: origin is omitted for
// server-originated actions.
type envelopeOut struct {
	Channel         string             `json:"channel"`
	Action          json.RawMessage    `json:"action"`
	ServerSeq       int64              `json:"serverSeq"`
	Origin          *wire.ActionOrigin `json:"origin,omitempty"`
	RejectionReason string             `json:"rejectionReason,omitempty"`
	// trusted: Action was produced by encodeAction (json.Marshal or the
	// equivalent fast path), so it need not be validated again.
	trusted bool
}

// actionFramePrefix precedes the envelope in an `action` notification.
const actionFramePrefix = `{"jsonrpc":"2.0","method":"action","params":`

// encodeEnvelope builds the `action` notification frame for an envelope
// and returns it along with the envelope bytes inside it. The action is
// spliced in verbatim (it was produced by json.Marshal or validated by the
// decoder), which keeps the one encoding per envelope cheap.
func (h *Host) encodeEnvelope(e *envelopeOut) (frame, env []byte, err error) {
	if !e.trusted && !json.Valid(e.Action) {
		return nil, nil, fmt.Errorf("encoding the action envelope for %s: the action is not valid JSON", e.Channel)
	}
	ch := appendJSONString(nil, e.Channel)
	var origin, reason []byte
	if e.Origin != nil {
		if origin, err = json.Marshal(e.Origin); err != nil {
			return nil, nil, fmt.Errorf("encoding the action envelope for %s: %w", e.Channel, err)
		}
	}
	if e.RejectionReason != "" {
		if reason, err = json.Marshal(e.RejectionReason); err != nil {
			return nil, nil, fmt.Errorf("encoding the action envelope for %s: %w", e.Channel, err)
		}
	}
	h.stats.encoded.Add(1)
	frame = make([]byte, 0, len(actionFramePrefix)+len(ch)+len(e.Action)+len(origin)+len(reason)+80)
	frame = append(frame, actionFramePrefix...)
	start := len(frame)
	frame = append(frame, `{"channel":`...)
	frame = append(frame, ch...)
	frame = append(frame, `,"action":`...)
	frame = append(frame, bytes.TrimSpace(e.Action)...)
	frame = append(frame, `,"serverSeq":`...)
	frame = strconv.AppendInt(frame, e.ServerSeq, 10)
	if origin != nil {
		frame = append(frame, `,"origin":`...)
		frame = append(frame, origin...)
	}
	if reason != nil {
		frame = append(frame, `,"rejectionReason":`...)
		frame = append(frame, reason...)
	}
	frame = append(frame, '}')
	end := len(frame)
	frame = append(frame, '}')
	return frame, frame[start:end], nil
}

// commit sequences an already validated and reduced action on ch and
// broadcasts it to ch's subscribers (and to sender, whose own echo it is).
// Called with ch.mu held. The frame is encoded once for all receivers.
func (h *Host) commit(ch *channel, actionJSON []byte, origin *wire.ActionOrigin, sender *conn, extra func(seq int64)) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	seq := h.seq
	frame, env, err := h.encodeEnvelope(&envelopeOut{Channel: ch.uri, Action: actionJSON, ServerSeq: seq, Origin: origin, trusted: true})
	if err != nil {
		// actionJSON was produced by json.Marshal, so this cannot fail;
		// keep the sequence gap-free anyway by recording what we have.
		h.log.Error().Err(err).Str("channel", ch.uri).Msg("failed to encode an action envelope")
		return seq
	}
	h.ring.push(ringEntry{seq: seq, channel: ch.uri, env: env})
	var cache map[codec][]byte
	for c := range ch.subs {
		if c.codec != nil && c.codec != baseline && cache == nil {
			cache = map[codec][]byte{}
		}
		if f, ok := h.translateShared(c, frame, cache, true); ok {
			h.queueFrame(c, f)
		}
	}
	if sender != nil {
		if _, subscribed := ch.subs[sender]; !subscribed {
			h.queue(sender, frame)
		}
	}
	if extra != nil {
		extra(seq)
	}
	return seq
}

// queue hands a baseline frame to a connection's outbound queue, through
// the connection's codec.
func (h *Host) queue(c *conn, frame []byte) {
	if frame = forConn(c, frame); frame != nil {
		h.queueFrame(c, frame)
	}
}

// queueFrame queues a frame already in the connection's encoding.
func (h *Host) queueFrame(c *conn, frame []byte) {
	h.stats.queued.Add(1)
	c.send(frame)
}

// reject echoes a refused client action to its sender only, with the
// reason. The envelope carries the current serverSeq without consuming a
// new one: a rejection changes no state and is never replayed.
func (h *Host) reject(c *conn, channel string, actionJSON []byte, origin *wire.ActionOrigin, reason string) {
	if len(bytes.TrimSpace(actionJSON)) == 0 {
		actionJSON = []byte("null")
	}
	c.log.Debug().Str("channel", channel).Str("reason", reason).Msg("rejected a client action")
	// Queue under the sequencer lock so the echo's serverSeq is in order
	// with the envelopes around it on this connection.
	h.mu.Lock()
	defer h.mu.Unlock()
	seq := h.seq
	frame, _, err := h.encodeEnvelope(&envelopeOut{Channel: channel, Action: actionJSON, ServerSeq: seq, Origin: origin, RejectionReason: reason})
	if err != nil {
		// The raw action was not valid JSON after all; echo null instead.
		frame, _, _ = h.encodeEnvelope(&envelopeOut{Channel: channel, Action: []byte("null"), ServerSeq: seq, Origin: origin, RejectionReason: reason})
	}
	h.queue(c, frame)
}

// broadcastRoot sends a protocol notification to root subscribers. Called
// with h.mu held so it is ordered with the action envelopes around it.
func (h *Host) broadcastRootLocked(method string, params any) {
	body, err := json.Marshal(params)
	if err != nil {
		h.log.Error().Err(err).Str("method", method).Msg("failed to encode a root notification")
		return
	}
	frame := encodeNotification(method, body)
	var cache map[codec][]byte
	for c := range h.root.subs {
		if c.codec != nil && c.codec != baseline && cache == nil {
			cache = map[codec][]byte{}
		}
		if f, ok := h.translateShared(c, frame, cache, false); ok {
			h.queueFrame(c, f)
		}
	}
}

// startWorker returns ch's hand-off worker, starting it on first use.
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

// handoff queues an accepted client action for Backend.ClientAction.
// Called with ch.mu held, so jobs are queued in serverSeq order.
func (h *Host) handoff(ch *channel, a wire.StateAction, origin wire.ActionOrigin) {
	if h.backend == nil {
		return
	}
	if w := h.workerFor(ch); w != nil {
		w.push(handoffJob{action: a, origin: origin})
	}
}

func (h *Host) deliver(ctx context.Context, channel string, j handoffJob) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error().Interface("panic", r).Str("channel", channel).Str("action", j.action.Type()).
				Msg("the backend panicked handling a client action")
		}
	}()
	h.backend.ClientAction(ctx, channel, j.action, j.origin)
}
