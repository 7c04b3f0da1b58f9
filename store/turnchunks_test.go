package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testChunk is the chunk size these tests open their stores with: the
// cutting and joining do not depend on the size, and megabytes through
// SQLite are slow under -race. The host's TestStoreLongCompletedTurnSurvivesARestart
// stores turns in chunks of the real size (turnChunkSize).
const testChunk = 8 << 10

// longTurn is a completed turn's data of n bytes (at least its frame):
// valid JSON (export checks it) whose bytes differ from one chunk to the
// next, so that a chunk out of place shows.
func longTurn(id string, n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"id":"` + id + `","text":"`)
	for i := 0; b.Len() < n-2-32; i++ {
		fmt.Fprintf(&b, "%d é🙂 ", i)
	}
	for b.Len() < n-2 {
		b.WriteByte('x')
	}
	b.WriteString(`"}`)
	return json.RawMessage(b.String())
}

// A completed turn longer than testChunk is stored in chunks and reads back
// byte for byte, alone and among other turns, on every page size; one
// stored again under its id replaces its chunks; deleting the session
// deletes them.
func TestTurnDataInChunks(t *testing.T) {
	cases := []struct {
		name   string
		size   int
		chunks int // rows in turn_chunks
	}{
		{"small", 100, 0},
		{"one chunk, nearly full", testChunk - 1, 0},
		{"exactly one chunk", testChunk, 0},
		{"one byte over", testChunk + 1, 1},
		{"several chunks", 3*testChunk + 17, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, chat := chunkedStore(t)
			ctx := t.Context()
			data := longTurn("long", tc.size)
			require.Len(t, data, tc.size)
			turns := []Turn{
				{ID: "before", Data: json.RawMessage(`{"id":"before"}`), EndedAt: time.Unix(1, 0)},
				{ID: "long", Data: data, EndedAt: time.Unix(2, 0)},
				{ID: "after", Data: longTurn("after", 2*testChunk+5), EndedAt: time.Unix(3, 0)},
			}
			for _, tr := range turns {
				require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: tr}))
			}
			var rows int
			require.NoError(t, s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_chunks WHERE turn_id = 'long'`).Scan(&rows))
			assert.Equal(t, tc.chunks, rows)

			for _, limit := range []int{0, 1, 2, 3} {
				var got []Turn
				q := TurnQuery{Limit: limit}
				for {
					page, err := s.Turns(ctx, chat.URI, q)
					require.NoError(t, err)
					got = append(page.Turns, got...)
					if page.NextCursor == "" {
						break
					}
					q.Cursor = page.NextCursor
				}
				require.Len(t, got, len(turns), "limit %d", limit)
				for i := range turns {
					assert.Equal(t, turns[i].ID, got[i].ID, "limit %d", limit)
					assert.True(t, string(turns[i].Data) == string(got[i].Data), "limit %d: turn %s's data differs", limit, turns[i].ID)
				}
			}
			doc, err := Export(ctx, s, chat.SessionURI)
			require.NoError(t, err)
			require.Len(t, doc.Chats[0].Turns, 3)
			assert.True(t, string(data) == string(doc.Chats[0].Turns[1].Turn), "the exported turn differs")

			// Stored again, shorter: its chunks go.
			short := json.RawMessage(`{"id":"long","again":true}`)
			require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "long", Data: short, EndedAt: time.Unix(4, 0)}}))
			page, err := s.Turns(ctx, chat.URI, TurnQuery{})
			require.NoError(t, err)
			require.Len(t, page.Turns, 3)
			assert.Equal(t, string(short), string(page.Turns[1].Data))
			require.NoError(t, s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_chunks WHERE turn_id = 'long'`).Scan(&rows))
			assert.Zero(t, rows)

			require.NoError(t, s.DeleteSession(ctx, chat.SessionURI))
			require.NoError(t, s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_chunks`).Scan(&rows))
			assert.Zero(t, rows)
		})
	}
}

// A turn whose row counts more chunks than are stored (a damaged file) is
// an error, not a short turn.
func TestTurnDataMissingChunk(t *testing.T) {
	s := openTest(t, testPath(t), Options{turnChunk: testChunk})
	ctx := t.Context()
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "long", Data: longTurn("long", 2*testChunk+1), EndedAt: time.Unix(1, 0)}}))
	_, err := s.w.ExecContext(ctx, `DELETE FROM turn_chunks WHERE seq = 2`)
	require.NoError(t, err)
	_, err = s.Turns(ctx, chat.URI, TurnQuery{})
	require.ErrorContains(t, err, "has 1 chunks of data stored, its row says 2")
}

// A file at schema version 2 with completed turns migrates to the newest:
// they read back as they were, and a long turn appended after is chunked.
func TestMigrationKeepsVersion2Turns(t *testing.T) {
	ctx := t.Context()
	path := testPath(t)
	atVersion(t, path, 2)
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	old := longTurn("old", 3*testChunk) // whole in its row, as version 2 wrote it
	func() {
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		insertOldSession(t, db, sess.URI, chat.URI)
		for i, d := range []json.RawMessage{json.RawMessage(`{"id":"first"}`), old} {
			_, err = db.ExecContext(ctx, `INSERT INTO turns (chat_uri, idx, turn_id, ended_ns, data) VALUES (?, ?, ?, ?, ?)`,
				chat.URI, i+1, []string{"first", "old"}[i], i+1, []byte(d))
			require.NoError(t, err)
		}
	}()

	s := openTest(t, path, Options{turnChunk: testChunk})
	var v int
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v))
	assert.Equal(t, len(migrations), v)
	next := longTurn("new", 2*testChunk+3)
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "new", Data: next, EndedAt: time.Unix(5, 0)}}))
	page, err := s.Turns(ctx, chat.URI, TurnQuery{})
	require.NoError(t, err)
	require.Len(t, page.Turns, 3)
	assert.Equal(t, `{"id":"first"}`, string(page.Turns[0].Data))
	assert.True(t, string(old) == string(page.Turns[1].Data), "the version 2 turn changed")
	assert.True(t, string(next) == string(page.Turns[2].Data), "the chunked turn differs")
	var rows int
	require.NoError(t, s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_chunks`).Scan(&rows))
	assert.Equal(t, 2, rows, "only the new turn is chunked")
}

