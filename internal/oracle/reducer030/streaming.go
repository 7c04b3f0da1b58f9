package reducer030

import (
	"unsafe"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// maxStreamingParts bounds how many parts a Streaming keeps a buffer for.
const maxStreamingParts = 8

// Streaming reduces session actions exactly like Session, but appends the
// text of session/delta and session/reasoning in amortised O(len(delta))
// instead of O(len(content)).
//
// Plain string concatenation copies the whole part on every delta, so a
// part streamed in n chunks costs O(n²) copying — tens of gigabytes for a
// few megabytes of answer. Streaming keeps, per part, a byte buffer that
// is only ever appended to and grows by doubling; the part's content is a
// string view of the buffer's filled prefix. A view never changes once
// handed out: later appends write past its end, and a growth moves the
// buffer to new memory, leaving the old views intact. A delta whose part
// content is not the buffer's latest view (the state was replaced or
// edited elsewhere) starts a fresh buffer from that content, so the result
// is always byte-identical to Session's.
//
// A Streaming belongs to one session state; it is not safe for concurrent
// use (the host calls it under the channel lock).
type Streaming struct {
	turn string
	bufs map[string][]byte // part id → buffer backing that part's content
}

// Session applies a to s like the package function Session.
func (st *Streaming) Session(s *wire.SessionState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.SessionDeltaAction:
		updateResponsePart(s, a.TurnID, a.PartID, func(p wire.ResponsePart) {
			if m, ok := p.Value.(*wire.MarkdownResponsePart); ok && m != nil {
				m.Content = st.append(a.TurnID, a.PartID, m.Content, a.Content)
			}
		})
	case *wire.SessionReasoningAction:
		updateResponsePart(s, a.TurnID, a.PartID, func(p wire.ResponsePart) {
			if r, ok := p.Value.(*wire.ReasoningResponsePart); ok && r != nil {
				r.Content = st.append(a.TurnID, a.PartID, r.Content, a.Content)
			}
		})
	default:
		Session(s, wire.StateAction{Value: a}, clock)
		if s.ActiveTurn == nil || s.ActiveTurn.ID != st.turn {
			st.turn, st.bufs = "", nil // the turn ended: its buffers may go
		}
	}
}

// append returns cur+add, in place in part's buffer when cur is that
// buffer's current view.
func (st *Streaming) append(turn, part, cur, add string) string {
	if add == "" {
		return cur
	}
	if st.turn != turn || st.bufs == nil {
		st.turn, st.bufs = turn, make(map[string][]byte, 2)
	}
	buf, ok := st.bufs[part]
	if !ok || len(buf) != len(cur) || len(buf) == 0 || unsafe.SliceData(buf) != unsafe.StringData(cur) {
		if !ok && len(st.bufs) >= maxStreamingParts {
			clear(st.bufs)
		}
		buf = make([]byte, 0, max(2*(len(cur)+len(add)), 256))
		buf = append(buf, cur...)
	}
	buf = append(buf, add...)
	st.bufs[part] = buf
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}
