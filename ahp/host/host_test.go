package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport/stdio"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// transports runs a test body over WebSocket and over stdio.
var transports = []struct {
	name string
	dial func(hs *harness, t testing.TB, clientID string) *testClient
}{
	{"websocket", (*harness).dial},
	{"stdio", (*harness).stdio},
}

func TestHandshake(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			hs := newHarness(t, Options{ServerVersion: "1.2.3"})
			c := tr.dial(hs, t, "client-1")
			var r struct {
				initResult
				ServerInfo wire.Implementation `json:"serverInfo"`
			}
			c.mustCall("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{current}, "clientId": "client-1",
				"initialSubscriptions": []string{RootURI}}, &r)
			assert.Equal(t, codec.Current.String(), r.ProtocolVersion)
			assert.Equal(t, "ahp-bridge", r.ServerInfo.Name)
			require.NotNil(t, r.ServerInfo.Version)
			assert.Equal(t, "1.2.3", *r.ServerInfo.Version)
			require.Len(t, r.Snapshots, 1)
			assert.Equal(t, RootURI, r.Snapshots[0].Resource)
			var root wire.RootState
			require.NoError(t, json.Unmarshal(r.Snapshots[0].State, &root))
			require.Len(t, root.Agents, 1)
			assert.Equal(t, "fake", root.Agents[0].Provider)
			assert.Equal(t, r.ServerSeq, r.Snapshots[0].FromSeq)

			// A second initialize on the same connection is refused.
			_, err := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{current}, "clientId": "x"})
			require.NotNil(t, err)
			assert.Equal(t, CodeInvalidRequest, err.Code)
		})
	}
}

func TestNegotiationFailureClosesConnection(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			hs := newHarness(t, Options{})
			c := tr.dial(hs, t, "c")
			_, err := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{"0.1.0", "2.0.0"}, "clientId": "c"})
			require.NotNil(t, err)
			assert.Equal(t, CodeUnsupportedProtocolVersion, err.Code)
			data, _ := json.Marshal(err.Data)
			assert.JSONEq(t, `{"supportedVersions":["1.0.0","0.9.0","0.7.0","0.6.0","0.5.2","0.5.1","0.5.0","0.3.0"]}`, string(data))
			assert.True(t, c.closed(), "the server closes the connection after the error")
		})
	}
}

func TestRequestBeforeInitializeIsAnError(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	for _, method := range []string{"subscribe", "createSession", "listSessions", "fetchTurns", "createChat"} {
		_, err := c.call(method, map[string]any{"channel": RootURI})
		require.NotNil(t, err, method)
		assert.Equal(t, CodeInvalidRequest, err.Code, method)
		assert.Contains(t, err.Message, "initialize")
	}
}

func TestMalformedFrames(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	cases := []struct {
		name  string
		frame string
		code  int
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":1,"method":`, CodeParseError},
		{"array batch", `[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}]`, CodeInvalidRequest},
		{"not an object", `42`, CodeInvalidRequest},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest},
		{"id is an object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, CodeInvalidRequest},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"noSuchMethod","params":{"channel":"ahp-root://"}}`, CodeMethodNotFound},
		{"missing params", `{"jsonrpc":"2.0","id":1,"method":"subscribe"}`, CodeInvalidParams},
		{"missing channel", `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{}}`, CodeInvalidParams},
		{"channel wrong type", `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"channel":7}}`, CodeInvalidParams},
		{"params an array", `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":["ahp-root://"]}`, CodeInvalidParams},
		{"field wrong type", `{"jsonrpc":"2.0","id":1,"method":"fetchTurns","params":{"channel":"ahp-chat:/x","cursor":10}}`, CodeInvalidParams},
		{"view.turns wrong type", `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"channel":"ahp-root://","view":{"turns":"all"}}}`, CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.sendRaw([]byte(tc.frame))
			m := c.recv("the answer to " + tc.frame)
			require.NotNil(t, m.Error, "frame %s got %s", tc.frame, m.raw)
			assert.Equal(t, tc.code, m.Error.Code, m.Error.Message)
			// The connection stays usable.
			c.ping()
		})
	}
}

func TestSubscribeSnapshotAndUnknownSession(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	_, err := c.call("subscribe", map[string]any{"channel": "ahp-session:/nope"})
	require.NotNil(t, err)
	assert.Equal(t, CodeSessionNotFound, err.Code)
	_, err = c.call("subscribe", map[string]any{"channel": "ahp-chat:/nope"})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)

	s := hs.newSession(c, "s1")
	assert.Equal(t, "ahp-chat://default/YWhwLXNlc3Npb246L3Mx", s.chat, "the default chat takes VS Code's name, derived from the session's")
	snap := c.subscribe(s.uri)
	var st wire.SessionState
	require.NoError(t, json.Unmarshal(snap.State, &st))
	assert.Equal(t, wire.SessionLifecycleReady, st.Lifecycle)
	assert.Equal(t, "fake", st.Provider)
	require.Len(t, st.Chats, 1)
	assert.Equal(t, s.chat, st.Chats[0].Resource)
	assert.Equal(t, hs.h.Stats().ServerSeq, snap.FromSeq)

	snap = c.subscribe(s.chat)
	var chat wire.ChatState
	require.NoError(t, json.Unmarshal(snap.State, &chat))
	assert.Equal(t, s.chat, chat.Resource)
	assert.Equal(t, wire.SessionStatusIdle, chat.Status)
	assert.Empty(t, chat.Turns)
	assert.Nil(t, chat.TurnsNextCursor, "a full snapshot has no cursor")
}

