package reducer

import (
	"unsafe"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// maxStreamingBuffers bounds how many texts a Streaming keeps a buffer for;
// a turn rarely streams into more than a few parts at once.
const maxStreamingBuffers = 8

// Streaming reduces chat actions exactly like Chat, but appends the text of
// chat/delta and chat/reasoning (and the partial input of
// chat/toolCallDelta) in amortised O(len(delta)) instead of
// O(len(content)).
//
// Plain string concatenation copies the whole text on every delta, so a
// part streamed in n chunks costs O(n²) copying — tens of gigabytes for a
// few megabytes of answer. Streaming keeps, per text, a byte buffer that
// is only ever appended to and grows by doubling; the text in the state is
// a string view of the buffer's filled prefix. A view never changes once
// handed out: later appends write past its end, and a growth moves the
// buffer to new memory, leaving the old views intact. A delta whose text
// is not the buffer's latest view (the state was replaced or edited
// elsewhere) starts a fresh buffer from that text, so the result is always
// byte-identical to Chat's.
//
// A Streaming belongs to one chat state; it is not safe for concurrent use
// (the host calls it under the channel lock). The zero value is ready.
type Streaming struct {
	// Lazy keeps the text of markdown and reasoning parts out of the
	// state while it streams: each delta is appended to fixed-size
	// pieces, and the part's Content is brought up to date only by Sync
	// (or by the next action that is not such a delta). A contiguous
	// buffer that doubles holds up to twice the text, and while it grows
	// the old and the new buffer are both live, so the garbage collector
	// sets its goal from up to three times the text; the pieces hold the
	// text once (docs/performance.md, "Peak RSS over a long response").
	// A caller that sets Lazy must call Sync before it reads a part's
	// Content.
	Lazy bool

	turn  string
	bufs  map[streamingKey][]byte
	ropes map[streamingKey]*rope
}

// ropePiece is the size of a lazy text's pieces: large enough that a
// long text is a few hundred of them, small enough that the last, partly
// filled one costs little.
const ropePiece = 64 << 10

// ropeFirstPiece is the smallest first piece of a lazy text: the pieces
// start at about twice the first delta and double up to ropePiece, so that
// the many short texts of a turn that calls tools (one per stretch of text
// between tool calls) do not each hold 64 KiB (issue 28: hundreds of busy
// sessions).
const ropeFirstPiece = 1 << 10

// rope is a lazily kept text. base is what the part's Content holds (and
// held when it was last synced); buf holds base's bytes, and may have room
// after them; what was appended since goes into that room while it lasts,
// then into pieces.
type rope struct {
	content *string
	base    string
	buf     []byte // base's bytes, then appended ones; never written below len
	pieces  [][]byte
	n       int // bytes in pieces
	joins   int // mid-turn syncs that joined pieces
}

func newRope(content *string) *rope {
	r := &rope{content: content, base: *content}
	if r.base != "" {
		// cap == len: never written into, only read when the rope grows.
		r.buf = unsafe.Slice(unsafe.StringData(r.base), len(r.base))
	}
	return r
}

// sync writes the rope's text to its part's Content. Text appended in buf's
// room costs nothing to sync; text in pieces is joined with buf in one
// allocation: of the text's exact size when no more text is expected
// (final) and the first time it is synced mid-turn (most texts are synced
// mid-turn once, by the tool call that follows them, and never grow again:
// room for more would be kept with the chat for nothing, issue 28), and of
// twice that from the second time on, for the text still to come, so that a
// text synced often is copied in amortised O(1) per byte, as by append,
// rather than whole at every sync.
func (r *rope) sync(final bool) {
	if r.n > 0 {
		total := len(r.buf) + r.n
		c := total
		if !final && r.joins > 0 {
			c = 2 * total
		}
		if !final {
			r.joins++
		}
		b := make([]byte, 0, c)
		b = append(b, r.buf...)
		for _, p := range r.pieces {
			b = append(b, p...)
		}
		r.buf, r.pieces, r.n = b, nil, 0
	}
	if len(r.buf) != len(r.base) {
		r.base = unsafe.String(unsafe.SliceData(r.buf), len(r.buf))
		*r.content = r.base
	}
}

// add appends s to the rope.
func (r *rope) add(s string) {
	if r.n == 0 && cap(r.buf)-len(r.buf) >= len(s) {
		// Past the end of every view handed out: none of them changes.
		r.buf = append(r.buf, s...)
		return
	}
	r.n += len(s)
	for s != "" {
		if n := len(r.pieces); n == 0 || len(r.pieces[n-1]) == cap(r.pieces[n-1]) {
			c := max(ropeFirstPiece, 2*len(s))
			if n > 0 {
				c = 2 * cap(r.pieces[n-1])
			}
			r.pieces = append(r.pieces, make([]byte, 0, min(c, ropePiece)))
		}
		last := &r.pieces[len(r.pieces)-1]
		k := min(len(s), cap(*last)-len(*last))
		*last = append(*last, s[:k]...)
		s = s[k:]
	}
}

// Sync brings the Content of every part a Lazy Streaming is keeping text
// for up to date. It costs nothing when no delta came since the last one.
func (st *Streaming) Sync() { st.sync(false) }

// sync is Sync; final when the texts are expected to be complete.
func (st *Streaming) sync(final bool) {
	for _, r := range st.ropes {
		r.sync(final)
	}
}

// TextFrom returns the text of the markdown or reasoning part whose
// Content is at content, from byte offset from on, as Sync would leave it
// there, without syncing: a Lazy text is read from its buffer and pieces,
// any other from *content. pieces are views of the bytes the text is kept
// in, in order: like the views Sync hands out they never change (the
// reducer only ever writes past a filled prefix), so they may be read
// after the caller's lock is released. n is the text's whole length; when
// from is beyond it, pieces is empty.
//
// A reader that wants only what a text gained (a checkpoint) uses this
// instead of Sync, which would join a long text into one string, and give
// it room to grow, every time it is read (docs/performance.md).
func (st *Streaming) TextFrom(content *string, from int) (pieces []string, n int) {
	r := st.ropeOf(content)
	if r == nil {
		n = len(*content)
		if from < n {
			pieces = []string{(*content)[max(0, from):]}
		}
		return pieces, n
	}
	n = len(r.buf) + r.n
	from = max(0, from)
	if from >= n {
		return nil, n
	}
	pieces = make([]string, 0, 1+len(r.pieces))
	if from < len(r.buf) {
		pieces = append(pieces, unsafe.String(&r.buf[from], len(r.buf)-from))
	}
	off := len(r.buf)
	for _, p := range r.pieces {
		if end := off + len(p); from < end && len(p) > 0 {
			k := max(0, from-off)
			pieces = append(pieces, unsafe.String(&p[k], len(p)-k))
		}
		off += len(p)
	}
	return pieces, n
}

// Pending is how many bytes of text the lazy ropes hold: what the next
// Sync, or the end of the turn, joins into strings.
func (st *Streaming) Pending() int {
	n := 0
	for _, r := range st.ropes {
		n += len(r.buf) + r.n
	}
	return n
}

// ropeOf returns the rope keeping the text of the part whose Content is at
// content, if that text is the rope's (not replaced since).
func (st *Streaming) ropeOf(content *string) *rope {
	for _, r := range st.ropes {
		if r.content == content && sameString(*content, r.base) {
			return r
		}
	}
	return nil
}

// lazyAppend appends add to the text of the part whose Content is at
// content, in the key's rope.
func (st *Streaming) lazyAppend(turn string, key streamingKey, content *string, add string) {
	if add == "" {
		return
	}
	if st.turn != turn || st.ropes == nil {
		st.sync(true)
		st.turn, st.bufs, st.ropes = turn, nil, make(map[streamingKey]*rope, 2)
	}
	r := st.ropes[key]
	if r == nil || r.content != content || !sameString(*content, r.base) {
		// A new part, or one replaced or edited since: start from what
		// it holds now, as Chat would.
		if r != nil && r.content != content {
			r.sync(true) // the text of a part no longer in the state
		}
		if r == nil && len(st.ropes) >= maxStreamingBuffers {
			st.sync(true)
			clear(st.ropes)
		}
		r = newRope(content)
		st.ropes[key] = r
	}
	r.add(add)
}

// sameString reports whether a and b are the same bytes in memory.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// streamingKey names a streamed text: tool call ids and part ids are
// separate namespaces.
type streamingKey struct {
	toolCall bool
	id       string
}

// Chat applies a to s like the package function Chat.
func (st *Streaming) Chat(s *wire.ChatState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.ChatDeltaAction:
		chatUpdatePart(s, a.TurnID, a.PartID, func(p any) {
			if m, ok := p.(*wire.MarkdownResponsePart); ok {
				st.text(a.TurnID, a.PartID, &m.Content, a.Content)
			}
		})
	case *wire.ChatReasoningAction:
		chatUpdatePart(s, a.TurnID, a.PartID, func(p any) {
			if r, ok := p.(*wire.ReasoningResponsePart); ok {
				st.text(a.TurnID, a.PartID, &r.Content, a.Content)
			}
		})
	case *wire.ChatToolCallDeltaAction:
		key := streamingKey{toolCall: true, id: a.ToolCallID}
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallDelta(tc, a, func(cur, add string) string { return st.append(a.TurnID, key, cur, add) })
		})
	default:
		// Any other action may read or replace a part's text: bring it
		// up to date first; to its exact size when the action ends the
		// turn, since a completed turn's text is kept as long as the chat.
		switch a.(type) {
		case *wire.ChatTurnCompleteAction, *wire.ChatTurnCancelledAction, *wire.ChatErrorAction:
			st.sync(true)
		default:
			st.sync(false)
		}
		Chat(s, wire.StateAction{Value: a}, clock)
		if s.ActiveTurn == nil || s.ActiveTurn.ID != st.turn {
			st.turn, st.bufs, st.ropes = "", nil, nil // the turn ended: its buffers may go
		}
	}
}

