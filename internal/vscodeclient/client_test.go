package vscodeclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedHost is a fake agent host that records what the client sends,
// per connection, and answers by method: enough to check the client's
// messages and their order without the bridge.
type scriptedHost struct {
	t *testing.T
	// forgetClients: a reconnect is answered -32008, as by a host that
	// restarted and never saw the client.
	forgetClients bool
	// actionBehind: a subscribe's answer is followed at once by an action
	// on the subscribed channel (a title change), as a busy host sends it.
	actionBehind bool

	mu    sync.Mutex
	conns int
	got   []received
}

type received struct {
	conn   int
	method string
	params map[string]any
}

func (h *scriptedHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("tkn") != "secret" {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	h.mu.Lock()
	h.conns++
	n := h.conns
	h.mu.Unlock()
	for {
		_, frame, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params map[string]any  `json:"params"`
		}
		require.NoError(h.t, json.Unmarshal(frame, &m))
		h.mu.Lock()
		h.got = append(h.got, received{conn: n, method: m.Method, params: m.Params})
		h.mu.Unlock()
		if len(m.ID) == 0 {
			continue
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		switch m.Method {
		case "initialize":
			reply["result"] = map[string]any{"protocolVersion": "0.9.0", "serverSeq": 3,
				"snapshots": []any{map[string]any{"resource": RootChannel, "fromSeq": 3, "state": map[string]any{"agents": []any{}}}}}
		case "reconnect":
			if h.forgetClients {
				reply["error"] = map[string]any{"code": CodeNotFound, "message": "client not found"}
			} else if seen, _ := m.Params["lastSeenServerSeq"].(float64); h.actionBehind && seen >= 4 {
				// The replay of what the client missed: the title it had
				// when it dropped, then a newer one (seq 5).
				reply["result"] = map[string]any{"type": "replay", "missing": []any{}, "actions": []any{
					titleEnvelope(m.Params, 5, "replayed")}}
			} else {
				reply["result"] = map[string]any{"type": "replay", "actions": []any{}, "missing": []any{}}
			}
		case "subscribe":
			ch, _ := m.Params["channel"].(string)
			reply["result"] = map[string]any{"snapshot": map[string]any{"resource": ch, "fromSeq": 3, "state": stateOf(ch)}}
		default:
			reply["result"] = nil
		}
		b, _ := json.Marshal(reply)
		if conn.WriteMessage(websocket.TextMessage, b) != nil {
			return
		}
		if h.actionBehind && m.Method == "reconnect" {
			// A live action right behind the replay (seq 6).
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "action", "params": titleEnvelope(m.Params, 6, "live")})
			if conn.WriteMessage(websocket.TextMessage, b) != nil {
				return
			}
		}
		if ch, _ := m.Params["channel"].(string); h.actionBehind && m.Method == "subscribe" && !strings.HasPrefix(ch, "ahp-chat:") {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "action", "params": map[string]any{
				"channel": ch, "serverSeq": 4, "action": map[string]any{"type": "session/titleChanged", "title": "right behind"}}})
			if conn.WriteMessage(websocket.TextMessage, b) != nil {
				return
			}
		}
	}
}

// stateOf is a minimal snapshot of a session or its default chat.
func stateOf(channel string) map[string]any {
	if strings.HasPrefix(channel, "ahp-chat:") {
		return map[string]any{"resource": channel, "title": "", "status": 1, "modifiedAt": "2026-11-28T00:00:00.000Z", "turns": []any{}}
	}
	chat := DefaultChatURI(channel)
	return map[string]any{"provider": "demo", "title": "", "status": 1, "lifecycle": "ready", "activeClients": []any{},
		"chats":       []any{map[string]any{"resource": chat, "title": "", "status": 1, "modifiedAt": "2026-11-28T00:00:00.000Z"}},
		"defaultChat": chat}
}

// sequence waits until the host has n messages and returns them.
func (h *scriptedHost) sequence(t *testing.T, n int) []received {
	t.Helper()
	var got []received
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		got = append([]received(nil), h.got...)
		return len(got) >= n
	}, 10*time.Second, 5*time.Millisecond, "the host received %d messages, wanted %d", len(got), n)
	return got
}

// describe is one message as "conn method [channel or action]".
func describe(r received) string {
	s := r.method
	if a, ok := r.params["action"].(map[string]any); ok {
		s += " " + a["type"].(string)
	}
	if ch, ok := r.params["channel"].(string); ok && r.method != "dispatchAction" {
		s += " " + ch
	}
	return s
}

