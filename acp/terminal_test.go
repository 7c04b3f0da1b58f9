package acp

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTerminalAppendKeepsTheTail feeds a terminal four times its limit in
// small chunks: it keeps the last limit bytes, cut at a character boundary,
// and copies about as much as it is given rather than the kept bytes once
// per chunk (which made 20 MiB through a 16 MiB limit copy gigabytes).
func TestTerminalAppendKeepsTheTail(t *testing.T) {
	const limit = 1 << 20
	const chunk = 4 << 10
	term := &terminal{limit: limit}
	// "é" is two bytes and chunk is even, so every chunk starts at a
	// character; the cut must still land on one.
	unit := []byte(strings.Repeat("é", chunk/2))
	var all bytes.Buffer
	all.Grow(4*limit + chunk) // its own growth is not the terminal's

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; all.Len() < 4*limit; i++ {
		unit[0], unit[1] = "é"[0], "é"[1]
		if i%7 == 0 {
			copy(unit, "ab") // vary the content so a wrong cut shows
		}
		term.append(unit)
		all.Write(unit)
	}
	runtime.ReadMemStats(&after)

	require.True(t, term.truncated)
	require.True(t, utf8.Valid(term.buf), "the kept output starts at a character")
	assert.LessOrEqual(t, len(term.buf), limit)
	assert.Greater(t, len(term.buf), limit-utf8.UTFMax)
	assert.True(t, bytes.HasSuffix(all.Bytes(), term.buf), "the kept output is the tail of what was written")
	allocated := after.TotalAlloc - before.TotalAlloc
	// Copying the kept bytes per chunk allocates limit per chunk, 768 MiB
	// here; growing by append allocates a few times what is written.
	assert.Less(t, allocated, uint64(16*all.Len()),
		"appending %d bytes allocated %d: the kept bytes are copied per chunk again", all.Len(), allocated)
}

// BenchmarkTerminalAppendPastLimit is a command printing 20 MiB into a
// terminal kept at the 16 MiB maximum, in the 32 KiB reads of readTerminal.
func BenchmarkTerminalAppendPastLimit(b *testing.B) {
	data := bytes.Repeat([]byte("x"), 32<<10)
	const total = 20 << 20
	b.SetBytes(total)
	for b.Loop() {
		term := &terminal{limit: maxOutputLimit}
		for n := 0; n < total; n += len(data) {
			term.append(data)
		}
	}
}
