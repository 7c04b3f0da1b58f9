package host

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The tests in this file are about what the 0.7.0 chat dialect added to
// the host: chats beside their session, the aggregates the session and
// the root catalogue keep of them, turn and catalogue paging.

// fixedClock is a clock tests move by hand, so that timestamps (and what
// clients reduce from them) are reproducible.
type fixedClock struct{ ms atomic.Int64 }

func newFixedClock() *fixedClock {
	c := &fixedClock{}
	c.ms.Store(1_700_000_000_000)
	return c
}

func (c *fixedClock) now() int64             { return c.ms.Load() }
func (c *fixedClock) advance(ms int64)       { c.ms.Add(ms) }
func (c *fixedClock) reducer() reducer.Clock { return reducer.Clock(c.now) }

func TestCreateAndDisposeChat(t *testing.T) {
	hs := newHarness(t, Options{Agents: []wire.AgentInfo{multiChatAgent()}})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "multi")
	const side, third = "ahp-chat:/side", "ahp-chat:/third"

	res, err := c.call("createChat", map[string]any{"channel": s.uri, "chat": side})
	require.Nil(t, err)
	assert.Equal(t, "null", string(res))
	added := c.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionChatAdded))
	assert.Nil(t, added.Origin)
	summary := added.Action.Value.(*wire.SessionChatAddedAction).Summary
	assert.Equal(t, side, summary.Resource)
	assert.Equal(t, wire.SessionStatusIdle, summary.Status)
	hs.handler.waitFor(t, "CreateChat", func(b *fakeHandler) bool { return len(b.chatsCreated) == 1 && b.chatsCreated[0] == side })

	// The new chat takes turns of its own, beside the default one.
	c.subscribe(side)
	c.accepted(side, &wire.ChatTurnStartedAction{TurnID: "s1", Message: userMsg("hi")})
	c.nextEnvelope(isAction(side, wire.ActionTypeChatToolCallReady))
	c.accepted(side, &wire.ChatToolCallApprovedAction{TurnID: "s1", ToolCallID: "tc-s1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	c.nextEnvelope(isAction(side, wire.ActionTypeChatTurnComplete))
	assert.Len(t, hs.readChat(t, side).Turns, 1)
	assert.Empty(t, hs.readChat(t, s.chat).Turns, "the default chat is untouched")

	// An initial message starts the chat's first turn, handed to the
	// handler after CreateChat, with the creator as its origin.
	c.mustCall("createChat", map[string]any{"channel": s.uri, "chat": third, "initialMessage": userMsg("first")}, nil)
	r := hs.handler.waitAction(t, "the initial message's turn", func(r recordedAction) bool {
		return r.channel == third && r.typ == string(wire.ActionTypeChatTurnStarted)
	})
	assert.Equal(t, "c", r.origin.ClientID)
	assert.Equal(t, "first", r.action.Value.(*wire.ChatTurnStartedAction).Message.Text)
	hs.handler.set(func(b *fakeHandler) { assert.Equal(t, []string{side, third}, b.chatsCreated) })
	// Its tool call waits for confirmation: the session needs input.
	set := c.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededSet))
	assert.Equal(t, third, set.Action.Value.(*wire.SessionInputNeededSetAction).Request.Chat())

	// Disposing it withdraws what it waited for and removes it.
	res, err = c.call("disposeChat", map[string]any{"channel": third})
	require.Nil(t, err)
	assert.Equal(t, "null", string(res))
	gone := c.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededRemoved))
	assert.Equal(t, set.Action.Value.(*wire.SessionInputNeededSetAction).Request.ID(), gone.Action.Value.(*wire.SessionInputNeededRemovedAction).ID)
	removed := c.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionChatRemoved))
	assert.Equal(t, third, removed.Action.Value.(*wire.SessionChatRemovedAction).Chat)
	hs.handler.waitFor(t, "DisposeChat", func(b *fakeHandler) bool { return len(b.chatsDisposed) == 1 && b.chatsDisposed[0] == third })

	st := hs.readSession(t, s.uri)
	var chats []string
	for _, ch := range st.Chats {
		chats = append(chats, ch.Resource)
	}
	assert.Equal(t, []string{s.chat, side}, chats)
	assert.Empty(t, st.InputNeeded)
	assert.Equal(t, s.chat, *st.DefaultChat)
	_, err = c.call("subscribe", map[string]any{"channel": third})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)

	// Disposing the session, whose side chat has a turn, archives it with
	// every chat (issue 23: disposeSession never destroys history); the
	// handler released them.
	c.mustCall("disposeSession", map[string]any{"channel": s.uri}, nil)
	hs.handler.waitFor(t, "DisposeSession", func(b *fakeHandler) bool { return len(b.disposed) == 1 })
	assert.True(t, hs.readSession(t, s.uri).Status.Has(wire.SessionStatusIsArchived))
	assert.Len(t, hs.readChat(t, side).Turns, 1)
	assert.True(t, hs.h.ReadChat(s.chat, func(*wire.ChatState) {}))
}

