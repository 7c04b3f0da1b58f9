package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/host/internal/jsonstr"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// envelopeOut is how an ActionEnvelope is encoded: origin is omitted for
// server-originated actions.
type envelopeOut struct {
	Channel         string
	Action          json.RawMessage
	ServerSeq       int64
	Origin          *wire.ActionOrigin
	RejectionReason string
	// trusted: Action was produced by encodeAction (json.Marshal or the
	// equivalent fast path), so it need not be validated again.
	trusted bool
}

// actionFramePrefix precedes the envelope in an `action` notification.
const actionFramePrefix = `{"jsonrpc":"2.0","method":"action","params":`

// encodeEnvelope builds the `action` notification frame for an envelope and
// returns it along with the envelope and the action bytes inside it. The
// action is spliced in verbatim (it was produced by json.Marshal or
// validated by the decoder), which keeps the one encoding per envelope
// cheap.
func (h *Host) encodeEnvelope(e *envelopeOut) (frame, env, action []byte, err error) {
	if !e.trusted && !json.Valid(e.Action) {
		return nil, nil, nil, fmt.Errorf("encoding the action envelope for %s: the action is not valid JSON", e.Channel)
	}
	ch := jsonstr.Append(nil, e.Channel)
	var origin, reason []byte
	if e.Origin != nil {
		if origin, err = json.Marshal(e.Origin); err != nil {
			return nil, nil, nil, fmt.Errorf("encoding the action envelope for %s: %w", e.Channel, err)
		}
	}
	if e.RejectionReason != "" {
		reason = jsonstr.Append(nil, e.RejectionReason)
	}
	h.stats.encoded.Add(1)
	a := bytes.TrimSpace(e.Action)
	frame = make([]byte, 0, len(actionFramePrefix)+len(ch)+len(a)+len(origin)+len(reason)+80)
	frame = append(frame, actionFramePrefix...)
	start := len(frame)
	frame = append(frame, `{"channel":`...)
	frame = append(frame, ch...)
	frame = append(frame, `,"action":`...)
	astart := len(frame)
	frame = append(frame, a...)
	aend := len(frame)
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
	return frame, frame[start:end], frame[astart:aend:aend], nil
}

// broadcast is one sequenced envelope on its way to connections: its
// encoding in the host's dialect, and the translations made for other
// dialects so far (each codec translates it once, however many of its
// connections receive it).
type broadcast struct {
	h     *Host
	frame []byte
	own   [][]byte // {frame}, made once for every connection of the host's version
	env   codec.Envelope
	cache map[codec.Codec][][]byte
}

// framesFor returns the frames c receives for the envelope.
func (b *broadcast) framesFor(c *conn) [][]byte {
	cd := c.codec
	if cd == nil {
		if b.own == nil {
			b.own = [][]byte{b.frame}
		}
		return b.own
	}
	if fs, ok := b.cache[cd]; ok {
		return fs
	}
	if b.cache == nil {
		b.cache = map[codec.Codec][][]byte{}
	}
	fs, _ := b.h.translateEnvelope(cd, b.env)
	b.cache[cd] = fs
	return fs
}

// translateEnvelope encodes what a codec makes of an envelope: the action
// notification frames to send, and the envelopes inside them (which
// reconnect replies carry).
func (h *Host) translateEnvelope(cd codec.Codec, e codec.Envelope) (frames [][]byte, envs []json.RawMessage) {
	for _, t := range cd.Envelope(e) {
		f, env, _, err := h.encodeEnvelope(&envelopeOut{Channel: t.Channel, Action: t.Action, ServerSeq: t.ServerSeq, Origin: t.Origin})
		if err != nil {
			h.log.Error().Err(err).Str("version", cd.Version().String()).Msg("a codec produced an invalid envelope; withheld")
			continue
		}
		frames = append(frames, f)
		envs = append(envs, env)
	}
	return frames, envs
}

