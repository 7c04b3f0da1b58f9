package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/persist"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// These tests run the host on a real SQLite state file. A restart is the
// host closed and a new one opened on the same file, as `serve` does.

// RestoreSession makes the fake handler a SessionRestorer; it records what
// it was handed.
func (b *fakeHandler) RestoreSession(_ context.Context, s RestoredSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.restored = append(b.restored, s)
	b.noteLocked()
}

// plainHandler hides the fake handler's RestoreSession: a handler that
// cannot take restored sessions over.
type plainHandler struct{ Handler }

// stateFile is a state file of the test's own.
func stateFile(t testing.TB) string {
	return filepath.Join(t.TempDir(), "state.db")
}

// openState opens the state file; the test's end closes it (after the
// hosts on it, which are closed first).
func openState(t testing.TB, path string) *store.SQLite {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	st, err := store.Open(ctx, path, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// storedHarness is a harness whose host keeps its sessions in the file.
func storedHarness(t testing.TB, path string, opts Options) (*harness, *store.SQLite) {
	t.Helper()
	st := openState(t, path)
	opts.Store = st
	return newHarness(t, opts), st
}

// restart closes the harness's host and its store, and opens a new
// harness on the same file.
func restart(t testing.TB, hs *harness, st *store.SQLite, path string, opts Options) (*harness, *store.SQLite) {
	t.Helper()
	hs.h.Close()
	hs.handler.wait()
	require.NoError(t, st.Close())
	return storedHarness(t, path, opts)
}

// snapshotOf subscribes a fresh client to uri and returns the state.
func snapshotOf(t testing.TB, hs *harness, uri string) json.RawMessage {
	t.Helper()
	c := hs.dial(t, "reader-"+strconv.Itoa(int(readerSeq.Add(1))))
	defer c.close()
	c.initialize()
	return c.subscribe(uri).State
}

var readerSeq atomic.Int64

// richTurn plays a server-side turn with text, reasoning, a finished tool
// call and usage.
func richTurn(t testing.TB, hs *harness, chat, id string) {
	t.Helper()
	hs.dispatch(t, chat,
		&wire.ChatTurnStartedAction{TurnID: id, Message: userMsg("question " + id)},
		&wire.ChatResponsePartAction{TurnID: id, Part: wire.NewResponsePart(&wire.ReasoningResponsePart{ID: "r", Content: "thinking"})},
		&wire.ChatResponsePartAction{TurnID: id, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
		&wire.ChatDeltaAction{TurnID: id, PartID: "m", Content: "answer to " + id},
		&wire.ChatToolCallStartAction{TurnID: id, ToolCallID: "tc-" + id, ToolName: "read", DisplayName: "Read"},
		&wire.ChatToolCallReadyAction{TurnID: id, ToolCallID: "tc-" + id, InvocationMessage: wire.PlainText("Read a.txt"),
			Confirmed: wire.Ptr(wire.ToolCallConfirmationReasonNotNeeded)},
		&wire.ChatToolCallCompleteAction{TurnID: id, ToolCallID: "tc-" + id, Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("Read a.txt")}},
		&wire.ChatDeltaAction{TurnID: id, PartID: "m", Content: "."},
		&wire.ChatUsageAction{TurnID: id, Usage: wire.UsageInfo{InputTokens: wire.Ptr[int64](10), OutputTokens: wire.Ptr[int64](20)}},
		&wire.ChatTurnCompleteAction{TurnID: id, Duration: 1500},
	)
}

// TestStoreCompletedTurnsSurviveARestart: after a restart the session and
// its chat come back exactly as they were, turn by turn, and the fake
// handler is handed the session to take over.
func TestStoreCompletedTurnsSurviveARestart(t *testing.T) {
	clock := newFixedClock()
	path := stateFile(t)
	opts := Options{Clock: clock.now}
	hs, st := storedHarness(t, path, opts)
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	s := hs.newSession(c, "durable")
	clock.advance(1000)
	// A client's turn through the fake agent: text, a tool call confirmed.
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("hi")})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))
	c.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "tc-t1", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	clock.advance(1000)
	richTurn(t, hs, s.chat, "t2")
	hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "A durable session"})
	require.NoError(t, hs.h.SetAgentSessionID(s.chat, "acp-123"))
	c.close()

	sessBefore := snapshotOf(t, hs, s.uri)
	chatBefore := hs.readChat(t, s.chat)
	var listBefore wire.ListSessionsResult
	lc := hs.dial(t, "lister")
	lc.initialize()
	lc.mustCall("listSessions", map[string]any{"channel": RootURI}, &listBefore)

	hs, _ = restart(t, hs, st, path, opts)

	// Listed from the store without loading anything.
	var listAfter wire.ListSessionsResult
	lc = hs.dial(t, "lister")
	lc.initialize()
	lc.mustCall("listSessions", map[string]any{"channel": RootURI}, &listAfter)
	assert.Equal(t, mustJSON(t, listBefore), mustJSON(t, listAfter), "listSessions from the store")
	assert.Zero(t, hs.h.Stats().Sessions, "listing loads nothing")

	sessAfter := snapshotOf(t, hs, s.uri)
	assert.JSONEq(t, string(sessBefore), string(sessAfter), "the session's snapshot")
	chatAfter := hs.readChat(t, s.chat)
	require.Len(t, chatAfter.Turns, len(chatBefore.Turns))
	for i := range chatBefore.Turns {
		assert.JSONEq(t, string(mustJSON(t, chatBefore.Turns[i])), string(mustJSON(t, chatAfter.Turns[i])), "turn %d", i)
	}
	assert.JSONEq(t, string(mustJSON(t, chatBefore)), string(mustJSON(t, chatAfter)), "the chat's state")

	hs.handler.waitFor(t, "the restored session", func(b *fakeHandler) bool { return len(b.restored) == 1 })
	rs := hs.handler.restored[0]
	assert.Equal(t, s.uri, rs.Session)
	assert.Equal(t, "fake", rs.Provider)
	require.Len(t, rs.Chats, 1)
	assert.Equal(t, RestoredChat{Chat: s.chat, Default: true, AgentSessionID: "acp-123"}, rs.Chats[0])

	// The restored session takes turns again, and they are kept too.
	c = hs.dial(t, "c")
	c.initialize(s.uri, s.chat)
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t3", Message: userMsg("again")})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))
	c.accepted(s.chat, &wire.ChatToolCallApprovedAction{TurnID: "t3", ToolCallID: "tc-t3", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	ctx, cancel := waitCtx(t)
	defer cancel()
	page, err := hs.h.ds.st.Turns(ctx, s.chat, store.TurnQuery{})
	require.NoError(t, err)
	assert.Equal(t, []string{"t1", "t2", "t3"}, storedIDs(page.Turns))
}

func storedIDs(ts []store.Turn) []string {
	ids := []string{}
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	return ids
}

// TestStoreWithoutRestorerKeepsHistoryButRefusesTurns: a handler that
// cannot re-attach agents gets the history shown and new turns refused,
// saying why.
func TestStoreWithoutRestorerKeepsHistoryButRefusesTurns(t *testing.T) {
	path := stateFile(t)
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "plain")
	richTurn(t, hs, s.chat, "t1")
	hs.h.Close()
	hs.handler.wait()
	require.NoError(t, st.Close())

	st = openState(t, path)
	h := New(Options{Store: st, Agents: []wire.AgentInfo{multiChatAgent()}})
	fh := newFakeHandler(t, h)
	h.SetHandler(plainHandler{fh})
	t.Cleanup(h.Close)
	hs2 := &harness{t: t, h: h, handler: fh}
	hs2.ctx, hs2.cancel = context.WithCancel(context.Background())
	c2 := hs2.stdio(t, "c")
	t.Cleanup(func() { hs2.cancel(); c2.close(); hs2.wg.Wait() })
	c2.initialize(s.uri, s.chat)
	assert.Len(t, hs2.readChat(t, s.chat).Turns, 1)
	reason := c2.rejected(s.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("x")})
	assert.Contains(t, reason, "restored from the state file")
	_, rpcErr := c2.call("createChat", map[string]any{"channel": s.uri, "chat": "ahp-chat:/other"})
	require.NotNil(t, rpcErr)
	assert.Contains(t, rpcErr.Message, "restored from the state file")
}

