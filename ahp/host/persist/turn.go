package persist

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/internal/jsonstr"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// A streaming turn's checkpoint is incremental: the store's Checkpointer
// writes only what the turn gained since its previous checkpoint. A
// snapshot (TurnSnapshot) is the turn encoded with its text parts' content
// left empty, which is small, and the text parts' content as it is, shared
// with the state (the reducer only ever appends to a text, and a Go string
// never changes): the Checkpointer keeps how much of each text it wrote and
// appends the rest. So a checkpoint costs what the turn gained plus the
// turn's non-text remainder (its message, tool calls, other parts), and a
// long answer is written once, in pieces, instead of once per checkpoint.
//
// The checkpointer writes as soon as 64 KiB of new content are waiting
// (store.DefaultCheckpointBytes), at least every 250 ms. The text deltas
// count in full. The rest of the turn is rewritten by every checkpoint, so
// once it passes checkpointScaleFrom (128 KiB: a turn of many or large
// tool calls) what it grows by counts scaled down, so that its rewrites
// cost O(S) over the turn's life rather than O(S²/64 KiB); the 250 ms
// bound holds for every turn.

// checkpointScaleFrom is the size of a turn's non-text remainder from which
// its growth counts less towards the byte trigger: 2 × 64 KiB, where the
// trigger becomes half of the remainder.
const checkpointScaleFrom = 2 * store.DefaultCheckpointBytes

// CheckpointGrowth is what an action of size bytes counts towards the
// checkpointer's byte trigger, in a turn whose non-text remainder has
// grown to turnBytes so far.
func CheckpointGrowth(size, turnBytes int) int {
	if turnBytes <= checkpointScaleFrom {
		return size
	}
	// size × checkpointScaleFrom / turnBytes, rounded up: never less than
	// one byte, so that the trigger is reached.
	return (size*checkpointScaleFrom + turnBytes - 1) / turnBytes
}

// textPointer names the content of the turn's response part i in a
// snapshot's Data (an RFC 6901 pointer).
func textPointer(i int) string {
	return "/responseParts/" + strconv.Itoa(i) + "/content"
}

// TurnSnapshot encodes an active turn for the checkpointer: the shape
// json.Marshal gives an ActiveTurn (what restore decodes), its markdown and
// reasoning parts with empty content, and those contents as the snapshot's
// texts.
func TurnSnapshot(t *wire.ActiveTurn) (store.TurnSnapshot, error) { return TurnSnapshotCached(t, nil) }

// TurnSnapshotCached is TurnSnapshot with the tool call parts' encodings
// taken from c where it has them (c may be nil).
func TurnSnapshotCached(t *wire.ActiveTurn, c *PartCache) (store.TurnSnapshot, error) {
	var snap store.TurnSnapshot
	b := make([]byte, 0, c.sizeHint())
	b = append(b, `{"id":`...)
	b = jsonstr.Append(b, t.ID)
	b = append(b, `,"startedAt":`...)
	b = jsonstr.Append(b, t.StartedAt)
	b, err := appendTurnBody(b, func(b []byte, i int, content string) []byte {
		snap.Texts = append(snap.Texts, store.CheckpointText{Pointer: textPointer(i), Text: content})
		return append(b, `""`...)
	}, c, &t.Message, t.ResponseParts, t.Usage)
	if err != nil {
		return store.TurnSnapshot{}, err
	}
	snap.Data = append(b, '}')
	if c != nil {
		c.mu.Lock()
		c.size = len(snap.Data)
		c.mu.Unlock()
	}
	return snap, nil
}

// TurnText is a text part's content from an offset on, as the pieces the
// lazy reducer keeps it in (reducer.Streaming.TextFrom).
type TurnText struct {
	pointer string
	offset  int
	pieces  []string
}

// ReadTurnTexts reads the content of each markdown and reasoning part of the
// active turn t from the offset from asks for (from 0 for a text it does not
// name, or one shorter than that), without syncing the lazy reducer: a
// checkpoint then costs what the texts gained, where syncing would join a
// long text into one string at every checkpoint (docs/performance.md).
// Called with the channel's mutex held; the pieces may be read after it is
// released, since they never change.
func ReadTurnTexts(stream *reducer.Streaming, t *wire.ActiveTurn, from map[string]int) []TurnText {
	var texts []TurnText
	for i, p := range t.ResponseParts {
		var content *string
		switch v := p.Value.(type) {
		case *wire.MarkdownResponsePart:
			content = &v.Content
		case *wire.ReasoningResponsePart:
			content = &v.Content
		default:
			continue
		}
		ptr := textPointer(i)
		at := from[ptr]
		pieces, n := stream.TextFrom(content, at)
		if at > n {
			at = 0 // not the text written: the checkpointer writes it whole
			pieces, _ = stream.TextFrom(content, 0)
		}
		texts = append(texts, TurnText{pointer: ptr, offset: at, pieces: pieces})
	}
	return texts
}

