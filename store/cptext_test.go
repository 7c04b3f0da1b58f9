package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// growingTurn is a turn of two growing texts, as the host snapshots it: the
// texts empty in data, whole in Texts.
type growingTurn struct {
	answer, thought string
	tools           int
}

func (g *growingTurn) snapshot() TurnSnapshot {
	parts := []string{`{"kind":"reasoning","content":""}`, `{"kind":"markdown","content":""}`}
	for i := range g.tools {
		parts = append(parts, fmt.Sprintf(`{"kind":"toolCall","id":"tc%d"}`, i))
	}
	return TurnSnapshot{
		Data: json.RawMessage(`{"id":"a","responseParts":[` + strings.Join(parts, ",") + `]}`),
		Texts: []CheckpointText{
			{Pointer: "/responseParts/0/content", Text: g.thought},
			{Pointer: "/responseParts/1/content", Text: g.answer},
		},
	}
}

// snapshotFrom is snapshot as the host's snapshot function gives it: each text
// from where from asks for it, when it is that long. read counts the bytes
// of text it gave.
func (g *growingTurn) snapshotFrom(from map[string]int, read *int) TurnSnapshot {
	snap := g.snapshot()
	for i, t := range snap.Texts {
		if at, ok := from[t.Pointer]; ok && at <= len(t.Text) {
			snap.Texts[i] = CheckpointText{Pointer: t.Pointer, Offset: at, Text: t.Text[at:]}
		}
		*read += len(snap.Texts[i].Text)
	}
	return snap
}

// inPieces cuts each text of snap into pieces of 1 to 300 bytes, anywhere
// (runes included), as the host's lazy text is kept.
func inPieces(snap TurnSnapshot, rng *rand.Rand) TurnSnapshot {
	var out []CheckpointText
	for _, t := range snap.Texts {
		off, s := t.Offset, t.Text
		for {
			k := min(len(s), 1+rng.IntN(300))
			out = append(out, CheckpointText{Pointer: t.Pointer, Offset: off, Text: s[:k]})
			off, s = off+k, s[k:]
			if s == "" {
				break
			}
		}
	}
	snap.Texts = out
	return snap
}

func (g *growingTurn) want() string {
	parts := []string{
		fmt.Sprintf(`{"kind":"reasoning","content":%s}`, mustMarshal(g.thought)),
		fmt.Sprintf(`{"kind":"markdown","content":%s}`, mustMarshal(g.answer)),
	}
	for i := range g.tools {
		parts = append(parts, fmt.Sprintf(`{"kind":"toolCall","id":"tc%d"}`, i))
	}
	return `{"id":"a","responseParts":[` + strings.Join(parts, ",") + `]}`
}

func mustMarshal(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// storedWhole is the chat's checkpoint with its texts merged in.
func storedWhole(t *testing.T, s *SQLite, chat string) string {
	t.Helper()
	cp, err := s.Checkpoint(t.Context(), chat)
	require.NoError(t, err)
	m, err := cp.Merged()
	require.NoError(t, err)
	return string(m)
}

// A turn checkpointed many times writes each piece of text once: every
// checkpoint carries what the texts gained, its data rewritten; the stored
// checkpoint always merges to the whole turn. A new turn of the chat, and a
// text that does not continue what was written, are written whole. The
// same whether the snapshot gives the texts whole or from where the
// checkpointer asks for them, which then reads little more than what is
// new.
func TestCheckpointerAppendsOnlyWhatIsNew(t *testing.T) {
	for _, tc := range []struct {
		name                string
		fromOffsets, pieces bool
	}{
		{name: "whole"},
		{name: "from offsets", fromOffsets: true},
		{name: "from offsets, in pieces", fromOffsets: true, pieces: true},
		{name: "whole, in pieces", pieces: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has its own file and store: run them side by side,
			// the last tests of the suite, where the other core is idle.
			t.Parallel()
			testCheckpointerAppendsOnlyWhatIsNew(t, tc.fromOffsets, tc.pieces)
		})
	}
}