func TestCreateChatErrors(t *testing.T) {
	t.Run("without multipleChats", func(t *testing.T) {
		hs := newHarness(t, Options{})
		c := hs.dial(t, "c")
		c.initialize()
		s := hs.newSession(c, "single")
		_, err := c.call("createChat", map[string]any{"channel": s.uri, "chat": "ahp-chat:/more"})
		require.NotNil(t, err)
		assert.Equal(t, CodeMethodNotFound, err.Code)
		assert.Contains(t, err.Message, "multipleChats")
		assert.False(t, hs.h.ReadChat("ahp-chat:/more", func(*wire.ChatState) {}))
	})

	hs := newHarness(t, Options{Agents: []wire.AgentInfo{multiChatAgent()}})
	c := hs.dial(t, "c")
	c.initialize()
	uri := "ahp-session:/dirs"
	c.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake", "workingDirectories": []string{"/w"}}, nil)
	chat := wire.DefaultChatURI(uri)
	c.mustCall("createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/taken"}, nil)
	before := hs.h.Stats().ServerSeq

	cases := []struct {
		name   string
		method string
		params map[string]any
		code   int
		msg    string
	}{
		{"a fork", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/f", "source": map[string]any{"kind": "fork", "chat": chat, "turnId": "t1"}}, CodeInvalidParams, "fork"},
		{"a side chat", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/f", "source": map[string]any{"kind": "sideChat", "chat": chat}}, CodeInvalidParams, ""},
		{"the default chat's URI", "createChat", map[string]any{"channel": uri, "chat": chat}, CodeAlreadyExists, chat},
		{"another chat's URI, asked otherwise", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/taken", "workingDirectories": []string{"/w"}}, CodeAlreadyExists, "taken"},
		{"another chat's URI with a first message", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/taken",
			"initialMessage": wire.Message{Text: "x", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}}, CodeAlreadyExists, "taken"},
		{"a session's URI", "createChat", map[string]any{"channel": uri, "chat": uri}, CodeInvalidParams, "ahp-chat:"},
		{"another session's derived name", "createChat", map[string]any{"channel": uri, "chat": wire.ChatURI("ahp-session:/other", "c1")}, CodeInvalidParams, "ahp-session:/other"},
		{"a subagent's chat id", "createChat", map[string]any{"channel": uri, "chat": wire.ChatURI(uri, "subagent") + "/tc1"}, CodeInvalidParams, "reserved"},
		{"whitespace", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat://c 1/x"}, CodeInvalidParams, ""},
		{"no chat", "createChat", map[string]any{"channel": uri}, CodeInvalidParams, ""},
		{"a bare scheme", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/"}, CodeInvalidParams, ""},
		{"a directory outside the session", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/d", "workingDirectories": []string{"/elsewhere"}}, CodeInvalidParams, "/elsewhere"},
		{"an agent's initial message", "createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/m",
			"initialMessage": wire.Message{Text: "x", Origin: wire.MessageOrigin{Kind: wire.MessageKindAgent}}}, CodeInvalidParams, "user message"},
		{"an unknown session", "createChat", map[string]any{"channel": "ahp-session:/nope", "chat": "ahp-chat:/n"}, CodeSessionNotFound, ""},
		{"a chat as the session", "createChat", map[string]any{"channel": chat, "chat": "ahp-chat:/n"}, CodeSessionNotFound, ""},
		{"disposing the default chat", "disposeChat", map[string]any{"channel": chat}, CodeInvalidParams, "default chat"},
		{"disposing a session as a chat", "disposeChat", map[string]any{"channel": uri}, CodeNotFound, ""},
		{"disposing an unknown chat", "disposeChat", map[string]any{"channel": "ahp-chat:/nope"}, CodeNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			_, err := c.call(tc.method, tc.params)
			require.NotNil(t, err)
			assert.Equal(t, tc.code, err.Code, err.Message)
			assert.Contains(t, err.Message, tc.msg)
		})
	}
	c.t = t
	assert.Equal(t, before, hs.h.Stats().ServerSeq, "no refused command changed any state")
	assert.Len(t, hs.readSession(t, uri).Chats, 2)
	// The same chat asked for again, as VS Code does: a no-op.
	c.mustCall("createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/taken"}, nil)
	assert.Equal(t, before, hs.h.Stats().ServerSeq, "creating a chat that is there as asked changes nothing")
	assert.Len(t, hs.readSession(t, uri).Chats, 2)
	// A subset of the session's directories is fine.
	c.mustCall("createChat", map[string]any{"channel": uri, "chat": "ahp-chat:/d", "workingDirectories": []string{"/w"}}, nil)
	assert.Equal(t, []string{"/w"}, hs.readChat(t, "ahp-chat:/d").WorkingDirectories)
}

// TestChatCatalogueMirrorsChat: every change of a chat's status reaches
// the session's catalogue with session/chatUpdated, and a client that
// reduces what it receives onto its snapshots holds exactly the host's
// states.
func TestChatCatalogueMirrorsChat(t *testing.T) {
	clock := newFixedClock()
	hs := newHarness(t, Options{Clock: clock.now})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "mirror")

	w := hs.dial(t, "w")
	w.initialize()
	var sess wire.SessionState
	var cs wire.ChatState
	require.NoError(t, json.Unmarshal(w.subscribe(s.uri).State, &sess))
	require.NoError(t, json.Unmarshal(w.subscribe(s.chat).State, &cs))
	var statuses []wire.SessionStatus
	// follow reduces what w receives until stop says so.
	follow := func(what string, stop func(envelope) bool) {
		w.until(what, func(m rpcMsg) bool {
			if m.Method != wire.MethodAction {
				return false
			}
			e := decodeEnvelope(t, m)
			require.Nil(t, e.RejectionReason)
			switch e.Channel {
			case s.uri:
				reducer.Session(&sess, e.Action, clock.reducer())
				if u, ok := e.Action.Value.(*wire.SessionChatUpdatedAction); ok && u.Changes.Status != nil {
					assert.Equal(t, s.chat, u.Chat)
					statuses = append(statuses, *u.Changes.Status)
				}
			case s.chat:
				reducer.Chat(&cs, e.Action, clock.reducer())
			}
			return stop(e)
		})
	}

	clock.advance(5000) // the turn moves the chat's modifiedAt
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")})
	follow("the chat waiting for confirmation", func(e envelope) bool {
		u, ok := e.Action.Value.(*wire.SessionChatUpdatedAction)
		return ok && u.Changes.Status != nil && *u.Changes.Status == wire.SessionStatusInputNeeded
	})
	c.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	follow("the chat idle again", func(e envelope) bool {
		u, ok := e.Action.Value.(*wire.SessionChatUpdatedAction)
		return ok && u.Changes.Status != nil && *u.Changes.Status == wire.SessionStatusIdle
	})
	assert.Equal(t, []wire.SessionStatus{wire.SessionStatusInProgress, wire.SessionStatusInputNeeded, wire.SessionStatusInProgress, wire.SessionStatusIdle}, statuses)

	// The turn is over and its last follow-up was received: the client's
	// reduced states are the host's.
	assert.JSONEq(t, string(mustJSON(t, hs.readChat(t, s.chat))), string(mustJSON(t, &cs)), "the chat")
	host := hs.readSession(t, s.uri)
	assert.JSONEq(t, string(mustJSON(t, host)), string(mustJSON(t, &sess)), "the session")
	require.Len(t, host.Chats, 1)
	assert.Equal(t, chatSummaryOf(&cs), host.Chats[0], "the catalogue entry is the chat's summary")
}

