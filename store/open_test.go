package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenUsesWALAndForeignKeys(t *testing.T) {
	s := openTest(t, testPath(t), Options{})
	ctx := context.Background()
	for _, db := range []*sql.DB{s.w, s.r} {
		var mode string
		var fk, sync int
		require.NoError(t, db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode))
		require.NoError(t, db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk))
		require.NoError(t, db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync))
		assert.Equal(t, "wal", mode)
		assert.Equal(t, 1, fk)
		assert.Equal(t, 1, sync, "synchronous=NORMAL")
	}
}

// A path with characters a URI would misread still names the same file.
func TestOpenOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir?x=1#frag%20", "state.db")
	s := openTest(t, path, Options{})
	require.NoError(t, s.PutSession(context.Background(), testSession(1)))
	_, err := os.Stat(path)
	assert.NoError(t, err)
}

func TestCorruptFileMovedAside(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	garbage := []byte(strings.Repeat("this is not a database, it is a shopping list\n", 200))
	require.NoError(t, os.WriteFile(path, garbage, 0o600))
	require.NoError(t, os.WriteFile(path+"-wal", []byte("stale wal"), 0o600))
	now := time.Date(2026, 11, 15, 10, 11, 12, 0, time.UTC)

	s := openTest(t, path, Options{now: func() time.Time { return now }})
	moved := s.MovedAside()
	require.NotNil(t, moved)
	wantTo := path + ".corrupt-20261115T101112Z"
	assert.Equal(t, wantTo, moved.MovedTo)
	assert.Equal(t, path, moved.Path)
	assert.Contains(t, moved.String(), path)
	assert.Contains(t, moved.String(), wantTo)
	assert.Contains(t, moved.String(), "not a database")

	kept, err := os.ReadFile(wantTo)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(garbage, kept), "the unusable file is kept as it was")
	wal, err := os.ReadFile(wantTo + "-wal")
	require.NoError(t, err)
	assert.Equal(t, "stale wal", string(wal), "its WAL went with it, not into the fresh file")

	page, err := s.ListSessions(ctx, ListQuery{})
	require.NoError(t, err)
	assert.Empty(t, page.Sessions)
	require.NoError(t, s.PutSession(ctx, testSession(1)), "the fresh store works")
}

func TestCorruptNamesDoNotCollide(t *testing.T) {
	path := testPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	for i, want := range []string{".corrupt-20260102T030405Z", ".corrupt-20260102T030405Z.1"} {
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("garbage %d", i)), 0o600))
		s, err := Open(context.Background(), path, Options{now: now})
		require.NoError(t, err)
		require.NotNil(t, s.MovedAside())
		assert.Equal(t, path+want, s.MovedAside().MovedTo)
		require.NoError(t, s.Close())
		require.NoError(t, os.Remove(path))
	}
}

// A file from a newer ahp-bridge is refused untouched: that bridge may be
// running on it.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	require.NoError(t, s.PutSession(ctx, testSession(1)))
	_, err = s.w.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(migrations)+1)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	for _, ro := range []bool{false, true} {
		_, err = Open(ctx, path, Options{ReadOnly: ro})
		require.Error(t, err)
		assert.ErrorContains(t, err, "newer")
		assert.ErrorContains(t, err, path)
	}
	matches, err := filepath.Glob(path + ".corrupt-*")
	require.NoError(t, err)
	assert.Empty(t, matches, "nothing moved aside")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions`).Scan(&n))
	assert.Equal(t, 1, n, "the file is as it was")
}

func TestMoveAsideFailureRefuses(t *testing.T) {
	for _, failing := range []string{"", "-wal"} {
		t.Run("suffix="+failing, func(t *testing.T) {
			path := testPath(t)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o600))
			require.NoError(t, os.WriteFile(path+"-wal", []byte("stale wal"), 0o600))
			rename := func(oldpath, newpath string) error {
				if oldpath == path+failing {
					return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrPermission}
				}
				return os.Rename(oldpath, newpath)
			}
			_, err := Open(context.Background(), path, Options{rename: rename})
			require.Error(t, err)
			assert.ErrorIs(t, err, fs.ErrPermission)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), "by hand")
			// Nothing was opened in its place.
			_, err = os.Stat(path + "-wal")
			assert.NoError(t, err, "the stale WAL is still where it was, so no fresh file was opened beside it")
			openTestAfterFix(t, path)
		})
	}
}

// openTestAfterFix removes the unmovable files as a user would and checks
// that the store then opens.
func openTestAfterFix(t *testing.T, path string) {
	for _, p := range []string{path, path + "-wal"} {
		if err := os.Remove(p); !errors.Is(err, fs.ErrNotExist) {
			require.NoError(t, err)
		}
	}
	openTest(t, path, Options{})
}

func TestForeignDatabaseRefused(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = Open(ctx, path, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an ahp-bridge state file")
	assert.Contains(t, err.Error(), "recipes")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(before, after), "somebody else's database is left untouched")
	matches, err := filepath.Glob(path + ".corrupt-*")
	require.NoError(t, err)
	assert.Empty(t, matches)
}

// schemaDump is the file's schema, for comparing a migrated file with a
// fresh one.
func schemaDump(t testing.TB, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT type, name, COALESCE(sql, '') FROM sqlite_schema ORDER BY type, name`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, text string
		require.NoError(t, rows.Scan(&typ, &name, &text))
		out = append(out, typ+" "+name+": "+strings.Join(strings.Fields(text), " "))
	}
	require.NoError(t, rows.Err())
	var v int
	require.NoError(t, db.QueryRow(`SELECT version FROM schema_version`).Scan(&v))
	return fmt.Sprintf("version %d\n%s", v, strings.Join(out, "\n"))
}

