package host

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The tests in this file are about the protocol around the chat dialect:
// version negotiation and what each version receives, reconnecting,
// createSession's URIs and progress, ping, and the commands this host
// cannot back. Each runs over a real WebSocket.

func TestNegotiationPicksTheHighestOffered(t *testing.T) {
	hs := newHarness(t, Options{})
	for _, tc := range []struct {
		offered []string
		want    string
	}{
		{[]string{"0.5.1", "0.7.0", "0.6.0"}, "0.7.0"},
		{[]string{"0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "0.9.0"}, // VS Code's offer
		{[]string{"0.7.0"}, "0.7.0"},
		{[]string{"0.6.0", "0.5.2"}, "0.6.0"},
		{[]string{"0.5.0", "0.5.2", "0.5.1"}, "0.5.2"},
		{[]string{"1.0.0", "0.6.0", "0.4.0"}, "1.0.0"},
		{[]string{"0.10.0", "0.6.0"}, "0.6.0"},                                                                // 0.10.0 was never released: no baseline accepts it
		{[]string{"1.1.0", "1.0.0", "0.10.0", "0.9.0", "0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "1.1.0"}, // the 1.0 SDKs
		{[]string{"1.0.0", "0.9.0"}, "1.0.0"},                                                                 // agent-host-protocol-ui
		{[]string{"0.9.3", "0.7.0"}, "0.9.3"},                                                                 // a 0.9 patch release is echoed as offered
		{[]string{"0.4.0", "0.3.0"}, "0.3.0"},
	} {
		t.Run(strings.Join(tc.offered, ","), func(t *testing.T) {
			c := hs.dial(t, "c")
			r := c.initializeAs(tc.offered, RootURI)
			assert.Equal(t, tc.want, r.ProtocolVersion)
			require.Len(t, r.Snapshots, 1, "the initial snapshots come in the negotiated version")
		})
	}
}

func TestNegotiationRejectsMalformedVersionsAndStaysOpen(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	for _, offered := range []any{
		[]string{"0.7"}, []string{"v0.7.0"}, []string{"0.07.0"}, []string{"0.7.0-beta"}, []string{""},
		[]string{"0.7.0", "latest"}, // one bad entry spoils the offer
		"0.7.0", []int{7}, nil,
	} {
		t.Run(fmt.Sprint(offered), func(t *testing.T) {
			c.t = t
			_, err := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": offered, "clientId": "c"})
			require.NotNil(t, err)
			assert.Equal(t, CodeInvalidParams, err.Code, err.Message)
			c.ping() // the connection stays open
		})
	}
	c.t = t
	assert.Equal(t, current, c.initialize().ProtocolVersion, "and a good offer still succeeds")
}

func TestNegotiationWithoutOverlapCloses(t *testing.T) {
	hs := newHarness(t, Options{})
	for name, offered := range map[string][]string{
		"older and newer": {"0.1.0", "0.4.0", "0.8.0", "0.10.0", "2.0.0"},
		"nothing":         {},
	} {
		t.Run(name, func(t *testing.T) {
			c := hs.dial(t, "c")
			_, err := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": offered, "clientId": "c"})
			require.NotNil(t, err)
			assert.Equal(t, CodeUnsupportedProtocolVersion, err.Code)
			var data wire.UnsupportedProtocolVersionErrorData
			require.NoError(t, json.Unmarshal(mustJSON(t, err.Data), &data))
			assert.Equal(t, []string{"1.0.0", "0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1", "0.5.0", "0.3.0"}, data.SupportedVersions, "every version spoken")
			assert.Equal(t, codec.Supported(), data.SupportedVersions)
			assert.True(t, c.closed(), "then the server closes the connection")
		})
	}
	// The host is none the worse.
	c := hs.dial(t, "after")
	c.initialize(RootURI)
}

// TestOlderVersionsNeverReceiveNewerActions: a 0.6.0 client and a 0.7.0
// client watch the same session; an action introduced in 0.7.0 reaches
// only the latter, live and on replay, while both get the rest in order.
func TestOlderVersionsNeverReceiveNewerActions(t *testing.T) {
	hs := newHarness(t, Options{})
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "versions")
	c7 := hs.dial(t, "new")
	c7.initialize(s.uri, s.chat)
	c6 := hs.dial(t, "old")
	r6 := c6.initializeAs([]string{"0.6.0"}, s.uri, s.chat)
	require.Equal(t, "0.6.0", r6.ProtocolVersion)
	require.Len(t, r6.Snapshots, 2)
	last := hs.h.Stats().ServerSeq

	require.False(t, codec.ActionKnownTo(string(wire.ActionTypeSessionWorkingDirectorySet), codec.MustParseVersion("0.6.0")),
		"the test needs an action 0.6.0 does not know")
	newer := hs.dispatch(t, s.uri, &wire.SessionWorkingDirectorySetAction{Directory: "/w"})
	marker := hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "marker"})
	chatMarker := hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("draft"))})

	var got7 []int64
	for range 3 {
		got7 = append(got7, c7.nextEnvelope(nil).ServerSeq)
	}
	assert.Equal(t, []int64{newer, marker, chatMarker}, got7)

	var got6 []int64
	c6.until("the chat marker", func(m rpcMsg) bool {
		if m.Method == wire.MethodAction {
			e := decodeEnvelope(t, m)
			assert.NotEqual(t, string(wire.ActionTypeSessionWorkingDirectorySet), e.Action.Type(), "0.6.0 never gets it")
			got6 = append(got6, e.ServerSeq)
			return e.ServerSeq == chatMarker
		}
		return false
	})
	assert.Equal(t, []int64{marker, chatMarker}, got6)

	// A reconnect, as the first message of a new connection, replays in the
	// version the client negotiated.
	replay := func(clientID string) []int64 {
		t.Helper()
		r := hs.dial(t, clientID)
		var res struct {
			Type    string     `json:"type"`
			Actions []envelope `json:"actions"`
		}
		r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": clientID, "lastSeenServerSeq": last,
			"subscriptions": []string{s.uri, s.chat}}, &res)
		require.Equal(t, "replay", res.Type)
		var seqs []int64
		for _, e := range res.Actions {
			seqs = append(seqs, e.ServerSeq)
		}
		return seqs
	}
	assert.Equal(t, []int64{marker, chatMarker}, replay("old"))
	assert.Equal(t, []int64{newer, marker, chatMarker}, replay("new"))
}