const configPushes = 7 // root/configChanged dispatches after each handshake

func connectSequence() []string {
	out := []string{"initialize " + RootChannel}
	for i := 0; i < configPushes; i++ {
		out = append(out, "dispatchAction root/configChanged")
	}
	return append(out, "setClientManagedSettingsPermissions")
}

// TestConnectCreateOpenIsVSCodesSequence: initialize with VS Code's
// parameters, the config pushes with clientSeq 0, the managed settings
// notification, then createSession, subscribe(session) and
// subscribe(its default chat) in that order.
func TestConnectCreateOpenIsVSCodesSequence(t *testing.T) {
	h := &scriptedHost{t: t}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{Address: strings.Replace(srv.URL, "http://", "ws://", 1) + "?tkn=secret", ClientID: "client-1"})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Connect(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0.9.0", c.Negotiated())
	session, err := c.CreateSession(ctx, "demo", []string{"/work/project"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(session, "ahp-session:/"), "a conforming host gets the newest client's names: %s", session)
	chat, err := c.OpenSession(ctx, session)
	require.NoError(t, err)
	assert.Equal(t, DefaultChatURI(session), chat)

	want := append(connectSequence(), "createSession "+session, "subscribe "+session, "subscribe "+chat)
	got := h.sequence(t, len(want))
	var seq []string
	for _, r := range got {
		seq = append(seq, describe(r))
	}
	assert.Equal(t, want, seq)

	init := got[0].params
	assert.Equal(t, []any{"0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, init["protocolVersions"])
	assert.Equal(t, "client-1", init["clientId"])
	assert.Equal(t, []any{RootChannel}, init["initialSubscriptions"])
	assert.Equal(t, map[string]any{"name": "vscode-editor-window", "title": "Visual Studio Code"}, init["clientInfo"])
	meta, _ := init["_meta"].(map[string]any)
	assert.Equal(t, "direct_websocket", meta["vscode.clientConnectionKind"])
	for _, r := range got[1 : 1+configPushes] {
		assert.Equal(t, RootChannel, r.params["channel"])
		assert.Equal(t, float64(0), r.params["clientSeq"], "VS Code dispatches root config with clientSeq 0")
	}
	create := got[len(got)-3].params
	assert.Equal(t, "demo", create["provider"])
	assert.Equal(t, []any{"file:///work/project"}, create["workingDirectories"])
	assert.NotEmpty(t, create["progressToken"])
}

// TestReconnectFallsBackToInitializeOnNotFound: a reconnect without a
// channel; on -32008 a fresh initialize with the same clientId and every
// subscription, the managed settings, the session re-subscribed before
// its chat, then the config pushes again (without the managed settings).
func TestReconnectFallsBackToInitializeOnNotFound(t *testing.T) {
	h := &scriptedHost{t: t, forgetClients: true}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{Address: strings.Replace(srv.URL, "http://", "ws://", 1), Token: "secret",
		SessionURIs: SessionURIsProvider})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Connect(ctx)
	require.NoError(t, err)
	session, err := c.CreateSession(ctx, "demo", nil)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(session, "demo:/"), session)
	_, err = c.Subscribe(ctx, session)
	require.NoError(t, err)
	chat := DefaultChatURI(session)
	_, err = c.Subscribe(ctx, chat)
	require.NoError(t, err)
	before := len(h.sequence(t, len(connectSequence())+3))

	out, err := c.Reconnect(ctx)
	require.NoError(t, err)
	assert.Equal(t, "initialize", out.Kind)
	assert.Equal(t, CodeNotFound, ErrorCode(out.ReconnectErr))
	assert.Equal(t, []string{session, chat}, out.Restored)
	assert.Empty(t, out.Missing)

	want := []string{"reconnect", "initialize " + RootChannel, "setClientManagedSettingsPermissions", "subscribe " + session, "subscribe " + chat}
	for i := 0; i < configPushes; i++ {
		want = append(want, "dispatchAction root/configChanged")
	}
	got := h.sequence(t, before+len(want))[before:]
	var seq []string
	for _, r := range got {
		assert.Equal(t, 2, r.conn, "everything after the drop goes on the new connection")
		seq = append(seq, describe(r))
	}
	assert.Equal(t, want, seq)
	reconnect := got[0].params
	_, hasChannel := reconnect["channel"]
	assert.False(t, hasChannel, "VS Code's reconnect has no channel")
	assert.Equal(t, c.ClientID(), reconnect["clientId"])
	assert.Equal(t, []any{RootChannel, session, chat}, reconnect["subscriptions"])
	assert.Equal(t, float64(3), reconnect["lastSeenServerSeq"])
	init := got[1].params
	assert.Equal(t, c.ClientID(), init["clientId"], "the fresh initialize keeps the clientId")
	assert.Equal(t, []any{RootChannel, session, chat}, init["initialSubscriptions"])
}

// TestReconnectReplayNeedsNoFallback: a host that knows the client
// answers reconnect itself; the client then sends the managed settings
// and the config pushes, and no initialize.
func TestReconnectReplayNeedsNoFallback(t *testing.T) {
	h := &scriptedHost{t: t}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{Address: strings.Replace(srv.URL, "http://", "ws://", 1), Token: "secret"})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Connect(ctx)
	require.NoError(t, err)
	// The host reads each connection on its own: what the first one sent
	// must be in before the second connects, or the order below is the
	// host's reading order rather than the client's.
	h.sequence(t, len(connectSequence()))
	out, err := c.Reconnect(ctx)
	require.NoError(t, err)
	assert.Equal(t, "replay", out.Kind)
	assert.NoError(t, out.ReconnectErr)
	got := h.sequence(t, len(connectSequence())+2+configPushes)
	assert.Equal(t, "reconnect", got[len(connectSequence())].method)
	assert.Equal(t, "setClientManagedSettingsPermissions", got[len(connectSequence())+1].method)
}

