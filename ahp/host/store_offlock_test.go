package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// These tests hold the state store's writes on a gate the test opens, to
// show that a session's lock is free while its write is under way, that
// nothing a write makes durable is broadcast before it, and that what
// clients see stays consistent meanwhile (pipeline.go).

// gatedStore blocks the host's writes of sessions and turns while a gate is
// set, and can fail the next ones; checkpoints and the serverSeq mark pass.
type gatedStore struct {
	store.Store
	mu       sync.Mutex
	gate     chan struct{} // set: writes wait until it is closed
	entered  chan string   // a write waiting at the gate says what it writes
	failNext int           // this many writes fail once through the gate
	appended map[string]int
}

func newGatedStore(st store.Store) *gatedStore {
	return &gatedStore{Store: st, entered: make(chan string, 64), appended: map[string]int{}}
}

// close sets the gate: the next writes wait.
func (g *gatedStore) close() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

// open lets the waiting writes through, and the next ones.
func (g *gatedStore) open() {
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
}

// failNextWrites makes the next n writes fail.
func (g *gatedStore) failNextWrites(n int) {
	g.mu.Lock()
	g.failNext = n
	g.mu.Unlock()
}

// pass waits at the gate, then says whether the write may go on.
func (g *gatedStore) pass(ctx context.Context, what string) error {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.entered <- what
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failNext > 0 {
		g.failNext--
		return errDiskFull
	}
	return nil
}

func (g *gatedStore) PutSession(ctx context.Context, s store.Session, chats ...store.Chat) error {
	if err := g.pass(ctx, "session "+s.URI); err != nil {
		return err
	}
	return g.Store.PutSession(ctx, s, chats...)
}

func (g *gatedStore) PutChat(ctx context.Context, c store.Chat) error {
	if err := g.pass(ctx, "chat "+c.URI); err != nil {
		return err
	}
	return g.Store.PutChat(ctx, c)
}

func (g *gatedStore) AppendTurn(ctx context.Context, c store.TurnCommit) error {
	if err := g.pass(ctx, "turn "+c.Turn.ID); err != nil {
		return err
	}
	err := g.Store.AppendTurn(ctx, c)
	if err == nil {
		g.mu.Lock()
		g.appended[c.Turn.ID]++
		g.mu.Unlock()
	}
	return err
}

// appendedOnce reports how many times each turn was appended.
func (g *gatedStore) appendedCounts() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.appended))
	for k, v := range g.appended {
		out[k] = v
	}
	return out
}

// waitEntered waits until a write is held at the gate and returns what it
// writes.
func (g *gatedStore) waitEntered(t testing.TB) string {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	select {
	case what := <-g.entered:
		return what
	case <-ctx.Done():
		t.Fatal("no write reached the store")
		return ""
	}
}

// gatedHarness is a host on a gated SQLite state file, its agent taking
// several chats per session.
func gatedHarness(t testing.TB) (*harness, *gatedStore, *store.SQLite) {
	st := openState(t, stateFile(t))
	gs := newGatedStore(st)
	hs := newHarness(t, Options{Store: gs, Agents: []wire.AgentInfo{multiChatAgent()}, Clock: newFixedClock().now})
	t.Cleanup(func() { // before the host closes: a failed test may leave it shut
		gs.mu.Lock()
		if gs.gate != nil {
			close(gs.gate)
			gs.gate = nil
		}
		gs.mu.Unlock()
	})
	return hs, gs, st
}

// settled waits until no action of the session (or chat) uri is held for a
// store write: what was applied to it is stored and broadcast.
func settled(t testing.TB, hs *harness, uri string) {
	t.Helper()
	ch := hs.h.lookup(uri)
	require.NotNil(t, ch, "%s is not live", uri)
	ch.mu.Lock()
	hs.h.awaitHeldLocked(ch.group)
	ch.mu.Unlock()
}

// returns runs f and fails the test when it does not return (in time:
// it is blocked, on a lock held across a write).
func returns(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	ctx, cancel := waitCtx(t)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%s did not return while a write was under way", what)
	}
}

