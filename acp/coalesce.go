package acp

import (
	"strings"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// Bounds of one coalesced chunk: a run of queued chunks is merged only up
// to these, so the first chunk of a run waits for at most this much
// decoding (well under a millisecond) before it is passed on.
const (
	coalesceMaxChunks = 256
	coalesceMaxBytes  = 32 << 10
)

// coalescer merges consecutive text chunks (TextChunk, or ThoughtChunk)
// that were queued in the same drain of the session's event queue — that
// is, that arrived while the sink was still busy with earlier events — into
// one event. The mapping appends every chunk of a run to the same open
// response part, so one session/delta carrying "ab" leaves exactly the
// state that deltas "a" then "b" leave, while the host sequences, reduces,
// encodes and writes one envelope instead of two. It adds no waiting: a
// run ends at the end of a drain, at any other event, and at the bounds
// above. Used only by the queue goroutine.
type coalescer struct {
	emit    func(backend.Event)
	thought bool // the run is of ThoughtChunks
	// parts are the run's texts, joined once at flush with one
	// allocation of the exact size (a strings.Builder grown chunk by
	// chunk allocated about four times the text over a long response); a
	// run of one chunk passes its text on without a copy.
	parts []string
	size  int // total length of parts
}

// add passes ev on, or holds it to merge it with the chunks that follow.
func (c *coalescer) add(ev backend.Event) {
	var text string
	var thought bool
	switch e := ev.(type) {
	case backend.TextChunk:
		text = e.Text
	case backend.ThoughtChunk:
		text, thought = e.Text, true
	default:
		c.flush()
		c.emit(ev)
		return
	}
	if len(c.parts) > 0 && thought != c.thought {
		c.flush()
	}
	c.thought = thought
	c.parts = append(c.parts, text)
	c.size += len(text)
	if len(c.parts) >= coalesceMaxChunks || c.size >= coalesceMaxBytes {
		c.flush()
	}
}

// flush passes on the held run, if any.
func (c *coalescer) flush() {
	if len(c.parts) == 0 {
		return
	}
	text := c.parts[0]
	if len(c.parts) > 1 {
		var b strings.Builder
		b.Grow(c.size)
		for _, p := range c.parts {
			b.WriteString(p)
		}
		text = b.String()
	}
	clear(c.parts) // the texts now belong to the event
	c.parts, c.size = c.parts[:0], 0
	if c.thought {
		c.emit(backend.ThoughtChunk{Text: text})
	} else {
		c.emit(backend.TextChunk{Text: text})
	}
}