// TestActionRightBehindASnapshotIsApplied: an action the host sends right
// after a subscribe's answer applies to the state of that snapshot, as in
// VS Code's client; it used to reach the reducers before the caller had
// installed the snapshot and was lost.
func TestActionRightBehindASnapshotIsApplied(t *testing.T) {
	host := &scriptedHost{t: t, actionBehind: true}
	srv := httptest.NewServer(host)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{Address: "ws" + strings.TrimPrefix(srv.URL, "http") + "/?tkn=secret"})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Connect(ctx)
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		session := "demo:/s" + strings.Repeat("x", i)
		_, err := c.Subscribe(ctx, session)
		require.NoError(t, err)
		wait, stop := context.WithTimeout(ctx, 2*time.Second)
		err = c.WaitFor(wait, "the title change", func() bool {
			s, _ := c.Session(session)
			return s.Title == "right behind"
		})
		stop()
		require.NoError(t, err, "subscribe %d: the action right behind the snapshot was lost", i)
	}
}

// titleEnvelope is a session/titleChanged on the last session a reconnect
// lists.
func titleEnvelope(params map[string]any, seq int, title string) map[string]any {
	subs, _ := params["subscriptions"].([]any)
	session, _ := subs[len(subs)-1].(string)
	return map[string]any{"channel": session, "serverSeq": seq, "action": map[string]any{"type": "session/titleChanged", "title": title}}
}

// TestLiveActionRightBehindAReplayWins: the live action that follows a
// reconnect's replay on the wire applies after the replay, as in VS Code's
// client; the replay used to be applied by the caller after the reader
// had applied the live action, so the older title won.
func TestLiveActionRightBehindAReplayWins(t *testing.T) {
	host := &scriptedHost{t: t, actionBehind: true}
	srv := httptest.NewServer(host)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{Address: "ws" + strings.TrimPrefix(srv.URL, "http") + "/?tkn=secret"})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Connect(ctx)
	require.NoError(t, err)
	const session = "demo:/replayed"
	_, err = c.Subscribe(ctx, session)
	require.NoError(t, err)
	require.NoError(t, c.WaitFor(ctx, "the title right behind the snapshot", func() bool {
		s, _ := c.Session(session)
		return s.Title == "right behind"
	}))
	for i := 0; i < 20; i++ {
		_, err := c.Reconnect(ctx)
		require.NoError(t, err)
		wait, stop := context.WithTimeout(ctx, 2*time.Second)
		err = c.WaitFor(wait, "the live title", func() bool {
			s, _ := c.Session(session)
			return s.Title == "live"
		})
		stop()
		require.NoError(t, err, "reconnect %d: the replay was applied after the live action behind it", i)
	}
}
