package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
)

// SQLite result codes the store tells apart (primary codes unless noted).
const (
	sqliteCorrupt      = 11
	sqliteFull         = 13
	sqliteNotADB       = 26
	sqliteConstraintFK = 787 // extended: SQLITE_CONSTRAINT_FOREIGNKEY
)

// Options tunes Open. The zero value is what the bridge uses.
type Options struct {
	// ReadOnly opens an existing file for inspection, for example by
	// `ahp-bridge sessions list` while bridges are running: nothing is
	// migrated, moved or written (writes fail with ErrReadOnly).
	ReadOnly bool
	// BusyTimeout bounds how long a statement waits for SQLite's own locks,
	// which other connections (readers, an inspector, a checkpoint, the
	// other bridges' writers) hold only for one transaction; zero means
	// 5 s. A write that waits longer fails like any other (Health).
	BusyTimeout time.Duration
	// Readers bounds the connections serving reads; zero means 4. Each holds
	// its own page cache of at most 2 MiB.
	Readers int
	// HolderStale is how old another holder's heartbeat must be before
	// its sessions may be taken over, where its process cannot be checked
	// directly (see Claim); zero means 5 s. Heartbeat is how often this
	// store refreshes its own holds; zero means 1 s.
	HolderStale, Heartbeat time.Duration

	// now names the corrupt-<time> file; nil means time.Now.
	now func() time.Time
	// migrations replaces the schema history in tests; nil means the real one.
	migrations []migration
	// rename moves files aside; tests make it fail. nil means os.Rename.
	rename func(oldpath, newpath string) error
	// walEvery delays the background WAL checkpoint; zero means
	// walCheckpointDelay.
	walEvery time.Duration
	// turnChunk replaces turnChunkSize in tests, which cut turns of a few
	// KiB into chunks rather than write megabytes through SQLite (slow
	// under -race); zero means turnChunkSize.
	turnChunk int
}

func (o Options) withDefaults() Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.HolderStale <= 0 {
		o.HolderStale = defaultHolderStale
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = defaultHeartbeat
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.migrations == nil {
		o.migrations = migrations
	}
	if o.rename == nil {
		o.rename = os.Rename
	}
	if o.turnChunk <= 0 {
		o.turnChunk = turnChunkSize
	}
	if o.walEvery <= 0 {
		o.walEvery = walCheckpointDelay
	}
	return o
}

// SQLite is the Store kept in one SQLite file, through the pure-Go driver
// modernc.org/sqlite (no cgo). Every write of this store goes through a
// single connection, so its writers queue in Go instead of spinning on
// SQLite's busy handler, which only the other processes' writers (other
// bridges on the file) make them wait in; reads use a small pool of their
// own, which WAL lets run beside the writers.
type SQLite struct {
	path     string
	readOnly bool
	w        *sql.DB // one connection; nil when read-only
	r        *sql.DB
	moved    *MovedAside
	closed   atomic.Bool
	closeMu  sync.Mutex

	healthMu sync.Mutex
	health   Health

	// hold is this store's side of sharing the file with other bridges
	// (holders.go); nil when read-only, which judges holders with
	// holderStale.
	hold        *holding
	holderStale time.Duration

	ws writeStmts
	rs readStmts

	// WAL checkpoints run off the write path; see runWALCheckpoints.
	ck        *sql.DB // one connection of its own
	walEvery  time.Duration
	walKick   chan struct{}
	turnChunk int                // the most of a turn's data written as one value (turnChunkSize)
	walCancel context.CancelFunc // stops runWALCheckpoints, even mid-checkpoint
	walDone   chan struct{}
}

// walAutoCheckpoint is the writer's own checkpoint threshold in pages,
// a backstop far above what the background checkpoints let the WAL reach.
const walAutoCheckpoint = 10000

// walCheckpointDelay is how long after a commit the background checkpoint
// runs: long enough to batch a burst of commits into one checkpoint.
const walCheckpointDelay = time.Second

var _ Store = (*SQLite)(nil)

// Open opens the state file at path, creating it (0600) and its directory
// (0700) if needed.
//
// Any number of stores, in this process or others, may have the file open
// at once: SQLite's WAL mode lets them read beside one writer, every write
// is one transaction that takes the write lock at BEGIN and waits for it up
// to Options.BusyTimeout, and which bridge drives a session is settled by
// Claim (holders.go).
//
// A file that is not a valid database is moved aside (see MovedAside) and an
// empty store is opened in its place; if it cannot be moved, Open fails and
// says so. A file whose schema is newer than this code knows, and a valid
// SQLite database that ahp-bridge did not write, are refused untouched.
func Open(ctx context.Context, path string, opt Options) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("opening the state store: no file named")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening the state store %s: %w", path, err)
	}
	opt = opt.withDefaults()
	if opt.ReadOnly {
		return openReadOnly(ctx, abs, opt)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory %s: %w", dir, err)
	}
	return openWriteable(ctx, abs, opt)
}

// Path is the state file's absolute path.
func (s *SQLite) Path() string { return s.path }

// MovedAside reports the unusable file Open moved out of the way, or nil.
func (s *SQLite) MovedAside() *MovedAside { return s.moved }

