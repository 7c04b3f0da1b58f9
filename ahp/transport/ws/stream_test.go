package ws

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
)

// streamServer answers every message with a message of n pieces of the
// same bytes, produced through WriteMessageFrom, then fails the producer
// of a message "fail".
type streamServer struct{ pieces int }

func (s streamServer) ServeConn(ctx context.Context, c transport.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	sw := c.(transport.StreamWriter)
	for {
		m, err := c.ReadMessage()
		if err != nil {
			return err
		}
		err = sw.WriteMessageFrom(func(w io.Writer) error {
			if string(m) == "fail" {
				_, _ = w.Write([]byte("half"))
				return errors.New("the producer failed")
			}
			for range s.pieces {
				if _, err := w.Write(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

func TestWriteMessageFrom(t *testing.T) {
	h := NewHandler(streamServer{pieces: 300}, Options{PingInterval: -1})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	c, resp, err := websocket.DefaultDialer.Dial(wsURL(srv, ""), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))

	// 300 pieces of 1 KiB: larger than the write buffer, so the message
	// leaves in several frames and arrives as one message.
	piece := strings.Repeat("y", 1024)
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(piece)))
	typ, m, err := c.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, websocket.TextMessage, typ)
	assert.Equal(t, strings.Repeat(piece, 300), string(m))

	// A producer that fails leaves no message: the connection ends
	// without delivering the half-written one.
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("fail")))
	_, m, err = c.ReadMessage()
	require.Error(t, err, "got a message %q", m)
}