func testCheckpointerAppendsOnlyWhatIsNew(t *testing.T, fromOffsets, pieces bool) {
	r := newCPRig(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	var read, calls int // what the snapshots gave, when asked from offsets
	put := func(turnID string, g *growingTurn, grew int) {
		r.cp.PutFunc(r.chat1.URI, turnID, grew, func(from map[string]int) (TurnSnapshot, error) {
			calls++
			snap := g.snapshot()
			if fromOffsets {
				snap = g.snapshotFrom(from, &read)
			}
			if pieces {
				snap = inPieces(snap, rng)
			}
			return snap, nil
		})
	}
	g := &growingTurn{}
	var text int
	for i := range 50 {
		add := fmt.Sprintf("piece %d é日本語🙂 \"q\" \n", i) + strings.Repeat("x", 500)
		g.answer += add
		g.thought += "t"
		text += len(add) + 1
		if i%10 == 3 {
			g.tools++
		}
		put("a", g, len(add))
		require.NoError(t, r.cp.Flush(ctx))
		require.JSONEq(t, g.want(), storedWhole(t, r.s, r.chat1.URI), "after checkpoint %d", i)
	}
	st := r.cp.Stats()
	assert.Equal(t, uint64(50), st.Written)
	data := uint64(len(g.snapshot().Data))
	assert.LessOrEqual(t, st.Bytes, uint64(text)+50*data, "the texts were written once")
	assert.Equal(t, 50, calls, "a snapshot taken twice")
	if fromOffsets {
		assert.LessOrEqual(t, read, text+50*2*sentTail, "the snapshots read the texts whole")
	}

	cp, err := r.s.Checkpoint(ctx, r.chat1.URI)
	require.NoError(t, err)
	require.Len(t, cp.Texts, 2, "one text per pointer, its pieces joined")
	assert.Equal(t, g.answer, cp.Texts[1].Text)
	var rows int
	require.NoError(t, r.s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM checkpoint_texts`).Scan(&rows))
	if !pieces {
		assert.Equal(t, 100, rows, "a piece per text per checkpoint")
	}

	// A text replaced by another (not a continuation) is written whole;
	// given from an offset, the snapshot is taken again for it.
	for _, tc := range []struct {
		answer string
		calls  int // snapshots taken, when given from offsets
	}{
		// Shorter than where the checkpointer asks from: given whole.
		{"something else entirely, longer than the tail kept of the old answer", 1},
		{"short", 1},
		// Asked from 0 (the tail kept is all of "short"): given whole.
		{"something else entirely, longer than the tail kept of the old answer, and more", 1},
		// Given from the offset asked, but not a continuation: taken again.
		{strings.Repeat("y", 3000), 2},
		{strings.Repeat("y", 2999) + "z" + strings.Repeat("y", 100), 2},
		// A continuation again.
		{strings.Repeat("y", 2999) + "z" + strings.Repeat("y", 200), 1},
	} {
		calls = 0
		g.answer = tc.answer
		put("a", g, 10)
		require.NoError(t, r.cp.Flush(ctx))
		assert.JSONEq(t, g.want(), storedWhole(t, r.s, r.chat1.URI), "replaced by %.10q", tc.answer)
		if fromOffsets {
			assert.Equal(t, tc.calls, calls, "snapshots taken of %.10q", tc.answer)
		}
		cp, err := r.s.Checkpoint(ctx, r.chat1.URI)
		require.NoError(t, err)
		assert.Equal(t, tc.answer, cp.Texts[1].Text)
	}

	// A new turn of the chat replaces the old one's pieces.
	g2 := &growingTurn{answer: "fresh", thought: "new"}
	put("b", g2, 10)
	require.NoError(t, r.cp.Flush(ctx))
	assert.JSONEq(t, g2.want(), storedWhole(t, r.s, r.chat1.URI))
	require.NoError(t, r.s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM checkpoint_texts`).Scan(&rows))
	assert.Equal(t, 2, rows)

	// The completed turn drops its checkpoint and its pieces.
	require.NoError(t, r.s.AppendTurn(ctx, TurnCommit{ChatURI: r.chat1.URI, Turn: Turn{ID: "b", Data: json.RawMessage(`{}`), EndedAt: time.Now()}}))
	_, err = r.s.Checkpoint(ctx, r.chat1.URI)
	assert.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, r.s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM checkpoint_texts`).Scan(&rows))
	assert.Zero(t, rows)
	// A late checkpoint of it writes nothing.
	g2.answer += " more"
	put("b", g2, 10)
	require.NoError(t, r.cp.Flush(ctx))
	require.NoError(t, r.s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM checkpoint_texts`).Scan(&rows))
	assert.Zero(t, rows)
}