// TestStoreServerSeqContinues: serverSeq goes on above every value sent
// before the restart, and a client reconnecting with a serverSeq from
// before it gets snapshots, never a replay of the new process's actions.
func TestStoreServerSeqContinues(t *testing.T) {
	path := stateFile(t)
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	s := hs.newSession(c, "seq")
	for i := range 30 {
		richTurn(t, hs, s.chat, "t"+strconv.Itoa(i))
	}
	settled(t, hs, s.uri) // the last actions are sequenced once written
	c.ping()
	seen := hs.h.Stats().ServerSeq
	require.Greater(t, seen, int64(100))
	c.close()

	hs, _ = restart(t, hs, st, path, Options{})
	c = hs.dial(t, "c")
	res := c.initialize(RootURI, s.uri, s.chat)
	assert.Greater(t, res.ServerSeq, seen, "serverSeq continues above what was sent")
	// More actions than were sent before, so that a counter starting
	// again from 0 would now hold the old value in its replay ring.
	for i := range 40 {
		richTurn(t, hs, s.chat, "u"+strconv.Itoa(i))
	}
	c.ping()
	c.close()

	r := hs.dial(t, "c")
	var out struct {
		Type      string            `json:"type"`
		Snapshots []json.RawMessage `json:"snapshots"`
	}
	r.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "c", "lastSeenServerSeq": seen,
		"subscriptions": []string{s.uri, s.chat}}, &out)
	assert.Equal(t, string(wire.ReconnectResultTypeSnapshot), out.Type)
	assert.Len(t, out.Snapshots, 2)
}