// atVersion makes a state file at schema version v, as an older ahp-bridge
// would have left it.
func atVersion(t *testing.T, path string, v int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, migrate(context.Background(), db, path, migrations[:v]))
	got, err := schemaVersion(context.Background(), db, path)
	require.NoError(t, err)
	require.Equal(t, v, got)
}

// Every earlier version of the file, the empty one included, migrates to the
// schema a fresh file gets.
func TestMigrationsFromEveryEarlierVersion(t *testing.T) {
	fresh := testPath(t)
	s := openTest(t, fresh, Options{})
	require.NoError(t, s.Close())
	want := schemaDump(t, fresh)
	require.Contains(t, want, fmt.Sprintf("version %d\n", len(migrations)))

	t.Run("zero-byte file", func(t *testing.T) {
		path := testPath(t)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		s := openTest(t, path, Options{})
		assert.Nil(t, s.MovedAside(), "an empty file is a valid empty database")
		require.NoError(t, s.Close())
		assert.Equal(t, want, schemaDump(t, path))
	})
	for v := 0; v < len(migrations); v++ {
		t.Run(fmt.Sprintf("from version %d", v), func(t *testing.T) {
			path := testPath(t)
			atVersion(t, path, v)
			s := openTest(t, path, Options{})
			assert.Nil(t, s.MovedAside())
			require.NoError(t, s.Close())
			assert.Equal(t, want, schemaDump(t, path))
		})
	}
}

// A later migration runs on a file with data and keeps it; one that fails
// leaves the file at the version before it.
func TestMigrationForwardAndFailure(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	sess := testSession(1)
	require.NoError(t, s.PutSession(ctx, sess))
	require.NoError(t, s.Close())

	broken := append(append([]migration{}, migrations...), migration{name: "broken", sql: `ALTER TABLE sessions ADD COLUMN pinned INTEGER; SELECT * FROM no_such_table`})
	_, err = Open(ctx, path, Options{migrations: broken})
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("from schema version %d to %d (broken)", len(migrations), len(migrations)+1))
	assert.Contains(t, schemaDump(t, path), fmt.Sprintf("version %d\n", len(migrations)))
	assert.NotContains(t, schemaDump(t, path), "pinned", "the failed step was rolled back whole")

	next := append(append([]migration{}, migrations...), migration{name: "pinned sessions", sql: `ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0`})
	s = openTest(t, path, Options{migrations: next})
	rec, err := s.GetSession(ctx, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, sess, rec.Session)
	require.NoError(t, s.Close())
	assert.Contains(t, schemaDump(t, path), fmt.Sprintf("version %d\n", len(migrations)+1))
}

func TestOpenErrorsAreNotMovedAside(t *testing.T) {
	// A directory where the file should be is a problem to report, not a
	// corrupt file to move.
	path := testPath(t)
	require.NoError(t, os.MkdirAll(path, 0o700))
	_, err := Open(context.Background(), path, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	matches, gerr := filepath.Glob(path + ".corrupt-*")
	require.NoError(t, gerr)
	assert.Empty(t, matches)
}

// A reader reports an unusable file and leaves it where it is.
func TestReadOnlyRefusesUnusableFile(t *testing.T) {
	path := testPath(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("not sqlite ", 100)), 0o600))
	_, err := Open(context.Background(), path, Options{ReadOnly: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "not a database")
	_, err = os.Stat(path)
	assert.NoError(t, err, "still there")

	old := testPath(t)
	atVersion(t, old, len(migrations)-1)
	_, err = Open(context.Background(), old, Options{ReadOnly: true})
	assert.ErrorContains(t, err, "migrate")
}