func openWriteable(ctx context.Context, path string, opt Options) (*SQLite, error) {
	w, err := openWriter(ctx, path, opt)
	var moved *MovedAside
	if err != nil {
		var bad *unusableFileError
		if !errors.As(err, &bad) {
			return nil, err
		}
		if moved, err = moveAside(path, opt.now().UTC(), bad.reason, opt.rename); err != nil {
			return nil, err
		}
		if w, err = openWriter(ctx, path, opt); err != nil {
			return nil, fmt.Errorf("state file %s could not be used (%v) and was moved to %s, but a fresh one cannot be opened in its place: %w",
				path, moved.Reason, moved.MovedTo, err)
		}
	}
	r, err := openReaders(path, opt, false)
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	ck, err := sql.Open("sqlite", dsn(path, opt, false, false))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("opening the state file %s: %w", path, err), r.Close(), w.Close())
	}
	ck.SetMaxOpenConns(1)
	s := &SQLite{path: path, w: w, r: r, ck: ck, moved: moved,
		walEvery: opt.walEvery, turnChunk: opt.turnChunk, walKick: make(chan struct{}, 1), walDone: make(chan struct{})}
	if err := s.prepare(ctx); err != nil {
		return nil, errors.Join(err, s.closeDBs())
	}
	if s.hold, err = newHolding(opt); err != nil {
		return nil, errors.Join(err, s.closeDBs())
	}
	s.holderStale = opt.HolderStale
	walCtx, cancel := context.WithCancel(context.Background())
	s.walCancel = cancel
	go s.runWALCheckpoints(walCtx)
	go s.runHeartbeat()
	return s, nil
}

// runWALCheckpoints copies the WAL into the database in the background, a
// moment after commits, instead of letting the committing connection do it
// inline: an inline checkpoint copies and fsyncs up to a thousand pages and
// would stall whichever AppendTurn crossed the threshold, with the host
// waiting to broadcast. A PASSIVE checkpoint never blocks the writer. Its
// errors are not the caller's to count: if checkpoints keep failing, the
// WAL grows to walAutoCheckpoint and the writer's own checkpoint reports
// the problem on a write.
func (s *SQLite) runWALCheckpoints(ctx context.Context) {
	defer close(s.walDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.walKick:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.walEvery):
		}
		// Cancelled by Close: it must not wait for a large WAL's copy.
		_, _ = s.ck.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
	}
}

func openReadOnly(ctx context.Context, path string, opt Options) (*SQLite, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("opening the state file %s for reading: %w", path, err)
	}
	r, err := openReaders(path, opt, true)
	if err != nil {
		return nil, err
	}
	have, err := schemaVersion(ctx, r, path)
	switch {
	case err != nil:
	case have > len(opt.migrations):
		err = &schemaTooNewError{have: have, know: len(opt.migrations)}
	case have < len(opt.migrations):
		err = fmt.Errorf("it has schema version %d, this ahp-bridge uses %d; start the bridge on it once to migrate it",
			have, len(opt.migrations))
	}
	if err != nil {
		// A reader changes nothing, so an unusable file is reported, not
		// moved aside.
		return nil, errors.Join(fmt.Errorf("opening the state file %s for reading: %w", path, err), r.Close())
	}
	s := &SQLite{path: path, readOnly: true, r: r, holderStale: opt.HolderStale}
	if err := s.prepare(ctx); err != nil {
		return nil, errors.Join(err, s.closeDBs())
	}
	return s, nil
}

// dsn builds a file: URI, so that a path holding '?' or '#' reaches SQLite
// intact, with the pragmas every connection needs: foreign keys are
// per-connection in SQLite, and so are busy_timeout and synchronous.
func dsn(path string, opt Options, reader, readOnly bool) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	u := url.URL{Scheme: "file", Path: p}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opt.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if reader {
		q.Add("_pragma", "query_only(1)")
	} else {
		// Take the write lock at BEGIN, not at the first write, so that a
		// transaction never has to upgrade and fail with SQLITE_BUSY.
		q.Set("_txlock", "immediate")
	}
	if readOnly {
		q.Set("mode", "ro")
	}
	return u.String() + "?" + q.Encode()
}

// createFile creates the state file 0600 before SQLite does, which would use
// 0644 less the umask; SQLite gives the -wal and -shm files the same mode as
// the database.
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("creating the state file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("creating the state file %s: %w", path, err)
	}
	return nil
}

func openWriter(ctx context.Context, path string, opt Options) (*sql.DB, error) {
	if err := createFile(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, opt, false, false))
	if err != nil {
		return nil, fmt.Errorf("opening the state file %s: %w", path, err)
	}
	// One connection that lives as long as the store: its prepared
	// statements stay prepared, and per-connection settings stay set.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := initWriter(ctx, db, path, opt.migrations); err != nil {
		return nil, errors.Join(classifyOpenError(path, err), db.Close())
	}
	return db, nil
}

func initWriter(ctx context.Context, db *sql.DB, path string, ms []migration) error {
	if err := checkHeader(path); err != nil {
		return err
	}
	// Look before switching to WAL, which rewrites the header: a database
	// that is not ours must be left as it was, and one too new is moved
	// aside as it was.
	have, err := schemaVersion(ctx, db, path)
	if err != nil {
		return err
	}
	if have > len(ms) {
		return &schemaTooNewError{have: have, know: len(ms)}
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
		return fmt.Errorf("switching %s to write-ahead logging: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("switching %s to write-ahead logging: SQLite kept journal mode %q (the file system may not support it)", path, mode)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, walAutoCheckpoint)); err != nil {
		return fmt.Errorf("configuring %s: %w", path, err)
	}
	return migrate(ctx, db, path, ms)
}

func openReaders(path string, opt Options, readOnly bool) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, opt, true, readOnly))
	if err != nil {
		return nil, fmt.Errorf("opening the state file %s: %w", path, err)
	}
	db.SetMaxOpenConns(opt.Readers)
	db.SetMaxIdleConns(opt.Readers)
	return db, nil
}