// checkpointPiece bounds the pieces a checkpoint hands the store: SQLite
// copies each value it writes, twice, so a text synced mid-turn into one
// long string (a subscriber arrived) is passed in slices of it.
const checkpointPiece = 64 << 10

// CheckpointTexts turns the texts read by ReadTurnTexts into the pieces of a
// snapshot, without copying them: views of the lazy reducer's pieces, none
// longer than checkpointPiece, cut anywhere (the store joins a string's
// pieces before anything decodes it). A text with nothing from its offset
// is one empty piece.
func CheckpointTexts(texts []TurnText) []store.CheckpointText {
	var out []store.CheckpointText
	for _, x := range texts {
		off, n := x.offset, len(out)
		for _, p := range x.pieces {
			for p != "" {
				k := min(len(p), checkpointPiece)
				out = append(out, store.CheckpointText{Pointer: x.pointer, Offset: off, Text: p[:k]})
				off, p = off+k, p[k:]
			}
		}
		if len(out) == n {
			out = append(out, store.CheckpointText{Pointer: x.pointer, Offset: off})
		}
	}
	return out
}

// PlaceTexts puts the texts a checkpoint appended back into the turn
// decoded from its Data: the inverse of TurnSnapshot. It reports the texts
// that name no text part of the turn.
func PlaceTexts(t *wire.ActiveTurn, texts []store.CheckpointText) (misplaced int) {
	for _, x := range texts {
		i, ok := strings.CutPrefix(x.Pointer, "/responseParts/")
		var n int
		var err error
		if ok {
			i, ok = strings.CutSuffix(i, "/content")
			n, err = strconv.Atoi(i)
		}
		if !ok || err != nil || n < 0 || n >= len(t.ResponseParts) {
			misplaced++
			continue
		}
		var content *string
		switch v := t.ResponseParts[n].Value.(type) {
		case *wire.MarkdownResponsePart:
			content = &v.Content
		case *wire.ReasoningResponsePart:
			content = &v.Content
		}
		if content == nil || x.Offset > len(*content) {
			misplaced++
			continue
		}
		*content = (*content)[:x.Offset] + x.Text
	}
	return misplaced
}