// TestInputNeededFollowsTheChat: a tool call waiting for confirmation and
// an open input request are announced on the session with
// session/inputNeededSet and withdrawn with session/inputNeededRemoved once
// answered, so a client watching only the session can answer them, on a
// chat it never subscribed to.
func TestInputNeededFollowsTheChat(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "needs")
	phone := hs.dial(t, "phone")
	phone.initialize(s.uri) // the session only

	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")})
	e := phone.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededSet))
	assert.Nil(t, e.Origin)
	req, ok := e.Action.Value.(*wire.SessionInputNeededSetAction).Request.Value.(*wire.SessionToolConfirmationRequest)
	require.True(t, ok, "a tool confirmation request, got %s", e.raw)
	assert.Equal(t, s.chat, req.Chat)
	assert.Equal(t, wire.SessionInputRequestKindToolConfirmation, req.Kind)
	assert.Equal(t, "t1", req.TurnID)
	assert.Equal(t, "tc-t1", req.ToolCall.ToolCallID())
	assert.Equal(t, string(wire.ToolCallStatusPendingConfirmation), req.ToolCall.Status())
	st := hs.readSession(t, s.uri)
	require.Len(t, st.InputNeeded, 1)
	assert.Equal(t, req.ID, st.InputNeeded[0].ID())
	assert.Equal(t, wire.SessionStatusInputNeeded, st.Status.Activity(), "the session waits for the user")

	// The phone answers on the chat, which it never subscribed to.
	echo := phone.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	assert.Equal(t, s.chat, echo.Channel, "the sender gets its echo")
	rm := phone.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededRemoved))
	assert.Equal(t, req.ID, rm.Action.Value.(*wire.SessionInputNeededRemovedAction).ID)
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	st = hs.readSession(t, s.uri)
	assert.Empty(t, st.InputNeeded)
	assert.False(t, st.Status.Has(wire.SessionStatusInputNeeded))

	// An input request: set while open, removed when completed.
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("ask me")})
	e = phone.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededSet))
	in, ok := e.Action.Value.(*wire.SessionInputNeededSetAction).Request.Value.(*wire.SessionChatInputRequest)
	require.True(t, ok, "a chat input request, got %s", e.raw)
	assert.Equal(t, s.chat, in.Chat)
	assert.Equal(t, wire.SessionInputRequestKindChatInput, in.Kind)
	assert.Equal(t, "in-t2", in.Request.ID)
	answer := wire.NewChatInputAnswer(&wire.ChatInputAnswered{State: wire.ChatInputAnswerStateSubmitted,
		Value: wire.NewChatInputAnswerValue(&wire.ChatInputTextAnswerValue{Value: "hello.txt"})})
	phone.accepted(s.chat, &wire.ChatInputAnswerChangedAction{RequestID: "in-t2", QuestionID: "q1", Answer: &answer})
	// The entry carries the answer so far: it is announced again.
	e = phone.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededSet))
	again := e.Action.Value.(*wire.SessionInputNeededSetAction).Request.Value.(*wire.SessionChatInputRequest)
	assert.Equal(t, in.ID, again.ID)
	assert.Contains(t, again.Request.Answers, "q1")
	phone.accepted(s.chat, &wire.ChatInputCompletedAction{RequestID: "in-t2", Response: wire.ChatInputResponseKindAccept})
	rm = phone.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededRemoved))
	assert.Equal(t, in.ID, rm.Action.Value.(*wire.SessionInputNeededRemovedAction).ID)
	done := c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	assert.Equal(t, "t2", done.Action.Value.(*wire.ChatTurnCompleteAction).TurnID)
	assert.Empty(t, hs.readSession(t, s.uri).InputNeeded)
	assert.Equal(t, "Hello, world!", turnText(hs.readChat(t, s.chat).Turns[1].ResponseParts))

	// A turn cancelled while it waits withdraws its entry too.
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t3", Message: userMsg("go")})
	e = phone.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededSet))
	id := e.Action.Value.(*wire.SessionInputNeededSetAction).Request.ID()
	c.accepted(s.chat, &wire.ChatTurnCancelledAction{TurnID: "t3"})
	rm = phone.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededRemoved))
	assert.Equal(t, id, rm.Action.Value.(*wire.SessionInputNeededRemovedAction).ID)
}