// TestStoreInterruptedTurnEndsCancelled: a turn still streaming when the
// host stopped comes back ended, cancelled, with what was checkpointed and
// a notice saying why, and is committed as such.
func TestStoreInterruptedTurnEndsCancelled(t *testing.T) {
	path := stateFile(t)
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "cut")
	richTurn(t, hs, s.chat, "t1")
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("long one")},
		&wire.ChatResponsePartAction{TurnID: "t2", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
		&wire.ChatDeltaAction{TurnID: "t2", PartID: "m", Content: "partial "},
		&wire.ChatToolCallStartAction{TurnID: "t2", ToolCallID: "tc", ToolName: "write", DisplayName: "Write"},
		&wire.ChatDeltaAction{TurnID: "t2", PartID: "m", Content: "answer"},
	)
	ctx, cancel := waitCtx(t)
	defer cancel()
	require.NoError(t, hs.h.ds.cp.Flush(ctx))
	cp, err := st.Checkpoint(ctx, s.chat)
	require.NoError(t, err)
	assert.Equal(t, "t2", cp.TurnID)
	c.close()

	hs, st = restart(t, hs, st, path, Options{})
	c = hs.dial(t, "c")
	c.initialize(s.uri, s.chat)
	chat := hs.readChat(t, s.chat)
	require.Nil(t, chat.ActiveTurn, "nothing runs after a restart")
	require.Len(t, chat.Turns, 2)
	cut := chat.Turns[1]
	assert.Equal(t, "t2", cut.ID)
	assert.Equal(t, wire.TurnStateCancelled, cut.State)
	assert.Equal(t, "partial answer", turnText(cut.ResponseParts))
	last := cut.ResponseParts[len(cut.ResponseParts)-1].Value
	require.IsType(t, &wire.SystemNotificationResponsePart{}, last)
	assert.Contains(t, last.(*wire.SystemNotificationResponsePart).Content.Text, "restarted")
	for _, p := range cut.ResponseParts {
		if tp, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			assert.Equal(t, wire.ToolCallStatusCancelled, wire.ToolCallStatus(tp.ToolCall.Status()), "the tool call ended with the turn")
		}
	}
	assert.Equal(t, wire.SessionStatusIdle, chat.Status.Activity())
	assert.Equal(t, wire.SessionLifecycleReady, hs.readSession(t, s.uri).Lifecycle)

	// Committed: the checkpoint is gone and the turn is a stored one.
	_, err = st.Checkpoint(ctx, s.chat)
	assert.ErrorIs(t, err, store.ErrNotFound)
	page, err := st.Turns(ctx, s.chat, store.TurnQuery{})
	require.NoError(t, err)
	assert.Equal(t, []string{"t1", "t2"}, storedIDs(page.Turns))
}