// text appends add to a markdown or reasoning part's Content, at content.
func (st *Streaming) text(turn, part string, content *string, add string) {
	key := streamingKey{id: part}
	if st.Lazy {
		st.lazyAppend(turn, key, content, add)
		return
	}
	*content = st.append(turn, key, *content, add)
}

// append returns cur+add, in place in the key's buffer when cur is that
// buffer's current view.
func (st *Streaming) append(turn string, key streamingKey, cur, add string) string {
	if add == "" {
		return cur
	}
	if st.turn != turn || st.bufs == nil {
		st.turn, st.bufs = turn, make(map[streamingKey][]byte, 2)
	}
	buf, ok := st.bufs[key]
	if !ok || len(buf) != len(cur) || len(buf) == 0 || unsafe.SliceData(buf) != unsafe.StringData(cur) {
		if !ok && len(st.bufs) >= maxStreamingBuffers {
			clear(st.bufs)
		}
		buf = make([]byte, 0, max(2*(len(cur)+len(add)), 256))
		buf = append(buf, cur...)
	}
	if cap(buf)-len(buf) < len(add) {
		// Double, where append would grow a large buffer by only a
		// quarter: a long response then moves through 2× its length
		// in copies and freed arrays instead of 5× (docs/performance.md).
		nb := make([]byte, len(buf), 2*(len(buf)+len(add)))
		copy(nb, buf)
		buf = nb
	}
	buf = append(buf, add...)
	st.bufs[key] = buf
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}