func TestCreateSessionErrors(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	hs.newSession(c, "dup")
	_, err := c.call("createSession", map[string]any{"channel": "ahp-session:/dup", "provider": "fake"})
	require.NotNil(t, err)
	assert.Equal(t, CodeSessionAlreadyExists, err.Code)

	_, err = c.call("createSession", map[string]any{"channel": "ahp-session:/other", "provider": "nobody"})
	require.NotNil(t, err)
	assert.Equal(t, CodeProviderNotFound, err.Code)
	assert.Contains(t, err.Message, `"nobody"`)
	assert.Contains(t, err.Message, "fake")

	_, err = c.call("createSession", map[string]any{"channel": "ahp-terminal:/x", "provider": "fake"})
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidParams, err.Code)

	_, err = c.call("createSession", map[string]any{"channel": "ahp-session:/other", "provider": "fake",
		"activeClient": map[string]any{"clientId": "someone-else", "tools": []any{}}})
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidParams, err.Code, "activeClient must be the caller")
	assert.False(t, hs.h.ReadSession("ahp-session:/other", func(*wire.SessionState) {}), "nothing was created")
}

func TestSessionCatalogueNotifications(t *testing.T) {
	hs := newHarness(t, Options{})
	watcher := hs.dial(t, "watcher")
	watcher.initialize(RootURI)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "cat")

	added := watcher.nextNotification(wire.MethodRootSessionAdded)
	var ap wire.SessionAddedParams
	require.NoError(t, json.Unmarshal(added.Params, &ap))
	assert.Equal(t, RootURI, ap.Channel)
	assert.Equal(t, s.uri, ap.Summary.Resource)
	assert.Equal(t, "fake", ap.Summary.Provider)

	var list wire.ListSessionsResult
	c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	require.Len(t, list.Items, 1)
	assert.Equal(t, s.uri, list.Items[0].Resource)
	assert.Nil(t, list.NextCursor)

	c.accepted(s.uri, &wire.SessionTitleChangedAction{Title: "Renamed"})
	changed := watcher.nextNotification(wire.MethodRootSessionSummaryChanged)
	var cp struct {
		Channel string         `json:"channel"`
		Session string         `json:"session"`
		Changes map[string]any `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(changed.Params, &cp))
	assert.Equal(t, RootURI, cp.Channel)
	assert.Equal(t, s.uri, cp.Session)
	assert.Equal(t, "Renamed", cp.Changes["title"])
	assert.NotContains(t, cp.Changes, "resource")

	c.mustCall("disposeSession", map[string]any{"channel": s.uri}, nil)
	removed := watcher.nextNotification(wire.MethodRootSessionRemoved)
	var rp wire.SessionRemovedParams
	require.NoError(t, json.Unmarshal(removed.Params, &rp))
	assert.Equal(t, s.uri, rp.Session)
	_, err := c.call("disposeSession", map[string]any{"channel": s.uri})
	require.NotNil(t, err)
	assert.Equal(t, CodeSessionNotFound, err.Code)
	assert.False(t, hs.h.ReadChat(s.chat, func(*wire.ChatState) {}), "the default chat went with its session")
	hs.handler.set(func(b *fakeHandler) { assert.Equal(t, []string{s.uri}, b.disposed) })
	c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	assert.Empty(t, list.Items)
}

// TestFullTurn runs a whole turn on a session's default chat with the fake
// handler: streaming text, a tool call that needs confirmation, completion.
func TestFullTurn(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			hs := newHarness(t, Options{})
			c := tr.dial(hs, t, "c")
			c.initialize(RootURI)
			s := hs.newSession(c, "turn")
			echo := c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("hi")})
			assert.Equal(t, s.chat, echo.Channel)
			started := echo.Action.Value.(*wire.ChatTurnStartedAction)
			assert.NotEmpty(t, started.StartedAt, "the host stamps startedAt")
			ready := c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))
			assert.Nil(t, ready.Origin, "server-originated envelopes carry no origin")
			assert.Contains(t, string(ready.raw), `"serverSeq"`)
			assert.NotContains(t, string(ready.raw), `"origin"`)
			assert.NotContains(t, string(ready.raw), `"rejectionReason"`)

			c.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
			c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))

			st := hs.readChat(t, s.chat)
			require.Nil(t, st.ActiveTurn)
			require.Len(t, st.Turns, 1)
			assert.Equal(t, wire.TurnStateComplete, st.Turns[0].State)
			assert.Equal(t, "Hello, world!", turnText(st.Turns[0].ResponseParts))
			assert.Equal(t, wire.SessionStatusIdle, st.Status.Activity())

			// The handler saw the client actions in order, with their origins.
			var types []string
			for _, r := range hs.handler.recorded() {
				types = append(types, r.typ)
				assert.Equal(t, "c", r.origin.ClientID)
				assert.Equal(t, s.chat, r.channel)
			}
			assert.Equal(t, []string{"chat/turnStarted", "chat/toolCallConfirmed"}, types)

			// Everything is loaded already: fetchTurns without a cursor has
			// nothing to add.
			res, err := c.call("fetchTurns", map[string]any{"channel": s.chat})
			require.Nil(t, err)
			assert.JSONEq(t, `{}`, string(res))
		})
	}
}

// turnText concatenates the markdown parts of a turn.
func turnText(parts []wire.ResponsePart) string {
	text := ""
	for _, p := range parts {
		if md, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			text += md.Content
		}
	}
	return text
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestClientActionValidation(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "val")
	submitted := wire.NewChatInputAnswer(&wire.ChatInputAnswered{State: wire.ChatInputAnswerStateSubmitted,
		Value: wire.NewChatInputAnswerValue(&wire.ChatInputTextAnswerValue{Value: "a.txt"})})

	rejected := []struct {
		name    string
		channel string
		action  any
		reason  string
	}{
		{"cancel without active turn", s.chat, &wire.ChatTurnCancelledAction{TurnID: "t0"}, "no active turn"},
		{"server-only action", s.chat, &wire.ChatDeltaAction{TurnID: "t0", PartID: "p", Content: "x"}, "server-only"},
		{"confirm unknown tool call", s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t0", ToolCallID: "nope", Confirmed: wire.ToolCallConfirmationReasonUserAction}, "no active turn"},
		{"remove missing pending message", s.chat, &wire.ChatPendingMessageRemovedAction{Kind: wire.PendingMessageKindQueued, ID: "q9"}, "no queued pending message"},
		{"answer unknown input", s.chat, &wire.ChatInputAnswerChangedAction{RequestID: "r1", QuestionID: "q", Answer: &submitted}, "no open input request"},
		{"complete unknown input", s.chat, &wire.ChatInputCompletedAction{RequestID: "r1", Response: wire.ChatInputResponseKindAccept}, "no open input request"},
		{"system message turn", s.chat, &wire.ChatTurnStartedAction{TurnID: "t0", Message: wire.Message{Text: "x", Origin: wire.MessageOrigin{Kind: wire.MessageKindSystemNotification}}}, "user messages"},
		{"empty turn id", s.chat, &wire.ChatTurnStartedAction{Message: userMsg("x")}, "turnId"},
		{"truncate", s.chat, &wire.ChatTruncatedAction{}, "cannot make it forget"},
		{"chat directory outside the session", s.chat, &wire.ChatWorkingDirectorySetAction{Directory: "/elsewhere"}, "not one of the session's working directories"},
		{"remove a directory the chat does not have", s.chat, &wire.ChatWorkingDirectoryRemovedAction{Directory: "/elsewhere"}, "not one of the chat's working directories"},
		{"terminal action on a chat", s.chat, &wire.TerminalInputAction{Data: "ls"}, "cannot be dispatched"},
		{"chat action on the session", s.uri, &wire.ChatTurnStartedAction{TurnID: "t0", Message: userMsg("x")}, "cannot be dispatched"},
		{"session action on the chat", s.chat, &wire.SessionActiveClientRemovedAction{ClientID: "c"}, "cannot be dispatched"},
		{"server-only session action", s.uri, &wire.SessionChatRemovedAction{Chat: s.chat}, "server-only"},
		{"inputNeeded is the host's", s.uri, &wire.SessionInputNeededRemovedAction{ID: "x"}, "server-only"},
		{"config property not in the schema", s.uri, &wire.SessionConfigChangedAction{Config: map[string]any{"mode": "fast"}}, "does not exist"},
		{"active client for someone else", s.uri, &wire.SessionActiveClientSetAction{ActiveClient: wire.SessionActiveClient{ClientID: "other", Tools: []wire.ToolDefinition{}}}, "only make itself"},
		{"working directories are fixed", s.uri, &wire.SessionWorkingDirectorySetAction{Directory: "/tmp"}, "cannot change"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			assert.Contains(t, c.rejected(tc.channel, tc.action), tc.reason)
		})
	}
	c.t = t

	// A turn is active: a second turnStarted is rejected, cancel is accepted.
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("x")})
	assert.Contains(t, c.rejected(s.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("y")}), "still active")
	assert.Contains(t, c.rejected(s.chat, &wire.ChatTurnCancelledAction{TurnID: "t2"}), "not the active turn")
	// An input request whose required question is unanswered cannot be accepted.
	hs.dispatch(t, s.chat, &wire.ChatInputRequestedAction{Request: wire.ChatInputRequest{ID: "r1", Questions: []wire.ChatInputQuestion{
		wire.NewChatInputQuestion(&wire.ChatInputTextQuestion{ID: "q1", Message: "?", Required: wire.Ptr(true)})}}})
	assert.Contains(t, c.rejected(s.chat, &wire.ChatInputCompletedAction{RequestID: "r1", Response: wire.ChatInputResponseKindAccept}), "required")
	assert.Contains(t, c.rejected(s.chat, &wire.ChatInputAnswerChangedAction{RequestID: "r1", QuestionID: "q1",
		Answer: &wire.ChatInputAnswer{Value: json.RawMessage(`{"state":"submitted"}`)}}), "needs a value")
	c.accepted(s.chat, &wire.ChatInputAnswerChangedAction{RequestID: "r1", QuestionID: "q1", Answer: &submitted})
	c.accepted(s.chat, &wire.ChatInputCompletedAction{RequestID: "r1", Response: wire.ChatInputResponseKindAccept})
	cancelled := c.accepted(s.chat, &wire.ChatTurnCancelledAction{TurnID: "t1"})
	assert.GreaterOrEqual(t, cancelled.Action.Value.(*wire.ChatTurnCancelledAction).Duration, int64(0))

	// Unknown action types are rejected with the raw action echoed.
	c.seq++
	c.sendRaw(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"chat/fromTheFuture","x":1}}}`, s.chat, c.seq))
	e := c.ownEcho(c.seq)
	require.NotNil(t, e.RejectionReason)
	assert.Contains(t, string(mustJSON(t, e.Action)), "fromTheFuture")
}

