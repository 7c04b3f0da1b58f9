package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// textRun joins the stored pieces of one string of a checkpoint, read in
// Offset order, into one CheckpointText.
type textRun struct {
	text  CheckpointText
	buf   strings.Builder
	start int
	gap   bool // a piece was missing: later ones cannot be placed
}

// add places a piece read from the store. Pieces overlap only if a write
// was repeated, in which case the later one wins from its offset on.
func (r *textRun) add(off int, text []byte) {
	end := r.start + r.buf.Len()
	switch {
	case r.gap:
	case r.buf.Len() == 0 && off >= r.start:
		r.start = off
		r.buf.Write(text)
	case off == end:
		r.buf.Write(text)
	case off > end:
		r.gap = true
	default:
		kept := r.buf.String()[:max(0, off-r.start)]
		var b strings.Builder
		b.Grow(len(kept) + len(text))
		b.WriteString(kept)
		b.Write(text)
		r.buf = b
	}
}

func (r *textRun) done() CheckpointText {
	r.text.Offset, r.text.Text = r.start, r.buf.String()
	return r.text
}

// Merged returns the checkpoint's Data with its Texts placed in it: the
// whole active turn as one JSON document, for readers that do not know the
// host's format (export). The document's members come out sorted, which
// changes nothing of its meaning. A text whose pointer names no string in
// Data (its part is gone) is left out, like one that cannot be placed.
func (cp Checkpoint) Merged() (json.RawMessage, error) {
	if len(cp.Texts) == 0 {
		return cp.Data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(cp.Data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading the checkpoint of turn %s of chat %s: %w", cp.TurnID, cp.ChatURI, err)
	}
	for _, t := range cp.Texts {
		cur, set, err := pointAt(doc, t.Pointer)
		if err == nil && t.Offset <= len(cur) {
			set(cur[:t.Offset] + t.Text)
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the checkpoint of turn %s of chat %s: %w", cp.TurnID, cp.ChatURI, err)
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

// pointAt resolves an RFC 6901 pointer to a string inside doc, and returns
// it with a function that replaces it.
func pointAt(doc any, pointer string) (string, func(string), error) {
	if !strings.HasPrefix(pointer, "/") {
		return "", nil, fmt.Errorf("pointer %q does not start with /", pointer)
	}
	tokens := strings.Split(pointer[1:], "/")
	cur := doc
	var set func(any)
	for _, tok := range tokens {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return "", nil, fmt.Errorf("pointer %q: no member %q", pointer, tok)
			}
			set = func(x any) { v[tok] = x }
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return "", nil, fmt.Errorf("pointer %q: no element %q", pointer, tok)
			}
			set = func(x any) { v[i] = x }
			cur = v[i]
		default:
			return "", nil, fmt.Errorf("pointer %q: %q is inside neither an object nor an array", pointer, tok)
		}
	}
	s, ok := cur.(string)
	if !ok || set == nil {
		return "", nil, fmt.Errorf("pointer %q does not name a string", pointer)
	}
	return s, func(x string) { set(x) }, nil
}
