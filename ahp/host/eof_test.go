package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

var errPipeClosed = errors.New("pipedConn: closed")

// pipedConn plays a shell pipeline: `printf '<requests>' | ahp-bridge
// serve --stdio`. Its reads return the scripted requests and then io.EOF;
// its writes complete only once the input has ended (the pipeline's reader
// is slower than the writer of the requests), or never when stalled (a
// peer that stops reading).
type pipedConn struct {
	in      [][]byte
	stalled bool

	eofOnce   sync.Once
	eof       chan struct{} // closed when ReadMessage first returns io.EOF
	closeOnce sync.Once
	closed    chan struct{}

	mu  sync.Mutex
	out [][]byte
}

func newPipedConn(stalled bool, in ...string) *pipedConn {
	c := &pipedConn{stalled: stalled, eof: make(chan struct{}), closed: make(chan struct{})}
	for _, m := range in {
		c.in = append(c.in, []byte(m))
	}
	return c
}

func (c *pipedConn) ReadMessage() ([]byte, error) {
	if len(c.in) > 0 {
		m := c.in[0]
		c.in = c.in[1:]
		return m, nil
	}
	c.eofOnce.Do(func() { close(c.eof) })
	return nil, io.EOF
}

func (c *pipedConn) WriteMessage(msg []byte) error {
	select {
	case <-c.eof:
	case <-c.closed:
		return errPipeClosed
	}
	if c.stalled {
		<-c.closed
		return errPipeClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, append([]byte(nil), msg...))
	return nil
}

func (c *pipedConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// replies returns the responses written, by request id.
func (c *pipedConn) replies(t *testing.T) map[string]rpcMsg {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := map[string]rpcMsg{}
	for _, b := range c.out {
		var m rpcMsg
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		if m.isResponse() {
			got[string(m.ID)] = m
		}
	}
	return got
}

// gatedCompletions answers completions only once the connection's input
// has ended, so the answer is still being worked on when the peer leaves.
type gatedCompletions struct {
	*fakeHandler
	open <-chan struct{}
}

func (b gatedCompletions) Completions(ctx context.Context, p wire.CompletionsParams) (wire.CompletionsResult, error) {
	select {
	case <-b.open:
	case <-ctx.Done():
		return wire.CompletionsResult{}, ctx.Err()
	}
	return b.fakeHandler.Completions(ctx, p)
}

func serveUntilDone(t *testing.T, h *Host, c Conn) error {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.ServeConn(ctx, c) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// ServeConn ends on ctx too; wait for it so nothing leaks.
		<-done
		t.Fatal("ServeConn did not return after its input ended")
		return nil
	}
}

func TestPipedInputGetsEveryReply(t *testing.T) {
	h := New(Options{Agents: []wire.AgentInfo{fakeAgent}})
	fb := newFakeHandler(t, h)
	c := newPipedConn(false,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.7.0"],"clientId":"pipe","initialSubscriptions":["ahp-root://"]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"createSession","params":{"channel":"ahp-session:/s1","provider":"fake"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"listSessions","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"completions","params":{"channel":"ahp-chat://default/YWhwLXNlc3Npb246L3Mx","kind":"userMessage","text":"/","offset":1}}`,
		`{"jsonrpc":"2.0","id":6,"method":"resourceRead","params":{"channel":"ahp-root://","uri":"ahp-test:/hello.txt"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"noSuchMethod","params":{"channel":"ahp-root://"}}`,
	)
	h.SetHandler(gatedCompletions{fakeHandler: fb, open: c.eof})
	defer fb.wait()
	defer h.Close()

	require.NoError(t, serveUntilDone(t, h, c), "a clean end of input is a clean disconnect")

	got := c.replies(t)
	for id := 1; id <= 7; id++ {
		m, ok := got[fmt.Sprint(id)]
		if assert.True(t, ok, "no reply to request %d; written: %d frames", id, len(c.out)) && id < 7 {
			assert.Nil(t, m.Error, "request %d: %s", id, m.raw)
		}
	}
	var rr wire.ResourceReadResult
	require.NoError(t, json.Unmarshal(got["6"].Result, &rr))
	assert.Equal(t, "hello", rr.Data)
	assert.Equal(t, CodeMethodNotFound, got["7"].Error.Code)
	assert.Equal(t, 0, h.Stats().Connections)
	select {
	case <-c.closed:
	default:
		t.Error("the transport was not closed after the replies were written")
	}
}

func TestDrainGivesUpOnAPeerThatNeverReads(t *testing.T) {
	h := New(Options{DrainTimeout: 20 * time.Millisecond})
	h.SetHandler(newFakeHandler(t, h))
	defer h.Close()
	c := newPipedConn(true,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"channel":"ahp-root://"}}`,
	)
	require.NoError(t, serveUntilDone(t, h, c))
	assert.Empty(t, c.replies(t))
	assert.Equal(t, 0, h.Stats().Connections)
}

func TestDrainGivesUpOnARequestThatNeverEnds(t *testing.T) {
	h := New(Options{DrainTimeout: 20 * time.Millisecond})
	fb := newFakeHandler(t, h)
	never := make(chan struct{}) // the completion is released only by the connection's end
	h.SetHandler(gatedCompletions{fakeHandler: fb, open: never})
	defer h.Close()
	c := newPipedConn(false,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.7.0"],"clientId":"pipe"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"completions","params":{"channel":"ahp-root://","kind":"userMessage","text":"/","offset":1}}`,
	)
	require.NoError(t, serveUntilDone(t, h, c))
	got := c.replies(t)
	assert.NotContains(t, got, "2", "the hung request has no answer to write")
	assert.Equal(t, 0, h.Stats().Connections)
}

func TestCleanWebSocketCloseIsNotAReadFailure(t *testing.T) {
	for _, code := range []int{websocket.CloseNormalClosure, websocket.CloseGoingAway} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var logs lockedBuffer
			hs := newHarness(t, Options{Logger: zerolog.New(&logs)})
			c := hs.dialRaw(t)
			defer c.Close()
			// The handler serves the connection from a goroutine of its own.
			eventually(t, "the connection is served", func() bool { return hs.h.Stats().Connections == 1 })
			require.NoError(t, c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(testTimeout)))
			eventually(t, "the connection is closed", func() bool { return strings.Contains(logs.String(), "closing AHP connection") })
			assert.Contains(t, logs.String(), "the client disconnected")
			assert.NotContains(t, logs.String(), "read failed")
		})
	}
}

// lockedBuffer is a log sink read while connections write to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
