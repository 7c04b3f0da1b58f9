package stdio

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteMessageFromFraming(t *testing.T) {
	var out bytes.Buffer
	c := New(strings.NewReader(""), &out, Options{})
	require.NoError(t, c.WriteMessageFrom(func(w io.Writer) error {
		for _, piece := range []string{`{"a":`, `"`, strings.Repeat("x", 100), `"}`} {
			if _, err := io.WriteString(w, piece); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, c.WriteMessage([]byte(`{"b":2}`)))
	assert.Equal(t, `{"a":"`+strings.Repeat("x", 100)+"\"}\n{\"b\":2}\n", out.String())

	// A raw newline would split the message: the write fails.
	out.Reset()
	err := c.WriteMessageFrom(func(w io.Writer) error {
		_, err := io.WriteString(w, "{\n}")
		return err
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "newline")
	assert.Empty(t, out.String())

	// The producer's own failure is returned as it is.
	boom := errors.New("boom")
	assert.ErrorIs(t, c.WriteMessageFrom(func(io.Writer) error { return boom }), boom)

	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.WriteMessageFrom(func(io.Writer) error { return nil }), ErrClosed)
}
