package stdio

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	goleak.VerifyTestMain(m)
}

func TestReadMessages(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []string
		err   error
	}{
		{"one per line", "{\"a\":1}\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"crlf and blank lines", "{\"a\":1}\r\n\n  \n{\"b\":2}\r\n", []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"last line without newline", "{\"a\":1}\n{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}, io.EOF},
		{"too large", strings.Repeat("x", 20) + "\n", nil, ErrMessageTooLarge},
		{"at the limit", strings.Repeat("x", 16) + "\n", []string{strings.Repeat("x", 16)}, io.EOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(strings.NewReader(tc.input), io.Discard, Options{MaxMessageSize: 16})
			if tc.name != "too large" && tc.name != "at the limit" {
				c = New(strings.NewReader(tc.input), io.Discard, Options{})
			}
			var got []string
			for {
				m, err := c.ReadMessage()
				if err != nil {
					assert.True(t, errors.Is(err, tc.err), "got %v", err)
					break
				}
				got = append(got, string(m))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestWriteMessageFraming(t *testing.T) {
	var out bytes.Buffer
	c := New(strings.NewReader(""), &out, Options{})
	require.NoError(t, c.WriteMessage([]byte(`{"a":1}`)))
	require.NoError(t, c.WriteMessage([]byte("{\n  \"b\": 2\n}")))
	assert.Equal(t, "{\"a\":1}\n{\"b\":2}\n", out.String())
	require.Error(t, c.WriteMessage([]byte("not\njson")))
}

func TestCloseUnblocksRead(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c := New(r, io.Discard, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := c.ReadMessage()
		done <- err
	}()
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.ErrorIs(t, <-done, ErrClosed)
	assert.ErrorIs(t, c.WriteMessage([]byte("{}")), ErrClosed)
}
