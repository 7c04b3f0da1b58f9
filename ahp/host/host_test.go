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
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/transport/stdio"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
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
			hs := newHarness(t, Options{})
			c := tr.dial(hs, t, "client-1")
			r := c.initialize(RootURI)
			assert.Equal(t, "0.3.0", r.ProtocolVersion)
			require.Len(t, r.Snapshots, 1)
			assert.Equal(t, RootURI, r.Snapshots[0].Resource)
			var root wire.RootState
			require.NoError(t, json.Unmarshal(r.Snapshots[0].State, &root))
			require.Len(t, root.Agents, 1)
			assert.Equal(t, "fake", root.Agents[0].Provider)
			assert.Equal(t, r.ServerSeq, r.Snapshots[0].FromSeq)

			// A second initialize on the same connection is refused.
			_, err := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{"0.3.0"}, "clientId": "x"})
			require.NotNil(t, err)
			assert.Equal(t, CodeInvalidRequest, err.Code)
		})
	}
}

func TestNegotiationPicksClientPreference(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	var r initResult
	c.mustCall("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{"9.9.9", "0.3.0", "0.2.0"}, "clientId": "c"}, &r)
	assert.Equal(t, "0.3.0", r.ProtocolVersion)
}

func TestNegotiationFailureClosesConnection(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			hs := newHarness(t, Options{})
			c := tr.dial(hs, t, "c")
			_, err := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{"0.1.0", "1.0.0"}, "clientId": "c"})
			require.NotNil(t, err)
			assert.Equal(t, CodeUnsupportedProtocolVersion, err.Code)
			data, _ := json.Marshal(err.Data)
			assert.JSONEq(t, `{"supportedVersions":["0.3.0"]}`, string(data))
			// The server closes the connection after the error.
			_, ok := c.recvFresh(testTimeout)
			assert.False(t, ok, "the connection should be closed")
		})
	}
}

func TestPingBeforeInitialize(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	res, err := c.call("ping", map[string]any{"channel": RootURI})
	require.Nil(t, err)
	assert.JSONEq(t, `{}`, string(res))
	// ping without params is answered as well.
	c.sendRaw([]byte(`{"jsonrpc":"2.0","id":"p","method":"ping"}`))
	_, err = c.await(`"p"`)
	assert.Nil(t, err)
}