// EncodeTurn returns a completed turn as JSON, as json.Marshal would but
// writing its texts directly (encoding/json would escape a long text, then
// scan it again to compact the part's encoding, then once more for the
// turn's). A long text is left to be escaped while the turn is written
// (TurnEncoding), so that the turn is never a second copy of it.
func EncodeTurn(t *wire.Turn) (*TurnEncoding, error) {
	e := &TurnEncoding{}
	b := make([]byte, 0, 256)
	b = append(b, `{"id":`...)
	b = jsonstr.Append(b, t.ID)
	if t.StartedAt != nil {
		b = append(b, `,"startedAt":`...)
		b = jsonstr.Append(b, *t.StartedAt)
	}
	if t.Duration != nil {
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, *t.Duration, 10)
	}
	b, err := appendTurnBody(b, e.text, nil, &t.Message, t.ResponseParts, t.Usage)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"state":`...)
	b = jsonstr.Append(b, string(t.State))
	e.heads = append(e.heads, append(b, '}'))
	return e, nil
}

// longText is the length from which a completed turn's text is escaped as
// the turn is written rather than when it is encoded.
const longText = 64 << 10

// textSlice is how much of a long text is escaped at a time as it is
// written: the writer's buffer is about this size.
const textSlice = 32 << 10

// TurnEncoding is a completed turn's JSON in segments: heads[0], texts[0]
// escaped, heads[1], and so on, heads having one more element than texts.
// The store writes it in chunks (store.Turn.Encode): the 51 MB answer of a
// long response, already held once as the state's string, is then escaped
// a slice at a time into a small buffer instead of into one more 51 MB
// array at the turn's end, when the response's peak memory is reached
// (docs/performance.md, issue 17).
type TurnEncoding struct {
	heads [][]byte
	texts []string
}

// text is appendTurnBody's way of writing a text part's content: inline
// when short, else as a segment of its own.
func (e *TurnEncoding) text(b []byte, _ int, content string) []byte {
	if len(content) < longText {
		return jsonstr.Append(b, content)
	}
	e.heads = append(e.heads, append(b, '"'))
	e.texts = append(e.texts, content)
	return append(make([]byte, 0, 256), '"')
}

// Encode writes the turn's JSON to w, a slice of each long text at a time
// through one buffer that it reuses: w must not keep what it is given.
func (e *TurnEncoding) Encode(w io.Writer) error {
	var buf []byte
	if len(e.texts) > 0 {
		buf = make([]byte, 0, textSlice+textSlice/8) // a slice and a few escapes
	}
	for i, h := range e.heads {
		if _, err := w.Write(h); err != nil {
			return err
		}
		if i == len(e.texts) {
			break
		}
		for s := e.texts[i]; s != ""; {
			k := textCut(s, textSlice)
			buf = jsonstr.AppendBody(buf[:0], s[:k])
			if _, err := w.Write(buf); err != nil {
				return err
			}
			s = s[k:]
		}
	}
	return nil
}

// Bytes is the turn's JSON in one array.
func (e *TurnEncoding) Bytes() []byte {
	var b bytes.Buffer
	_ = e.Encode(&b) // a bytes.Buffer does not fail
	return b.Bytes()
}

// textCut is where to cut s to at most n bytes: before a byte that starts a
// rune, so that the pieces escape as the whole does (appendJSONStringBody).
func textCut(s string, n int) int {
	if len(s) <= n {
		return len(s)
	}
	for k := n; k > 0; k-- {
		if utf8.RuneStart(s[k]) {
			return k
		}
	}
	return n // n bytes that continue a rune: each escapes alone anyway
}

// appendTurnBody appends the message, parts and usage members of a turn
// (active or completed). text writes the content of text part i (it may
// write it elsewhere, or leave it out; TurnSnapshot, TurnEncoding.text);
// cache, if not nil, keeps the tool call parts' encodings from one call to
// the next.
func appendTurnBody(b []byte, text func(b []byte, i int, content string) []byte, cache *PartCache, msg *wire.Message, ps []wire.ResponsePart, usage *wire.UsageInfo) ([]byte, error) {
	cache.begin()
	defer cache.end()
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
			pj, err := cache.encode(p)
			if err != nil {
				return nil, err
			}
			b = append(b, pj...)
			continue
		}
		b = append(b, `{"kind":`...)
		b = jsonstr.Append(b, string(kind))
		b = append(b, `,"id":`...)
		b = jsonstr.Append(b, id)
		b = append(b, `,"content":`...)
		b = text(b, i, content)
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

// PartCache keeps the encodings of an active turn's tool call parts from
// one checkpoint to the next (issue 28: re-encoding every tool call of
// every streaming turn at every checkpoint was a third of the bridge's CPU
// with 100 busy sessions). A tool call part is encoded from its state
// alone, and the reducer never changes a tool call's state in place, only
// replaces it (CopyActiveTurn relies on the same), so a state met again
// at the same address encodes the same. Each snapshot keeps only the
// entries it used, so the cache holds at most the turn's tool calls. It is
// used by one snapshot at a time (its mutex makes sure).
type PartCache struct {
	mu         sync.Mutex
	prev, next map[any][]byte
	size       int // of the last snapshot's data: the next one's is about as long

	// The last snapshot's data, of the turn at turn when the chat's
	// turnRev was rev: while neither moved, only texts grew (they are not
	// in the data), and the data is the same (issue 28).
	rev      uint64
	turn     *wire.ActiveTurn
	lastData json.RawMessage
}

// Data returns the last snapshot's data if it was taken of turn t at rev.
func (c *PartCache) Data(rev uint64, t *wire.ActiveTurn) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastData, c.lastData != nil && c.turn == t && c.rev == rev
}

// Keep notes the data of a snapshot of turn t taken at rev.
func (c *PartCache) Keep(rev uint64, t *wire.ActiveTurn, data json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rev, c.turn, c.lastData = rev, t, data
}

// sizeHint is the capacity to give the next snapshot's data.
func (c *PartCache) sizeHint() int {
	if c == nil {
		return 256
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(256, c.size+c.size/8)
}

// begin starts a snapshot's use of the cache.
func (c *PartCache) begin() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.next = make(map[any][]byte, len(c.prev))
}

// end keeps what the snapshot used.
func (c *PartCache) end() {
	if c == nil {
		return
	}
	c.prev, c.next = c.next, nil
	c.mu.Unlock()
}

// encode returns p's JSON: a tool call part's from the cache when its state
// was encoded before, any other part's freshly.
func (c *PartCache) encode(p wire.ResponsePart) ([]byte, error) {
	tc, ok := p.Value.(*wire.ToolCallResponsePart)
	if c == nil || !ok || tc.ToolCall.Value == nil || reflect.TypeOf(tc.ToolCall.Value).Kind() != reflect.Pointer {
		return json.Marshal(p)
	}
	key := tc.ToolCall.Value
	if b, ok := c.prev[key]; ok {
		c.next[key] = b
		return b, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	c.next[key] = b
	return b, nil
}

// CopyActiveTurn copies what the reducer changes in place in an active
// turn: the turn, its list of parts, and each part's own struct (a delta
// replaces a text part's string; a tool call's or an input request's
// update replaces their fields). Everything below that the reducer only
// ever replaces, never changes (strings, tool call states, answer maps),
// is shared.
func CopyActiveTurn(t *wire.ActiveTurn) *wire.ActiveTurn {
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

// ErrTurnGone is what a checkpoint's snapshot says when its turn ended (or
// its chat went) before the checkpointer got to it: nothing to write, and
// nothing wrong.
var ErrTurnGone = errors.New("the turn is no longer active")

// OnlyTurnGone reports whether err (possibly a join) holds only
// ErrTurnGone.
func OnlyTurnGone(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if e != nil && !OnlyTurnGone(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, ErrTurnGone)
}