// A write that fails is carried by the next one: the texts' pieces that
// were not written go with what came after them.
func TestCheckpointerIncrementAfterAFailedWrite(t *testing.T) {
	r := newCPRig(t)
	ctx := t.Context()
	g := &growingTurn{answer: "one ", thought: "a"}
	snap := func(map[string]int) (TurnSnapshot, error) { return g.snapshot(), nil }
	r.cp.PutFunc(r.chat1.URI, "a", 10, snap)
	require.NoError(t, r.cp.Flush(ctx))

	restore := fillDisk(t, r.s)
	g.answer += "two " + strings.Repeat("2", 200<<10) // more than the free pages hold
	r.cp.PutFunc(r.chat1.URI, "a", 10, snap)
	require.ErrorIs(t, r.cp.Flush(ctx), ErrFull)
	<-r.errs
	restore()
	g.answer += "three"
	g.tools = 1
	r.cp.PutFunc(r.chat1.URI, "a", 10, snap)
	require.NoError(t, r.cp.Flush(ctx))
	assert.JSONEq(t, g.want(), storedWhole(t, r.s, r.chat1.URI))
}

// Pieces read back join into one text per string; a piece written again
// replaces what followed its offset, and one beyond the end is left out.
func TestCheckpointTextsJoin(t *testing.T) {
	s := openTest(t, testPath(t), Options{})
	ctx := t.Context()
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	data := json.RawMessage(`{"parts":[{"content":"base-"},{"content":""}]}`)
	p0, p1 := "/parts/0/content", "/parts/1/content"
	put := func(replace bool, texts ...CheckpointText) {
		t.Helper()
		require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{{ChatURI: chat.URI, TurnID: "a", Data: data, Replace: replace, Texts: texts}}))
	}
	put(true, CheckpointText{Pointer: p0, Offset: 5, Text: "one"}, CheckpointText{Pointer: p1, Text: "x"})
	put(false, CheckpointText{Pointer: p0, Offset: 8, Text: "two"})
	put(false, CheckpointText{Pointer: p0, Offset: 11, Text: "three"}, CheckpointText{Pointer: p1, Offset: 1, Text: "y"})
	assert.JSONEq(t, `{"parts":[{"content":"base-onetwothree"},{"content":"xy"}]}`, storedWhole(t, s, chat.URI))
	// Written again from offset 8: "twothree" goes, "TWO" takes its place.
	put(false, CheckpointText{Pointer: p0, Offset: 8, Text: "TWO"})
	assert.JSONEq(t, `{"parts":[{"content":"base-oneTWO"},{"content":"xy"}]}`, storedWhole(t, s, chat.URI))
	cp, err := s.Checkpoint(ctx, chat.URI)
	require.NoError(t, err)
	assert.Equal(t, []CheckpointText{{Pointer: p0, Offset: 5, Text: "oneTWO"}, {Pointer: p1, Text: "xy"}}, cp.Texts)

	// A gap (a piece lost) stops the text where it is.
	put(false, CheckpointText{Pointer: p1, Offset: 5, Text: "zz"})
	assert.JSONEq(t, `{"parts":[{"content":"base-oneTWO"},{"content":"xy"}]}`, storedWhole(t, s, chat.URI))

	// Deleting the session deletes the pieces.
	require.NoError(t, s.DeleteSession(ctx, sess.URI))
	var rows int
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM checkpoint_texts`).Scan(&rows))
	assert.Zero(t, rows)
}

// A file at schema version 1 holding an in-progress checkpoint (the whole
// turn in its data) migrates to version 2 and the checkpoint reads back as
// it was; the turn's next checkpoints append to it, show and export see
// the whole turn, and deleting the session deletes it all.
func TestMigrationKeepsAVersion1Checkpoint(t *testing.T) {
	ctx := t.Context()
	path := testPath(t)
	atVersion(t, path, 1)
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	old := `{"id":"a","responseParts":[{"kind":"markdown","content":"streamed before the upgrade"}]}`
	func() {
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		insertOldSession(t, db, sess.URI, chat.URI)
		_, err = db.ExecContext(ctx, `INSERT INTO checkpoints (chat_uri, turn_id, updated_ns, data) VALUES (?, 'a', 5, ?)`, chat.URI, []byte(old))
		require.NoError(t, err)
	}()

	s := openTest(t, path, Options{})
	var v int
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v))
	assert.Equal(t, len(migrations), v)
	cp, err := s.Checkpoint(ctx, chat.URI)
	require.NoError(t, err)
	assert.Equal(t, "a", cp.TurnID)
	assert.Equal(t, old, string(cp.Data))
	assert.Empty(t, cp.Texts)
	m, err := cp.Merged()
	require.NoError(t, err)
	assert.Equal(t, old, string(m))

	// A checkpoint of the new kind appends to the old one's text.
	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{{ChatURI: chat.URI, TurnID: "a", Data: cp.Data,
		Texts: []CheckpointText{{Pointer: "/responseParts/0/content", Offset: len("streamed before the upgrade"), Text: ", and after"}}}}))
	want := `{"id":"a","responseParts":[{"kind":"markdown","content":"streamed before the upgrade, and after"}]}`
	assert.JSONEq(t, want, storedWhole(t, s, chat.URI))
	info, err := Show(ctx, s, sess.URI)
	require.NoError(t, err)
	require.NotNil(t, info.Chats[0].ActiveTurn)
	assert.Equal(t, len(old)+len(", and after"), info.Chats[0].ActiveTurn.Bytes)
	doc, err := Export(ctx, s, sess.URI)
	require.NoError(t, err)
	require.NotNil(t, doc.Chats[0].ActiveTurn)
	assert.JSONEq(t, want, string(doc.Chats[0].ActiveTurn.State))

	require.NoError(t, s.DeleteSession(ctx, sess.URI))
	var rows int
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM checkpoints) + (SELECT COUNT(*) FROM checkpoint_texts)`).Scan(&rows))
	assert.Zero(t, rows)
}