// flushed returns what the client was sent before a ping's answer: every
// frame the host queued for it so far.
func flushed(tc *testClient) []rpcMsg {
	tc.t.Helper()
	tc.nextID++
	id := tc.nextID
	tc.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "ping"})
	before, _ := tc.until("the ping's answer", func(m rpcMsg) bool { return m.isResponse() && string(m.ID) == jsonID(id) })
	return before
}

func jsonID(id int) string { b, _ := json.Marshal(id); return string(b) }

// envelopesIn decodes the action envelopes among msgs.
func envelopesIn(t testing.TB, msgs []rpcMsg) []envelope {
	var out []envelope
	for _, m := range msgs {
		if m.Method == wire.MethodAction {
			out = append(out, decodeEnvelope(t, m))
		}
	}
	return out
}

// storedTurnIDs reads a chat's stored turns.
func storedTurnIDs(t testing.TB, st store.Store, chat string) []string {
	t.Helper()
	ctx, cancel := waitCtx(t)
	defer cancel()
	page, err := st.Turns(ctx, chat, store.TurnQuery{})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	require.NoError(t, err)
	return storedIDs(page.Turns)
}

// TestStoreWriteHoldsNoLock: while a completed turn's write is blocked,
// the session's lock is free (another chat's action is applied, the
// checkpointer's snapshot of that chat and a read of the session run, a
// subscription to another session answers), and no client has the turn's
// end; once the write is done clients get everything in the order it was
// applied, serverSeq strictly increasing, and the turn is in the store
// before anyone sees it end.
func TestStoreWriteHoldsNoLock(t *testing.T) {
	hs, gs, st := gatedHarness(t)
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	s := hs.newSession(c, "a")
	other := hs.newSession(c, "b")
	const side = "ahp-chat:/a-side"
	c.mustCall("createChat", map[string]any{"channel": s.uri, "chat": side}, nil)
	c.subscribe(side)
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("q")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
		&wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: "answer"})
	hs.dispatch(t, side,
		&wire.ChatTurnStartedAction{TurnID: "s1", Message: userMsg("side q")},
		&wire.ChatResponsePartAction{TurnID: "s1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})})
	sideCh := hs.h.lookup(side)
	sideCh.mu.Lock()
	checkpoint := sideCh.chat.snapshot
	sideCh.mu.Unlock()
	require.NotNil(t, checkpoint, "the side chat's turn is checkpointed")
	settled(t, hs, s.uri)
	seen := envelopesIn(t, flushed(c))

	gs.close()
	var seq int64
	var err error
	returns(t, "Dispatch of the turn's end", func() {
		seq, err = hs.h.Dispatch(s.chat, wire.Action(&wire.ChatTurnCompleteAction{TurnID: "t1", Duration: 10}))
	})
	require.NoError(t, err)
	assert.Zero(t, seq, "held for its write: no serverSeq yet")
	assert.Equal(t, "turn t1", gs.waitEntered(t))

	// The session's lock is free while the write waits.
	returns(t, "another chat's Dispatch", func() {
		seq, err = hs.h.Dispatch(side, wire.Action(&wire.ChatDeltaAction{TurnID: "s1", PartID: "m", Content: "side text"}))
	})
	require.NoError(t, err)
	assert.Zero(t, seq, "queued behind the held turn end of its session")
	returns(t, "the checkpointer's snapshot of another chat", func() { _, err = checkpoint(nil) })
	require.NoError(t, err, "the checkpointer's snapshot of the other chat")
	returns(t, "ReadSession", func() { hs.h.ReadSession(s.uri, func(*wire.SessionState) {}) })
	c2 := hs.dial(t, "c2")
	c2.initialize()
	c2.subscribe(other.uri)

	// Nobody has the turn's end, nor what was applied after it.
	for _, e := range envelopesIn(t, flushed(c)) {
		assert.NotEqual(t, s.chat, e.Channel, "%s broadcast before its write", e.Action.Type())
		assert.NotEqual(t, side, e.Channel, "%s broadcast before the write ahead of it", e.Action.Type())
	}
	assert.Empty(t, storedTurnIDs(t, st, s.chat))

	gs.open()
	before, end := c.until("the turn's end", func(m rpcMsg) bool {
		return m.Method == wire.MethodAction && isAction(s.chat, wire.ActionTypeChatTurnComplete)(decodeEnvelope(t, m))
	})
	assert.Equal(t, []string{"t1"}, storedTurnIDs(t, st, s.chat), "stored before it was broadcast")
	delta := c.nextEnvelope(isAction(side, wire.ActionTypeChatDelta))
	for _, e := range envelopesIn(t, before) {
		assert.NotEqual(t, side, e.Channel, "the side chat's delta overtook the turn end applied before it")
	}
	seen = append(seen, envelopesIn(t, before)...)
	seen = append(seen, decodeEnvelope(t, end), delta)
	for i := 1; i < len(seen); i++ {
		assert.Greater(t, seen[i].ServerSeq, seen[i-1].ServerSeq, "serverSeq of %s after %s", seen[i].Action.Type(), seen[i-1].Action.Type())
	}
}

// TestStoreSnapshotWaitsForHeldActions: a client subscribing to a chat
// while actions of it are held behind a write gets a snapshot that, with
// the actions it receives after it, is the host's state: no delta applied
// twice, none lost.
func TestStoreSnapshotWaitsForHeldActions(t *testing.T) {
	hs, gs, _ := gatedHarness(t)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "a")
	const side = "ahp-chat:/a-side"
	c.mustCall("createChat", map[string]any{"channel": s.uri, "chat": side}, nil)
	hs.dispatch(t, side, &wire.ChatTurnStartedAction{TurnID: "s1", Message: userMsg("side q")})
	hs.dispatch(t, s.chat,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("q")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
		&wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: "one "})
	settled(t, hs, s.uri)

	gs.close()
	hs.dispatch(t, side, &wire.ChatTurnCompleteAction{TurnID: "s1", Duration: 5})
	gs.waitEntered(t)
	hs.dispatch(t, s.chat, &wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: "two "})

	reader := hs.dial(t, "reader")
	reader.initialize()
	got := make(chan snapshotWire, 1)
	go func() { got <- reader.subscribe(s.chat) }()
	// The subscription is answered (which it must not be before the write
	// is done: checked below through the text), or waits for the write.
	g := hs.h.lookup(s.chat).group
	var snap snapshotWire
	answered := false
	eventually(t, "the subscription reaches the host", func() bool {
		select {
		case snap = <-got:
			answered = true
			return true
		default:
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.pipe.drained != nil
	})
	gs.open()
	if !answered {
		ctx, cancel := waitCtx(t)
		defer cancel()
		select {
		case snap = <-got:
		case <-ctx.Done():
			t.Fatal("the subscription was never answered")
		}
	}
	hs.dispatch(t, s.chat, &wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: "three"})

	var st wire.ChatState
	require.NoError(t, json.Unmarshal(snap.State, &st))
	for {
		e := reader.nextEnvelope(isAction(s.chat, wire.ActionTypeChatDelta))
		if e.ServerSeq > snap.FromSeq {
			reducer.Chat(&st, e.Action, reducer.Clock(hs.h.opts.Clock))
		}
		if e.Action.Value.(*wire.ChatDeltaAction).Content == "three" {
			break
		}
	}
	want := hs.readChat(t, s.chat)
	require.NotNil(t, st.ActiveTurn)
	assert.Equal(t, "one two three", markdownText(t, want.ActiveTurn), "the host's own text")
	assert.Equal(t, "one two three", markdownText(t, st.ActiveTurn), "the snapshot and the actions after it")
}