// TestStoreTurnStartIsDurable: a turn's start (the user's message) is
// stored when it is announced, before any checkpoint, so a crash right
// after it keeps the question.
func TestStoreTurnStartIsDurable(t *testing.T) {
	path := stateFile(t)
	hs, st := storedHarness(t, path, Options{})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "start")
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("are you there?")})
	// Read the file as a second process would, while the host runs.
	ctx, cancel := waitCtx(t)
	defer cancel()
	ro, err := store.Open(ctx, path, store.Options{ReadOnly: true})
	require.NoError(t, err)
	defer ro.Close()
	rec, err := ro.GetSession(ctx, s.uri)
	require.NoError(t, err)
	require.Len(t, rec.Chats, 1)
	var sc persist.StoredChat
	require.NoError(t, json.Unmarshal(rec.Chats[0].Summary, &sc))
	require.NotNil(t, sc.State.ActiveTurn)
	assert.Equal(t, "are you there?", sc.State.ActiveTurn.Message.Text)
	_ = st
}

// TestStoreListSessionsAndFetchTurnsPaging: after a restart listSessions
// pages through the stored catalogue merged with the loaded sessions, and
// a chat longer than RestoredTurns pages its older turns in from the
// store, over fetchTurns and the page route of older dialects.
func TestStoreListSessionsAndFetchTurnsPaging(t *testing.T) {
	clock := newFixedClock()
	path := stateFile(t)
	opts := Options{Clock: clock.now}
	hs, st := storedHarness(t, path, opts)
	c := hs.dial(t, "c")
	c.initialize()
	var sessions []testSession
	for i := range 7 {
		clock.advance(10_000)
		sessions = append(sessions, hs.newSession(c, "p"+strconv.Itoa(i)))
	}
	long := sessions[2]
	clock.advance(10_000)
	const n = RestoredTurns + 25
	for i := 1; i <= n; i++ {
		hs.dispatch(t, long.chat,
			&wire.ChatTurnStartedAction{TurnID: "t" + strconv.Itoa(i), Message: userMsg("q")},
			&wire.ChatTurnCompleteAction{TurnID: "t" + strconv.Itoa(i)})
	}
	listAll := func(c *testClient, limit int) []string {
		t.Helper()
		var got []string
		var cursor *string
		for {
			params := map[string]any{"channel": RootURI, "limit": limit}
			if cursor != nil {
				params["cursor"] = *cursor
			}
			var res wire.ListSessionsResult
			c.mustCall("listSessions", params, &res)
			require.LessOrEqual(t, len(res.Items), limit)
			for _, it := range res.Items {
				got = append(got, it.Resource)
			}
			if res.NextCursor == nil {
				return got
			}
			cursor = res.NextCursor
		}
	}
	want := listAll(c, 100)
	require.Len(t, want, 7)
	assert.Equal(t, long.uri, want[0], "the long session was modified last")
	c.close()

	hs, _ = restart(t, hs, st, path, opts)
	c = hs.dial(t, "c")
	c.initialize()
	for _, limit := range []int{1, 2, 3, 100} {
		assert.Equal(t, want, listAll(c, limit), "limit %d, nothing loaded", limit)
	}
	// Loaded sessions merge with the stored ones, each once.
	c.subscribe(sessions[4].uri)
	c.subscribe(long.chat) // by its chat alone
	assert.Equal(t, 2, hs.h.Stats().Sessions)
	for _, limit := range []int{1, 2, 3, 100} {
		assert.Equal(t, want, listAll(c, limit), "limit %d, two loaded", limit)
	}

	// The restored chat holds the last RestoredTurns turns and a cursor.
	var chat wire.ChatState
	require.NoError(t, json.Unmarshal(snapshotOf(t, hs, long.chat), &chat))
	assert.Equal(t, idRange(n-RestoredTurns+1, n), turnIDs(chat.Turns))
	require.NotNil(t, chat.TurnsNextCursor)
	cursor := *chat.TurnsNextCursor
	var loaded []string
	for {
		c.mustCall("fetchTurns", map[string]any{"channel": long.chat, "cursor": cursor}, nil)
		e := c.nextEnvelope(isAction(long.chat, wire.ActionTypeChatTurnsLoaded))
		tl := e.Action.Value.(*wire.ChatTurnsLoadedAction)
		loaded = append(turnIDs(tl.Turns), loaded...)
		if tl.TurnsNextCursor == nil {
			break
		}
		cursor = *tl.TurnsNextCursor
	}
	assert.Equal(t, idRange(1, n-RestoredTurns), loaded, "every older turn, from the store")

	// The page route (before 0.5.1) crosses from memory into the store.
	ch := hs.h.lookup(long.chat)
	turns, more, found, err := hs.h.turnsBefore(ch, "t"+strconv.Itoa(n-RestoredTurns+5), 10)
	require.NoError(t, err)
	require.True(t, found)
	assert.True(t, more)
	assert.Equal(t, idRange(n-RestoredTurns-5, n-RestoredTurns+4), turnIDs(turns))
	turns, more, found, err = hs.h.turnsBefore(ch, "t3", 10)
	require.NoError(t, err)
	require.True(t, found)
	assert.False(t, more)
	assert.Equal(t, idRange(1, 2), turnIDs(turns))
	_, _, found, err = hs.h.turnsBefore(ch, "nope", 10)
	require.NoError(t, err)
	assert.False(t, found)
}

