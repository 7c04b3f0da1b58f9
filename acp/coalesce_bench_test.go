package acp

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

func TestCoalescer(t *testing.T) {
	big := string(make([]byte, coalesceMaxBytes))
	tests := []struct {
		name string
		in   []backend.Event // nil: end of a drain (flush)
		want []backend.Event
	}{
		{"a run of text is merged",
			[]backend.Event{backend.TextChunk{Text: "a"}, backend.TextChunk{Text: "b"}, backend.TextChunk{Text: "c"}, nil},
			[]backend.Event{backend.TextChunk{Text: "abc"}}},
		{"other events end a run and keep their place",
			[]backend.Event{backend.TextChunk{Text: "a"}, backend.Plan{}, backend.TextChunk{Text: "b"}, nil},
			[]backend.Event{backend.TextChunk{Text: "a"}, backend.Plan{}, backend.TextChunk{Text: "b"}}},
		{"text and thoughts are not mixed",
			[]backend.Event{backend.ThoughtChunk{Text: "t1"}, backend.ThoughtChunk{Text: "t2"}, backend.TextChunk{Text: "a"}, backend.ThoughtChunk{Text: "t3"}, nil},
			[]backend.Event{backend.ThoughtChunk{Text: "t1t2"}, backend.TextChunk{Text: "a"}, backend.ThoughtChunk{Text: "t3"}}},
		{"a drain's end ends a run",
			[]backend.Event{backend.TextChunk{Text: "a"}, nil, backend.TextChunk{Text: "b"}, nil},
			[]backend.Event{backend.TextChunk{Text: "a"}, backend.TextChunk{Text: "b"}}},
		{"nothing held, nothing flushed", []backend.Event{nil, nil}, nil},
		{"the byte bound ends a run",
			[]backend.Event{backend.TextChunk{Text: "a"}, backend.TextChunk{Text: big}, backend.TextChunk{Text: "b"}, nil},
			[]backend.Event{backend.TextChunk{Text: "a" + big}, backend.TextChunk{Text: "b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []backend.Event
			c := coalescer{emit: func(ev backend.Event) { got = append(got, ev) }}
			for _, ev := range tc.in {
				if ev == nil {
					c.flush()
				} else {
					c.add(ev)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCoalescerChunkBound(t *testing.T) {
	var got []backend.Event
	c := coalescer{emit: func(ev backend.Event) { got = append(got, ev) }}
	for range coalesceMaxChunks + 1 {
		c.add(backend.TextChunk{Text: "x"})
	}
	c.flush()
	assert.Equal(t, []backend.Event{
		backend.TextChunk{Text: repeatX(coalesceMaxChunks)},
		backend.TextChunk{Text: "x"},
	}, got)
}

func repeatX(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}