// summaryChange is a root/sessionSummaryChanged notification.
type summaryChange struct {
	Channel string                     `json:"channel"`
	Session string                     `json:"session"`
	Changes map[string]json.RawMessage `json:"changes"`
}

// TestRootSummaryAggregatesChats: the root catalogue's entry of a session
// carries the status aggregated from its chats, announced with
// root/sessionSummaryChanged (changed members only).
func TestRootSummaryAggregatesChats(t *testing.T) {
	hs := newHarness(t, Options{})
	root := hs.dial(t, "root")
	root.initialize(RootURI)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "agg")
	root.nextNotification(wire.MethodRootSessionAdded)

	// statusChange waits for the next change of the session's status.
	statusChange := func(what string) wire.SessionStatus {
		t.Helper()
		var st wire.SessionStatus
		root.until(what, func(m rpcMsg) bool {
			if m.Method != wire.MethodRootSessionSummaryChanged {
				return false
			}
			var p summaryChange
			require.NoError(t, json.Unmarshal(m.Params, &p))
			assert.Equal(t, RootURI, p.Channel)
			assert.NotContains(t, p.Changes, "resource")
			raw, ok := p.Changes["status"]
			if p.Session != s.uri || !ok {
				return false
			}
			require.NoError(t, json.Unmarshal(raw, &st))
			return true
		})
		return st
	}
	listed := func() wire.SessionStatus {
		t.Helper()
		var list wire.ListSessionsResult
		c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
		require.Len(t, list.Items, 1)
		return list.Items[0].Status
	}

	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")})
	assert.Equal(t, wire.SessionStatusInProgress, statusChange("in progress").Activity())
	assert.Equal(t, wire.SessionStatusInputNeeded, statusChange("input needed").Activity())
	assert.Equal(t, wire.SessionStatusInputNeeded, listed().Activity(), "listSessions agrees")
	c.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	assert.Equal(t, wire.SessionStatusInProgress, statusChange("in progress again").Activity())
	assert.Equal(t, wire.SessionStatusIdle, statusChange("idle").Activity())
	assert.Equal(t, wire.SessionStatusIdle, listed().Activity())
}