func TestRequestBeforeInitializeIsAnError(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	for _, method := range []string{"subscribe", "createSession", "listSessions", "fetchTurns"} {
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
		{"field wrong type", `{"jsonrpc":"2.0","id":1,"method":"fetchTurns","params":{"channel":"ahp-session:/x","limit":"ten"}}`, CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.sendRaw([]byte(tc.frame))
			m, ok := c.recv(testTimeout)
			require.True(t, ok)
			require.NotNil(t, m.Error, "frame %s got %s", tc.frame, m.raw)
			assert.Equal(t, tc.code, m.Error.Code, m.Error.Message)
			// The connection stays usable.
			_, err := c.call("ping", map[string]any{"channel": RootURI})
			require.Nil(t, err)
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

	uri := hs.newSession(c, "s1")
	snap := c.subscribe(uri)
	var st wire.SessionState
	require.NoError(t, json.Unmarshal(snap.State, &st))
	assert.Equal(t, wire.SessionLifecycleReady, st.Lifecycle)
	assert.Equal(t, "fake", st.Summary.Provider)
	assert.Equal(t, hs.h.Stats().ServerSeq, snap.FromSeq)
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
}

func TestSessionCatalogueNotifications(t *testing.T) {
	hs := newHarness(t, Options{})
	watcher := hs.dial(t, "watcher")
	watcher.initialize(RootURI)
	c := hs.dial(t, "c")
	c.initialize()
	uri := hs.newSession(c, "cat")

	added := watcher.nextNotification("root/sessionAdded")
	var ap wire.SessionAddedParams
	require.NoError(t, json.Unmarshal(added.Params, &ap))
	assert.Equal(t, RootURI, ap.Channel)
	assert.Equal(t, uri, ap.Summary.Resource)

	var list wire.ListSessionsResult
	c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	require.Len(t, list.Items, 1)
	assert.Equal(t, uri, list.Items[0].Resource)

	seq := c.dispatch(uri, &wire.SessionTitleChangedAction{Title: "Renamed"})
	c.ownEcho(seq)
	changed := watcher.nextNotification("root/sessionSummaryChanged")
	var cp struct {
		Session string         `json:"session"`
		Changes map[string]any `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(changed.Params, &cp))
	assert.Equal(t, uri, cp.Session)
	assert.Equal(t, "Renamed", cp.Changes["title"])
	assert.NotContains(t, cp.Changes, "resource")

	c.mustCall("disposeSession", map[string]any{"channel": uri}, nil)
	removed := watcher.nextNotification("root/sessionRemoved")
	var rp wire.SessionRemovedParams
	require.NoError(t, json.Unmarshal(removed.Params, &rp))
	assert.Equal(t, uri, rp.Session)
	_, err := c.call("disposeSession", map[string]any{"channel": uri})
	require.NotNil(t, err)
	assert.Equal(t, CodeSessionNotFound, err.Code)
	assert.Equal(t, []string{uri}, hs.backend.disposed)
}

// TestFullTurn runs a whole turn with the fake backend: streaming text, a
// tool call that needs confirmation, completion.
func TestFullTurn(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			hs := newHarness(t, Options{})
			c := tr.dial(hs, t, "c")
			c.initialize(RootURI)
			uri := hs.newSession(c, "turn")
			seq := c.dispatch(uri, &wire.SessionTurnStartedAction{TurnID: "t1", Message: wire.Message{Text: "hi", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}})
			echo := c.ownEcho(seq)
			assert.Nil(t, echo.RejectionReason)
			ready := c.nextEnvelope(func(e envelope) bool { return e.Action.Type() == string(wire.ActionTypeSessionToolCallReady) })
			assert.Nil(t, ready.Origin, "server-originated envelopes carry no origin")
			assert.Contains(t, string(ready.raw), `"serverSeq"`)
			assert.NotContains(t, string(ready.raw), `"origin"`)
			assert.NotContains(t, string(ready.raw), `"rejectionReason"`)

			cseq := c.dispatch(uri, &wire.SessionToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
			require.Nil(t, c.ownEcho(cseq).RejectionReason)
			c.nextEnvelope(func(e envelope) bool { return e.Action.Type() == string(wire.ActionTypeSessionTurnComplete) })

			var st *wire.SessionState
			hs.h.ReadSession(uri, func(s *wire.SessionState) {
				b, _ := json.Marshal(s)
				st = new(wire.SessionState)
				require.NoError(t, json.Unmarshal(b, st))
			})
			require.Nil(t, st.ActiveTurn)
			require.Len(t, st.Turns, 1)
			assert.Equal(t, wire.TurnStateComplete, st.Turns[0].State)
			text := ""
			for _, p := range st.Turns[0].ResponseParts {
				if md, ok := p.Value.(*wire.MarkdownResponsePart); ok {
					text += md.Content
				}
			}
			assert.Equal(t, "Hello, world!", text)

			// The backend saw the client actions in order, with their origins.
			var types []string
			for _, r := range hs.backend.recorded() {
				types = append(types, r.typ)
				assert.Equal(t, "c", r.origin.ClientID)
			}
			assert.Equal(t, []string{"session/turnStarted", "session/toolCallConfirmed"}, types)

			// fetchTurns pages the history.
			var ft wire.FetchTurnsResult
			c.mustCall("fetchTurns", map[string]any{"channel": uri, "limit": 10}, &ft)
			require.Len(t, ft.Turns, 1)
			assert.False(t, ft.HasMore)
			assert.Equal(t, "t1", ft.Turns[0].ID)
		})
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestClientActionValidation(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.backend.runTurns = false
	c := hs.dial(t, "c")
	c.initialize()
	uri := hs.newSession(c, "val")
	user := wire.Message{Text: "x", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}

	rejected := []struct {
		name   string
		action any
		reason string
	}{
		{"cancel without active turn", &wire.SessionTurnCancelledAction{TurnID: "t0"}, "no active turn"},
		{"server-only action", &wire.SessionDeltaAction{TurnID: "t0", PartID: "p", Content: "x"}, "server-only"},
		{"confirm unknown tool call", &wire.SessionToolCallApprovedAction{TurnID: "t0", ToolCallID: "nope", Confirmed: wire.ToolCallConfirmationReasonUserAction}, "no active turn"},
		{"remove missing pending message", &wire.SessionPendingMessageRemovedAction{Kind: wire.PendingMessageKindQueued, ID: "q9"}, "no queued pending message"},
		{"answer unknown input", &wire.SessionInputAnswerChangedAction{RequestID: "r1", QuestionID: "q"}, "no input request"},
		{"complete unknown input", &wire.SessionInputCompletedAction{RequestID: "r1", Response: wire.SessionInputResponseKindAccept}, "no input request"},
		{"system message turn", &wire.SessionTurnStartedAction{TurnID: "t0", Message: wire.Message{Text: "x", Origin: wire.MessageOrigin{Kind: wire.MessageKindSystemNotification}}}, "user messages"},
		{"terminal action on session", &wire.TerminalInputAction{Data: "ls"}, "cannot be dispatched"},
		{"config property not in the schema", &wire.SessionConfigChangedAction{Config: map[string]any{"mode": "fast"}}, "does not exist"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			seq := c.dispatch(uri, tc.action)
			e := c.ownEcho(seq)
			require.NotNil(t, e.RejectionReason)
			assert.Contains(t, *e.RejectionReason, tc.reason)
		})
	}

	// A turn is active: a second turnStarted is rejected, cancel is accepted.
	seq := c.dispatch(uri, &wire.SessionTurnStartedAction{TurnID: "t1", Message: user})
	require.Nil(t, c.ownEcho(seq).RejectionReason)
	seq = c.dispatch(uri, &wire.SessionTurnStartedAction{TurnID: "t2", Message: user})
	e := c.ownEcho(seq)
	require.NotNil(t, e.RejectionReason)
	assert.Contains(t, *e.RejectionReason, "still active")
	seq = c.dispatch(uri, &wire.SessionTurnCancelledAction{TurnID: "t1"})
	require.Nil(t, c.ownEcho(seq).RejectionReason)

	// Unknown action types are rejected with the raw action echoed.
	c.seq++
	c.sendRaw(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":%q,"clientSeq":%d,"action":{"type":"session/fromTheFuture","x":1}}}`, uri, c.seq))
	e = c.ownEcho(c.seq)
	require.NotNil(t, e.RejectionReason)
	assert.Contains(t, string(mustJSON(t, e.Action)), "fromTheFuture")
}

func TestUnknownChannelDroppedSilently(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	c.dispatch("ahp-session:/ghost", &wire.SessionTitleChangedAction{Title: "x"})
	before := hs.h.Stats()
	// The host handles frames in order, so by the time ping is answered an
	// echo would already have been queued ahead of it.
	_, err := c.call("ping", map[string]any{"channel": RootURI})
	require.Nil(t, err)
	for _, m := range c.backlog {
		assert.NotEqual(t, "action", m.Method, "unexpected %s", m.raw)
	}
	assert.Equal(t, before.ServerSeq, hs.h.Stats().ServerSeq)
}

func TestTwoClientsConfirmSameToolCall(t *testing.T) {
	hs := newHarness(t, Options{})
	a := hs.dial(t, "a")
	a.initialize()
	b := hs.stdio(t, "b")
	b.initialize()
	uri := hs.newSession(a, "race")
	b.subscribe(uri)
	// Keep the turn open after the confirmation so the loser is judged
	// against the confirmed tool call.
	gate := make(chan struct{})
	hs.backend.afterConfirm = gate
	defer close(gate)
	// The fake backend runs the scripted turn, which waits for confirmation.
	user := wire.Message{Text: "go", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
	seq := a.dispatch(uri, &wire.SessionTurnStartedAction{TurnID: "t1", Message: user})
	a.ownEcho(seq)
	b.nextEnvelope(func(e envelope) bool { return e.Action.Type() == string(wire.ActionTypeSessionToolCallReady) })

	confirm := &wire.SessionToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction}
	sa := a.dispatch(uri, confirm)
	ea := a.ownEcho(sa)
	require.Nil(t, ea.RejectionReason, "the first confirmation wins")
	deny := &wire.SessionToolCallDeniedAction{TurnID: "t1", ToolCallID: "tc-t1", Reason: wire.ToolCallCancellationReasonDenied}
	sb := b.dispatch(uri, deny)
	eb := b.ownEcho(sb)
	require.NotNil(t, eb.RejectionReason)
	assert.Contains(t, *eb.RejectionReason, "not pending-confirmation")
	// b also saw a's accepted confirmation (echoes go to every subscriber).
	assert.Equal(t, ea.ServerSeq, ea.ServerSeq)
	n := 0
	for _, r := range hs.backend.recorded() {
		if r.typ == string(wire.ActionTypeSessionToolCallConfirmed) {
			n++
			assert.Equal(t, "a", r.origin.ClientID)
		}
	}
	assert.Equal(t, 1, n, "only the winning confirmation reaches the backend")
}

// TestConcurrentConfirmations races two clients 200 times; exactly one
// confirmation is accepted each time.
func TestConcurrentConfirmations(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.backend.runTurns = false
	a := hs.dial(t, "a")
	a.initialize()
	b := hs.dial(t, "b")
	b.initialize()
	uri := hs.newSession(a, "race200")
	user := wire.Message{Text: "go", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
	_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTurnStartedAction{TurnID: "t", Message: user}))
	require.NoError(t, err)
	for i := 0; i < 200; i++ {
		id := "tc" + strconv.Itoa(i)
		_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionToolCallStartAction{TurnID: "t", ToolCallID: id, ToolName: "x", DisplayName: "X"}))
		require.NoError(t, err)
		_, err = hs.h.Dispatch(uri, wire.Action(&wire.SessionToolCallReadyAction{TurnID: "t", ToolCallID: id, InvocationMessage: wire.PlainText("x")}))
		require.NoError(t, err)
		var wg sync.WaitGroup
		var ea, eb envelope
		wg.Add(2)
		go func() {
			defer wg.Done()
			ea = a.ownEcho(a.dispatch(uri, &wire.SessionToolCallApprovedAction{TurnID: "t", ToolCallID: id, Confirmed: wire.ToolCallConfirmationReasonUserAction}))
		}()
		go func() {
			defer wg.Done()
			eb = b.ownEcho(b.dispatch(uri, &wire.SessionToolCallDeniedAction{TurnID: "t", ToolCallID: id, Reason: wire.ToolCallCancellationReasonDenied}))
		}()
		wg.Wait()
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
	for i := 0; i < 5; i++ {
		_, err := hs.h.Dispatch(keep, wire.Action(&wire.SessionTitleChangedAction{Title: "t" + strconv.Itoa(i)}))
		require.NoError(t, err)
	}
	c.mustCall("disposeSession", map[string]any{"channel": gone}, nil)

	r := hs.dial(t, "c")
	var res struct {
		Type    string            `json:"type"`
		Actions []json.RawMessage `json:"actions"`
		Missing []string          `json:"missing"`
	}
	r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "c", "lastSeenServerSeq": last, "subscriptions": []string{keep, gone}}, &res)
	assert.Equal(t, "replay", res.Type)
	assert.Equal(t, []string{gone}, res.Missing)
	require.Len(t, res.Actions, 5)
	prev := last
	for i, raw := range res.Actions {
		var e envelope
		require.NoError(t, json.Unmarshal(raw, &e))
		assert.Equal(t, keep, e.Channel)
		assert.Greater(t, e.ServerSeq, prev)
		prev = e.ServerSeq
		assert.Equal(t, "t"+strconv.Itoa(i), e.Action.Value.(*wire.SessionTitleChangedAction).Title)
	}
	// The reconnected client is subscribed again and receives new actions.
	seq, err := hs.h.Dispatch(keep, wire.Action(&wire.SessionTitleChangedAction{Title: "after"}))
	require.NoError(t, err)
	e := r.nextEnvelope(nil)
	assert.Equal(t, seq, e.ServerSeq)
}