func TestReconnectAsTheFirstMessage(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "phone")
	c.initialize()
	s := hs.newSession(c, "resume")
	last := hs.h.Stats().ServerSeq
	c.close()
	title := hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "while away"})
	draft := hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("draft"))})

	r := hs.dial(t, "phone")
	var res struct {
		Type    string     `json:"type"`
		Actions []envelope `json:"actions"`
		Missing []string   `json:"missing"`
	}
	r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "phone", "lastSeenServerSeq": last,
		"subscriptions": []string{s.uri, s.chat}}, &res)
	assert.Equal(t, "replay", res.Type)
	assert.Empty(t, res.Missing)
	require.Len(t, res.Actions, 2)
	assert.Equal(t, title, res.Actions[0].ServerSeq)
	assert.Equal(t, "while away", res.Actions[0].Action.Value.(*wire.SessionTitleChangedAction).Title)
	assert.Equal(t, draft, res.Actions[1].ServerSeq)
	assert.Equal(t, s.chat, res.Actions[1].Channel)
	// The connection is initialized: commands work, and it is subscribed.
	var list wire.ListSessionsResult
	r.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	assert.Len(t, list.Items, 1)
	seq := hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{})
	assert.Equal(t, seq, r.nextEnvelope(nil).ServerSeq)
	// It acts as the same client.
	e := r.accepted(s.uri, &wire.SessionTitleChangedAction{Title: "back"})
	assert.Equal(t, "phone", e.Origin.ClientID)

	// An unknown client is told to initialize, and may.
	u := hs.dial(t, "stranger")
	_, err := u.call("reconnect", map[string]any{"channel": RootURI, "clientId": "stranger", "lastSeenServerSeq": 0, "subscriptions": []string{}})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code, "-32008: VS Code's newest client initializes again on it")
	assert.Contains(t, err.Message, "initialize")
	_, err = u.call("listSessions", map[string]any{"channel": RootURI})
	require.NotNil(t, err, "still not initialized")
	assert.Equal(t, CodeInvalidRequest, err.Code)
	u.initialize()
	// A reconnect on a connection of another client is refused.
	_, err = u.call("reconnect", map[string]any{"channel": RootURI, "clientId": "phone", "lastSeenServerSeq": 0, "subscriptions": []string{}})
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidParams, err.Code)
}