// failingStore fails every write while fail is set, as a full disk does.
type failingStore struct {
	store.Store
	fail atomic.Bool
	mu   sync.Mutex
	seen int
}

var errDiskFull = errors.New("disk full (test)")

func (f *failingStore) check() error {
	f.mu.Lock()
	f.seen++
	f.mu.Unlock()
	if f.fail.Load() {
		return errDiskFull
	}
	return nil
}

func (f *failingStore) PutSession(ctx context.Context, s store.Session, chats ...store.Chat) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Store.PutSession(ctx, s, chats...)
}

func (f *failingStore) PutChat(ctx context.Context, c store.Chat) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Store.PutChat(ctx, c)
}

func (f *failingStore) AppendTurn(ctx context.Context, c store.TurnCommit) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Store.AppendTurn(ctx, c)
}

func (f *failingStore) PutCheckpoints(ctx context.Context, cps []store.Checkpoint) error {
	if err := f.check(); err != nil {
		return err
	}
	return f.Store.PutCheckpoints(ctx, cps)
}

// TestStoreFailingWritesKeepServing: while writes fail the host serves
// from memory and shows the warning in the root state; once a write
// succeeds the warning goes and what failed is written.
func TestStoreFailingWritesKeepServing(t *testing.T) {
	path := stateFile(t)
	st := openState(t, path)
	fs := &failingStore{Store: st}
	var writes, failures atomic.Int64
	opts := Options{Store: fs, OnStoreWrite: func(_ time.Duration, err error) {
		writes.Add(1)
		if err != nil {
			failures.Add(1)
		}
	}}
	hs := newHarness(t, opts)
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	s := hs.newSession(c, "full")
	richTurn(t, hs, s.chat, "t1")

	fs.fail.Store(true)
	richTurn(t, hs, s.chat, "t2")
	settled(t, hs, s.uri) // the writes are made after the actions return
	assert.Len(t, hs.readChat(t, s.chat).Turns, 2, "served from memory")
	var root wire.RootState
	require.NoError(t, json.Unmarshal(snapshotOf(t, hs, RootURI), &root))
	require.Contains(t, root.Meta, StateWarningMeta)
	warning := root.Meta[StateWarningMeta].(map[string]any)
	assert.Contains(t, warning["message"], "disk full")
	assert.Positive(t, failures.Load())

	fs.fail.Store(false)
	richTurn(t, hs, s.chat, "t3")
	settled(t, hs, s.uri)
	root = wire.RootState{}
	require.NoError(t, json.Unmarshal(snapshotOf(t, hs, RootURI), &root))
	assert.NotContains(t, root.Meta, StateWarningMeta, "gone once writes succeed")
	ctx, cancel := waitCtx(t)
	defer cancel()
	page, err := st.Turns(ctx, s.chat, store.TurnQuery{})
	require.NoError(t, err)
	assert.Equal(t, []string{"t1", "t2", "t3"}, storedIDs(page.Turns), "the turn whose write failed went with the next")
	assert.Greater(t, writes.Load(), failures.Load())
}

