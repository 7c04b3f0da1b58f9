package reducer070

import (
	"unsafe"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
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
	turn string
	bufs map[streamingKey][]byte
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
				m.Content = st.append(a.TurnID, streamingKey{id: a.PartID}, m.Content, a.Content)
			}
		})
	case *wire.ChatReasoningAction:
		chatUpdatePart(s, a.TurnID, a.PartID, func(p any) {
			if r, ok := p.(*wire.ReasoningResponsePart); ok {
				r.Content = st.append(a.TurnID, streamingKey{id: a.PartID}, r.Content, a.Content)
			}
		})
	case *wire.ChatToolCallDeltaAction:
		key := streamingKey{toolCall: true, id: a.ToolCallID}
		chatUpdateToolCall(s, a.TurnID, a.ToolCallID, func(tc wire.ToolCallState) (wire.ToolCallState, bool) {
			return toolCallDelta(tc, a, func(cur, add string) string { return st.append(a.TurnID, key, cur, add) })
		})
	default:
		Chat(s, wire.StateAction{Value: a}, clock)
		if s.ActiveTurn == nil || s.ActiveTurn.ID != st.turn {
			st.turn, st.bufs = "", nil // the turn ended: its buffers may go
		}
	}
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
	buf = append(buf, add...)
	st.bufs[key] = buf
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}