func TestCreateSessionURIs(t *testing.T) {
	hs := newHarness(t, Options{NewID: func() string { return "fresh" }})
	c := hs.dial(t, "c")
	c.initialize()

	// ahpx names sessions <provider>:/<uuid>.
	const id = "0b7e6f5c-3c1a-4e47-9d5e-2f3b8c9a1d20"
	s := hs.createSession(c, "fake:/"+id)
	assert.Equal(t, "ahp-chat://default/ZmFrZTovMGI3ZTZmNWMtM2MxYS00ZTQ3LTlkNWUtMmYzYjhjOWExZDIw", s.chat, "VS Code's name for the default chat")
	var list wire.ListSessionsResult
	c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "fake:/"+id, list.Items[0].Resource)
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("hi")})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))

	// Another session with the same id gets a default chat of its own.
	other := hs.createSession(c, "ahp-session:/"+id)
	assert.Equal(t, wire.DefaultChatURI("ahp-session:/"+id), other.chat)

	for _, uri := range []string{
		"ahp-root://", "ahp-root:/x", "ahp-chat:/x", "ahp-chat://default/ZmFrZTov", "ahp-terminal:/x", "agenthost-terminal:/x", "ahp-resource-watch:/x", "ahp-changeset:/x",
		"no-scheme", ":/x", "fake:/", "fake:x", "ahp-session:/a b", "ahp-session:/a\nb",
	} {
		_, err := c.call("createSession", map[string]any{"channel": uri, "provider": "fake"})
		require.NotNil(t, err, uri)
		assert.Equal(t, CodeInvalidParams, err.Code, uri)
	}
	assert.Equal(t, 2, hs.h.Stats().Sessions)
}

// progressOf decodes a root/progress notification.
func progressOf(t *testing.T, m rpcMsg) wire.ProgressParams {
	t.Helper()
	var p wire.ProgressParams
	require.NoError(t, json.Unmarshal(m.Params, &p))
	return p
}