func TestReconnectSnapshotWhenGapTooLarge(t *testing.T) {
	hs := newHarness(t, Options{ReplayBuffer: 4})
	c := hs.dial(t, "c")
	c.initialize()
	uri := hs.newSession(c, "snap")
	last := hs.h.Stats().ServerSeq
	for i := 0; i < 10; i++ {
		_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTitleChangedAction{Title: "t" + strconv.Itoa(i)}))
		require.NoError(t, err)
	}
	for _, lastSeen := range []int64{last, 1 << 40, -1} {
		r := hs.stdio(t, "c")
		var res struct {
			Type      string         `json:"type"`
			Snapshots []snapshotWire `json:"snapshots"`
		}
		r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "c", "lastSeenServerSeq": lastSeen, "subscriptions": []string{uri, "ahp-session:/gone"}}, &res)
		assert.Equal(t, "snapshot", res.Type, "lastSeen %d", lastSeen)
		require.Len(t, res.Snapshots, 1)
		var st wire.SessionState
		require.NoError(t, json.Unmarshal(res.Snapshots[0].State, &st))
		assert.Equal(t, "t9", st.Summary.Title)
		assert.Equal(t, hs.h.Stats().ServerSeq, res.Snapshots[0].FromSeq)
	}
}

func TestSlowClientIsClosedFastClientContinues(t *testing.T) {
	// Small socket buffers: the kernel holds a frame or two, and the queue
	// of 8 overflows after about a dozen frames instead of 4 MiB.
	hs := newHarnessSendBuffer(t, Options{OutboundQueue: 8}, 4096)
	fast := hs.dial(t, "fast")
	fast.initialize()
	term := "ahp-terminal:/flood"
	require.NoError(t, hs.h.CreateTerminal(term, wire.TerminalState{Title: "flood", Claim: wire.NewTerminalClaim(&wire.TerminalClientClaim{ClientID: "fast"})}))
	fast.subscribe(term)

	// The slow client subscribes and then stops reading.
	slow := hs.dialRawWith(t, smallReceiveDialer)
	defer slow.Close()
	require.NoError(t, slow.WriteJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"channel": RootURI, "protocolVersions": []string{"0.3.0"}, "clientId": "slow", "initialSubscriptions": []string{term}}}))
	require.Eventually(t, func() bool {
		hs.h.mu.Lock()
		defer hs.h.mu.Unlock()
		return len(hs.h.channels[term].subs) == 2
	}, testTimeout, time.Millisecond)

	// Flood until the slow connection's queue overflows; the fast client
	// must see everything.
	chunk := strings.Repeat("x", 32<<10)
	sent := 0
	for ; hs.h.Stats().SlowConnectionsClosed == 0; sent++ {
		require.Less(t, sent, 200, "the slow connection was never closed")
		seq, err := hs.h.Dispatch(term, wire.Action(&wire.TerminalDataAction{Data: chunk}))
		require.NoError(t, err)
		e := fast.nextEnvelope(nil)
		require.Equal(t, seq, e.ServerSeq)
	}
	// After the slow one is gone, the fast one still receives.
	seq, err := hs.h.Dispatch(term, wire.Action(&wire.TerminalDataAction{Data: "tail"}))
	require.NoError(t, err)
	require.Equal(t, seq, fast.nextEnvelope(nil).ServerSeq)
	require.Eventually(t, func() bool { return hs.h.Stats().Connections == 1 }, testTimeout, time.Millisecond)

	// The slow client's connection ends (after whatever was buffered).
	require.NoError(t, slow.SetReadDeadline(time.Now().Add(testTimeout)))
	var readErr error
	for readErr == nil {
		_, _, readErr = slow.ReadMessage()
	}
	assert.NotContains(t, readErr.Error(), "timeout")
}