// TestListSessionsPaging: the catalogue comes most recently modified
// first, a page at a time with limit and an opaque cursor.
func TestListSessionsPaging(t *testing.T) {
	clock := newFixedClock()
	hs := newHarness(t, Options{Clock: clock.now})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	c := hs.dial(t, "c")
	c.initialize()
	var uris []string
	for i := range 5 {
		clock.advance(10_000)
		uri := "ahp-session:/p" + strconv.Itoa(i)
		c.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake"}, nil)
		uris = append(uris, uri)
	}
	page := func(limit int, cursor *string) ([]string, *string) {
		t.Helper()
		params := map[string]any{"channel": RootURI, "limit": limit}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		var res wire.ListSessionsResult
		c.mustCall("listSessions", params, &res)
		var got []string
		for _, it := range res.Items {
			got = append(got, it.Resource)
		}
		return got, res.NextCursor
	}
	all, next := page(100, nil)
	assert.Equal(t, []string{uris[4], uris[3], uris[2], uris[1], uris[0]}, all, "newest modified first")
	assert.Nil(t, next, "nothing more")

	got, next := page(2, nil)
	assert.Equal(t, []string{uris[4], uris[3]}, got)
	require.NotNil(t, next)
	// A session disposed between pages does not disturb the next one.
	c.mustCall("disposeSession", map[string]any{"channel": uris[3]}, nil)
	got, next = page(2, next)
	assert.Equal(t, []string{uris[2], uris[1]}, got)
	require.NotNil(t, next)
	got, next = page(2, next)
	assert.Equal(t, []string{uris[0]}, got)
	assert.Nil(t, next, "the last page has no cursor")

	// Activity in a chat makes its session the most recently modified.
	clock.advance(10_000)
	hs.dispatch(t, wire.DefaultChatURI("ahp-session:/p1"), &wire.ChatTurnStartedAction{TurnID: "t", Message: userMsg("x")})
	got, _ = page(1, nil)
	assert.Equal(t, []string{uris[1]}, got)

	for _, cursor := range []string{"not a cursor", "", "eyJ4IjoxfQ"} {
		_, err := c.call("listSessions", map[string]any{"channel": RootURI, "cursor": cursor})
		require.NotNil(t, err, "cursor %q", cursor)
		assert.Equal(t, CodeInvalidParams, err.Code)
	}
}