// markdownText is the text of a turn's markdown part "m".
func markdownText(t testing.TB, turn *wire.ActiveTurn) string {
	t.Helper()
	for _, p := range turn.ResponseParts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok && m.ID == "m" {
			return m.Content
		}
	}
	t.Fatal("the turn has no markdown part m")
	return ""
}

// TestStoreFailedWriteRetriedOnce: a turn's write that fails while more
// of the chat waits behind it is written with the next batch, and every
// completed turn is appended exactly once, in order; clients get each
// turn's end once, in order.
func TestStoreFailedWriteRetriedOnce(t *testing.T) {
	hs, gs, st := gatedHarness(t)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "a")
	richTurn(t, hs, s.chat, "t1")
	settled(t, hs, s.uri)

	gs.close()
	gs.failNextWrites(1)
	hs.dispatch(t, s.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("q2")},
		&wire.ChatTurnCompleteAction{TurnID: "t2", Duration: 1})
	assert.Equal(t, "session ahp-session:/a", gs.waitEntered(t), "the turn's start")
	// Queued behind the start's write: t2's end and all of t3.
	richTurn(t, hs, s.chat, "t3")
	gs.open()
	settled(t, hs, s.uri)
	richTurn(t, hs, s.chat, "t4")
	settled(t, hs, s.uri)

	assert.Equal(t, []string{"t1", "t2", "t3", "t4"}, storedTurnIDs(t, st, s.chat))
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1, "t4": 1}, gs.appendedCounts(), "each turn appended once")
	var ends []string
	for _, e := range envelopesIn(t, flushed(c)) {
		if e.Channel == s.chat && e.Action.Type() == string(wire.ActionTypeChatTurnComplete) {
			ends = append(ends, e.Action.Value.(*wire.ChatTurnCompleteAction).TurnID)
		}
	}
	assert.Equal(t, []string{"t1", "t2", "t3", "t4"}, ends)

	// A turn's own write failing: written with the next write.
	hs.dispatch(t, s.chat, &wire.ChatTurnStartedAction{TurnID: "t5", Message: userMsg("q5")})
	settled(t, hs, s.uri)
	gs.failNextWrites(1)
	hs.dispatch(t, s.chat, &wire.ChatTurnCompleteAction{TurnID: "t5", Duration: 1})
	settled(t, hs, s.uri)
	gs.mu.Lock()
	assert.Zero(t, gs.failNext, "t5's write failed")
	gs.mu.Unlock()
	// The root catalogue's change that follows the turn's end writes the
	// rows, and with them t5; else t6's write does.
	richTurn(t, hs, s.chat, "t6")
	settled(t, hs, s.uri)
	assert.Equal(t, []string{"t1", "t2", "t3", "t4", "t5", "t6"}, storedTurnIDs(t, st, s.chat))
	assert.Equal(t, map[string]int{"t1": 1, "t2": 1, "t3": 1, "t4": 1, "t5": 1, "t6": 1}, gs.appendedCounts())
}