// commit sequences an already validated and reduced action on ch and
// broadcasts it to ch's subscribers (and to sender, whose own echo it is).
// Called with ch.mu held. The frame is encoded once for all receivers of
// each protocol version.
func (h *Host) commit(ch *channel, actionJSON []byte, origin *wire.ActionOrigin, sender *conn) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq = h.nextSeqLocked() // seqblocks.go
	seq := h.seq
	frame, env, action, err := h.encodeEnvelope(&envelopeOut{Channel: ch.uri, Action: actionJSON, ServerSeq: seq, Origin: origin, trusted: true})
	if err != nil {
		// actionJSON was produced by json.Marshal, so this cannot fail;
		// keep the sequence gap-free anyway.
		h.log.Error().Err(err).Str("channel", ch.uri).Msg("failed to encode an action envelope")
		return seq
	}
	h.ring.push(ringEntry{seq: seq, channel: ch.uri, env: env, action: action, origin: origin})
	b := broadcast{h: h, frame: frame, env: codec.Envelope{Channel: ch.uri, Action: action, ServerSeq: seq, Origin: origin}}
	at := h.sampleAt(seq, origin)
	for c := range ch.subs {
		h.queueFramesAt(c, b.framesFor(c), at)
	}
	if sender != nil {
		if _, subscribed := ch.subs[sender]; !subscribed {
			h.queueFramesAt(sender, b.framesFor(sender), at)
		}
	}
	return seq
}

// sendPrivate sends an action envelope on channel to one connection only:
// it changes only that connection's view (e.g. older turns it paged in), so
// it is neither broadcast nor kept for replay. It still takes the next
// serverSeq, so that it is newer than the snapshot the client holds (a
// client may ignore envelopes at or below a snapshot's fromSeq); the gap the
// others see is like any other on a channel they do not watch. Called
// without Host.mu.
func (h *Host) sendPrivate(c *conn, channel string, actionJSON []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq = h.nextSeqLocked()
	frame, _, action, err := h.encodeEnvelope(&envelopeOut{Channel: channel, Action: actionJSON, ServerSeq: h.seq, trusted: true})
	if err != nil {
		h.log.Error().Err(err).Str("channel", channel).Msg("failed to encode a private action")
		return
	}
	b := broadcast{h: h, frame: frame, env: codec.Envelope{Channel: channel, Action: action, ServerSeq: h.seq}}
	h.queueFrames(c, b.framesFor(c))
}

// queueFrames queues frames already in the connection's encoding.
func (h *Host) queueFrames(c *conn, frames [][]byte) { h.queueFramesAt(c, frames, 0) }

// queueFramesAt is queueFrames for frames stamped for latency measurement
// (at non-zero, see ops.go).
func (h *Host) queueFramesAt(c *conn, frames [][]byte, at int64) {
	for _, f := range frames {
		h.stats.queued.Add(1)
		c.sendAt(f, at)
	}
}

// queue hands a connection one frame it is owed in its own dialect (a
// response built for it).
func (h *Host) queue(c *conn, frame []byte) {
	h.stats.queued.Add(1)
	c.send(frame)
}

// reject echoes a refused client action to its sender only, as the sender
// sent it (in its own dialect, on its own channel), with the reason. The
// envelope carries the current serverSeq without consuming a new one: a
// rejection changes no state and is never replayed.
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
	frame, _, _, err := h.encodeEnvelope(&envelopeOut{Channel: channel, Action: actionJSON, ServerSeq: seq, Origin: origin, RejectionReason: reason})
	if err != nil {
		// The raw action was not valid JSON after all; echo null instead.
		frame, _, _, _ = h.encodeEnvelope(&envelopeOut{Channel: channel, Action: []byte("null"), ServerSeq: seq, Origin: origin, RejectionReason: reason})
	}
	h.queue(c, frame)
}

// notifyLocked sends a protocol notification (root/sessionAdded, …) to
// the given connections, each in its own dialect. Called with h.mu held so
// it is ordered with the action envelopes around it.
func (h *Host) notifyLocked(method string, params any, to map[*conn]struct{}) {
	body, err := json.Marshal(params)
	if err != nil {
		h.log.Error().Err(err).Str("method", method).Msg("failed to encode a notification")
		return
	}
	frame := encodeNotification(method, body)
	cache := map[codec.Codec][]byte{}
	for c := range to {
		if c.codec == nil {
			h.queue(c, frame)
			continue
		}
		f, ok := cache[c.codec]
		if !ok {
			if p, known := c.codec.Notification(method, body); known {
				f = encodeNotification(method, p)
			}
			cache[c.codec] = f
		}
		if f != nil {
			h.queue(c, f)
		}
	}
}

// broadcastRootLocked sends a protocol notification to root subscribers.
// Called with h.mu held.
func (h *Host) broadcastRootLocked(method string, params any) {
	h.notifyLocked(method, params, h.root.subs)
}