func TestEncodeOnceForManySubscribers(t *testing.T) {
	hs := newHarness(t, Options{})
	owner := hs.dial(t, "owner")
	owner.initialize()
	uri := hs.newSession(owner, "fan")
	var clients []*testClient
	for i := 0; i < 20; i++ {
		c := hs.dial(t, "sub"+strconv.Itoa(i))
		c.initialize(uri)
		clients = append(clients, c)
	}
	before := hs.h.Stats().EnvelopesEncoded
	const n = 25
	for i := 0; i < n; i++ {
		_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTitleChangedAction{Title: strconv.Itoa(i)}))
		require.NoError(t, err)
	}
	for _, c := range clients {
		for i := 0; i < n; i++ {
			c.nextEnvelope(nil)
		}
	}
	assert.Equal(t, int64(n), hs.h.Stats().EnvelopesEncoded-before, "each envelope is encoded once for all 21 subscribers")
}

func TestQueuedMessageConsumedWhenIdle(t *testing.T) {
	hs := newHarness(t, Options{NewID: func() string { return "auto-turn" }})
	hs.backend.runTurns = false
	c := hs.dial(t, "c")
	c.initialize()
	uri := hs.newSession(c, "queue")
	user := wire.Message{Text: "later", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
	seq := c.dispatch(uri, &wire.SessionPendingMessageSetAction{Kind: wire.PendingMessageKindQueued, ID: "q1", Message: user})
	require.Nil(t, c.ownEcho(seq).RejectionReason)
	rm := c.nextEnvelope(nil)
	require.Equal(t, string(wire.ActionTypeSessionPendingMessageRemoved), rm.Action.Type())
	assert.Nil(t, rm.Origin)
	ts := c.nextEnvelope(nil)
	started, ok := ts.Action.Value.(*wire.SessionTurnStartedAction)
	require.True(t, ok)
	assert.Nil(t, ts.Origin)
	assert.Equal(t, "auto-turn", started.TurnID)
	require.NotNil(t, started.QueuedMessageID)
	assert.Equal(t, "q1", *started.QueuedMessageID)
	require.Eventually(t, func() bool {
		for _, r := range hs.backend.recorded() {
			if r.typ == string(wire.ActionTypeSessionTurnStarted) && r.origin == (wire.ActionOrigin{}) {
				return true
			}
		}
		return false
	}, testTimeout, time.Millisecond, "the consumed queued message is handed to the backend like a turnStarted")

	// Queued while a turn is active: consumed when the turn completes.
	seq = c.dispatch(uri, &wire.SessionPendingMessageSetAction{Kind: wire.PendingMessageKindQueued, ID: "q2", Message: user})
	require.Nil(t, c.ownEcho(seq).RejectionReason)
	_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTurnCompleteAction{TurnID: "auto-turn"}))
	require.NoError(t, err)
	e := c.nextEnvelope(func(e envelope) bool { return e.Action.Type() == string(wire.ActionTypeSessionTurnStarted) })
	assert.Equal(t, "q2", *e.Action.Value.(*wire.SessionTurnStartedAction).QueuedMessageID)
}