// sqliteHeader starts every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// checkHeader recognises a file that is not a database at all before SQLite
// opens it: SQLite, finding a -wal beside such a file, would discard it, and
// whoever looks at the moved-aside files later wants them as they were.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the state file %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, buf)
	switch {
	case n == 0 && (err == nil || errors.Is(err, io.EOF)):
		return nil // a new, empty file
	case errors.Is(err, io.ErrUnexpectedEOF) || err == nil && string(buf) != sqliteHeader:
		return &unusableFileError{reason: errors.New("file is not a database: it does not start with the SQLite header")}
	case err != nil:
		return fmt.Errorf("reading the state file %s: %w", path, err)
	}
	return nil
}

// unusableFileError is a state file to move aside: not a database, damaged,
// or from a newer ahp-bridge.
type unusableFileError struct{ reason error }

func (e *unusableFileError) Error() string { return e.reason.Error() }
func (e *unusableFileError) Unwrap() error { return e.reason }

// classifyOpenError marks the errors that mean the file itself is unusable;
// anything else (permissions, I/O, a full disk) is returned as it is, since
// moving a good file aside over a passing problem would hide the user's
// history.
func classifyOpenError(path string, err error) error {
	var bad *unusableFileError
	if errors.As(err, &bad) {
		return bad
	}
	var tooNew *schemaTooNewError
	if errors.As(err, &tooNew) {
		// Not moved aside: the newer ahp-bridge that wrote it may be
		// running on it right now (bridges share the file), and moving it
		// would hide the user's history from both.
		return fmt.Errorf("state file %s: %w; another, newer ahp-bridge may be using it: run that version, or name another file with --state",
			path, tooNew)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteNotADB, sqliteCorrupt:
			return &unusableFileError{reason: se}
		}
	}
	return err
}

// sqliteCode is the extended result code inside err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// --- statements ---

type writeStmts struct {
	upsertSession, upsertChat, insertTurn, dropTurnChunks, putTurnChunk, dropTurnCheckpoint, dropTurnTexts,
	putCheckpoint, dropChatTexts, cutText, putText, deleteSession, raiseSeq *sql.Stmt
}

type readStmts struct {
	listFirst, listAfter, session, chats, turnIdx, turnsBefore, turnChunks,
	chatExists, checkpoint, checkpointTexts, seq *sql.Stmt
}

const sessionColumns = `uri, provider, title, working_dirs, config, summary, created_ns, modified_ns`

// The catalogue's pages, walked down the sessions_by_modified index.
const (
	listFirstSQL = `SELECT ` + sessionColumns + ` FROM sessions
		ORDER BY modified_ns DESC, uri DESC LIMIT ?`
	listAfterSQL = `SELECT ` + sessionColumns + ` FROM sessions
		WHERE (modified_ns, uri) < (?, ?) ORDER BY modified_ns DESC, uri DESC LIMIT ?`
)

