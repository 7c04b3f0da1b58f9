package ws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	goleak.VerifyTestMain(m)
}

// echoServer answers every message with the same bytes.
type echoServer struct {
	mu     sync.Mutex
	served int
}

func (e *echoServer) ServeConn(ctx context.Context, c transport.Conn) error {
	e.mu.Lock()
	e.served++
	e.mu.Unlock()
	go func() {
		<-ctx.Done()
		_ = c.Close()
	}()
	for {
		m, err := c.ReadMessage()
		if err != nil {
			return err
		}
		if err := c.WriteMessage(m); err != nil {
			return err
		}
	}
}

func newServer(t *testing.T, opts Options) (*httptest.Server, *Handler) {
	h := NewHandler(&echoServer{}, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return srv, h
}

func wsURL(srv *httptest.Server, query string) string {
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/" + query
}

func TestAuthAndOrigin(t *testing.T) {
	srv, _ := newServer(t, Options{Token: "tok", AllowedOrigins: []string{"https://ok.example"}, PingInterval: -1})
	cases := []struct {
		name   string
		query  string
		header http.Header
		status int
	}{
		{"no token", "", nil, http.StatusUnauthorized},
		{"wrong token", "?tkn=nope", nil, http.StatusUnauthorized},
		{"wrong bearer", "", http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"token prefix only", "?tkn=to", nil, http.StatusUnauthorized},
		{"query token", "?tkn=tok", nil, http.StatusSwitchingProtocols},
		{"bearer token", "", http.Header{"Authorization": {"Bearer tok"}}, http.StatusSwitchingProtocols},
		{"refused origin", "?tkn=tok", http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"allowed origin", "?tkn=tok", http.Header{"Origin": {"https://OK.example:443"}}, http.StatusSwitchingProtocols},
		{"refused origin before token check still 401 without token", "", http.Header{"Origin": {"https://evil.example"}}, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := websocket.DefaultDialer.Dial(wsURL(srv, tc.query), tc.header)
			require.NotNil(t, resp)
			defer resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			if tc.status == http.StatusSwitchingProtocols {
				require.NoError(t, err)
				require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"x":1}`)))
				_, m, err := c.ReadMessage()
				require.NoError(t, err)
				assert.Equal(t, `{"x":1}`, string(m))
				c.Close()
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestNoTokenMode(t *testing.T) {
	srv, _ := newServer(t, Options{PingInterval: -1})
	c, resp, err := websocket.DefaultDialer.Dial(wsURL(srv, ""), nil)
	require.NoError(t, err)
	resp.Body.Close()
	c.Close()
}

func TestPlainHTTPIsRefused(t *testing.T) {
	srv, _ := newServer(t, Options{PingInterval: -1})
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUpgradeRequired, resp.StatusCode)
}

func TestMaxFrameSizeClosesConnection(t *testing.T) {
	srv, _ := newServer(t, Options{MaxMessageSize: 1024, PingInterval: -1})
	c, resp, err := websocket.DefaultDialer.Dial(wsURL(srv, ""), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer c.Close()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("a", 1000))))
	_, m, err := c.ReadMessage()
	require.NoError(t, err)
	assert.Len(t, m, 1000)
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("a", 2000))))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, _, err = c.ReadMessage()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "timeout")
}

func TestHandlerCloseEndsConnections(t *testing.T) {
	srv, h := newServer(t, Options{PingInterval: 20 * time.Millisecond})
	c, resp, err := websocket.DefaultDialer.Dial(wsURL(srv, ""), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer c.Close()
	// Pings keep flowing; the default client answers them while reading.
	time.Sleep(60 * time.Millisecond)
	h.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, _, err = c.ReadMessage()
	require.Error(t, err)
	assert.True(t, websocket.IsCloseError(err, websocket.CloseNormalClosure) || !strings.Contains(err.Error(), "timeout"), err.Error())
}

func TestNormalizeOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://Example.com":      "https://example.com",
		"https://example.com:443":  "https://example.com",
		"http://localhost:8080/":   "http://localhost:8080",
		"http://example.com:80":    "http://example.com",
		"vscode-webview://abc-123": "vscode-webview://abc-123",
	} {
		got, ok := normalizeOrigin(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	_, ok := normalizeOrigin("null")
	assert.False(t, ok)
}