func TestModelChangeDeferredDuringTurn(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.backend.runTurns = false
	c := hs.dial(t, "c")
	c.initialize()
	uri := hs.newSession(c, "model")
	user := wire.Message{Text: "x", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
	c.ownEcho(c.dispatch(uri, &wire.SessionTurnStartedAction{TurnID: "t1", Message: user}))
	mseq := c.dispatch(uri, &wire.SessionModelChangedAction{Model: wire.ModelSelection{ID: "big"}})
	// Not applied while the turn runs.
	_, err := c.call("ping", map[string]any{"channel": RootURI})
	require.Nil(t, err)
	hs.h.ReadSession(uri, func(s *wire.SessionState) { assert.Nil(t, s.Summary.Model) })
	_, derr := hs.h.Dispatch(uri, wire.Action(&wire.SessionTurnCompleteAction{TurnID: "t1"}))
	require.NoError(t, derr)
	e := c.ownEcho(mseq)
	require.Nil(t, e.RejectionReason)
	hs.h.ReadSession(uri, func(s *wire.SessionState) {
		require.NotNil(t, s.Summary.Model)
		assert.Equal(t, "big", s.Summary.Model.ID)
	})
}

func TestCompletionsAndResourceRead(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	uri := hs.newSession(c, "comp")
	var cr wire.CompletionsResult
	res, err := c.call("completions", map[string]any{"channel": uri, "kind": "userMessage", "text": "@f", "offset": 2})
	require.Nil(t, err)
	assert.JSONEq(t, `{"items":[]}`, string(res))
	require.NoError(t, json.Unmarshal(res, &cr))

	hs.backend.mu.Lock()
	hs.backend.completions = []wire.CompletionItem{{InsertText: "@foo.ts", Attachment: wire.NewMessageAttachment(&wire.SimpleMessageAttachment{Label: "foo.ts"})}}
	hs.backend.mu.Unlock()
	c.mustCall("completions", map[string]any{"channel": uri, "kind": "userMessage", "text": "@f", "offset": 2}, &cr)
	require.Len(t, cr.Items, 1)
	assert.Equal(t, "@foo.ts", cr.Items[0].InsertText)

	var rr wire.ResourceReadResult
	c.mustCall("resourceRead", map[string]any{"channel": RootURI, "uri": "file:///hello.txt"}, &rr)
	assert.Equal(t, "hello", rr.Data)
	_, err = c.call("resourceRead", map[string]any{"channel": RootURI, "uri": "file:///missing"})
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
	e := c.nextEnvelope(func(e envelope) bool { return e.Action.Type() == string(wire.ActionTypeRootTerminalsChanged) })
	tc := e.Action.Value.(*wire.RootTerminalsChangedAction)
	require.Len(t, tc.Terminals, 1)
	assert.Equal(t, term, tc.Terminals[0].Resource)

	c.subscribe(term)
	_, err := hs.h.Dispatch(term, wire.Action(&wire.TerminalDataAction{Data: "hello\r\n"}))
	require.NoError(t, err)
	seq := c.dispatch(term, &wire.TerminalInputAction{Data: "ls\r"})
	require.Nil(t, c.ownEcho(seq).RejectionReason)
	require.Eventually(t, func() bool {
		for _, r := range hs.backend.recorded() {
			if r.channel == term && r.typ == string(wire.ActionTypeTerminalInput) {
				return true
			}
		}
		return false
	}, testTimeout, time.Millisecond)
	// terminal/data is server-only.
	seq = c.dispatch(term, &wire.TerminalDataAction{Data: "spoof"})
	require.NotNil(t, c.ownEcho(seq).RejectionReason)

	hs.h.RemoveTerminal(term)
	e = c.nextEnvelope(func(e envelope) bool { return e.Action.Type() == string(wire.ActionTypeRootTerminalsChanged) })
	assert.Empty(t, e.Action.Value.(*wire.RootTerminalsChangedAction).Terminals)
}

func TestDispatchErrors(t *testing.T) {
	hs := newHarness(t, Options{})
	_, err := hs.h.Dispatch("ahp-session:/none", wire.Action(&wire.SessionReadyAction{}))
	require.Error(t, err)
	_, err = hs.h.Dispatch(RootURI, wire.Action(&wire.SessionReadyAction{}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot be applied")
}

func TestSerialSeqIsMonotonic(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s1 := hs.newSession(c, "m1")
	s2 := hs.newSession(c, "m2")
	var wg sync.WaitGroup
	for _, uri := range []string{s1, s2} {
		wg.Add(1)
		go func(uri string) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTitleChangedAction{Title: strconv.Itoa(i)}))
				assert.NoError(t, err)
			}
		}(uri)
	}
	wg.Wait()
	var prev int64
	for i := 0; i < 200; i++ {
		e := c.nextEnvelope(nil)
		require.Greater(t, e.ServerSeq, prev, "envelopes reach a connection in serverSeq order")
		prev = e.ServerSeq
	}
}