func TestUnknownChannelDroppedSilently(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	before := hs.h.Stats()
	c.dispatch("ahp-session:/ghost", &wire.SessionTitleChangedAction{Title: "x"})
	c.dispatch("ahp-chat:/ghost", &wire.ChatTurnStartedAction{TurnID: "t", Message: userMsg("x")})
	// The host handles frames in order, so by the time ping is answered an
	// echo would already have been queued ahead of it.
	c.ping()
	for _, m := range c.backlog {
		assert.NotEqual(t, wire.MethodAction, m.Method, "unexpected %s", m.raw)
	}
	assert.Equal(t, before.ServerSeq, hs.h.Stats().ServerSeq)
}

func TestTwoClientsConfirmSameToolCall(t *testing.T) {
	hs := newHarness(t, Options{})
	a := hs.dial(t, "a")
	a.initialize()
	b := hs.stdio(t, "b")
	b.initialize()
	s := hs.newSession(a, "race")
	b.subscribe(s.chat)
	// Keep the turn open after the confirmation so the loser is judged
	// against the confirmed tool call.
	gate := make(chan struct{})
	hs.handler.set(func(b *fakeHandler) { b.afterConfirm = gate })
	defer close(gate)
	// The fake handler runs the scripted turn, which waits for confirmation.
	a.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")})
	b.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))

	ea := a.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	sb := b.dispatch(s.chat, &wire.ChatToolCallDeniedAction{TurnID: "t1", ToolCallID: "tc-t1", Reason: wire.ToolCallCancellationReasonDenied})
	before, m := b.until("b's echo", func(m rpcMsg) bool {
		if m.Method != wire.MethodAction {
			return false
		}
		e := decodeEnvelope(t, m)
		return e.Origin != nil && e.Origin.ClientID == "b" && e.Origin.ClientSeq == sb
	})
	eb := decodeEnvelope(t, m)
	require.NotNil(t, eb.RejectionReason, "the second confirmation loses")
	assert.Contains(t, *eb.RejectionReason, "not pending-confirmation")
	// b saw a's accepted confirmation, with a's origin, before its own
	// rejection.
	sawWinner := false
	for _, m := range before {
		if m.Method == wire.MethodAction {
			e := decodeEnvelope(t, m)
			sawWinner = sawWinner || (e.ServerSeq == ea.ServerSeq && e.Origin != nil && e.Origin.ClientID == "a")
		}
	}
	assert.True(t, sawWinner, "every subscriber gets the accepted echo")
	hs.handler.waitAction(t, "a's confirmation", func(r recordedAction) bool { return r.typ == string(wire.ActionTypeChatToolCallConfirmed) })
	n := 0
	for _, r := range hs.handler.recorded() {
		if r.typ == string(wire.ActionTypeChatToolCallConfirmed) {
			n++
			assert.Equal(t, "a", r.origin.ClientID)
		}
	}
	assert.Equal(t, 1, n, "only the winning confirmation reaches the handler")
}

