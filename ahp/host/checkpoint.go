package host

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// A streaming turn's checkpoint is the whole active turn, rewritten each
// time (the store keeps one per chat). Two things keep that from costing
// the quadratic time it could on a long turn:
//
//   - The encoding of a turn's texts is kept between its checkpoints: the
//     reducer only ever appends to a text part, so only the new end is
//     escaped, and the rest of the turn (small) goes through encoding/json.
//     The encoding runs on the checkpointer's goroutine, from a copy taken
//     under the session's lock (copyActiveTurn).
//   - The checkpointer writes as soon as 64 KiB of new content are waiting
//     (store.DefaultCheckpointBytes), at least every 250 ms. Up to
//     checkpointScaleFrom (128 KiB) of turn that is what it does; beyond,
//     the content counted is scaled down so that a write waits for half the
//     turn's size in new content (or the 250 ms): a checkpoint of an S-byte
//     turn costs O(S), so writing every 64 KiB would cost O(S²/64 KiB) and
//     keep a core busy on a long stream, where a write per 1.5× growth
//     costs O(S) over the turn's life. The 250 ms bound holds for every
//     turn: what a crash loses is at most the last 250 ms, or the last
//     64 KiB of a turn up to 128 KiB.

// checkpointScaleFrom is the turn size from which the byte trigger grows
// with the turn: 2 × 64 KiB, where the trigger becomes half of the turn.
const checkpointScaleFrom = 2 * store.DefaultCheckpointBytes

// checkpointGrowth is what an action of size bytes counts towards the
// checkpointer's byte trigger, in a turn of turnBytes so far.
func checkpointGrowth(size, turnBytes int) int {
	if turnBytes <= checkpointScaleFrom {
		return size
	}
	// size × checkpointScaleFrom / turnBytes, rounded up: never less than
	// one byte, so that the trigger is reached.
	return (size*checkpointScaleFrom + turnBytes - 1) / turnBytes
}

// turnEncoder encodes one turn's checkpoints, keeping each text part's
// escaped content between them. It belongs to the checkpointer's goroutine
// (the only caller of snapshot functions), so it needs no lock.
type turnEncoder struct {
	texts map[string]*escapedText // by kind and part id
}

// escapedText is a text part's content as encoded so far: src, a prefix of
// the content ending on a rune boundary, and its JSON escaping (without
// quotes).
type escapedText struct {
	src string
	esc []byte
}

// encode returns t as JSON: the shape json.Marshal gives an ActiveTurn
// (what restore decodes), with text parts written from the cache.
func (e *turnEncoder) encode(t *wire.ActiveTurn) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"id":`...)
	b = appendJSONString(b, t.ID)
	b = append(b, `,"startedAt":`...)
	b = appendJSONString(b, t.StartedAt)
	b, err := appendTurnBody(b, e, &t.Message, t.ResponseParts, t.Usage)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// encodeTurn returns a completed turn as JSON, as json.Marshal would but
// writing its texts directly (encoding/json would escape a long text, then
// scan it again to compact the part's encoding, then once more for the
// turn's).
func encodeTurn(t *wire.Turn) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"id":`...)
	b = appendJSONString(b, t.ID)
	if t.StartedAt != nil {
		b = append(b, `,"startedAt":`...)
		b = appendJSONString(b, *t.StartedAt)
	}
	if t.Duration != nil {
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, *t.Duration, 10)
	}
	b, err := appendTurnBody(b, nil, &t.Message, t.ResponseParts, t.Usage)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"state":`...)
	b = appendJSONString(b, string(t.State))
	return append(b, '}'), nil
}

// appendTurnBody appends the message, parts and usage members of a turn
// (active or completed), the text parts through e's cache when e is not
// nil.
func appendTurnBody(b []byte, e *turnEncoder, msg *wire.Message, ps []wire.ResponsePart, usage *wire.UsageInfo) ([]byte, error) {
	m, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"message":`...)
	b = append(b, m...)
	b = append(b, `,"responseParts":[`...)
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		var kind wire.ResponsePartKind
		var id, content string
		switch v := p.Value.(type) {
		case *wire.MarkdownResponsePart:
			kind, id, content = wire.ResponsePartKindMarkdown, v.ID, v.Content
		case *wire.ReasoningResponsePart:
			kind, id, content = wire.ResponsePartKindReasoning, v.ID, v.Content
		default:
			pj, err := json.Marshal(p)
			if err != nil {
				return nil, err
			}
			b = append(b, pj...)
			continue
		}
		b = append(b, `{"kind":`...)
		b = appendJSONString(b, string(kind))
		b = append(b, `,"id":`...)
		b = appendJSONString(b, id)
		b = append(b, `,"content":`...)
		if e != nil {
			b = append(b, '"')
			b = append(b, e.escape(string(kind)+"\x00"+id, content)...)
			b = append(b, '"')
		} else {
			b = appendJSONString(b, content)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if usage != nil {
		u, err := json.Marshal(usage)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"usage":`...)
		b = append(b, u...)
	}
	return b, nil
}

// escape returns content's JSON escaping, reusing what was escaped of it
// before when content still starts with it.
func (e *turnEncoder) escape(key, content string) []byte {
	if e.texts == nil {
		e.texts = map[string]*escapedText{}
	}
	c := e.texts[key]
	if c == nil || len(content) < len(c.src) || content[:len(c.src)] != c.src {
		c = &escapedText{}
		e.texts[key] = c
	}
	rest := content[len(c.src):]
	// Keep the cache on a rune boundary, so that the next piece escapes
	// exactly as the whole would: a rune cut short at the end stays out.
	cut := len(rest)
	for i := len(rest) - 1; i >= 0 && i >= len(rest)-utf8.UTFMax; i-- {
		if utf8.RuneStart(rest[i]) {
			if !utf8.FullRuneInString(rest[i:]) {
				cut = i
			}
			break
		}
	}
	esc := appendJSONString(c.esc, rest[:cut])
	// appendJSONString quotes: drop the quotes it added.
	esc = append(esc[:len(c.esc)], esc[len(c.esc)+1:len(esc)-1]...)
	c.src, c.esc = content[:len(c.src)+cut], esc
	if cut == len(rest) {
		return c.esc
	}
	tail := appendJSONString(nil, rest[cut:])
	out := make([]byte, 0, len(c.esc)+len(tail))
	out = append(out, c.esc...)
	return append(out, tail[1:len(tail)-1]...)
}