// TestSubscribeIsAtomicWithSequencer subscribes while another goroutine
// keeps dispatching: the envelopes after the snapshot must start exactly
// at fromSeq+1, with nothing lost or duplicated.
func TestSubscribeIsAtomicWithSequencer(t *testing.T) {
	hs := newHarness(t, Options{})
	owner := hs.dial(t, "owner")
	owner.initialize()
	uri := hs.newSession(owner, "atomic")
	const n = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTitleChangedAction{Title: strconv.Itoa(i)}))
			assert.NoError(t, err)
		}
	}()
	late := hs.stdio(t, "late")
	late.initialize()
	snap := late.subscribe(uri)
	<-done
	var st wire.SessionState
	require.NoError(t, json.Unmarshal(snap.State, &st))
	title := st.Summary.Title
	next := snap.FromSeq + 1
	for hs.h.Stats().ServerSeq >= next {
		e := late.nextEnvelope(func(e envelope) bool { return e.Channel == uri })
		require.Equal(t, next, e.ServerSeq, "envelopes continue right after fromSeq")
		title = e.Action.Value.(*wire.SessionTitleChangedAction).Title
		next++
	}
	assert.Equal(t, strconv.Itoa(n-1), title, "snapshot + envelopes reproduce the final state")
}

func TestWireLog(t *testing.T) {
	var mu sync.Mutex
	var in, out int
	hs := newHarness(t, Options{WireLog: func(dir string, frame []byte) {
		mu.Lock()
		defer mu.Unlock()
		require.True(t, json.Valid(frame))
		switch dir {
		case "in":
			in++
		case "out":
			out++
		}
	}})
	c := hs.dial(t, "c")
	c.initialize()
	_, err := c.call("ping", map[string]any{"channel": RootURI})
	require.Nil(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 2, in)
	assert.Equal(t, 2, out)
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
}