// TestStoreRestoredChatsAndAgentSessionIDs: every chat of a session comes
// back in its order with its agent session id, a disposed chat does not,
// and a chat subscribed to on its own finds its session.
func TestStoreRestoredChatsAndAgentSessionIDs(t *testing.T) {
	path := stateFile(t)
	opts := Options{Agents: []wire.AgentInfo{multiChatAgent()}}
	hs, st := storedHarness(t, path, opts)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "multi")
	for _, id := range []string{"ahp-chat:/x", "ahp-chat:/y", "ahp-chat:/z"} {
		c.mustCall("createChat", map[string]any{"channel": s.uri, "chat": id}, nil)
		require.NoError(t, hs.h.SetAgentSessionID(id, "acp-"+strings.TrimPrefix(id, "ahp-chat:/")))
	}
	c.mustCall("disposeChat", map[string]any{"channel": "ahp-chat:/y"}, nil)
	richTurn(t, hs, "ahp-chat:/z", "t1")
	c.close()

	hs, _ = restart(t, hs, st, path, opts)
	c = hs.dial(t, "c")
	c.initialize()
	var z wire.ChatState
	require.NoError(t, json.Unmarshal(c.subscribe("ahp-chat:/z").State, &z))
	assert.Len(t, z.Turns, 1)
	hs.handler.waitFor(t, "the restored session", func(b *fakeHandler) bool { return len(b.restored) == 1 })
	var chats []string
	for _, rc := range hs.handler.restored[0].Chats {
		chats = append(chats, rc.Chat+"="+rc.AgentSessionID)
	}
	assert.Equal(t, []string{s.chat + "=", "ahp-chat:/x=acp-x", "ahp-chat:/z=acp-z"}, chats)
	id, ok := hs.h.AgentSessionID("ahp-chat:/x")
	assert.True(t, ok)
	assert.Equal(t, "acp-x", id)
	sess := hs.readSession(t, s.uri)
	assert.Len(t, sess.Chats, 3)
	_, rpcErr := c.call("subscribe", map[string]any{"channel": "ahp-chat:/y"})
	require.NotNil(t, rpcErr, "a disposed chat stays gone")
}

// TestStoreManyCheckpointsRestoreTheWholeTurn: a turn checkpointed many
// times, each checkpoint carrying only what the turn gained, comes back
// after a restart with exactly the concatenated text of each text part and
// its other parts (tool calls, a notification) as they were, and the bytes
// written over its checkpoints stay linear in its length.
func TestStoreManyCheckpointsRestoreTheWholeTurn(t *testing.T) {
	cases := []struct {
		name   string
		rounds int
		chunk  int // bytes of ASCII filler per delta, after a mixed-script prefix
		every  int // rounds per checkpoint
	}{
		{name: "small deltas, a checkpoint each", rounds: 40, chunk: 1000, every: 1},
		// Deltas across the lazy text's 64 KiB pieces, several per
		// checkpoint: a checkpoint reads the text from inside a piece.
		{name: "large deltas across pieces", rounds: 24, chunk: 23 << 10, every: 3},
		{name: "one checkpoint at the end", rounds: 9, chunk: 50 << 10, every: 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testManyCheckpointsRestore(t, tc.rounds, tc.chunk, tc.every)
		})
	}
}

