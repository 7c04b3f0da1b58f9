package fakeagentchan

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	goleak.VerifyTestMain(m)
}

func dial(t *testing.T, url string, protos ...string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: protos, HandshakeTimeout: 2 * time.Second}
	c, resp, err := d.Dial(url, nil)
	require.NoError(t, err)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readFrame(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	_, data, err := c.ReadMessage()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func send(t *testing.T, c *websocket.Conn, v map[string]any) {
	t.Helper()
	require.NoError(t, c.WriteJSON(v))
}

func TestAuth(t *testing.T) {
	s := New(Options{Token: "tok"})
	defer s.Close()

	dial(t, s.URL()+"?token=tok")
	c := dial(t, s.URL(), "Bearer", "tok")
	assert.Equal(t, "Bearer", c.Subprotocol())

	for _, tc := range []struct {
		url    string
		protos []string
	}{
		{s.URL(), nil},
		{s.URL() + "?token=nope", nil},
		{s.URL(), []string{"Bearer", "nope"}},
		{s.URL(), []string{"tok"}},
	} {
		d := websocket.Dialer{Subprotocols: tc.protos}
		_, resp, err := d.Dial(tc.url, nil)
		require.Error(t, err, tc)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		resp.Body.Close()
	}
	require.True(t, s.WaitFor(2*time.Second, func() bool { return s.Connections() == 2 }))
	assert.Equal(t, 4, s.Rejected())
	assert.ElementsMatch(t, []string{"query", "subprotocol"}, s.AuthModes())
	assert.Equal(t, 2, s.Connections())

	s.SetRefusing(true)
	_, resp, err := websocket.DefaultDialer.Dial(s.URL()+"?token=tok", nil)
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	resp.Body.Close()
	assert.Equal(t, 1, s.Refused())
	s.SetRefusing(false)
	dial(t, s.URL()+"?token=tok")
}

func TestScriptPlaysAndRecords(t *testing.T) {
	s := New(Options{Script: func(p ClientFrame) []Step {
		return []Step{
			Text("hi " + p.String("prompt")),
			SendNoTask(map[string]any{"type": "thinking", "content": "no id"}),
			OtherChannel("terminal", "output"),
			Permission("approval_request", "r1", "", "ok?"),
			Await("approve", "reject"),
			Result("done"),
		}
	}})
	defer s.Close()
	c := dial(t, s.URL())
	send(t, c, map[string]any{"channel": "agent", "type": "prompt", "prompt": "there", "taskId": "t1"})

	assert.Equal(t, map[string]any{"channel": "agent", "type": "text", "content": "hi there", "taskId": "t1"}, readFrame(t, c))
	assert.Equal(t, map[string]any{"channel": "agent", "type": "thinking", "content": "no id"}, readFrame(t, c))
	assert.Equal(t, "terminal", readFrame(t, c)["channel"])
	assert.Equal(t, map[string]any{"channel": "agent", "type": "approval_request", "requestId": "r1", "message": "ok?", "taskId": "t1"}, readFrame(t, c))

	// Nothing comes until the script's Await is satisfied; frames of other
	// types or channels do not satisfy it.
	send(t, c, map[string]any{"channel": "files", "type": "approve"})
	send(t, c, map[string]any{"channel": "agent", "type": "settings", "model": "m"})
	require.NoError(t, c.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, _, err := c.ReadMessage()
	require.Error(t, err, "the script must still be waiting")

	c2 := dial(t, s.URL())
	send(t, c2, map[string]any{"channel": "agent", "type": "reject", "requestId": "r1"})
	require.True(t, s.WaitFor(2*time.Second, func() bool { return len(s.ReceivedOfType("reject")) == 1 }))
	assert.Equal(t, 2, s.ReceivedOfType("reject")[0].Conn)

	// The timed-out read broke c; check the recording instead of reading on.
	got := s.Received()
	require.Len(t, got, 4)
	assert.Equal(t, "prompt", got[0].Type)
	assert.Equal(t, "t1", got[0].String("taskId"))
	assert.Equal(t, "files", got[1].Channel)
	assert.True(t, got[2].Has("model"))
	assert.False(t, got[2].Has("provider"))
}

func TestAwaitAndDrop(t *testing.T) {
	s := New(Options{Script: func(ClientFrame) []Step {
		return []Step{Await("abort"), Text("late"), Drop()}
	}})
	defer s.Close()
	c := dial(t, s.URL())
	send(t, c, map[string]any{"channel": "agent", "type": "prompt", "prompt": "x", "taskId": "t1"})
	send(t, c, map[string]any{"channel": "agent", "type": "abort", "taskId": "t1"})
	assert.Equal(t, "late", readFrame(t, c)["content"])
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	_, _, err := c.ReadMessage()
	require.Error(t, err)
	assert.False(t, websocket.IsCloseError(err, websocket.CloseNormalClosure), "a drop sends no close frame")
}

func TestDefaultScriptOnConnectPushAndOversize(t *testing.T) {
	s := New(Options{OnConnect: func(n int) []Step {
		return []Step{SendNoTask(map[string]any{"type": "text", "content": "welcome"})}
	}})
	defer s.Close()
	c := dial(t, s.URL())
	c.SetReadLimit(4 << 20)
	assert.Equal(t, map[string]any{"channel": "agent", "type": "text", "content": "welcome"}, readFrame(t, c))
	send(t, c, map[string]any{"channel": "agent", "type": "prompt", "prompt": "x", "taskId": "t9"})
	assert.Equal(t, map[string]any{"channel": "agent", "type": "result", "summary": "done", "taskId": "t9"}, readFrame(t, c))

	require.NoError(t, s.Push(Oversize(2<<20)))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	_, data, err := c.ReadMessage()
	require.NoError(t, err)
	assert.Len(t, data, 2<<20)
	assert.True(t, json.Valid(data))

	require.Error(t, s.Push(Await("x")), "Await needs a script")
	s.DropAll()
	require.True(t, s.WaitFor(2*time.Second, func() bool { return s.Push(Text("x")) != nil }))
}

func TestSilenceStopsPongs(t *testing.T) {
	s := New(Options{Script: func(ClientFrame) []Step { return []Step{Silence(), Text("quiet now")} }})
	defer s.Close()
	c := dial(t, s.URL())
	pongs := make(chan struct{}, 10)
	c.SetPongHandler(func(string) error { pongs <- struct{}{}; return nil })

	ping := func() {
		require.NoError(t, c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)))
	}
	ping()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	send(t, c, map[string]any{"channel": "agent", "type": "prompt", "prompt": "x", "taskId": "t1"})
	_, data, err := c.ReadMessage() // the pong is handled inside ReadMessage
	require.NoError(t, err)
	assert.Contains(t, string(data), "quiet now")
	require.Len(t, pongs, 1, "answered before Silence")

	ping()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	_, _, err = c.ReadMessage()
	require.Error(t, err)
	assert.Len(t, pongs, 1, "no pong after Silence")
}

func TestServerPings(t *testing.T) {
	s := New(Options{PingInterval: 20 * time.Millisecond})
	defer s.Close()
	c := dial(t, s.URL())
	pings := make(chan struct{}, 100)
	c.SetPingHandler(func(string) error { pings <- struct{}{}; return nil })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, _, _ = c.ReadMessage()
	assert.GreaterOrEqual(t, len(pings), 2)
}
