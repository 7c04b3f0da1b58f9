package store

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCursorsRoundTrip(t *testing.T) {
	c := encodeSessionCursor(-5, "copilot:/a:b/c?d")
	ns, uri, err := decodeSessionCursor(c)
	assert.NoError(t, err)
	assert.Equal(t, int64(-5), ns)
	assert.Equal(t, "copilot:/a:b/c?d", uri)

	idx, err := decodeTurnCursor(encodeTurnCursor(42))
	assert.NoError(t, err)
	assert.Equal(t, int64(42), idx)

	for _, bad := range []string{"", "!!", encodeTurnCursor(1), "czE6"} {
		_, _, err := decodeSessionCursor(bad)
		assert.ErrorIs(t, err, ErrBadCursor, bad)
	}
	for _, bad := range []string{"", "!!", encodeSessionCursor(1, "x"), encodeTurnCursor(0)} {
		_, err := decodeTurnCursor(bad)
		assert.ErrorIs(t, err, ErrBadCursor, bad)
	}
}

// Cursors come from clients: any string must decode to a cursor this store
// made or to ErrBadCursor, never to a panic or a different keyset.
func FuzzCursors(f *testing.F) {
	f.Add(encodeSessionCursor(1_780_000_000_123_456_789, "copilot:/s"))
	f.Add(encodeTurnCursor(7))
	f.Add("czE6MTox")
	f.Add("")
	f.Fuzz(func(t *testing.T, c string) {
		if ns, uri, err := decodeSessionCursor(c); err == nil {
			if encodeSessionCursor(ns, uri) != c {
				// Base64 has several spellings of some inputs; the
				// decoded keyset must still re-encode to itself.
				ns2, uri2, err := decodeSessionCursor(encodeSessionCursor(ns, uri))
				if err != nil || ns2 != ns || uri2 != uri {
					t.Fatalf("session cursor %q does not round-trip", c)
				}
			}
		} else if !errors.Is(err, ErrBadCursor) {
			t.Fatalf("session cursor %q: unexpected error %v", c, err)
		}
		if idx, err := decodeTurnCursor(c); err == nil {
			if idx < 1 {
				t.Fatalf("turn cursor %q decodes to index %d", c, idx)
			}
		} else if !errors.Is(err, ErrBadCursor) {
			t.Fatalf("turn cursor %q: unexpected error %v", c, err)
		}
	})
}