// TestStoreCatalogueStoredBeforeAnnounced: a session's new title is in
// the store before any client sees it, on the session channel or in the
// root catalogue (root/sessionSummaryChanged), and neither is sent while
// the write waits.
func TestStoreCatalogueStoredBeforeAnnounced(t *testing.T) {
	hs, gs, st := gatedHarness(t)
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	s := hs.newSession(c, "a")
	settled(t, hs, s.uri)
	flushed(c)
	storedTitle := func() string {
		ctx, cancel := waitCtx(t)
		defer cancel()
		rec, err := st.GetSession(ctx, s.uri)
		require.NoError(t, err)
		return rec.Session.Title
	}

	gs.close()
	hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "renamed"})
	assert.Equal(t, "session ahp-session:/a", gs.waitEntered(t))
	for _, m := range flushed(c) {
		assert.NotEqual(t, "root/sessionSummaryChanged", m.Method, "announced before its write")
		if m.Method == wire.MethodAction {
			assert.NotEqual(t, s.uri, decodeEnvelope(t, m).Channel, "broadcast before its write")
		}
	}
	assert.Empty(t, storedTitle())

	gs.open()
	var sawAction, sawSummary bool
	for !sawAction || !sawSummary {
		m := c.recv("the title change")
		switch {
		case m.Method == "root/sessionSummaryChanged":
			assert.Equal(t, "renamed", storedTitle(), "stored before the root catalogue's change")
			var p struct {
				Changes map[string]json.RawMessage `json:"changes"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			assert.JSONEq(t, `"renamed"`, string(p.Changes["title"]))
			assert.True(t, sawAction, "the root catalogue's change came before the action it summarises")
			sawSummary = true
		case m.Method == wire.MethodAction && isAction(s.uri, wire.ActionTypeSessionTitleChanged)(decodeEnvelope(t, m)):
			assert.Equal(t, "renamed", storedTitle(), "stored before it was broadcast")
			sawAction = true
		}
	}
	// Announced once, not again.
	for _, m := range flushed(c) {
		assert.NotEqual(t, "root/sessionSummaryChanged", m.Method, "announced twice")
	}
}

// TestStoreCloseFlushesHeldActions: closing the host while a write is
// blocked waits for it: the turn is in the store once Close returns, and
// no drainer is left behind (goleak, TestMain).
func TestStoreCloseFlushesHeldActions(t *testing.T) {
	hs, gs, st := gatedHarness(t)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "a")
	hs.dispatch(t, s.chat, &wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("q")})
	settled(t, hs, s.uri)

	gs.close()
	hs.dispatch(t, s.chat, &wire.ChatTurnCompleteAction{TurnID: "t1", Duration: 1})
	gs.waitEntered(t)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		hs.h.Close()
	}()
	gs.open()
	ctx, cancel := waitCtx(t)
	defer cancel()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
	assert.Equal(t, []string{"t1"}, storedTurnIDs(t, st, s.chat))
}

// TestStoreCheckpointWaitsForItsChatRow: a new chat's turn streams while
// the write that adds the chat's row is blocked; its checkpoint waits for
// that write (the store drops a checkpoint of a chat it does not hold,
// and the checkpointer would then never write that text again), so after
// a restart the interrupted turn has all of its text.
func TestStoreCheckpointWaitsForItsChatRow(t *testing.T) {
	path := stateFile(t)
	st := openState(t, path)
	gs := newGatedStore(st)
	opts := Options{Agents: []wire.AgentInfo{multiChatAgent()}}
	gopts := opts
	gopts.Store = gs
	hs := newHarness(t, gopts)
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "a")
	settled(t, hs, s.uri)
	ctx, cancel := waitCtx(t)
	defer cancel()

	const side = "ahp-chat:/a-side"
	gs.close()
	c.mustCall("createChat", map[string]any{"channel": s.uri, "chat": side}, nil)
	assert.Equal(t, "session ahp-session:/a", gs.waitEntered(t), "the chat's row")
	hs.dispatch(t, side,
		&wire.ChatTurnStartedAction{TurnID: "t1", Message: userMsg("q")},
		&wire.ChatResponsePartAction{TurnID: "t1", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})},
		&wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: "first "})
	require.NoError(t, hs.h.ds.cp.Flush(ctx))
	gs.open()
	settled(t, hs, s.uri)
	hs.dispatch(t, side, &wire.ChatDeltaAction{TurnID: "t1", PartID: "m", Content: "second"})
	require.NoError(t, hs.h.ds.cp.Flush(ctx))
	c.close()

	hs.h.Close()
	hs.handler.wait()
	require.NoError(t, st.Close())
	hs, _ = storedHarness(t, path, opts)
	c = hs.dial(t, "c")
	c.initialize(s.uri, side)
	chat := hs.readChat(t, side)
	require.Len(t, chat.Turns, 1)
	assert.Equal(t, wire.TurnStateCancelled, chat.Turns[0].State)
	assert.Equal(t, "first second", turnText(chat.Turns[0].ResponseParts))
}
