package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// migration moves the schema from version n-1 to n, where n is its place in
// the list (1-based). Migrations only ever go forward; a file written by a
// newer ahp-bridge is moved aside rather than guessed at.
type migration struct {
	name string
	sql  string
}

// migrations is the schema's history. Append, never edit: a file at version n
// has run exactly the first n entries.
var migrations = []migration{
	{name: "catalogue, chats, turns, checkpoints and the serverSeq high-water mark", sql: schemaV1},
	{name: "checkpoint texts appended rather than rewritten", sql: schemaV2},
	{name: "a long completed turn stored in chunks", sql: schemaV3},
	{name: "clients' dialects and subscriptions, and the models each provider offered", sql: schemaV4},
	{name: "bridges holding sessions, and the catalogue's change counter", sql: schemaV5},
	{name: "chats found by their agent session", sql: schemaV6},
}

// schemaV1 creates everything. Times are Unix nanoseconds in UTC, so that
// they sort as integers and round-trip exactly. JSON is stored as BLOB so the
// bytes come back exactly as given.
const schemaV1 = `
CREATE TABLE sessions (
	uri          TEXT    PRIMARY KEY,
	provider     TEXT    NOT NULL,
	title        TEXT    NOT NULL,
	working_dirs TEXT    NOT NULL, -- JSON array of strings
	config       BLOB,
	summary      BLOB,
	created_ns   INTEGER NOT NULL,
	modified_ns  INTEGER NOT NULL
);
-- listSessions: most recently modified first, keyset-paged on (modified_ns, uri).
CREATE INDEX sessions_by_modified ON sessions (modified_ns, uri);

CREATE TABLE chats (
	uri            TEXT    PRIMARY KEY,
	session_uri    TEXT    NOT NULL REFERENCES sessions (uri) ON DELETE CASCADE,
	acp_session_id TEXT    NOT NULL,
	summary        BLOB,
	created_ns     INTEGER NOT NULL
);
CREATE INDEX chats_by_session ON chats (session_uri, created_ns);

-- idx numbers a chat's turns 1, 2, 3… in completion order; fetchTurns pages
-- backwards on it.
CREATE TABLE turns (
	chat_uri TEXT    NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
	idx      INTEGER NOT NULL,
	turn_id  TEXT    NOT NULL,
	ended_ns INTEGER NOT NULL,
	data     BLOB    NOT NULL,
	UNIQUE (chat_uri, idx),
	UNIQUE (chat_uri, turn_id)
);

-- At most one active turn per chat, replaced on each checkpoint.
CREATE TABLE checkpoints (
	chat_uri   TEXT    PRIMARY KEY REFERENCES chats (uri) ON DELETE CASCADE,
	turn_id    TEXT    NOT NULL,
	updated_ns INTEGER NOT NULL,
	data       BLOB    NOT NULL
);

-- One row: every serverSeq ever handed out is at most high_water.
CREATE TABLE seq (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	high_water INTEGER NOT NULL
);
INSERT INTO seq (id, high_water) VALUES (1, 0);
`

// schemaV2 adds the pieces of text that incremental checkpoints append to
// the strings of a checkpoint's data (Checkpoint.Texts). A checkpoint written
// before (its whole turn in data, no texts) is a valid checkpoint of the new
// kind: nothing needs converting.
const schemaV2 = `
-- off is the byte offset of the piece in its string; a chat's pieces are
-- read in (pointer, off) order and dropped with the checkpoint's turn.
CREATE TABLE checkpoint_texts (
	chat_uri TEXT    NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
	turn_id  TEXT    NOT NULL,
	pointer  TEXT    NOT NULL,
	off      INTEGER NOT NULL,
	text     BLOB    NOT NULL,
	UNIQUE (chat_uri, turn_id, pointer, off)
);
`

// schemaV3 lets a completed turn's data be stored in chunks: turns.data
// holds its first turnChunkSize bytes and turn_chunks the rest, in seq order
// (turns.chunks of them). SQLite copies a bound value whole, then again into
// the record it writes, so a 51 MB answer written as one value cost the
// bridge 100 MB of memory beyond its own for the write (docs/performance.md,
// issue 17). A turn written before has its data whole and no chunks: it
// reads back unchanged.
const schemaV3 = `
ALTER TABLE turns ADD COLUMN chunks INTEGER NOT NULL DEFAULT 0;
CREATE TABLE turn_chunks (
	chat_uri TEXT    NOT NULL REFERENCES chats (uri) ON DELETE CASCADE,
	turn_id  TEXT    NOT NULL,
	seq      INTEGER NOT NULL,
	data     BLOB    NOT NULL,
	UNIQUE (chat_uri, turn_id, seq)
);
`

// schemaV4 keeps what a restarted bridge needs to answer a client it knew
// and a provider it has not started yet (issue 23): each clientId's
// negotiated dialect and subscriptions, so that VS Code's `reconnect` after a
// restart gets snapshots rather than "unknown client"; and the models each
// provider's agent last offered, so that AgentInfo.models is not empty
// before the provider's first session of this run.
const schemaV4 = `
CREATE TABLE clients (
	client_id        TEXT    PRIMARY KEY,
	protocol_version TEXT    NOT NULL,
	subscriptions    BLOB    NOT NULL, -- JSON array of channel URIs
	seen_ns          INTEGER NOT NULL
);
CREATE INDEX clients_by_seen ON clients (seen_ns);

CREATE TABLE provider_models (
	provider   TEXT    PRIMARY KEY,
	models     BLOB    NOT NULL, -- JSON array of AHP 1.0.0 model infos
	updated_ns INTEGER NOT NULL
);
`