// TestConcurrentConfirmations races two clients 200 times; exactly one
// confirmation is accepted each time.
func TestConcurrentConfirmations(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	a := hs.dial(t, "a")
	a.initialize()
	b := hs.dial(t, "b")
	b.initialize()
	s := hs.newSession(a, "race200")
	b.subscribe(s.chat)
	hs.dispatch(t, s.chat, &wire.ChatTurnStartedAction{TurnID: "t", Message: userMsg("go")})
	for i := range 200 {
		id := "tc" + strconv.Itoa(i)
		hs.dispatch(t, s.chat,
			&wire.ChatToolCallStartAction{TurnID: "t", ToolCallID: id, ToolName: "x", DisplayName: "X"},
			&wire.ChatToolCallReadyAction{TurnID: "t", ToolCallID: id, InvocationMessage: wire.PlainText("x")})
		a.seq++
		b.seq++
		approve := mustJSON(t, dispatchFrame(s.chat, a.seq, &wire.ChatToolCallApprovedAction{TurnID: "t", ToolCallID: id, Confirmed: wire.ToolCallConfirmationReasonUserAction}))
		deny := mustJSON(t, dispatchFrame(s.chat, b.seq, &wire.ChatToolCallDeniedAction{TurnID: "t", ToolCallID: id, Reason: wire.ToolCallCancellationReasonDenied}))
		var wg sync.WaitGroup
		var errA, errB error
		wg.Add(2)
		go func() { defer wg.Done(); errA = a.conn.WriteMessage(approve) }()
		go func() { defer wg.Done(); errB = b.conn.WriteMessage(deny) }()
		wg.Wait()
		require.NoError(t, errA)
		require.NoError(t, errB)
		ea, eb := a.ownEcho(a.seq), b.ownEcho(b.seq)
		accepted := 0
		for _, e := range []envelope{ea, eb} {
			if e.RejectionReason == nil {
				accepted++
			}
		}
		require.Equal(t, 1, accepted, "iteration %d: exactly one confirmation must win", i)
	}
}

func TestReconnectReplayAndMissing(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	keep := hs.newSession(c, "keep")
	gone := hs.newSession(c, "gone")
	last := hs.h.Stats().ServerSeq
	for i := range 5 {
		hs.dispatch(t, keep.uri, &wire.SessionTitleChangedAction{Title: "t" + strconv.Itoa(i)})
	}
	hs.dispatch(t, keep.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("draft"))})
	c.mustCall("disposeSession", map[string]any{"channel": gone.uri}, nil)

	r := hs.dial(t, "c")
	var res struct {
		Type    string            `json:"type"`
		Actions []json.RawMessage `json:"actions"`
		Missing []string          `json:"missing"`
	}
	r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "c", "lastSeenServerSeq": last,
		"subscriptions": []string{keep.uri, keep.chat, gone.uri, gone.chat}}, &res)
	assert.Equal(t, "replay", res.Type)
	assert.ElementsMatch(t, []string{gone.uri, gone.chat}, res.Missing)
	require.Len(t, res.Actions, 6)
	prev := last
	for i, raw := range res.Actions {
		var e envelope
		require.NoError(t, json.Unmarshal(raw, &e))
		assert.Greater(t, e.ServerSeq, prev)
		prev = e.ServerSeq
		if i < 5 {
			assert.Equal(t, keep.uri, e.Channel)
			assert.Equal(t, "t"+strconv.Itoa(i), e.Action.Value.(*wire.SessionTitleChangedAction).Title)
		} else {
			assert.Equal(t, keep.chat, e.Channel)
			assert.Equal(t, string(wire.ActionTypeChatDraftChanged), e.Action.Type())
		}
	}
	// The reconnected client is subscribed again and receives new actions.
	seq := hs.dispatch(t, keep.chat, &wire.ChatDraftChangedAction{})
	assert.Equal(t, seq, r.nextEnvelope(nil).ServerSeq)
	seq = hs.dispatch(t, keep.uri, &wire.SessionTitleChangedAction{Title: "after"})
	assert.Equal(t, seq, r.nextEnvelope(nil).ServerSeq)
}

