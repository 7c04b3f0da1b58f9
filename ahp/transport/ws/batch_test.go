package ws

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
)

// batchSizes cross every length encoding of a frame header (7-bit, 16-bit
// and 64-bit lengths) at their edges.
var batchSizes = []int{0, 1, 125, 126, 127, 0xffff, 0x10000, 70000}

// batchServer answers each message with the batch of batchSizes messages,
// written with one WriteMessages, again and again for n rounds.
type batchServer struct{ rounds int }

func (s batchServer) ServeConn(ctx context.Context, c transport.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if _, err := c.ReadMessage(); err != nil {
		return err
	}
	// The writes go on while this goroutine keeps reading (the client's
	// pongs) and another one sends pings the way the keep-alive timer
	// does, as often as it can.
	done := make(chan error, 1)
	written := make(chan struct{}) // closed when the writer is done
	pinging := make(chan struct{})
	go func() {
		defer close(pinging)
		for {
			select {
			case <-written:
				return
			default:
			}
			if c.(*Conn).ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)) != nil {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	go func() {
		defer close(written)
		for r := range s.rounds {
			msgs := make([][]byte, len(batchSizes))
			for i, n := range batchSizes {
				msgs[i] = bytes.Repeat([]byte{byte('a' + (r+i)%26)}, n)
			}
			if err := c.(transport.BatchWriter).WriteMessages(msgs); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	defer func() { <-pinging }()
	for {
		if _, err := c.ReadMessage(); err != nil {
			_ = c.Close()
			if err2 := <-done; err2 != nil {
				return err2
			}
			return err
		}
	}
}

// A batch arrives as the same messages, in order, whatever their lengths;
// pings written by gorilla from another goroutine meanwhile (as the
// keep-alive timer writes them) never land inside a batch.
func TestWriteMessages(t *testing.T) {
	const rounds = 200
	h := NewHandler(batchServer{rounds: rounds}, Options{PingInterval: -1})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	c, resp, err := websocket.DefaultDialer.Dial(wsURL(srv, ""), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer c.Close()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("go")))
	for r := range rounds {
		for i, n := range batchSizes {
			typ, m, err := c.ReadMessage()
			require.NoError(t, err, "round %d, message %d", r, i)
			assert.Equal(t, websocket.TextMessage, typ)
			want := bytes.Repeat([]byte{byte('a' + (r+i)%26)}, n)
			if !bytes.Equal(want, m) {
				require.Fail(t, fmt.Sprintf("round %d, message %d: got %d bytes, want %d", r, i, len(m), n))
			}
		}
	}
}

func TestAppendFrameHeader(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x81, 0}},
		{125, []byte{0x81, 125}},
		{126, []byte{0x81, 126, 0, 126}},
		{0xffff, []byte{0x81, 126, 0xff, 0xff}},
		{0x10000, []byte{0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
	} {
		assert.Equal(t, tc.want, appendFrameHeader(nil, tc.n), "n=%d", tc.n)
		assert.LessOrEqual(t, len(tc.want), maxFrameHeader)
	}
}