func (s *SQLite) prepare(ctx context.Context) error {
	type entry struct {
		dst  **sql.Stmt
		db   *sql.DB
		text string
	}
	entries := []entry{
		{&s.rs.listFirst, s.r, listFirstSQL},
		{&s.rs.listAfter, s.r, listAfterSQL},
		{&s.rs.session, s.r, `SELECT ` + sessionColumns + ` FROM sessions WHERE uri = ?`},
		{&s.rs.chats, s.r, `SELECT c.uri, c.session_uri, c.acp_session_id, c.summary, c.created_ns,
			(SELECT COALESCE(MAX(t.idx), 0) FROM turns t WHERE t.chat_uri = c.uri)
			FROM chats c WHERE c.session_uri = ? ORDER BY c.created_ns, c.uri`},
		{&s.rs.turnIdx, s.r, `SELECT idx FROM turns WHERE chat_uri = ? AND turn_id = ?`},
		{&s.rs.turnsBefore, s.r, `SELECT idx, turn_id, ended_ns, data, chunks FROM turns
			WHERE chat_uri = ? AND idx < ? ORDER BY idx DESC LIMIT ?`},
		{&s.rs.turnChunks, s.r, `SELECT data FROM turn_chunks WHERE chat_uri = ? AND turn_id = ? ORDER BY seq`},
		{&s.rs.chatExists, s.r, `SELECT 1 FROM chats WHERE uri = ?`},
		{&s.rs.checkpoint, s.r, `SELECT turn_id, updated_ns, data FROM checkpoints WHERE chat_uri = ?`},
		{&s.rs.checkpointTexts, s.r, `SELECT pointer, off, text FROM checkpoint_texts
			WHERE chat_uri = ? AND turn_id = ? ORDER BY pointer, off`},
		{&s.rs.seq, s.r, `SELECT high_water FROM seq WHERE id = 1`},
	}
	if !s.readOnly {
		entries = append(entries,
			// An upsert, never INSERT OR REPLACE: replacing would delete the
			// row first and cascade to the session's chats and turns.
			entry{&s.ws.upsertSession, s.w, `INSERT INTO sessions (` + sessionColumns + `)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (uri) DO UPDATE SET provider = excluded.provider, title = excluded.title,
					working_dirs = excluded.working_dirs, config = excluded.config, summary = excluded.summary,
					created_ns = excluded.created_ns, modified_ns = excluded.modified_ns`},
			entry{&s.ws.upsertChat, s.w, `INSERT INTO chats (uri, session_uri, acp_session_id, summary, created_ns)
				VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (uri) DO UPDATE SET session_uri = excluded.session_uri,
					acp_session_id = excluded.acp_session_id, summary = excluded.summary, created_ns = excluded.created_ns`},
			entry{&s.ws.insertTurn, s.w, `INSERT INTO turns (chat_uri, idx, turn_id, ended_ns, data, chunks)
				VALUES (?1, (SELECT COALESCE(MAX(idx), 0) + 1 FROM turns WHERE chat_uri = ?1), ?2, ?3, ?4, ?5)
				ON CONFLICT (chat_uri, turn_id) DO UPDATE SET ended_ns = excluded.ended_ns, data = excluded.data,
					chunks = excluded.chunks`},
			entry{&s.ws.dropTurnChunks, s.w, `DELETE FROM turn_chunks WHERE chat_uri = ? AND turn_id = ?`},
			entry{&s.ws.putTurnChunk, s.w, `INSERT INTO turn_chunks (chat_uri, turn_id, seq, data) VALUES (?, ?, ?, ?)`},
			entry{&s.ws.dropTurnCheckpoint, s.w, `DELETE FROM checkpoints WHERE chat_uri = ? AND turn_id = ?`},
			entry{&s.ws.dropTurnTexts, s.w, `DELETE FROM checkpoint_texts WHERE chat_uri = ? AND turn_id = ?`},
			// A checkpoint that lost the race with its turn's completion, or
			// with its session's deletion, must not come back to life.
			entry{&s.ws.putCheckpoint, s.w, `INSERT INTO checkpoints (chat_uri, turn_id, updated_ns, data)
				SELECT ?1, ?2, ?3, ?4
				WHERE EXISTS (SELECT 1 FROM chats WHERE uri = ?1)
					AND NOT EXISTS (SELECT 1 FROM turns WHERE chat_uri = ?1 AND turn_id = ?2)
				ON CONFLICT (chat_uri) DO UPDATE SET turn_id = excluded.turn_id,
					updated_ns = excluded.updated_ns, data = excluded.data`},
			entry{&s.ws.dropChatTexts, s.w, `DELETE FROM checkpoint_texts WHERE chat_uri = ?`},
			// A piece written again replaces what was stored from its
			// offset on.
			entry{&s.ws.cutText, s.w, `DELETE FROM checkpoint_texts
				WHERE chat_uri = ? AND turn_id = ? AND pointer = ? AND off >= ?`},
			entry{&s.ws.putText, s.w, `INSERT INTO checkpoint_texts (chat_uri, turn_id, pointer, off, text)
				VALUES (?, ?, ?, ?, ?)`},
			entry{&s.ws.deleteSession, s.w, `DELETE FROM sessions WHERE uri = ?`},
			entry{&s.ws.raiseSeq, s.w, `UPDATE seq SET high_water = MAX(high_water, ?) WHERE id = 1`},
		)
	}
	for _, e := range entries {
		st, err := e.db.PrepareContext(ctx, e.text)
		if err != nil {
			return fmt.Errorf("preparing the statements of %s: %w", s.path, err)
		}
		*e.dst = st
	}
	return nil
}

// --- health ---

// note records the outcome of a write. Failures of the caller's making (a
// missing row) or of the store's lifecycle do not count: only the file
// refusing a write does.
func (s *SQLite) note(err error) error {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if err == nil {
		s.health.Failing = false
		return nil
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrHeld) || errors.Is(err, ErrClosed) || errors.Is(err, ErrReadOnly) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if sqliteCode(err)&0xff == sqliteFull {
		err = fmt.Errorf("%w: %w", ErrFull, err)
	}
	s.health.WriteFailures++
	s.health.Failing = true
	s.health.LastError = err
	s.health.LastErrorAt = time.Now()
	return err
}

// Health implements Store.
func (s *SQLite) Health() Health {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	return s.health
}

func (s *SQLite) usable(write bool) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if write && s.readOnly {
		return ErrReadOnly
	}
	return nil
}

// write runs fn in one transaction on the writer connection and records the
// outcome in Health.
func (s *SQLite) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.usable(true); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.note(err)
	}
	if err := fn(tx); err != nil {
		// SQLite may already have rolled back (after SQLITE_FULL, for
		// one); the error that explains the failure is fn's.
		_ = tx.Rollback()
		return s.note(err)
	}
	if err := tx.Commit(); err != nil {
		return s.note(err)
	}
	select {
	case s.walKick <- struct{}{}:
	default:
	}
	return s.note(nil)
}

// --- writes ---