// schemaV5 lets several bridges share one file (issue 25). holders says
// which bridge drives each session: a row per held session, naming the
// bridge process (pid and start time, which together survive pid reuse; the
// host it runs on, since a pid means nothing elsewhere; the ws:// address it
// listens on, for the messages of the bridges it refuses), its instance (a
// random id per open store, so that two stores in one process are two
// holders) and its heartbeat. changes is one counter that every write to the
// session catalogue or its turns raises, in the same transaction, so that
// the other bridges notice a change by reading one row; removed_sessions
// says which sessions a change deleted.
const schemaV5 = `
CREATE TABLE holders (
	session_uri  TEXT    PRIMARY KEY,
	instance     TEXT    NOT NULL,
	pid          INTEGER NOT NULL,
	started      INTEGER NOT NULL, -- the process's start time as the OS counts it; 0 if unknown
	host         TEXT    NOT NULL, -- the machine's name, for messages
	machine      TEXT    NOT NULL, -- the pid space: host name and pid namespace
	address      TEXT    NOT NULL, -- ws://HOST:PORT, or empty for a stdio-only bridge
	heartbeat_ns INTEGER NOT NULL
);
CREATE INDEX holders_by_instance ON holders (instance);

CREATE TABLE changes (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	n  INTEGER NOT NULL
);
INSERT INTO changes (id, n) VALUES (1, 0);

-- A session deleted, at change n, so that the other bridges can tell their
-- clients it is gone; kept a day.
CREATE TABLE removed_sessions (
	n           INTEGER PRIMARY KEY,
	session_uri TEXT    NOT NULL,
	removed_ns  INTEGER NOT NULL
);
`

// schemaV6 finds a chat by the agent's id of its session, so that an agent's
// own session list (issue 29) can leave out the sessions a stored chat of
// the bridge already talks to.
const schemaV6 = `
CREATE INDEX chats_by_acp_session ON chats (acp_session_id);
`

// versionTable records the schema version; it exists before migration 1 so
// that an empty file reads as version 0.
const versionTable = `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`

// schemaTooNewError is a file written by a newer ahp-bridge.
type schemaTooNewError struct{ have, know int }

func (e *schemaTooNewError) Error() string {
	return fmt.Sprintf("its schema version %d is newer than the %d this ahp-bridge knows", e.have, e.know)
}

// foreignDatabaseError is a valid SQLite file that ahp-bridge did not write.
// It is refused, not moved: it is somebody's data.
type foreignDatabaseError struct {
	path   string
	tables []string
}

func (e *foreignDatabaseError) Error() string {
	return fmt.Sprintf("%s is a SQLite database but not an ahp-bridge state file (it has tables %s); refusing to change it",
		e.path, strings.Join(e.tables, ", "))
}

// querier is what reading the schema version needs: a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// schemaVersion reads the file's schema version: 0 for an empty file.
func schemaVersion(ctx context.Context, q querier, path string) (int, error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return 0, fmt.Errorf("reading the tables of %s: %w", path, err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, fmt.Errorf("reading the tables of %s: %w", path, err)
		}
		tables = append(tables, name)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("reading the tables of %s: %w", path, err)
	}
	if len(tables) == 0 {
		return 0, nil
	}
	hasVersion := false
	for _, t := range tables {
		hasVersion = hasVersion || t == "schema_version"
	}
	if !hasVersion {
		return 0, &foreignDatabaseError{path: path, tables: tables}
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the schema version of %s: %w", path, err)
	}
	return int(v.Int64), nil
}

// migrate brings the file at db up to len(ms) in one transaction, so that
// a step that fails leaves the file at the version it had. One transaction
// rather than one per step: a new file runs every step, and each commit and
// version check costs more than most steps (SQLite parses every statement
// again, and under the race detector its parser is the slowest code in the
// tests).
func migrate(ctx context.Context, db *sql.DB, path string, ms []migration) error {
	// Read before creating anything, so that a foreign database is refused
	// untouched.
	have, err := schemaVersion(ctx, db, path)
	if err != nil {
		return err
	}
	if have > len(ms) {
		return &schemaTooNewError{have: have, know: len(ms)}
	}
	if have == len(ms) {
		return nil
	}
	if _, err := db.ExecContext(ctx, versionTable); err != nil {
		return fmt.Errorf("creating the schema version table in %s: %w", path, err)
	}
	return migrateSteps(ctx, db, path, ms)
}

// migrateSteps runs the steps the file lacks in one transaction. Several
// bridges may open a new file at once: the version is read again inside the
// transaction, which holds the write lock from BEGIN, so steps another
// process ran meanwhile are skipped rather than run twice.
func migrateSteps(ctx context.Context, db *sql.DB, path string, ms []migration) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrating %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	have, err := schemaVersion(ctx, tx, path)
	if err != nil {
		return err
	}
	if have >= len(ms) {
		return tx.Rollback()
	}
	for v := have + 1; v <= len(ms); v++ {
		if _, err := tx.ExecContext(ctx, ms[v-1].sql); err != nil {
			return fmt.Errorf("migrating %s from schema version %d to %d (%s): %w", path, v-1, v, ms[v-1].name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
		return fmt.Errorf("migrating %s: recording the schema version: %w", path, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, len(ms)); err != nil {
		return fmt.Errorf("migrating %s: recording the schema version: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrating %s: %w", path, err)
	}
	return nil
}