// completedTurns plays n completed turns t1…tn on a chat, server-side.
func completedTurns(t *testing.T, hs *harness, chat string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		id := "t" + strconv.Itoa(i)
		hs.dispatch(t, chat,
			&wire.ChatTurnStartedAction{TurnID: id, Message: userMsg(id)},
			&wire.ChatTurnCompleteAction{TurnID: id})
	}
}

func turnIDs(turns []wire.Turn) []string {
	ids := []string{}
	for _, t := range turns {
		ids = append(ids, t.ID)
	}
	return ids
}

func idRange(from, to int) []string {
	ids := []string{}
	for i := from; i <= to; i++ {
		ids = append(ids, "t"+strconv.Itoa(i))
	}
	return ids
}

// TestSubscribeViewTurnsAndFetchTurns: a subscriber that asks for the
// last turns only gets them with a cursor, and fetchTurns loads the older
// ones into its state alone (chat/turnsLoaded, then {}), a page at a time,
// until its state is the whole chat.
func TestSubscribeViewTurnsAndFetchTurns(t *testing.T) {
	clock := newFixedClock()
	hs := newHarness(t, Options{Clock: clock.now})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "history")
	const total = DefaultFetchTurnsLimit + 5
	completedTurns(t, hs, s.chat, total)

	a := hs.dial(t, "a")
	a.initialize()
	var st wire.ChatState
	require.NoError(t, json.Unmarshal(a.subscribeView(s.chat, 2).State, &st))
	assert.Equal(t, idRange(total-1, total), turnIDs(st.Turns), "the tail")
	require.NotNil(t, st.TurnsNextCursor, "older turns remain")

	b := hs.dial(t, "b")
	b.initialize(s.chat)

	for page := 0; st.TurnsNextCursor != nil; page++ {
		require.Less(t, page, 3, "paging never ends")
		res, err := a.call("fetchTurns", map[string]any{"channel": s.chat, "cursor": *st.TurnsNextCursor})
		require.Nil(t, err)
		assert.JSONEq(t, `{}`, string(res))
		// The page arrived before the answer (await kept it).
		loaded := a.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnsLoaded))
		assert.Nil(t, loaded.Origin)
		assert.Equal(t, hs.h.Stats().ServerSeq, loaded.ServerSeq, "a private page takes the next serverSeq, above the snapshot's fromSeq")
		l := loaded.Action.Value.(*wire.ChatTurnsLoadedAction)
		if page == 0 {
			assert.Equal(t, idRange(total-1-DefaultFetchTurnsLimit, total-2), turnIDs(l.Turns), "the page just before the tail, oldest first")
			assert.NotNil(t, l.TurnsNextCursor)
		} else {
			assert.Equal(t, idRange(1, total-2-DefaultFetchTurnsLimit), turnIDs(l.Turns))
			assert.Nil(t, l.TurnsNextCursor, "the oldest page clears the cursor")
		}
		reducer.Chat(&st, loaded.Action, clock.reducer())
	}
	assert.JSONEq(t, string(mustJSON(t, hs.readChat(t, s.chat))), string(mustJSON(t, &st)), "tail + pages = the chat")

	// b, subscribed in full, got none of a's pages.
	marker := hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("marker"))})
	before, _ := b.until("the marker", func(m rpcMsg) bool {
		return m.Method == wire.MethodAction && decodeEnvelope(t, m).ServerSeq == marker
	})
	for _, m := range before {
		assert.NotContains(t, string(m.raw), string(wire.ActionTypeChatTurnsLoaded))
	}

	// Cursors the host never gave out for this chat are refused.
	other := hs.newSession(owner, "other")
	for name, cursor := range map[string]string{
		"garbage":             "%%%",
		"another chat's":      turnsCursor(other.chat, "t1"),
		"an unknown turn":     turnsCursor(s.chat, "t999"),
		"without a turn":      turnsCursor(s.chat, ""),
		"without a separator": "dA",
	} {
		_, err := a.call("fetchTurns", map[string]any{"channel": s.chat, "cursor": cursor})
		require.NotNil(t, err, name)
		assert.Equal(t, CodeInvalidParams, err.Code, name)
	}
	// Asking for more than there is gives everything, without a cursor.
	var whole wire.ChatState
	require.NoError(t, json.Unmarshal(a.subscribeView(s.chat, total+1).State, &whole))
	assert.Len(t, whole.Turns, total)
	assert.Nil(t, whole.TurnsNextCursor)
}