// PutSession implements Store.
func (s *SQLite) PutSession(ctx context.Context, sess Session, chats ...Chat) error {
	err := s.writeCatalogue(ctx, func(tx *sql.Tx) error {
		if err := putSession(ctx, tx, s.ws.upsertSession, sess); err != nil {
			return err
		}
		for _, c := range chats {
			if err := putChat(ctx, tx, s.ws.upsertChat, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storing session %s: %w", sess.URI, err)
	}
	return nil
}

func putSession(ctx context.Context, tx *sql.Tx, st *sql.Stmt, s Session) error {
	// nil is stored as JSON null, so that it comes back nil.
	dirsJSON, err := json.Marshal(s.WorkingDirs)
	if err != nil {
		return fmt.Errorf("encoding working directories: %w", err)
	}
	_, err = tx.StmtContext(ctx, st).ExecContext(ctx, s.URI, s.Provider, s.Title, string(dirsJSON),
		nullBytes(s.Config), nullBytes(s.Summary), toNS(s.Created), toNS(s.Modified))
	return err
}

func putChat(ctx context.Context, tx *sql.Tx, st *sql.Stmt, c Chat) error {
	_, err := tx.StmtContext(ctx, st).ExecContext(ctx, c.URI, c.SessionURI, c.ACPSessionID, nullBytes(c.Summary), toNS(c.Created))
	if sqliteCode(err) == sqliteConstraintFK {
		return fmt.Errorf("chat %s: session %s: %w", c.URI, c.SessionURI, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("chat %s: %w", c.URI, err)
	}
	return nil
}

// PutChat implements Store.
func (s *SQLite) PutChat(ctx context.Context, c Chat) error {
	err := s.writeCatalogue(ctx, func(tx *sql.Tx) error { return putChat(ctx, tx, s.ws.upsertChat, c) })
	if err != nil {
		return fmt.Errorf("storing %w", err)
	}
	return nil
}

// AppendTurn implements Store.
func (s *SQLite) AppendTurn(ctx context.Context, c TurnCommit) error {
	err := s.writeCatalogue(ctx, func(tx *sql.Tx) error {
		if c.Session != nil {
			if err := putSession(ctx, tx, s.ws.upsertSession, *c.Session); err != nil {
				return fmt.Errorf("session %s: %w", c.Session.URI, err)
			}
		}
		if c.Chat != nil {
			if err := putChat(ctx, tx, s.ws.upsertChat, *c.Chat); err != nil {
				return err
			}
		}
		first, chunks, err := s.putTurnChunks(ctx, tx, c.ChatURI, c.Turn)
		if err == nil {
			_, err = tx.StmtContext(ctx, s.ws.insertTurn).ExecContext(ctx, c.ChatURI, c.Turn.ID, toNS(c.Turn.EndedAt), notNullBytes(first), chunks)
		}
		if sqliteCode(err) == sqliteConstraintFK {
			return fmt.Errorf("chat %s: %w", c.ChatURI, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err = tx.StmtContext(ctx, s.ws.dropTurnCheckpoint).ExecContext(ctx, c.ChatURI, c.Turn.ID); err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, s.ws.dropTurnTexts).ExecContext(ctx, c.ChatURI, c.Turn.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("storing turn %s of chat %s: %w", c.Turn.ID, c.ChatURI, err)
	}
	return nil
}

// turnChunkSize is the most of a completed turn's data written as one
// value: a long turn is written in chunks of this size (schemaV3), so that
// SQLite's copies of what it writes stay this small.
const turnChunkSize = 1 << 20

// putTurnChunks replaces the stored chunks of a turn's data after its
// first turnChunk bytes, which it returns for the turn's row, with the
// number of chunks written. Data given by t.Encode is written chunk by
// chunk as it comes.
func (s *SQLite) putTurnChunks(ctx context.Context, tx *sql.Tx, chatURI string, t Turn) (first []byte, chunks int, err error) {
	if _, err := tx.StmtContext(ctx, s.ws.dropTurnChunks).ExecContext(ctx, chatURI, t.ID); err != nil {
		return nil, 0, err
	}
	put := tx.StmtContext(ctx, s.ws.putTurnChunk)
	w := &chunkWriter{size: s.turnChunk, put: func(seq int, b []byte) error {
		if _, err := put.ExecContext(ctx, chatURI, t.ID, seq, b); err != nil {
			return fmt.Errorf("chunk %d of the data: %w", seq, err)
		}
		return nil
	}}
	if t.Encode == nil {
		w.copyFirst = false
		_, err = w.Write(t.Data)
	} else {
		w.copyFirst = true
		err = t.Encode(w)
	}
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return nil, 0, err
	}
	return w.first, w.n, nil
}

// chunkWriter cuts a turn's data as it is written: its first turnChunk
// bytes are kept for the turn's row, and each turnChunk bytes after them
// go to a row of turn_chunks as soon as they are there.
type chunkWriter struct {
	size int // turnChunk
	put  func(seq int, b []byte) error
	// copyFirst: the bytes written may be reused by the writer once Write
	// returns, so the first chunk is a copy. Without it (Data, held by
	// the caller until the write ends), it is a slice of the first Write.
	copyFirst bool
	first     []byte
	buf       []byte // the chunk being filled
	n         int    // chunks written
	err       error  // the first failed put: nothing is written after it
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	size := len(p)
	if len(w.first) < w.size {
		k := min(len(p), w.size-len(w.first))
		if w.first == nil && !w.copyFirst {
			w.first = p[:k:k]
		} else {
			w.first = append(w.first, p[:k]...)
		}
		p = p[k:]
	}
	for len(p) > 0 {
		if len(w.buf) == 0 && len(p) >= w.size && !w.copyFirst {
			// A whole chunk of Data: written from where it is.
			if w.err = w.putChunk(p[:w.size]); w.err != nil {
				return 0, w.err
			}
			p = p[w.size:]
			continue
		}
		if w.buf == nil {
			w.buf = make([]byte, 0, w.size)
		}
		k := min(len(p), w.size-len(w.buf))
		w.buf, p = append(w.buf, p[:k]...), p[k:]
		if len(w.buf) == w.size {
			if w.err = w.flush(); w.err != nil {
				return 0, w.err
			}
		}
	}
	return size, nil
}

// flush writes the chunk being filled, if any.
func (w *chunkWriter) flush() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	if err := w.putChunk(w.buf); err != nil {
		return err
	}
	w.buf = w.buf[:0] // SQLite copied it when it was bound
	return nil
}

func (w *chunkWriter) putChunk(b []byte) error {
	w.n++
	return w.put(w.n, b)
}

// readTurnChunks appends the stored chunks of a turn's data to its first.
func (s *SQLite) readTurnChunks(ctx context.Context, tx *sql.Tx, chatURI string, t *Turn, chunks int) error {
	rows, err := tx.StmtContext(ctx, s.rs.turnChunks).QueryContext(ctx, chatURI, t.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	data := make([]byte, len(t.Data), len(t.Data)+chunks*s.turnChunk)
	copy(data, t.Data)
	n := 0
	for rows.Next() {
		var b sql.RawBytes
		if err := rows.Scan(&b); err != nil {
			return err
		}
		data = append(data, b...)
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n != chunks {
		return fmt.Errorf("turn %s has %d chunks of data stored, its row says %d", t.ID, n, chunks)
	}
	t.Data = data
	return nil
}

// DeleteSession implements Store.
func (s *SQLite) DeleteSession(ctx context.Context, uri string) error {
	err := s.writeCatalogue(ctx, func(tx *sql.Tx) error {
		if err := s.heldElsewhere(ctx, tx, uri); err != nil {
			return err
		}
		res, err := tx.StmtContext(ctx, s.ws.deleteSession).ExecContext(ctx, uri)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return s.noteRemoved(ctx, tx, uri) // holders.go
	})
	if err != nil {
		return fmt.Errorf("deleting session %s: %w", uri, err)
	}
	s.forgetHold(uri)
	return nil
}

// PutCheckpoints implements Store.
func (s *SQLite) PutCheckpoints(ctx context.Context, cps []Checkpoint) error {
	if len(cps) == 0 {
		return s.usable(true)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		// Each statement bound to the transaction once, not once per
		// checkpoint, and run with a context that cannot end: for one that
		// can, the driver starts a goroutine per statement to watch it
		// (issue 28: hundreds of busy chats every 250 ms). ctx is checked
		// between checkpoints instead; each statement is short.
		sctx := context.WithoutCancel(ctx)
		st := cpStmts{put: tx.StmtContext(sctx, s.ws.putCheckpoint), drop: tx.StmtContext(sctx, s.ws.dropChatTexts),
			cut: tx.StmtContext(sctx, s.ws.cutText), text: tx.StmtContext(sctx, s.ws.putText)}
		for _, cp := range cps {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := putCheckpoint(sctx, &st, cp); err != nil {
				return fmt.Errorf("chat %s: %w", cp.ChatURI, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storing %d checkpoints: %w", len(cps), err)
	}
	return nil
}

// cpStmts are the statements of a checkpoint write, bound to its
// transaction.
type cpStmts struct{ put, drop, cut, text *sql.Stmt }

// putCheckpoint writes one checkpoint: its data row, then its texts, unless
// the data row was dropped (the turn was committed, or the chat is gone).
func putCheckpoint(ctx context.Context, st *cpStmts, cp Checkpoint) error {
	res, err := st.put.ExecContext(ctx, cp.ChatURI, cp.TurnID, toNS(cp.Updated), notNullBytes(cp.Data))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return nil // too late: nothing of it is stored
	}
	if cp.Replace {
		if _, err := st.drop.ExecContext(ctx, cp.ChatURI); err != nil {
			return err
		}
	}
	for _, t := range cp.Texts {
		if !cp.Replace {
			if _, err := st.cut.ExecContext(ctx, cp.ChatURI, cp.TurnID, t.Pointer, t.Offset); err != nil {
				return err
			}
		}
		if t.Text == "" {
			continue
		}
		if _, err := st.text.ExecContext(ctx, cp.ChatURI, cp.TurnID, t.Pointer, t.Offset, t.Text); err != nil {
			return err
		}
	}
	return nil
}

// RaiseSeqHighWater implements Store.
func (s *SQLite) RaiseSeqHighWater(ctx context.Context, v int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, s.ws.raiseSeq).ExecContext(ctx, v)
		return err
	})
	if err != nil {
		return fmt.Errorf("storing the serverSeq high-water mark %d: %w", v, err)
	}
	return nil
}

// ReserveSeqBlock implements SeqBlocks: the mark is read and raised in one
// transaction, which holds the write lock from its BEGIN, so no other
// bridge can reserve the same values.
func (s *SQLite) ReserveSeqBlock(ctx context.Context, n int64) (int64, error) {
	var mark int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `UPDATE seq SET high_water = high_water + ? WHERE id = 1 RETURNING high_water`, n).Scan(&mark)
	})
	if err != nil {
		return 0, fmt.Errorf("reserving %d serverSeq values: %w", n, err)
	}
	return mark, nil
}

// PutProviderModels implements Store.
func (s *SQLite) PutProviderModels(ctx context.Context, provider string, models json.RawMessage) error {
	if !json.Valid(models) {
		return fmt.Errorf("storing the models of provider %q: not valid JSON", provider)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO provider_models (provider, models, updated_ns) VALUES (?, ?, ?)
			ON CONFLICT (provider) DO UPDATE SET models = excluded.models, updated_ns = excluded.updated_ns`,
			provider, []byte(models), time.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("storing the models of provider %q: %w", provider, err)
	}
	return nil
}

// ProviderModels implements Store.
func (s *SQLite) ProviderModels(ctx context.Context, provider string) (json.RawMessage, error) {
	if err := s.usable(false); err != nil {
		return nil, err
	}
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT models FROM provider_models WHERE provider = ?`, provider).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading the models of provider %q: %w", provider, err)
	}
	return json.RawMessage(b), nil
}

// HasAgentSession implements Store.
func (s *SQLite) HasAgentSession(ctx context.Context, provider, agentSessionID string) (bool, error) {
	if err := s.usable(false); err != nil {
		return false, err
	}
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM chats c JOIN sessions s ON s.uri = c.session_uri
		WHERE c.acp_session_id = ? AND s.provider = ? LIMIT 1`, agentSessionID, provider).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking for a chat of agent session %q of provider %q: %w", agentSessionID, provider, err)
	}
	return true, nil
}

// --- reads ---

// ListSessions implements Store. Sessions are ordered by modification time,
// newest first (what listSessions wants), ties broken by URI. The cursor is
// the last row's (modified, URI), so a page never repeats or skips a session
// that did not change meanwhile; one modified between two pages moves to the
// front and is seen again only from the first page.
func (s *SQLite) ListSessions(ctx context.Context, q ListQuery) (SessionPage, error) {
	if err := s.usable(false); err != nil {
		return SessionPage{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	var rows *sql.Rows
	var err error
	if q.Cursor == "" {
		rows, err = s.rs.listFirst.QueryContext(ctx, limit+1)
	} else {
		ns, uri, derr := decodeSessionCursor(q.Cursor)
		if derr != nil {
			return SessionPage{}, fmt.Errorf("listing sessions: %w", derr)
		}
		rows, err = s.rs.listAfter.QueryContext(ctx, ns, uri, limit+1)
	}
	if err != nil {
		return SessionPage{}, fmt.Errorf("listing sessions: %w", err)
	}
	defer rows.Close()
	var page SessionPage
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return SessionPage{}, fmt.Errorf("listing sessions: %w", err)
		}
		page.Sessions = append(page.Sessions, sess)
	}
	if err := rows.Err(); err != nil {
		return SessionPage{}, fmt.Errorf("listing sessions: %w", err)
	}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		last := page.Sessions[limit-1]
		page.NextCursor = encodeSessionCursor(toNS(last.Modified), last.URI)
	}
	return page, nil
}

type scanner interface{ Scan(dst ...any) error }

func scanSession(r scanner) (Session, error) {
	var (
		s                 Session
		dirs              string
		created, modified int64
		config, summary   []byte
	)
	if err := r.Scan(&s.URI, &s.Provider, &s.Title, &dirs, &config, &summary, &created, &modified); err != nil {
		return Session{}, err
	}
	if err := json.Unmarshal([]byte(dirs), &s.WorkingDirs); err != nil {
		return Session{}, fmt.Errorf("session %s: decoding working directories: %w", s.URI, err)
	}
	s.Config, s.Summary = config, summary
	s.Created, s.Modified = fromNS(created), fromNS(modified)
	return s, nil
}

// GetSession implements Store.
func (s *SQLite) GetSession(ctx context.Context, uri string) (SessionRecord, error) {
	if err := s.usable(false); err != nil {
		return SessionRecord{}, err
	}
	var rec SessionRecord
	err := s.read(ctx, func(tx *sql.Tx) error {
		sess, err := scanSession(tx.StmtContext(ctx, s.rs.session).QueryRowContext(ctx, uri))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		rec.Session = sess
		rows, err := tx.StmtContext(ctx, s.rs.chats).QueryContext(ctx, uri)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c ChatRecord
			var created int64
			var summary []byte
			if err := rows.Scan(&c.URI, &c.SessionURI, &c.ACPSessionID, &summary, &created, &c.Turns); err != nil {
				return err
			}
			c.Summary, c.Created = summary, fromNS(created)
			rec.Chats = append(rec.Chats, c)
		}
		return rows.Err()
	})
	if err != nil {
		return SessionRecord{}, fmt.Errorf("reading session %s: %w", uri, err)
	}
	return rec, nil
}

// read runs fn in one read transaction, so that its several statements see
// the same state.
func (s *SQLite) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	err = fn(tx)
	// A read transaction has nothing to commit; ending it can only fail if
	// it is already over.
	_ = tx.Rollback()
	return err
}

// Turns implements Store.
func (s *SQLite) Turns(ctx context.Context, chatURI string, q TurnQuery) (TurnPage, error) {
	if err := s.usable(false); err != nil {
		return TurnPage{}, err
	}
	var page TurnPage
	err := s.read(ctx, func(tx *sql.Tx) error {
		before := int64(math.MaxInt64)
		switch {
		case q.Cursor != "":
			idx, err := decodeTurnCursor(q.Cursor)
			if err != nil {
				return err
			}
			before = idx
		case q.BeforeTurnID != "":
			err := tx.StmtContext(ctx, s.rs.turnIdx).QueryRowContext(ctx, chatURI, q.BeforeTurnID).Scan(&before)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("turn %s: %w", q.BeforeTurnID, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		limit := int64(-1) // SQLite: no limit
		if q.Limit > 0 {
			limit = int64(q.Limit) + 1
		}
		rows, err := tx.StmtContext(ctx, s.rs.turnsBefore).QueryContext(ctx, chatURI, before, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		var idxs []int64
		chunked := map[int]int{} // index in page.Turns → chunks after its first
		for rows.Next() {
			var t Turn
			var idx, ended int64
			var data []byte
			var chunks int
			if err := rows.Scan(&idx, &t.ID, &ended, &data, &chunks); err != nil {
				return err
			}
			t.EndedAt, t.Data = fromNS(ended), data
			if chunks > 0 {
				chunked[len(page.Turns)] = chunks
			}
			page.Turns = append(page.Turns, t)
			idxs = append(idxs, idx)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if q.Limit > 0 && len(page.Turns) > q.Limit {
			page.Turns, idxs = page.Turns[:q.Limit], idxs[:q.Limit]
			page.NextCursor = encodeTurnCursor(idxs[len(idxs)-1])
		}
		for i, chunks := range chunked {
			if i >= len(page.Turns) {
				continue // the look-ahead turn, only counted
			}
			if err := s.readTurnChunks(ctx, tx, chatURI, &page.Turns[i], chunks); err != nil {
				return err
			}
		}
		// Fetched newest first; pages are served oldest first.
		for i, j := 0, len(page.Turns)-1; i < j; i, j = i+1, j-1 {
			page.Turns[i], page.Turns[j] = page.Turns[j], page.Turns[i]
		}
		if len(page.Turns) == 0 {
			var one int
			err := tx.StmtContext(ctx, s.rs.chatExists).QueryRowContext(ctx, chatURI).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		return nil
	})
	if err != nil {
		return TurnPage{}, fmt.Errorf("reading the turns of chat %s: %w", chatURI, err)
	}
	return page, nil
}

// Checkpoint implements Store.
func (s *SQLite) Checkpoint(ctx context.Context, chatURI string) (Checkpoint, error) {
	if err := s.usable(false); err != nil {
		return Checkpoint{}, err
	}
	cp := Checkpoint{ChatURI: chatURI}
	err := s.read(ctx, func(tx *sql.Tx) error {
		var updated int64
		var data []byte
		err := tx.StmtContext(ctx, s.rs.checkpoint).QueryRowContext(ctx, chatURI).Scan(&cp.TurnID, &updated, &data)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		cp.Updated, cp.Data = fromNS(updated), data
		rows, err := tx.StmtContext(ctx, s.rs.checkpointTexts).QueryContext(ctx, chatURI, cp.TurnID)
		if err != nil {
			return err
		}
		defer rows.Close()
		var run *textRun
		for rows.Next() {
			var pointer string
			var off int
			var text []byte
			if err := rows.Scan(&pointer, &off, &text); err != nil {
				return err
			}
			if run == nil || run.text.Pointer != pointer {
				if run != nil {
					cp.Texts = append(cp.Texts, run.done())
				}
				run = &textRun{text: CheckpointText{Pointer: pointer}, start: off}
			}
			run.add(off, text)
		}
		if run != nil {
			cp.Texts = append(cp.Texts, run.done())
		}
		return rows.Err()
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("reading the checkpoint of chat %s: %w", chatURI, err)
	}
	return cp, nil
}

// SeqHighWater implements Store.
func (s *SQLite) SeqHighWater(ctx context.Context) (int64, error) {
	if err := s.usable(false); err != nil {
		return 0, err
	}
	var v int64
	if err := s.rs.seq.QueryRowContext(ctx).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the serverSeq high-water mark: %w", err)
	}
	return v, nil
}

// Close implements Store. It waits for nothing but the statements in
// flight; the Checkpointer and SeqReserve built on the store are closed
// first by their owner.
func (s *SQLite) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	var released error
	if s.hold != nil {
		// Before the store counts as closed: releasing is a write.
		close(s.hold.stop)
		<-s.hold.done
		ctx, cancel := context.WithTimeout(context.Background(), s.holderStale)
		released = s.releaseAll(ctx)
		cancel()
	}
	s.closed.Store(true)
	if s.walCancel != nil {
		s.walCancel()
		<-s.walDone
	}
	err := errors.Join(released, s.closeDBs())
	if err != nil {
		return fmt.Errorf("closing the state file %s: %w", s.path, err)
	}
	return nil
}

func (s *SQLite) closeDBs() error {
	var errs []error
	for _, st := range []*sql.Stmt{
		s.rs.listFirst, s.rs.listAfter, s.rs.session, s.rs.chats, s.rs.turnIdx, s.rs.turnsBefore, s.rs.turnChunks,
		s.rs.chatExists, s.rs.checkpoint, s.rs.checkpointTexts, s.rs.seq,
		s.ws.upsertSession, s.ws.upsertChat, s.ws.insertTurn, s.ws.dropTurnChunks, s.ws.putTurnChunk,
		s.ws.dropTurnCheckpoint, s.ws.dropTurnTexts, s.ws.putCheckpoint, s.ws.dropChatTexts, s.ws.cutText, s.ws.putText, s.ws.deleteSession, s.ws.raiseSeq,
	} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.ck != nil {
		errs = append(errs, s.ck.Close())
	}
	if s.w != nil {
		// The writer closes last: closing SQLite's last connection
		// checkpoints the WAL into the database and removes it.
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// --- encoding helpers ---

// toNS stores a time as Unix nanoseconds; the zero time is stored as 0 so
// that it round-trips. Times before 1678 or after 2262 do not fit.
func toNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// nullBytes stores nil JSON as NULL, so that absent stays absent.
func nullBytes(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

// notNullBytes stores nil as an empty blob for the columns that require one.
func notNullBytes(b json.RawMessage) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