func TestReconnectSnapshotWhenGapTooLarge(t *testing.T) {
	hs := newHarness(t, Options{ReplayBuffer: 4})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "snap")
	last := hs.h.Stats().ServerSeq
	for i := range 10 {
		hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "t" + strconv.Itoa(i)})
	}
	for _, lastSeen := range []int64{last, 1 << 40, -1} {
		r := hs.stdio(t, "c")
		var res struct {
			Type      string         `json:"type"`
			Snapshots []snapshotWire `json:"snapshots"`
		}
		r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "c", "lastSeenServerSeq": lastSeen,
			"subscriptions": []string{s.uri, s.chat, "ahp-session:/gone"}}, &res)
		assert.Equal(t, "snapshot", res.Type, "lastSeen %d", lastSeen)
		require.Len(t, res.Snapshots, 2)
		assert.Equal(t, s.uri, res.Snapshots[0].Resource)
		assert.Equal(t, s.chat, res.Snapshots[1].Resource)
		var st wire.SessionState
		require.NoError(t, json.Unmarshal(res.Snapshots[0].State, &st))
		assert.Equal(t, "t9", st.Title)
		assert.Equal(t, hs.h.Stats().ServerSeq, res.Snapshots[0].FromSeq)
		r.close()
	}
}

func TestSlowClientIsClosedFastClientContinues(t *testing.T) {
	hs := newHarness(t, Options{OutboundQueue: 8})
	fast := hs.dial(t, "fast")
	fast.initialize()
	term := "ahp-terminal:/flood"
	require.NoError(t, hs.h.CreateTerminal(term, wire.TerminalState{Title: "flood", Claim: wire.NewTerminalClaim(&wire.TerminalClientClaim{ClientID: "fast"})}))
	fast.subscribe(term)

	// The slow client subscribes and then stops reading.
	slow := hs.dialRaw(t)
	defer slow.Close()
	require.NoError(t, slow.WriteJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"channel": RootURI, "protocolVersions": []string{current}, "clientId": "slow", "initialSubscriptions": []string{term}}}))
	eventually(t, "the slow client subscribed", func() bool {
		hs.h.mu.Lock()
		defer hs.h.mu.Unlock()
		return len(hs.h.channels[term].subs) == 2
	})

	// Flood until the slow connection's queue overflows (socket buffers
	// absorb a few megabytes first); the fast client must see everything.
	chunk := strings.Repeat("x", 32<<10)
	sent := 0
	for ; hs.h.Stats().SlowConnectionsClosed == 0; sent++ {
		require.Less(t, sent, 5000, "the slow connection was never closed")
		seq := hs.dispatch(t, term, &wire.TerminalDataAction{Data: chunk})
		require.Equal(t, seq, fast.nextEnvelope(nil).ServerSeq)
	}
	// After the slow one is gone, the fast one still receives.
	seq := hs.dispatch(t, term, &wire.TerminalDataAction{Data: "tail"})
	require.Equal(t, seq, fast.nextEnvelope(nil).ServerSeq)
	eventually(t, "the slow connection is dropped", func() bool { return hs.h.Stats().Connections == 1 })

	// The slow client's connection ends (after whatever was buffered).
	var readErr error
	for readErr == nil {
		_, readErr = readRaw(t, slow)
	}
}

// TestEncodeOnceForManySubscribers: an envelope is encoded once for all
// the connections speaking the host's version, and translated once more
// for all those speaking an older one.
func TestEncodeOnceForManySubscribers(t *testing.T) {
	hs := newHarness(t, Options{})
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "fan")
	var clients []*testClient
	for i := range 20 {
		c := hs.dial(t, "sub"+strconv.Itoa(i))
		if i%2 == 0 {
			c.initialize(s.uri, s.chat)
		} else {
			c.initializeAs([]string{"0.6.0"}, s.uri, s.chat)
		}
		clients = append(clients, c)
	}
	before := hs.h.Stats().EnvelopesEncoded
	const n = 25
	for i := range n {
		hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg(strconv.Itoa(i)))})
	}
	for _, c := range clients {
		for range n {
			c.nextEnvelope(nil)
		}
	}
	assert.Equal(t, int64(2*n), hs.h.Stats().EnvelopesEncoded-before,
		"each envelope is encoded once for the 11 subscribers of 0.7.0 and once for the 10 of 0.6.0")
}

func TestQueuedMessageConsumedWhenIdle(t *testing.T) {
	hs := newHarness(t, Options{NewID: func() string { return "auto-turn" }})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "queue")
	c.accepted(s.chat, &wire.ChatPendingMessageSetAction{Kind: wire.PendingMessageKindQueued, ID: "q1", Message: userMsg("later")})
	rm := c.nextEnvelope(func(e envelope) bool { return e.Channel == s.chat })
	require.Equal(t, string(wire.ActionTypeChatPendingMessageRemoved), rm.Action.Type())
	assert.Nil(t, rm.Origin)
	ts := c.nextEnvelope(func(e envelope) bool { return e.Channel == s.chat })
	started, ok := ts.Action.Value.(*wire.ChatTurnStartedAction)
	require.True(t, ok, "got %s", ts.Action.Type())
	assert.Nil(t, ts.Origin)
	assert.Equal(t, "auto-turn", started.TurnID)
	require.NotNil(t, started.QueuedMessageID)
	assert.Equal(t, "q1", *started.QueuedMessageID)
	assert.Equal(t, "later", started.Message.Text)
	hs.handler.waitAction(t, "the consumed queued message as a turnStarted", func(r recordedAction) bool {
		return r.typ == string(wire.ActionTypeChatTurnStarted) && r.origin == (wire.ActionOrigin{}) && r.channel == s.chat
	})

	// Queued while a turn is active: consumed when the turn completes.
	c.accepted(s.chat, &wire.ChatPendingMessageSetAction{Kind: wire.PendingMessageKindQueued, ID: "q2", Message: userMsg("even later")})
	assert.Len(t, hs.readChat(t, s.chat).QueuedMessages, 1, "not consumed while the turn runs")
	hs.dispatch(t, s.chat, &wire.ChatTurnCompleteAction{TurnID: "auto-turn"})
	e := c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnStarted))
	assert.Equal(t, "q2", *e.Action.Value.(*wire.ChatTurnStartedAction).QueuedMessageID)
	assert.Empty(t, hs.readChat(t, s.chat).QueuedMessages)
}