// A snapshot whose pieces of a string do not follow each other, or whose
// string comes back after another's, cannot be placed: the write says so
// and stores nothing of it.
func TestCheckpointerRefusesPiecesThatDoNotFollow(t *testing.T) {
	p0, p1 := "/responseParts/0/content", "/responseParts/1/content"
	for _, tc := range []struct {
		name  string
		texts []CheckpointText
	}{
		{"a gap", []CheckpointText{{Pointer: p0, Text: "ab"}, {Pointer: p0, Offset: 3, Text: "d"}}},
		{"an overlap", []CheckpointText{{Pointer: p0, Text: "ab"}, {Pointer: p0, Offset: 1, Text: "b"}}},
		{"a string split", []CheckpointText{{Pointer: p0, Text: "ab"}, {Pointer: p1, Text: "x"}, {Pointer: p0, Offset: 2, Text: "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newCPRig(t)
			r.cp.PutFunc(r.chat1.URI, "a", 10, func(map[string]int) (TurnSnapshot, error) {
				return TurnSnapshot{Data: json.RawMessage(`{"responseParts":[{"content":""},{"content":""}]}`), Texts: tc.texts}, nil
			})
			require.ErrorContains(t, r.cp.Flush(t.Context()), "not whole strings in pieces that follow each other")
			<-r.errs
			_, err := r.s.Checkpoint(t.Context(), r.chat1.URI)
			assert.ErrorIs(t, err, ErrNotFound)
		})
	}
}

// insertOldSession writes a session and its chat into a file of an earlier
// schema version the way that version's store did, for migration tests.
func insertOldSession(t *testing.T, db *sql.DB, sessionURI, chatURI string) {
	t.Helper()
	_, err := db.ExecContext(t.Context(), `INSERT INTO sessions (uri, provider, title, working_dirs, created_ns, modified_ns)
		VALUES (?, 'acp:x', 'old', '[]', 1, 1)`, sessionURI)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO chats (uri, session_uri, acp_session_id, created_ns) VALUES (?, ?, '', 1)`, chatURI, sessionURI)
	require.NoError(t, err)
}
