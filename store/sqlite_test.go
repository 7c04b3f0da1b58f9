package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})

	sess := testSession(1)
	c1, c2 := testChat(sess.URI, 1), testChat(sess.URI, 2)
	c2.ACPSessionID = "" // not given yet
	c2.Summary = nil     // absent stays absent
	require.NoError(t, s.PutSession(ctx, sess, c1, c2))
	bare := Session{URI: "copilot:/bare", Provider: "p"} // nil and zero values round-trip
	require.NoError(t, s.PutSession(ctx, bare))

	t1 := Turn{ID: "t1", Data: turnJSON("t1", 512), EndedAt: at(10)}
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: c1.URI, Turn: t1}))
	// A turn together with the catalogue changes it caused.
	sess.Modified, sess.Summary = at(2000), json.RawMessage(`{"title":"Session 1","status":0}`)
	c1.Summary = json.RawMessage(`{"title":"chat 1","turns":2}`)
	t2 := Turn{ID: "t2", Data: turnJSON("t2", 4096), EndedAt: at(20)}
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: c1.URI, Turn: t2, Session: &sess, Chat: &c1}))

	cp := Checkpoint{ChatURI: c2.URI, TurnID: "a1", Data: json.RawMessage(`{"id":"a1","parts":[]}`), Updated: at(30)}
	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{cp}))
	require.NoError(t, s.RaiseSeqHighWater(ctx, 4242))
	require.NoError(t, s.RaiseSeqHighWater(ctx, 17), "a lower value must not lower the mark")

	rec, err := s.GetSession(ctx, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, SessionRecord{Session: sess, Chats: []ChatRecord{{Chat: c1, Turns: 2}, {Chat: c2, Turns: 0}}}, rec)

	page, err := s.ListSessions(ctx, ListQuery{})
	require.NoError(t, err)
	assert.Equal(t, SessionPage{Sessions: []Session{sess, bare}}, page)

	turns, err := s.Turns(ctx, c1.URI, TurnQuery{})
	require.NoError(t, err)
	assert.Equal(t, TurnPage{Turns: []Turn{t1, t2}}, turns)
	empty, err := s.Turns(ctx, c2.URI, TurnQuery{})
	require.NoError(t, err)
	assert.Empty(t, empty.Turns)

	got, err := s.Checkpoint(ctx, c2.URI)
	require.NoError(t, err)
	assert.Equal(t, cp, got)
	_, err = s.Checkpoint(ctx, c1.URI)
	assert.ErrorIs(t, err, ErrNotFound)

	hw, err := s.SeqHighWater(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(4242), hw)
	assert.Equal(t, Health{}, s.Health())
}

// A committed turn comes back byte for byte after the store is closed and
// opened again, and so does everything else.
func TestTurnSurvivesReopenExactly(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	sess := testSession(7)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	var want []Turn
	for i := range 3 {
		tr := Turn{ID: fmt.Sprintf("turn-%d", i), Data: turnJSON(fmt.Sprintf("turn-%d", i), 1000+1500*i), EndedAt: at(int64(100 + i))}
		require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: tr}))
		want = append(want, tr)
	}
	require.NoError(t, s.Close())

	s = openTest(t, path, Options{})
	page, err := s.Turns(ctx, chat.URI, TurnQuery{})
	require.NoError(t, err)
	require.Len(t, page.Turns, len(want))
	for i, got := range page.Turns {
		assert.Equal(t, want[i].ID, got.ID)
		assert.True(t, want[i].EndedAt.Equal(got.EndedAt))
		assert.True(t, bytes.Equal(want[i].Data, got.Data), "turn %d changed across a reopen", i)
	}
	rec, err := s.GetSession(ctx, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, sess, rec.Session)
	assert.Equal(t, []ChatRecord{{Chat: chat, Turns: 3}}, rec.Chats)
}

// Replacing a session's row must not cascade to its chats and turns, which
// INSERT OR REPLACE would do.
func TestPutSessionKeepsChatsAndTurns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "t1", Data: turnJSON("t1", 100), EndedAt: at(1)}}))
	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{{ChatURI: chat.URI, TurnID: "t2", Data: json.RawMessage(`{}`), Updated: at(2)}}))

	sess.Title = "renamed"
	require.NoError(t, s.PutSession(ctx, sess))
	chat.ACPSessionID = "acp-after-restart"
	require.NoError(t, s.PutChat(ctx, chat))

	rec, err := s.GetSession(ctx, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, "renamed", rec.Session.Title)
	assert.Equal(t, []ChatRecord{{Chat: chat, Turns: 1}}, rec.Chats)
	_, err = s.Checkpoint(ctx, chat.URI)
	assert.NoError(t, err)
}