// TestQueuedWhileCreatingStartsWhenReady: a message queued before the
// agent is ready starts its turn as soon as the session is ready, not at
// the next unrelated action.
func TestQueuedWhileCreatingStartsWhenReady(t *testing.T) {
	hs := newHarness(t, Options{NewID: func() string { return "auto-turn" }})
	ready := make(chan struct{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns, b.holdReady = false, ready })
	c := hs.dial(t, "c")
	c.initialize()
	uri := "ahp-session:/early"
	c.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake"}, nil)
	var st wire.SessionState
	require.NoError(t, json.Unmarshal(c.subscribe(uri).State, &st))
	require.Equal(t, wire.SessionLifecycleCreating, st.Lifecycle)
	s := testSession{uri: uri, chat: *st.DefaultChat}
	c.subscribe(s.chat)
	c.accepted(s.chat, &wire.ChatPendingMessageSetAction{Kind: wire.PendingMessageKindQueued, ID: "q1", Message: userMsg("first")})
	assert.Len(t, hs.readChat(t, s.chat).QueuedMessages, 1, "held while the session is being created")
	close(ready)
	e := c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnStarted))
	assert.Equal(t, "q1", *e.Action.Value.(*wire.ChatTurnStartedAction).QueuedMessageID)
}

// TestTurnStartedWhileCreating: a client may start the first turn before
// the session is ready (AHP's "provisional" sessions: the 0.5.0 and 0.7.0
// session reducers keep the turn's status across session/ready, fixture
// 147). ahpx does exactly that when it sees lifecycle "creating" after
// subscribing; the host used to reject the turn, and ahpx waited forever.
// The handler gets the turn at once and runs it once its agent is ready.
func TestTurnStartedWhileCreating(t *testing.T) {
	hs := newHarness(t, Options{})
	ready := make(chan struct{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns, b.holdReady = false, ready })
	c := hs.dial(t, "c")
	c.initialize()
	uri := "demo:/provisional"
	c.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake"}, nil)
	var st wire.SessionState
	require.NoError(t, json.Unmarshal(c.subscribe(uri).State, &st))
	require.Equal(t, wire.SessionLifecycleCreating, st.Lifecycle)
	s := testSession{uri: uri, chat: *st.DefaultChat}
	c.subscribe(s.chat)
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("first")})
	hs.handler.waitAction(t, "the handler to get the turn", func(r recordedAction) bool {
		return r.channel == s.chat && r.typ == string(wire.ActionTypeChatTurnStarted)
	})
	close(ready)
	c.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionReady))
	assert.Equal(t, "t1", hs.readChat(t, s.chat).ActiveTurn.ID, "session/ready leaves the turn running")

	// A session that failed to start takes no turns.
	hs.handler.set(func(b *fakeHandler) { b.holdReady, b.failCreate = nil, true })
	failed := "demo:/failed"
	c.mustCall("createSession", map[string]any{"channel": failed, "provider": "fake"}, nil)
	require.NoError(t, json.Unmarshal(c.subscribe(failed).State, &st))
	if st.Lifecycle == wire.SessionLifecycleCreating {
		c.nextEnvelope(isAction(failed, wire.ActionTypeSessionCreationFailed))
	}
	c.subscribe(*st.DefaultChat)
	assert.Contains(t, c.rejected(*st.DefaultChat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("late")}), "failed")
}

// TestCreateSessionRefusesRelativeWorkingDirectories: a working directory
// must be absolute on this machine; anything else is the client's error,
// said at once rather than as a failed session.
func TestCreateSessionRefusesRelativeWorkingDirectories(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	for _, d := range []string{"src/project", "file://other-host/src", "file:relative"} {
		_, err := c.call("createSession", map[string]any{"channel": "ahp-session:/wd-" + strconv.Itoa(len(d)), "provider": "fake", "workingDirectories": []string{d}})
		require.NotNil(t, err, d)
		assert.Equal(t, CodeInvalidParams, err.Code, d)
		assert.Contains(t, err.Message, d)
	}
	c.mustCall("createSession", map[string]any{"channel": "ahp-session:/wd-ok", "provider": "fake", "workingDirectories": []string{"file:///tmp", "/srv"}}, nil)
}

func TestCompletionsAndResourceRead(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "comp")
	res, err := c.call("completions", map[string]any{"channel": s.chat, "kind": "userMessage", "text": "@f", "offset": 2})
	require.Nil(t, err)
	assert.JSONEq(t, `{"items":[]}`, string(res))

	hs.handler.set(func(b *fakeHandler) {
		b.completions = []wire.CompletionItem{{InsertText: "@foo.ts", Attachment: wire.NewMessageAttachment(&wire.SimpleMessageAttachment{Label: "foo.ts"})}}
	})
	var cr wire.CompletionsResult
	c.mustCall("completions", map[string]any{"channel": s.chat, "kind": "userMessage", "text": "@f", "offset": 2}, &cr)
	require.Len(t, cr.Items, 1)
	assert.Equal(t, "@foo.ts", cr.Items[0].InsertText)
	_, err = c.call("completions", map[string]any{"channel": "ahp-chat:/nope", "kind": "userMessage", "text": "", "offset": 0})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)

	var rr wire.ResourceReadResult
	c.mustCall("resourceRead", map[string]any{"channel": RootURI, "uri": "ahp-test:/hello.txt"}, &rr)
	assert.Equal(t, "hello", rr.Data)
	_, err = c.call("resourceRead", map[string]any{"channel": RootURI, "uri": "ahp-test:/missing"})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)
}