func testManyCheckpointsRestore(t *testing.T, rounds, chunkSize, every int) {
	path := stateFile(t)
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "many")
	ctx, cancel := waitCtx(t)
	defer cancel()
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("long one")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.ReasoningResponsePart{ID: "r", Content: "think:"})},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
	)
	var answer, reasoning strings.Builder
	reasoning.WriteString("think:")
	for i := range rounds {
		chunk := fmt.Sprintf("chunk %d é日本語🙂 \"quoted\" <b>\n", i) + strings.Repeat("x", chunkSize)
		answer.WriteString(chunk)
		actions := []wire.StateAction{
			wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: chunk}),
			wire.Action(&wire.ChatReasoningAction{TurnID: "t1", PartID: "r", Content: strconv.Itoa(i)}),
		}
		reasoning.WriteString(strconv.Itoa(i))
		if i%10 == 5 {
			id := "tc" + strconv.Itoa(i)
			actions = append(actions,
				wire.Action(&wire.ChatToolCallStartAction{TurnID: "t1", ToolCallID: id, ToolName: "read", DisplayName: "Read " + strconv.Itoa(i)}),
				wire.Action(&wire.ChatToolCallReadyAction{TurnID: "t1", ToolCallID: id, InvocationMessage: wire.PlainText("Read a.txt"),
					Confirmed: wire.Ptr(wire.ToolCallConfirmationReasonNotNeeded)}))
		}
		for _, a := range actions {
			hs.dispatch(t, s.chat, a.Value)
		}
		if (i+1)%every == 0 {
			require.NoError(t, hs.h.ds.cp.Flush(ctx))
		}
	}
	stats := hs.h.ds.cp.Stats()
	require.GreaterOrEqual(t, stats.Flushes, uint64(rounds/every), "one checkpoint per flush at least")
	assert.Less(t, stats.Bytes, uint64(2*answer.Len()), "each checkpoint wrote what was new, not the whole turn again")
	// The checkpoints read the text from the lazy reducer's pieces: the
	// answer's part in the state was not synced by them (the deltas
	// since the last other action are still only in the pieces).
	ch := hs.h.lookup(s.chat)
	ch.mu.Lock()
	unsynced := turnText(ch.chat.st.ActiveTurn.ResponseParts)
	ch.mu.Unlock()
	assert.Less(t, len(unsynced), answer.Len(), "a checkpoint synced the streaming text")
	live := hs.readChat(t, s.chat).ActiveTurn
	require.NotNil(t, live)
	require.Equal(t, answer.String(), turnText(live.ResponseParts))

	cp, err := st.Checkpoint(ctx, s.chat)
	require.NoError(t, err)
	assert.Greater(t, len(cp.Texts), 0, "the text is stored as appended pieces")
	c.close()

	hs, _ = restart(t, hs, st, path, Options{})
	c = hs.dial(t, "c")
	c.initialize(s.uri, s.chat)
	chat := hs.readChat(t, s.chat)
	require.Nil(t, chat.ActiveTurn)
	require.Len(t, chat.Turns, 1)
	cut := chat.Turns[0]
	assert.Equal(t, wire.TurnStateCancelled, cut.State)
	assert.Equal(t, answer.String(), turnText(cut.ResponseParts), "the concatenated text, exactly")
	// The parts are the live turn's, in order, then the restart notice;
	// the tool calls are cancelled.
	require.Len(t, cut.ResponseParts, len(live.ResponseParts)+1)
	var tools []string
	for i, p := range live.ResponseParts {
		switch v := p.Value.(type) {
		case *wire.ReasoningResponsePart:
			got, ok := cut.ResponseParts[i].Value.(*wire.ReasoningResponsePart)
			require.True(t, ok, "part %d", i)
			assert.Equal(t, reasoning.String(), got.Content)
			assert.Equal(t, v.Content, got.Content)
		case *wire.MarkdownResponsePart:
			got, ok := cut.ResponseParts[i].Value.(*wire.MarkdownResponsePart)
			require.True(t, ok, "part %d", i)
			assert.Equal(t, v.ID, got.ID)
		case *wire.ToolCallResponsePart:
			got, ok := cut.ResponseParts[i].Value.(*wire.ToolCallResponsePart)
			require.True(t, ok, "part %d", i)
			assert.Equal(t, v.ToolCall.ToolCallID(), got.ToolCall.ToolCallID())
			assert.Equal(t, wire.ToolCallStatusCancelled, wire.ToolCallStatus(got.ToolCall.Status()))
			tools = append(tools, got.ToolCall.ToolCallID())
		default:
			t.Fatalf("unexpected part %d: %T", i, v)
		}
	}
	var wantTools []string
	for i := 5; i < rounds; i += 10 {
		wantTools = append(wantTools, "tc"+strconv.Itoa(i))
	}
	assert.Equal(t, wantTools, tools)
	require.IsType(t, &wire.SystemNotificationResponsePart{}, cut.ResponseParts[len(cut.ResponseParts)-1].Value)
}