// TestFetchTurnsWithoutCursor: a subscriber whose snapshot held every
// turn gets an empty chat/turnsLoaded before {} (AHP: the host dispatches
// it before answering; VS Code's conformance suite waits for it); one that
// asked for a tail gets only {}: the host keeps no window per client to
// tell which page it lacks, and an empty page would clear its cursor.
func TestFetchTurnsWithoutCursor(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "history")
	completedTurns(t, hs, s.chat, 3)

	full := hs.dial(t, "full")
	full.initialize()
	full.subscribe(s.chat)
	res, err := full.call("fetchTurns", map[string]any{"channel": s.chat})
	require.Nil(t, err)
	assert.JSONEq(t, `{}`, string(res))
	loaded := full.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnsLoaded))
	l := loaded.Action.Value.(*wire.ChatTurnsLoadedAction)
	assert.Empty(t, l.Turns, "nothing older to load")
	assert.Nil(t, l.TurnsNextCursor, "and no cursor")

	tail := hs.dial(t, "tail")
	tail.initialize()
	tail.subscribeView(s.chat, 1)
	res, err = tail.call("fetchTurns", map[string]any{"channel": s.chat})
	require.Nil(t, err)
	assert.JSONEq(t, `{}`, string(res))
	marker := hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("marker"))})
	before, _ := tail.until("the marker", func(m rpcMsg) bool {
		return m.Method == wire.MethodAction && decodeEnvelope(t, m).ServerSeq == marker
	})
	for _, m := range before {
		assert.NotContains(t, string(m.raw), string(wire.ActionTypeChatTurnsLoaded), "a tail subscriber gets no page without a cursor")
	}
}