func TestAppendTurnSameIDReplacesInPlace(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	for _, id := range []string{"t1", "t2", "t3"} {
		require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: id, Data: json.RawMessage(`"` + id + `"`), EndedAt: at(1)}}))
	}
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "t2", Data: json.RawMessage(`"again"`), EndedAt: at(2)}}))
	page, err := s.Turns(ctx, chat.URI, TurnQuery{})
	require.NoError(t, err)
	var got []string
	for _, tr := range page.Turns {
		got = append(got, tr.ID+"="+string(tr.Data))
	}
	assert.Equal(t, []string{`t1="t1"`, `t2="again"`, `t3="t3"`}, got)
}

// Completing a turn drops the chat's checkpoint of that turn, and a late
// checkpoint of a completed turn is not written.
func TestCompletedTurnSupersedesCheckpoint(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	cp := Checkpoint{ChatURI: chat.URI, TurnID: "t1", Data: json.RawMessage(`{"partial":true}`), Updated: at(1)}
	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{cp}))
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "t1", Data: json.RawMessage(`{}`), EndedAt: at(2)}}))
	_, err := s.Checkpoint(ctx, chat.URI)
	require.ErrorIs(t, err, ErrNotFound, "the completed turn replaces its checkpoint")

	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{cp}), "a late checkpoint is dropped, not an error")
	_, err = s.Checkpoint(ctx, chat.URI)
	assert.ErrorIs(t, err, ErrNotFound, "a late checkpoint must not resurrect a completed turn")

	// One of another chat, unknown to the store, is dropped too, without
	// failing the batch it came with.
	other := Checkpoint{ChatURI: "copilot:/gone/chat", TurnID: "x", Data: json.RawMessage(`{}`), Updated: at(3)}
	next := Checkpoint{ChatURI: chat.URI, TurnID: "t2", Data: json.RawMessage(`{"n":2}`), Updated: at(4)}
	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{other, next}))
	got, err := s.Checkpoint(ctx, chat.URI)
	require.NoError(t, err)
	assert.Equal(t, next, got)
}

func TestUnknownRowsAreNotFoundNotFailures(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	err := s.AppendTurn(ctx, TurnCommit{ChatURI: "copilot:/nope/chat", Turn: Turn{ID: "t1", Data: json.RawMessage(`{}`)}})
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, s.PutChat(ctx, testChat("copilot:/nope", 1)), ErrNotFound)
	assert.ErrorIs(t, s.PutSession(ctx, testSession(1), testChat("copilot:/other", 1)), ErrNotFound)
	assert.ErrorIs(t, s.DeleteSession(ctx, "copilot:/nope"), ErrNotFound)
	_, err = s.GetSession(ctx, "copilot:/nope")
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Turns(ctx, "copilot:/nope/chat", TurnQuery{})
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, Health{}, s.Health(), "a caller's mistake is not a failing disk")
	// The session of the failed PutSession was not half-stored.
	_, err = s.GetSession(ctx, testSession(1).URI)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestDeleteSessionCascades(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	keep, drop := testSession(1), testSession(2)
	for _, sess := range []Session{keep, drop} {
		chats := []Chat{testChat(sess.URI, 1), testChat(sess.URI, 2)}
		require.NoError(t, s.PutSession(ctx, sess, chats...))
		for _, c := range chats {
			for i := range 3 {
				id := fmt.Sprintf("t%d", i)
				require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: c.URI, Turn: Turn{ID: id, Data: turnJSON(id, 200), EndedAt: at(1)}}))
			}
			require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{{ChatURI: c.URI, TurnID: "active", Data: json.RawMessage(`{}`), Updated: at(2)}}))
		}
	}
	require.NoError(t, s.DeleteSession(ctx, drop.URI))

	assert.Equal(t, 1, countRows(t, s, "sessions"))
	assert.Equal(t, 2, countRows(t, s, "chats"))
	assert.Equal(t, 6, countRows(t, s, "turns"))
	assert.Equal(t, 2, countRows(t, s, "checkpoints"))
	_, err := s.GetSession(ctx, drop.URI)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Turns(ctx, testChat(drop.URI, 1).URI, TurnQuery{})
	assert.ErrorIs(t, err, ErrNotFound)
	rec, err := s.GetSession(ctx, keep.URI)
	require.NoError(t, err)
	assert.Len(t, rec.Chats, 2)
	assert.ErrorIs(t, s.DeleteSession(ctx, drop.URI), ErrNotFound)
}

