package logfield

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFieldsAsWith: a logger from Str and Uint64 writes the fields that
// With would, including on loggers derived from it.
func TestFieldsAsWith(t *testing.T) {
	var buf bytes.Buffer
	l := Uint64(Str(zerolog.New(&buf), "session", "s1", "provider", "p"), "conn", 7)
	chat := l.With().Str("chat", "c1").Logger()
	chat.Info().Str("k", "v").Msg("hello")
	l.Debug().Msg("shown: the level is debug")
	info := l.Level(zerolog.InfoLevel)
	info.Debug().Msg("not shown")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var got map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &got))
	assert.Equal(t, map[string]any{"level": "info", "session": "s1", "provider": "p", "conn": float64(7), "chat": "c1", "k": "v",
		"message": "hello"}, got)
}