// TestCodecRouteNotCallableFromTheWire: the method a codec may route an
// older fetchTurns to is not a command clients can send.
func TestCodecRouteNotCallableFromTheWire(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "route")
	completedTurns(t, hs, s.chat, 1)
	_, err := c.call("ahp-bridge/fetchTurnsPage", map[string]any{"channel": s.chat, "limit": 10})
	require.NotNil(t, err)
	assert.Equal(t, CodeMethodNotFound, err.Code)
	c.ping()
}

// TestClientExecutedToolCall: a running tool call contributed by a client
// is that client's to run: the session lists it as input needed from that
// client, only it may complete it, and completing it withdraws the entry.
func TestClientExecutedToolCall(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "client-tool")
	other := hs.dial(t, "other")
	other.initialize(s.uri, s.chat)

	contributor := wire.NewToolCallContributor(&wire.ToolCallClientContributor{ClientID: "owner"})
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")},
		&wire.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "ct", ToolName: "run", DisplayName: "Run", Contributor: &contributor},
		&wire.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "ct", InvocationMessage: wire.PlainText("run it"),
			Confirmed: wire.Ptr(wire.ToolCallConfirmationReasonNotNeeded)})
	e := owner.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededSet))
	req, ok := e.Action.Value.(*wire.SessionInputNeededSetAction).Request.Value.(*wire.SessionToolClientExecutionRequest)
	require.True(t, ok, "a client execution request, got %s", e.raw)
	assert.Equal(t, "owner", req.ClientID)
	assert.Equal(t, wire.ToolCallStatusRunning, req.ToolCall.Status)

	complete := &wire.ChatToolCallCompleteAction{TurnID: "t1", ToolCallID: "ct",
		Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("ran it")}}
	assert.Contains(t, other.rejected(s.chat, complete), "belongs to client owner")
	owner.accepted(s.chat, complete)
	rm := owner.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededRemoved))
	assert.Equal(t, req.ID, rm.Action.Value.(*wire.SessionInputNeededRemovedAction).ID)
	assert.Empty(t, hs.readSession(t, s.uri).InputNeeded)
}

// TestDepartedClientsToolCallsFail: when the client executing a tool call
// leaves the session's active clients (here: its only connection closes),
// the host fails that call with chat/toolCallComplete so the turn does not
// wait forever for a result nobody will send.
func TestDepartedClientsToolCallsFail(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	owner := hs.dial(t, "owner")
	owner.initialize()
	s := hs.newSession(owner, "departed")
	owner.accepted(s.uri, &wire.SessionActiveClientSetAction{ActiveClient: wire.SessionActiveClient{ClientID: "owner", Tools: []wire.ToolDefinition{}}})
	watcher := hs.dial(t, "watcher")
	watcher.initialize(s.uri, s.chat)

	contributor := wire.NewToolCallContributor(&wire.ToolCallClientContributor{ClientID: "owner"})
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")},
		&wire.ChatToolCallStartAction{TurnID: "t1", ToolCallID: "ct", ToolName: "run", DisplayName: "Run", Contributor: &contributor},
		&wire.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: "ct", InvocationMessage: wire.PlainText("run it"),
			Confirmed: wire.Ptr(wire.ToolCallConfirmationReasonNotNeeded)})
	watcher.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededSet))

	owner.close()
	watcher.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionActiveClientRemoved))
	e := watcher.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallComplete))
	done := e.Action.Value.(*wire.ChatToolCallCompleteAction)
	assert.Equal(t, "ct", done.ToolCallID)
	assert.False(t, done.Result.Success)
	require.NotNil(t, done.Result.Error)
	assert.Contains(t, done.Result.Error.Message, "owner")
	watcher.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionInputNeededRemoved))
}