func TestListSessionsPaging(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	var want []string // newest modification first, ties by URI descending
	for i := 24; i >= 0; i-- {
		sess := testSession(i)
		sess.Modified = at(int64(i / 3)) // ties of three
		require.NoError(t, s.PutSession(ctx, sess))
	}
	for i := 24; i >= 0; i-- {
		want = append(want, testSession(i).URI)
	}

	var got []string
	q := ListQuery{Limit: 7}
	pages := 0
	for {
		page, err := s.ListSessions(ctx, q)
		require.NoError(t, err)
		pages++
		assert.LessOrEqual(t, len(page.Sessions), 7)
		for _, sess := range page.Sessions {
			got = append(got, sess.URI)
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 4, pages)

	_, err := s.ListSessions(ctx, ListQuery{Cursor: "bm90IGEgY3Vyc29y"})
	assert.ErrorIs(t, err, ErrBadCursor)
	_, err = s.ListSessions(ctx, ListQuery{Cursor: encodeTurnCursor(3)})
	assert.ErrorIs(t, err, ErrBadCursor, "a turn cursor is not a session cursor")

	// The pages are served from the index, not by sorting the catalogue.
	for q, args := range map[string][]any{listFirstSQL: {8}, listAfterSQL: {1, "x", 8}} {
		plan := queryPlan(t, s, q, args...)
		assert.Contains(t, plan, "sessions_by_modified", q)
		assert.NotContains(t, plan, "TEMP B-TREE", q)
	}
}

func TestTurnsPaging(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	for i := 1; i <= 25; i++ {
		id := fmt.Sprintf("t%02d", i)
		require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: id, Data: json.RawMessage(`"` + id + `"`), EndedAt: at(int64(i))}}))
	}
	ids := func(p TurnPage) []string {
		var out []string
		for _, tr := range p.Turns {
			out = append(out, tr.ID)
		}
		return out
	}
	span := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("t%02d", i))
		}
		return out
	}

	p1, err := s.Turns(ctx, chat.URI, TurnQuery{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, span(16, 25), ids(p1))
	require.NotEmpty(t, p1.NextCursor)
	p2, err := s.Turns(ctx, chat.URI, TurnQuery{Limit: 10, Cursor: p1.NextCursor})
	require.NoError(t, err)
	assert.Equal(t, span(6, 15), ids(p2))
	p3, err := s.Turns(ctx, chat.URI, TurnQuery{Limit: 10, Cursor: p2.NextCursor})
	require.NoError(t, err)
	assert.Equal(t, span(1, 5), ids(p3))
	assert.Empty(t, p3.NextCursor)

	exact, err := s.Turns(ctx, chat.URI, TurnQuery{Limit: 25})
	require.NoError(t, err)
	assert.Len(t, exact.Turns, 25)
	assert.Empty(t, exact.NextCursor, "no cursor when the page holds the oldest turn")

	byID, err := s.Turns(ctx, chat.URI, TurnQuery{Limit: 3, BeforeTurnID: "t10"})
	require.NoError(t, err)
	assert.Equal(t, span(7, 9), ids(byID))
	all, err := s.Turns(ctx, chat.URI, TurnQuery{BeforeTurnID: "t03"})
	require.NoError(t, err)
	assert.Equal(t, span(1, 2), ids(all))
	assert.Empty(t, all.NextCursor)

	_, err = s.Turns(ctx, chat.URI, TurnQuery{BeforeTurnID: "t99"})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = s.Turns(ctx, chat.URI, TurnQuery{Cursor: "%%%"})
	assert.ErrorIs(t, err, ErrBadCursor)
	_, err = s.Turns(ctx, chat.URI, TurnQuery{Cursor: encodeSessionCursor(1, "x")})
	assert.ErrorIs(t, err, ErrBadCursor)
}

