package ws

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
)

// readErrServer reports the error that ended each connection's reads.
type readErrServer struct{ errs chan error }

func (s readErrServer) ServeConn(ctx context.Context, c transport.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	for {
		if _, err := c.ReadMessage(); err != nil {
			s.errs <- err
			return err
		}
	}
}

// syncBuffer is a log sink read by the test while the handler writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestPeerCloseCodes(t *testing.T) {
	cases := []struct {
		name  string
		close func(c *websocket.Conn) error
		eof   bool
	}{
		{"1000 normal closure", closeWith(websocket.CloseNormalClosure), true},
		{"1001 going away", closeWith(websocket.CloseGoingAway), true},
		{"1005 no status (a browser's close())", func(c *websocket.Conn) error {
			return c.WriteControl(websocket.CloseMessage, []byte{}, time.Now().Add(time.Second))
		}, true},
		{"1011 internal error", closeWith(websocket.CloseInternalServerErr), false},
		{"4000 application code", closeWith(4000), false},
		{"socket dropped without a close frame", func(c *websocket.Conn) error {
			return c.NetConn().(*net.TCPConn).SetLinger(0)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			srvErrs := readErrServer{errs: make(chan error, 1)}
			h := NewHandler(srvErrs, Options{PingInterval: -1, Logger: zerolog.New(&logs).Level(zerolog.DebugLevel)})
			srv := httptest.NewServer(h)
			t.Cleanup(func() {
				h.Close()
				srv.Close()
			})
			c, resp, err := websocket.DefaultDialer.Dial(wsURL(srv, ""), nil)
			require.NoError(t, err)
			resp.Body.Close()
			require.NoError(t, tc.close(c))
			require.NoError(t, c.Close())

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var got error
			select {
			case got = <-srvErrs.errs:
			case <-ctx.Done():
				t.Fatal("the server's read did not end")
			}
			if tc.eof {
				assert.ErrorIs(t, got, io.EOF)
				assert.Contains(t, logs.String(), `"level":"debug"`)
				assert.Contains(t, logs.String(), "the WebSocket peer closed the connection")
			} else {
				require.Error(t, got)
				assert.False(t, errors.Is(got, io.EOF), "%v must stay an error, not a clean end", got)
			}
		})
	}
}

func closeWith(code int) func(c *websocket.Conn) error {
	return func(c *websocket.Conn) error {
		return c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, "bye"), time.Now().Add(time.Second))
	}
}