func TestTerminalChannel(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	term := "ahp-terminal:/t1"
	require.NoError(t, hs.h.CreateTerminal(term, wire.TerminalState{Title: "build", Claim: wire.NewTerminalClaim(&wire.TerminalClientClaim{ClientID: "c"})}))
	require.Error(t, hs.h.CreateTerminal(term, wire.TerminalState{Title: "dup"}))
	require.Error(t, hs.h.CreateTerminal("ahp-session:/not-a-terminal", wire.TerminalState{Title: "x"}))
	e := c.nextEnvelope(isAction(RootURI, wire.ActionTypeRootTerminalsChanged))
	tc := e.Action.Value.(*wire.RootTerminalsChangedAction)
	require.Len(t, tc.Terminals, 1)
	assert.Equal(t, term, tc.Terminals[0].Resource)
	assert.Equal(t, "build", tc.Terminals[0].Title)

	c.subscribe(term)
	hs.dispatch(t, term, &wire.TerminalDataAction{Data: "hello\r\n"})
	c.accepted(term, &wire.TerminalInputAction{Data: "ls\r"})
	hs.handler.waitAction(t, "terminal/input", func(r recordedAction) bool {
		return r.channel == term && r.typ == string(wire.ActionTypeTerminalInput)
	})
	// terminal/data is server-only.
	c.rejected(term, &wire.TerminalDataAction{Data: "spoof"})
	// A title change is mirrored into the root catalogue.
	c.accepted(term, &wire.TerminalTitleChangedAction{Title: "tests"})
	e = c.nextEnvelope(isAction(RootURI, wire.ActionTypeRootTerminalsChanged))
	assert.Equal(t, "tests", e.Action.Value.(*wire.RootTerminalsChangedAction).Terminals[0].Title)

	hs.h.RemoveTerminal(term)
	e = c.nextEnvelope(isAction(RootURI, wire.ActionTypeRootTerminalsChanged))
	assert.Empty(t, e.Action.Value.(*wire.RootTerminalsChangedAction).Terminals)
	_, err := c.call("subscribe", map[string]any{"channel": term})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)
}

func TestDispatchErrors(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "d")
	_, err := hs.h.Dispatch("ahp-session:/none", wire.Action(&wire.SessionReadyAction{}))
	require.Error(t, err)
	_, err = hs.h.Dispatch(RootURI, wire.Action(&wire.SessionReadyAction{}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot be applied")
	_, err = hs.h.Dispatch(s.uri, wire.Action(&wire.ChatTurnCompleteAction{TurnID: "t"}))
	require.Error(t, err, "chat actions belong on the chat")
	_, err = hs.h.Dispatch(s.chat, wire.Action(&wire.SessionTitleChangedAction{Title: "x"}))
	require.Error(t, err, "session actions belong on the session")
}

func TestServerSeqIsMonotonic(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s1 := hs.newSession(c, "m1")
	s2 := hs.newSession(c, "m2")
	var wg sync.WaitGroup
	for _, ch := range []string{s1.uri, s2.uri, s1.chat, s2.chat} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				var a any = &wire.SessionTitleChangedAction{Title: strconv.Itoa(i)}
				if strings.HasPrefix(ch, "ahp-chat:") {
					a = &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg(strconv.Itoa(i)))}
				}
				_, err := hs.h.Dispatch(ch, wire.Action(a))
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	var prev int64
	for range 400 {
		e := c.nextEnvelope(nil)
		require.Greater(t, e.ServerSeq, prev, "envelopes reach a connection in serverSeq order")
		prev = e.ServerSeq
	}
}

// TestSubscribeIsAtomicWithSequencer subscribes to a chat while another
// goroutine streams text into it: the envelopes after the snapshot must
// start exactly at fromSeq+1, and snapshot plus envelopes must give the
// whole text.
func TestSubscribeIsAtomicWithSequencer(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "atomic")
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "p1"})})
	const n = 300
	var want strings.Builder
	for i := range n {
		want.WriteString(strconv.Itoa(i) + ",")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			_, err := hs.h.Dispatch(s.chat, wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strconv.Itoa(i) + ","}))
			assert.NoError(t, err)
		}
	}()
	late := hs.stdio(t, "late")
	late.initialize()
	snap := late.subscribe(s.chat)
	<-done
	var st wire.ChatState
	require.NoError(t, json.Unmarshal(snap.State, &st))
	require.NotNil(t, st.ActiveTurn)
	text := turnText(st.ActiveTurn.ResponseParts)
	next := snap.FromSeq + 1
	for hs.h.Stats().ServerSeq >= next {
		e := late.nextEnvelope(func(e envelope) bool { return e.Channel == s.chat })
		require.Equal(t, next, e.ServerSeq, "envelopes continue right after fromSeq")
		text += e.Action.Value.(*wire.ChatDeltaAction).Content
		next++
	}
	assert.Equal(t, want.String(), text, "snapshot + envelopes reproduce the final state")
}

func TestWireLog(t *testing.T) {
	var mu sync.Mutex
	var in, out []string
	hs := newHarness(t, Options{WireLog: func(dir string, frame []byte) {
		mu.Lock()
		defer mu.Unlock()
		switch dir {
		case "in":
			in = append(in, string(frame))
		case "out":
			out = append(out, string(frame))
		}
	}})
	c := hs.dial(t, "c")
	c.initialize()
	c.ping()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, in, 2)
	require.Len(t, out, 2)
	for _, f := range append(in, out...) {
		assert.True(t, json.Valid([]byte(f)), "%s", f)
	}
	assert.Contains(t, in[0], `"initialize"`)
	assert.Contains(t, out[0], `"protocolVersion":"1.0.0"`)
	assert.Contains(t, in[1], `"ping"`)
	assert.Contains(t, out[1], `"result":null`)
}