// TestCreateSessionProgress: with a progressToken, the creating connection
// alone receives root/progress until the session is ready (or failed),
// ending with progress == total.
func TestCreateSessionProgress(t *testing.T) {
	hs := newHarness(t, Options{})
	watcher := hs.dial(t, "watcher")
	watcher.initialize(RootURI)
	c := hs.dial(t, "c")
	c.initialize()

	// follow returns the progress reports of token until the last one.
	follow := func(token string) []wire.ProgressParams {
		t.Helper()
		var got []wire.ProgressParams
		for {
			p := progressOf(t, c.nextNotification(wire.MethodRootProgress))
			require.Equal(t, RootURI, p.Channel)
			require.Equal(t, token, p.ProgressToken)
			require.NotNil(t, p.Total)
			if n := len(got); n > 0 {
				require.GreaterOrEqual(t, p.Progress, got[n-1].Progress, "progress never goes back")
			}
			got = append(got, p)
			if p.Progress == *p.Total {
				return got
			}
			require.Less(t, len(got), 10, "progress never ended")
		}
	}
	c.mustCall("createSession", map[string]any{"channel": "ahp-session:/p1", "provider": "fake", "progressToken": "tok-1"}, nil)
	got := follow("tok-1")
	require.GreaterOrEqual(t, len(got), 2)
	assert.Equal(t, int64(0), got[0].Progress)
	assert.Contains(t, *got[len(got)-1].Message, "ready")
	// The handler's own report (Host.Progress) is among them.
	var messages []string
	for _, p := range got {
		messages = append(messages, deref(p.Message))
	}
	assert.Contains(t, messages, "the fake agent has started")

	// A failed start ends the progress too.
	hs.handler.set(func(b *fakeHandler) { b.failCreate = true })
	c.mustCall("createSession", map[string]any{"channel": "ahp-session:/p2", "provider": "fake", "progressToken": "tok-2"}, nil)
	got = follow("tok-2")
	assert.Contains(t, *got[len(got)-1].Message, "could not be created")
	assert.Equal(t, wire.SessionLifecycleFailed, hs.readSession(t, "ahp-session:/p2").Lifecycle)
	hs.handler.set(func(b *fakeHandler) { b.failCreate = false })

	// Without a token there is none.
	c.mustCall("createSession", map[string]any{"channel": "ahp-session:/p3", "provider": "fake"}, nil)
	c.ping()
	for _, m := range c.backlog {
		assert.NotEqual(t, wire.MethodRootProgress, m.Method, "%s", m.raw)
	}
	// Nor did any other connection get a report about another's request.
	hs.h.Progress("ahp-session:/p1", "too late: the session is ready")
	seq := hs.dispatch(t, RootURI, &wire.RootAgentsChangedAction{Agents: []wire.AgentInfo{fakeAgent}})
	before, _ := watcher.until("the marker", func(m rpcMsg) bool {
		return m.Method == wire.MethodAction && decodeEnvelope(t, m).ServerSeq == seq
	})
	added := 0
	for _, m := range before {
		assert.NotEqual(t, wire.MethodRootProgress, m.Method, "%s", m.raw)
		if m.Method == wire.MethodRootSessionAdded {
			added++
		}
	}
	assert.Equal(t, 3, added, "the watcher saw the sessions come")
	c.ping()
	for _, m := range c.backlog {
		assert.NotEqual(t, wire.MethodRootProgress, m.Method, "no report once ready: %s", m.raw)
	}
}

func TestPingAnswersNull(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	frames := []string{
		`{"jsonrpc":"2.0","id":"a","method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":"b","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"c","method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":"d","method":"ping","params":{"channel":"ahp-root://"}}`,
	}
	check := func(stage string) {
		t.Helper()
		for _, f := range frames {
			c.sendRaw([]byte(f))
			var id struct {
				ID json.RawMessage `json:"id"`
			}
			require.NoError(t, json.Unmarshal([]byte(f), &id))
			res, err := c.await(string(id.ID))
			require.Nil(t, err, "%s: %s", stage, f)
			assert.Equal(t, "null", string(res), "%s: %s", stage, f)
		}
	}
	check("before initialize")
	c.initialize()
	check("after initialize")
}

// TestUnsupportedCommands: commands this host knows but cannot back are
// answered at once with -32601 and the reason, before and after the
// handshake; they never leave a client waiting.
func TestUnsupportedCommands(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	methods := []string{
		"createTerminal", "disposeTerminal", "invokeChangesetOperation", "resourceRequest",
	}
	check := func(stage string) {
		t.Helper()
		// All at once: each is answered on its own.
		for i, m := range methods {
			c.send(map[string]any{"jsonrpc": "2.0", "id": fmt.Sprintf("%s-%d", stage, i), "method": m,
				"params": map[string]any{"channel": RootURI, "uri": "file:///x", "data": "", "session": "ahp-session:/x"}})
		}
		for i, m := range methods {
			_, err := c.await(fmt.Sprintf("%q", fmt.Sprintf("%s-%d", stage, i)))
			require.NotNil(t, err, "%s %s", stage, m)
			assert.Equal(t, CodeMethodNotFound, err.Code, "%s %s", stage, m)
			assert.Contains(t, err.Message, m+" is not supported: ", "%s: the reason is given", stage)
			assert.Greater(t, len(err.Message), len(m+" is not supported: ")+10, "%s: %s", stage, err.Message)
		}
	}
	check("before")
	c.initialize()
	check("after")
	// Commands unknown altogether are not found either.
	for _, m := range []string{"frobnicate"} {
		_, err := c.call(m, map[string]any{"channel": RootURI})
		require.NotNil(t, err)
		assert.Equal(t, CodeMethodNotFound, err.Code, m)
	}
}