func TestActiveClientReleasedOnDisconnect(t *testing.T) {
	hs := newHarness(t, Options{})
	owner := hs.dial(t, "owner")
	owner.initialize()
	uri := hs.newSession(owner, "active")
	c := hs.dial(t, "driver")
	c.initialize(uri)
	seq := c.dispatch(uri, &wire.SessionActiveClientChangedAction{ActiveClient: &wire.SessionActiveClient{ClientID: "driver", Tools: []wire.ToolDefinition{}}})
	require.Nil(t, c.ownEcho(seq).RejectionReason)
	// Another client cannot steal the role.
	oseq := owner.dispatch(uri, &wire.SessionActiveClientChangedAction{ActiveClient: &wire.SessionActiveClient{ClientID: "owner", Tools: []wire.ToolDefinition{}}})
	require.NotNil(t, owner.ownEcho(oseq).RejectionReason)
	c.close()
	e := owner.nextEnvelope(func(e envelope) bool {
		return e.Action.Type() == string(wire.ActionTypeSessionActiveClientChanged) && e.Origin == nil
	})
	assert.Nil(t, e.Action.Value.(*wire.SessionActiveClientChangedAction).ActiveClient)
}

func TestUnsubscribeStopsDelivery(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	r := c.initialize(RootURI, "ahp-session:/not-there")
	require.Len(t, r.Snapshots, 1, "unknown initial subscriptions are skipped")
	uri := hs.newSession(c, "unsub")
	_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTitleChangedAction{Title: "one"}))
	require.NoError(t, err)
	c.nextEnvelope(func(e envelope) bool { return e.Channel == uri })
	c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": uri}})
	_, perr := c.call("ping", map[string]any{"channel": RootURI}) // unsubscribe is processed in order
	require.Nil(t, perr)
	c.backlog = nil
	_, err = hs.h.Dispatch(uri, wire.Action(&wire.SessionTitleChangedAction{Title: "two"}))
	require.NoError(t, err)
	_, perr = c.call("ping", map[string]any{"channel": RootURI})
	require.Nil(t, perr)
	for _, m := range c.backlog {
		if m.Method == "action" {
			var e envelope
			require.NoError(t, json.Unmarshal(m.Params, &e))
			assert.NotEqual(t, uri, e.Channel, "no session envelopes after unsubscribe")
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
	// A client that goes away cleanly: nil.
	c, done := serve()
	c.initialize()
	c.close()
	require.NoError(t, <-done)
	// A failed negotiation: the server closes the connection and says why.
	c, done = serve()
	_, rerr := c.call("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{"7.0.0"}, "clientId": "c"})
	require.NotNil(t, rerr)
	err := <-done
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server closed the connection: protocol version negotiation failed")
}

func TestDispatchActionSentAsRequestIsHandled(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	uri := hs.newSession(c, "lenient")
	before := hs.h.Stats().ServerSeq
	res, err := c.call("dispatchAction", map[string]any{
		"channel": uri, "clientSeq": 1,
		"action": map[string]any{"type": "session/titleChanged", "title": "renamed"},
	})
	require.Nil(t, err, "a notification sent as a request is answered, not refused")
	assert.Equal(t, "null", string(res))
	assert.Greater(t, hs.h.Stats().ServerSeq, before, "and the action was sequenced")
}