// A turn given by Encode, in writes of any size whose buffer is reused after
// each, is stored exactly as the same bytes given as Data; an Encode that
// fails fails the write and leaves nothing of it; a missing chat is
// ErrNotFound.
func TestTurnEncodeWritesInChunks(t *testing.T) {
	data := longTurn("enc", 3*testChunk+101)
	cases := []struct {
		name   string
		writes []int // sizes of the writes, repeated until the data is written
	}{
		{"one write", []int{len(data)}},
		{"small writes", []int{1, 7, 4096, 65536 + 3}},
		{"chunk-sized writes", []int{testChunk}},
		{"straddling writes", []int{testChunk - 1, testChunk + 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, chat := chunkedStore(t)
			ctx := t.Context()
			encode := func(fail error) func(w io.Writer) error {
				return func(w io.Writer) error {
					buf := make([]byte, 0, testChunk+2)
					for off, i := 0, 0; off < len(data); i++ {
						n := min(tc.writes[i%len(tc.writes)], len(data)-off)
						buf = append(buf[:0], data[off:off+n]...)
						if _, err := w.Write(buf); err != nil {
							return err
						}
						clear(buf) // the store must have copied what it keeps
						off += n
						if fail != nil && off > 2*testChunk {
							return fail
						}
					}
					return nil
				}
			}
			broken := errors.New("the turn cannot be encoded")
			err := s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "enc", Encode: encode(broken), EndedAt: time.Unix(1, 0)}})
			require.ErrorIs(t, err, broken)
			var rows int
			require.NoError(t, s.w.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM turns) + (SELECT COUNT(*) FROM turn_chunks)`).Scan(&rows))
			assert.Zero(t, rows, "a failed write left rows")

			require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "enc", Encode: encode(nil), EndedAt: time.Unix(1, 0)}}))
			page, err := s.Turns(ctx, chat.URI, TurnQuery{})
			require.NoError(t, err)
			require.Len(t, page.Turns, 1)
			assert.True(t, string(data) == string(page.Turns[0].Data), "the encoded turn differs")
			require.NoError(t, s.w.QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_chunks`).Scan(&rows))
			assert.Equal(t, 3, rows)

			err = s.AppendTurn(ctx, TurnCommit{ChatURI: "ahp-chat:/nowhere", Turn: Turn{ID: "x", Encode: encode(nil), EndedAt: time.Unix(1, 0)}})
			assert.ErrorIs(t, err, ErrNotFound)
		})
	}
}

// chunkedStore opens a store cutting turns in testChunk bytes, holding one
// session with one chat, which it returns.
func chunkedStore(t *testing.T) (*SQLite, Chat) {
	t.Helper()
	s := openTest(t, testPath(t), Options{turnChunk: testChunk})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(t.Context(), sess, chat))
	return s, chat
}