func TestLimits(t *testing.T) {
	hs := newHarness(t, Options{MaxSessions: 1, MaxSubscriptionsPerConn: 1})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	_, err := c.call("createSession", map[string]any{"channel": "ahp-session:/one", "provider": "fake"})
	require.Nil(t, err)
	_, err = c.call("createSession", map[string]any{"channel": "ahp-session:/two", "provider": "fake"})
	require.NotNil(t, err)
	assert.Contains(t, err.Message, "session limit")
	_, err = c.call("subscribe", map[string]any{"channel": "ahp-session:/one"})
	require.NotNil(t, err)
	assert.Contains(t, err.Message, "subscription limit")
	// Subscribing again to what the connection holds takes no more.
	c.subscribe(RootURI)
	// Disposing frees the session's place.
	c.mustCall("disposeSession", map[string]any{"channel": "ahp-session:/one"}, nil)
	_, err = c.call("createSession", map[string]any{"channel": "ahp-session:/two", "provider": "fake"})
	require.Nil(t, err)
}

func TestActiveClientReleasedOnDisconnect(t *testing.T) {
	hs := newHarness(t, Options{})
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "active")
	c := hs.dial(t, "driver")
	c.initialize(s.uri)
	c.accepted(s.uri, &wire.SessionActiveClientSetAction{ActiveClient: wire.SessionActiveClient{ClientID: "driver", Tools: []wire.ToolDefinition{}}})
	// Another client cannot act for it.
	owner.rejected(s.uri, &wire.SessionActiveClientRemovedAction{ClientID: "driver"})
	assert.Len(t, hs.readSession(t, s.uri).ActiveClients, 1)
	c.close()
	e := owner.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionActiveClientRemoved))
	assert.Nil(t, e.Origin, "the host removes it")
	assert.Equal(t, "driver", e.Action.Value.(*wire.SessionActiveClientRemovedAction).ClientID)
	assert.Empty(t, hs.readSession(t, s.uri).ActiveClients)
}

func TestActiveClientReleasedOnUnsubscribe(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	uri := "ahp-session:/eager"
	c.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake",
		"activeClient": map[string]any{"clientId": "c", "tools": []any{}}}, nil)
	c.subscribe(uri)
	require.Len(t, hs.readSession(t, uri).ActiveClients, 1, "createSession.activeClient makes the caller active")
	watcher := hs.dial(t, "w")
	watcher.initialize(uri)
	c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": uri}})
	e := watcher.nextEnvelope(isAction(uri, wire.ActionTypeSessionActiveClientRemoved))
	assert.Equal(t, "c", e.Action.Value.(*wire.SessionActiveClientRemovedAction).ClientID)
}

func TestUnsubscribeStopsDelivery(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	r := c.initialize(RootURI, "ahp-session:/not-there")
	require.Len(t, r.Snapshots, 1, "unknown initial subscriptions are skipped")
	s := hs.newSession(c, "unsub")
	hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("one"))})
	c.nextEnvelope(func(e envelope) bool { return e.Channel == s.chat })
	c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": s.chat}})
	c.ping() // unsubscribe is processed in order
	c.backlog = nil
	hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("two"))})
	seq := hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "still watched"})
	before, _ := c.until("the session's envelope", func(m rpcMsg) bool {
		return m.Method == wire.MethodAction && decodeEnvelope(t, m).ServerSeq == seq
	})
	for _, m := range before {
		if m.Method == wire.MethodAction {
			assert.NotEqual(t, s.chat, decodeEnvelope(t, m).Channel, "no chat envelopes after unsubscribe")
		}
	}
}

func TestServeConnResult(t *testing.T) {
	h := New(Options{})
	defer h.Close()
	serve := func() (*testClient, chan error) {
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- h.ServeConn(context.Background(), stdio.New(sr, sw, stdio.Options{})) }()
		return newTestClient(t, stdio.New(cr, cw, stdio.Options{}), "c"), done
	}
	result := func(done chan error) error {
		ctx, cancel := waitCtx(t)
		defer cancel()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			t.Fatal("ServeConn did not return")
			return nil
		}
	}
	// A client that goes away cleanly: nil.
	c, done := serve()
	c.initialize()
	c.close()
	require.NoError(t, result(done))
	// A failed negotiation: the server closes the connection and says why.
	c, done = serve()
	_, rerr := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{"7.0.0"}, "clientId": "c"})
	require.NotNil(t, rerr)
	err := result(done)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server closed the connection: protocol version negotiation failed")
	// A host that is closed refuses connections.
	h.Close()
	cr, sw := io.Pipe()
	defer cr.Close()
	err = h.ServeConn(context.Background(), stdio.New(cr, sw, stdio.Options{}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shutting down")
}

func TestDispatchActionSentAsRequestIsHandled(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "lenient")
	before := hs.h.Stats().ServerSeq
	res, err := c.call("dispatchAction", map[string]any{
		"channel": s.uri, "clientSeq": 1,
		"action": map[string]any{"type": "session/titleChanged", "title": "renamed"},
	})
	require.Nil(t, err, "a notification sent as a request is answered, not refused")
	assert.Equal(t, "null", string(res))
	assert.Greater(t, hs.h.Stats().ServerSeq, before, "and the action was sequenced")
	assert.Equal(t, "renamed", hs.readSession(t, s.uri).Title)

	res, err = c.call("unsubscribe", map[string]any{"channel": s.uri})
	require.Nil(t, err)
	assert.Equal(t, "null", string(res))
}

// TestStatsCountConnectionsAndSessions: Stats follows what is live.
func TestStatsCountConnectionsAndSessions(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	hs.newSession(c, "a")
	s := hs.newSession(c, "b")
	st := hs.h.Stats()
	assert.Equal(t, 1, st.Connections)
	assert.Equal(t, 2, st.Sessions)
	c.mustCall("disposeSession", map[string]any{"channel": s.uri}, nil)
	assert.Equal(t, 1, hs.h.Stats().Sessions)
	var root wire.RootState
	require.NoError(t, json.Unmarshal(c.subscribe(RootURI).State, &root))
	require.NotNil(t, root.ActiveSessions)
	assert.Equal(t, int64(1), *root.ActiveSessions)
}