// TestStoreWholeCheckpointStillRestores: a checkpoint written whole, the
// only kind before checkpoints became incremental (schema version 1's),
// restores as it did; so does one whose text was stored in one piece, or in
// many pieces cut anywhere (a rune included), as a checkpoint hands over the
// lazy text's pieces.
func TestStoreWholeCheckpointStillRestores(t *testing.T) {
	answer := "whole answer é日本語🙂 " + strings.Repeat("<x>\n", 50)
	const ptr = "/responseParts/0/content"
	cases := []struct {
		name   string
		pieces []int // lengths of the stored pieces of the text; nil: the text inside the data
	}{
		{name: "whole data"},
		{name: "one piece", pieces: []int{len(answer)}},
		{name: "pieces cut in runes", pieces: []int{15, 1, 1, 5, 7, 3}},
		{name: "one byte at a time", pieces: slices.Repeat([]int{1}, len(answer))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := stateFile(t)
			hs, st := storedHarness(t, path, Options{})
			c := hs.dial(t, "c")
			c.initialize()
			s := hs.newSession(c, "old")
			hs.dispatch(t, s.chat,
				&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("q")},
				&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
				&wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: answer},
			)
			live := hs.readChat(t, s.chat).ActiveTurn
			require.NotNil(t, live)
			ctx, cancel := waitCtx(t)
			defer cancel()
			hs.h.ds.cp.Forget(s.chat) // only the checkpoint written here is stored
			cp := store.Checkpoint{ChatURI: s.chat, TurnID: "t1", Replace: true, Updated: time.Now()}
			if tc.pieces == nil {
				data, err := json.Marshal(live)
				require.NoError(t, err)
				cp.Data = data
			} else {
				snap, err := persist.TurnSnapshot(live)
				require.NoError(t, err)
				cp.Data = snap.Data
				off := 0
				for i, n := range tc.pieces {
					if i == len(tc.pieces)-1 {
						n = len(answer) - off // the rest
					}
					cp.Texts = append(cp.Texts, store.CheckpointText{Pointer: ptr, Offset: off, Text: answer[off : off+n]})
					off += n
				}
			}
			require.NoError(t, st.PutCheckpoints(ctx, []store.Checkpoint{cp}))
			c.close()

			hs, _ = restart(t, hs, st, path, Options{})
			c = hs.dial(t, "c")
			c.initialize(s.uri, s.chat)
			chat := hs.readChat(t, s.chat)
			require.Len(t, chat.Turns, 1)
			assert.Equal(t, answer, turnText(chat.Turns[0].ResponseParts))
			assert.Equal(t, wire.TurnStateCancelled, chat.Turns[0].State)
		})
	}
}

// TestStoreLongCompletedTurnSurvivesARestart: a completed turn whose texts
// are long (written in slices as the store writes it in chunks, above
// longText) or short (inline) comes back after a restart exactly as it was
// streamed, checkpoints or not.
func TestStoreLongCompletedTurnSurvivesARestart(t *testing.T) {
	// About 2.7 MB of answer: three store chunks. Under the race detector,
	// where each action costs ten times as much, 1.15 MB in a quarter of
	// the deltas, four times as long: still two chunks, checkpointed
	// three times.
	fill, long, short, every := 200, 12000, 1500, 2000
	if testenv.Race {
		fill, long, short, every = 800, 1250, 400, 500
	}
	unit := "line é日本語🙂 \"q\" <b>&\u2028\n" + strings.Repeat("x", fill)
	cases := []struct {
		name        string
		deltas      int
		checkpoints bool
	}{
		{name: "short", deltas: 3},
		{name: "long, checkpointed", deltas: long, checkpoints: true},
		{name: "long, never checkpointed", deltas: short},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := stateFile(t)
			hs, st := storedHarness(t, path, Options{})
			c := hs.dial(t, "c")
			c.initialize()
			s := hs.newSession(c, "long")
			hs.dispatch(t, s.chat,
				&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("go")},
				&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.ReasoningResponsePart{ID: "r"})},
				&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
			)
			ctx, cancel := waitCtx(t)
			defer cancel()
			for i := range tc.deltas {
				hs.dispatch(t, s.chat, &wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: unit},
					&wire.ChatReasoningAction{TurnID: "t1", PartID: "r", Content: "r" + strconv.Itoa(i)})
				if tc.checkpoints && i%every == 0 {
					require.NoError(t, hs.h.ds.cp.Flush(ctx))
				}
			}
			hs.dispatch(t, s.chat, &wire.ChatTurnCompleteAction{TurnID: "t1", Duration: 5})
			before := hs.readChat(t, s.chat)
			require.Len(t, before.Turns, 1)
			require.Equal(t, strings.Repeat(unit, tc.deltas), turnText(before.Turns[0].ResponseParts))
			c.close()

			hs, _ = restart(t, hs, st, path, Options{})
			c = hs.dial(t, "c")
			c.initialize(s.uri, s.chat)
			after := hs.readChat(t, s.chat)
			require.Len(t, after.Turns, 1)
			assert.Equal(t, wire.TurnStateComplete, after.Turns[0].State)
			assert.True(t, string(mustJSON(t, before.Turns[0])) == string(mustJSON(t, after.Turns[0])), "the turn came back changed")
		})
	}
}