// A full disk, simulated with SQLite's page limit, fails writes with ErrFull
// and counts them; reads go on; once there is room again the next write
// succeeds and nothing half-written is left behind.
func TestWriteFailureRecovers(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "t1", Data: turnJSON("t1", 4096), EndedAt: at(1)}}))

	restore := fillDisk(t, s)
	big := Turn{ID: "t2", Data: turnJSON("t2", 64<<10), EndedAt: at(2)}
	sess.Title = "changed with t2"
	for range 2 {
		err := s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: big, Session: &sess})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrFull)
		assert.Contains(t, err.Error(), "storing turn t2 of chat "+chat.URI)
	}
	h := s.Health()
	assert.True(t, h.Failing)
	assert.Equal(t, uint64(2), h.WriteFailures)
	assert.ErrorIs(t, h.LastError, ErrFull)

	page, err := s.Turns(ctx, chat.URI, TurnQuery{})
	require.NoError(t, err, "reads go on while writes fail")
	assert.Len(t, page.Turns, 1)

	restore()
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: big, Session: &sess}))
	h = s.Health()
	assert.False(t, h.Failing)
	assert.Equal(t, uint64(2), h.WriteFailures, "the count is kept for the record")
	page, err = s.Turns(ctx, chat.URI, TurnQuery{})
	require.NoError(t, err)
	require.Len(t, page.Turns, 2)
	assert.True(t, bytes.Equal(big.Data, page.Turns[1].Data))
	rec, err := s.GetSession(ctx, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, "changed with t2", rec.Session.Title)
}

// fillDisk makes every write that needs a new page fail with SQLITE_FULL, as
// a full disk would, and returns the function that makes room again.
func fillDisk(t testing.TB, s *SQLite) (restore func()) {
	t.Helper()
	ctx := context.Background()
	var pages int64
	require.NoError(t, s.w.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages))
	var got int64
	require.NoError(t, s.w.QueryRowContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)).Scan(&got))
	require.Equal(t, pages, got)
	return func() {
		require.NoError(t, s.w.QueryRowContext(ctx, `PRAGMA max_page_count = 1073741823`).Scan(&got))
	}
}

func TestReadOnlyBesideARunningBridge(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	rw := openTest(t, path, Options{})
	sess := testSession(1)
	require.NoError(t, rw.PutSession(ctx, sess, testChat(sess.URI, 1)))

	ro := openTest(t, path, Options{ReadOnly: true})
	rec, err := ro.GetSession(ctx, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, sess, rec.Session)
	assert.ErrorIs(t, ro.PutSession(ctx, testSession(2)), ErrReadOnly)
	assert.ErrorIs(t, ro.DeleteSession(ctx, sess.URI), ErrReadOnly)
	assert.ErrorIs(t, ro.PutCheckpoints(ctx, nil), ErrReadOnly)

	// The bridge keeps writing; the reader sees it.
	require.NoError(t, rw.PutSession(ctx, testSession(2)))
	page, err := ro.ListSessions(ctx, ListQuery{})
	require.NoError(t, err)
	assert.Len(t, page.Sessions, 2)

	_, err = Open(ctx, testPath(t), Options{ReadOnly: true})
	assert.ErrorContains(t, err, "for reading", "a missing file is not created for a reader")
}

func TestClosedStoreRefuses(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testPath(t), Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice is harmless")
	assert.ErrorIs(t, s.PutSession(ctx, testSession(1)), ErrClosed)
	_, err = s.ListSessions(ctx, ListQuery{})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = s.SeqHighWater(ctx)
	assert.True(t, errors.Is(err, ErrClosed))
}

// queryPlan is SQLite's EXPLAIN QUERY PLAN of q, one step per line.
func queryPlan(t testing.TB, s *SQLite, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}

// Commits are copied from the WAL into the database file in the background,
// a moment later, not by the commit that crosses SQLite's threshold.
func TestWALCheckpointsInBackground(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s := openTest(t, path, Options{walEvery: time.Millisecond})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	for i := range 100 {
		id := fmt.Sprint(i)
		require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: id, Data: turnJSON(id, 4096), EndedAt: at(1)}}))
	}
	// 100 turns of 4 KiB are far below the writer's own threshold
	// (walAutoCheckpoint pages), so only the background can have moved
	// them into the database file.
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		if fi.Size() >= 100*4096 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file is still %d bytes: no checkpoint ran", fi.Size())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
