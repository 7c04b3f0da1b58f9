package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Several bridges may share one state file (each editor window runs its own
// `serve --stdio`). Each of them sees every session, but a session is
// driven by one bridge at a time: the one holding it, which has a row in
// the holders table (schemaV5). A store holds sessions for the process that
// opened it; two stores in one process are two holders.
//
// The rule, for Claim:
//
//   - A session nobody holds, or that this store holds, is claimed.
//   - A session another holder holds is refused (*HeldError), unless that
//     holder is gone: on this machine, its pid is free or belongs to a
//     process started at another time (the pid was reused); where that
//     cannot be told (another machine or pid namespace, a platform without
//     the check, a second store in this very process), its heartbeat is
//     older than Options.HolderStale. A gone holder's session is taken over.
//   - The check and the claim are one transaction, so two bridges claiming
//     at once cannot both win.
//
// A store refreshes the heartbeat of its holds about every second, and
// drops them at Close; a crash leaves them behind for the next claimer to
// take over.

// ErrHeld is what errors.Is finds in a *HeldError.
var ErrHeld = errors.New("session is held by another bridge")

// Holder is a bridge process holding a session.
type Holder struct {
	// PID is the holder's process id on Host; Started its start time as
	// the OS counts it (0 if unknown).
	PID     int
	Started int64
	// Host is the name of the machine it runs on.
	Host string
	// Address is the ws:// address it listens on, empty for a bridge that
	// serves only stdio.
	Address string
	// Heartbeat is when it last said it was alive.
	Heartbeat time.Time

	instance string
	machine  string
}

// String names the holder for a person: "pid 4242 (ws://127.0.0.1:8081)".
func (h Holder) String() string {
	var b strings.Builder
	b.WriteString("pid ")
	b.WriteString(strconv.Itoa(h.PID))
	var more []string
	if h.Address != "" {
		more = append(more, h.Address)
	} else {
		more = append(more, "stdio")
	}
	if h.Host != "" {
		more = append(more, "on "+h.Host)
	}
	b.WriteString(" (" + strings.Join(more, ", ") + ")")
	return b.String()
}

// HeldError refuses an action on a session another bridge holds.
type HeldError struct {
	Session string
	Holder  Holder
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("session %s is held by another ahp-bridge, %s", e.Session, e.Holder)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Holding is what a bridge sharing its state file with others needs from
// the store beyond Store. *SQLite implements it.
type Holding interface {
	// Claim makes this store the holder of the session (see the rule
	// above). took is the holder it replaced, when it took the session
	// over from one that is gone. A session held by a live other holder
	// is refused with a *HeldError.
	Claim(ctx context.Context, uri string) (took *Holder, err error)
	// Release gives sessions this store holds back; others' are left.
	Release(ctx context.Context, uris ...string) error
	// HolderOf returns who holds the session; ok is false if nobody
	// does, or the holder is gone.
	HolderOf(ctx context.Context, uri string) (h Holder, ok bool, err error)
	// Holds reports whether this store holds the session, as far as it
	// knows (its heartbeat notices within a second a hold taken over).
	Holds(uri string) bool
	// SetAddress sets the ws:// address this store's holds name, for the
	// messages of the bridges they refuse.
	SetAddress(ctx context.Context, addr string) error
	// ChangeCount returns the catalogue's change counter: it rises with
	// every write, by any process, of a session, a chat or a turn.
	ChangeCount(ctx context.Context) (int64, error)
	// RemovedSince returns the sessions deleted by the changes after
	// count n (a ChangeCount value), oldest first, for a day after.
	RemovedSince(ctx context.Context, n int64) ([]string, error)
}

var _ Holding = (*SQLite)(nil)

// Defaults of Options.HolderStale and Options.Heartbeat.
const (
	defaultHolderStale = 5 * time.Second
	defaultHeartbeat   = time.Second
)

// holding is the SQLite store's side of holding sessions.
type holding struct {
	self     processID
	instance string
	stale    time.Duration
	every    time.Duration
	now      func() time.Time

	// mu serialises this store's writes of holds (claims, releases,
	// heartbeats), which may wait for SQLite's write lock; heldMu guards
	// held alone, so that Holds never waits for a write.
	mu      sync.Mutex
	address string
	heldMu  sync.Mutex
	held    map[string]bool

	stop chan struct{}
	done chan struct{}
}

func newHolding(opt Options) (*holding, error) {
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("naming this bridge's holds: %w", err)
	}
	return &holding{self: thisProcess(), instance: hex.EncodeToString(id[:]), stale: opt.HolderStale,
		every: opt.Heartbeat, now: opt.now, held: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

const holderColumns = `session_uri, instance, pid, started, host, machine, address, heartbeat_ns`

func scanHolder(r scanner) (uri string, h Holder, err error) {
	var hb int64
	err = r.Scan(&uri, &h.instance, &h.PID, &h.Started, &h.Host, &h.machine, &h.Address, &hb)
	h.Heartbeat = fromNS(hb)
	return uri, h, err
}

func (g *holding) isHeld(uri string) bool {
	g.heldMu.Lock()
	defer g.heldMu.Unlock()
	return g.held[uri]
}

func (g *holding) setHeld(uri string, held bool) {
	g.heldMu.Lock()
	defer g.heldMu.Unlock()
	if held {
		g.held[uri] = true
	} else {
		delete(g.held, uri)
	}
}

// heldCount is how many sessions this store holds.
func (g *holding) heldCount() int {
	g.heldMu.Lock()
	defer g.heldMu.Unlock()
	return len(g.held)
}

// gone applies the rule to another holder's row.
func (g *holding) gone(h Holder) bool {
	if h.instance == g.instance {
		return false
	}
	if h.machine == g.self.machine && h.PID != g.self.pid {
		if _, known := processAlive(h.PID); known {
			return processGone(processID{pid: h.PID, started: h.Started})
		}
	}
	return g.now().Sub(h.Heartbeat) > g.stale
}

// Claim implements Holding.
func (s *SQLite) Claim(ctx context.Context, uri string) (*Holder, error) {
	g := s.hold
	if g == nil {
		return nil, fmt.Errorf("claiming session %s: %w", uri, ErrReadOnly)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.isHeld(uri) {
		return nil, nil
	}
	var took *Holder
	err := s.write(ctx, func(tx *sql.Tx) error {
		took = nil
		_, h, err := scanHolder(tx.QueryRowContext(ctx, `SELECT `+holderColumns+` FROM holders WHERE session_uri = ?`, uri))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case !g.gone(h):
			return &HeldError{Session: uri, Holder: h}
		case h.instance != g.instance:
			took = &h
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO holders (`+holderColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_uri) DO UPDATE SET instance = excluded.instance, pid = excluded.pid,
				started = excluded.started, host = excluded.host, machine = excluded.machine,
				address = excluded.address, heartbeat_ns = excluded.heartbeat_ns`,
			uri, g.instance, g.self.pid, g.self.started, g.self.host, g.self.machine, g.address, toNS(g.now()))
		return err
	})
	if err != nil {
		var he *HeldError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, fmt.Errorf("claiming session %s: %w", uri, err)
	}
	g.setHeld(uri, true)
	return took, nil
}

// Release implements Holding.
func (s *SQLite) Release(ctx context.Context, uris ...string) error {
	g := s.hold
	if g == nil || len(uris) == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, u := range uris {
			if _, err := tx.ExecContext(ctx, `DELETE FROM holders WHERE session_uri = ? AND instance = ?`, u, g.instance); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("releasing %d sessions: %w", len(uris), err)
	}
	for _, u := range uris {
		g.setHeld(u, false)
	}
	return nil
}

// releaseAll drops every hold of this store, at Close.
func (s *SQLite) releaseAll(ctx context.Context) error {
	g := s.hold
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.heldCount()
	if n == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM holders WHERE instance = ?`, g.instance)
		return err
	})
	if err != nil {
		return fmt.Errorf("releasing this bridge's %d sessions: %w", n, err)
	}
	g.heldMu.Lock()
	clear(g.held)
	g.heldMu.Unlock()
	return nil
}

// HolderOf implements Holding. A read-only store (the sessions command)
// judges holders as a process of its own would.
func (s *SQLite) HolderOf(ctx context.Context, uri string) (Holder, bool, error) {
	if err := s.usable(false); err != nil {
		return Holder{}, false, err
	}
	_, h, err := scanHolder(s.r.QueryRowContext(ctx, `SELECT `+holderColumns+` FROM holders WHERE session_uri = ?`, uri))
	if errors.Is(err, sql.ErrNoRows) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("reading who holds session %s: %w", uri, err)
	}
	if s.judge().gone(h) {
		return h, false, nil
	}
	return h, true, nil
}

// judge is the holding whose rule applies: the store's own, or for a
// read-only store one that holds nothing.
func (s *SQLite) judge() *holding {
	if s.hold != nil {
		return s.hold
	}
	return &holding{self: thisProcess(), stale: s.holderStale, now: time.Now}
}

// Holds implements Holding.
func (s *SQLite) Holds(uri string) bool {
	g := s.hold
	if g == nil {
		return false
	}
	return g.isHeld(uri)
}

// SetAddress implements Holding.
func (s *SQLite) SetAddress(ctx context.Context, addr string) error {
	g := s.hold
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.address = addr
	if g.heldCount() == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE holders SET address = ? WHERE instance = ?`, addr, g.instance)
		return err
	})
	if err != nil {
		return fmt.Errorf("storing this bridge's address: %w", err)
	}
	return nil
}

// ChangeCount implements Holding.
func (s *SQLite) ChangeCount(ctx context.Context) (int64, error) {
	if err := s.usable(false); err != nil {
		return 0, err
	}
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT n FROM changes WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the catalogue's change counter: %w", err)
	}
	return n, nil
}

// removedKept is how long a deleted session is remembered for
// RemovedSince.
const removedKept = 24 * time.Hour

// RemovedSince implements Holding.
func (s *SQLite) RemovedSince(ctx context.Context, n int64) ([]string, error) {
	if err := s.usable(false); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT session_uri FROM removed_sessions WHERE n > ? ORDER BY n`, n)
	if err != nil {
		return nil, fmt.Errorf("reading the deleted sessions: %w", err)
	}
	defer rows.Close()
	var uris []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, fmt.Errorf("reading the deleted sessions: %w", err)
		}
		uris = append(uris, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the deleted sessions: %w", err)
	}
	return uris, nil
}

// noteRemoved records, inside DeleteSession's transaction, that the
// session is gone as of the change that transaction makes.
func (s *SQLite) noteRemoved(ctx context.Context, tx *sql.Tx, uri string) error {
	now := time.Now()
	if _, err := tx.ExecContext(ctx, `INSERT INTO removed_sessions (n, session_uri, removed_ns)
		VALUES ((SELECT n + 1 FROM changes WHERE id = 1), ?, ?)`, uri, toNS(now)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM removed_sessions WHERE removed_ns < ?`, toNS(now.Add(-removedKept)))
	return err
}

// writeCatalogue is write for the writes other bridges must notice: it
// raises the change counter in the same transaction.
func (s *SQLite) writeCatalogue(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE changes SET n = n + 1 WHERE id = 1`)
		return err
	})
}

// forgetHold drops a deleted session from this store's holds.
func (s *SQLite) forgetHold(uri string) {
	if g := s.hold; g != nil {
		g.setHeld(uri, false)
	}
}

// heldElsewhere refuses, inside a write transaction, to change a session a
// live other holder holds.
func (s *SQLite) heldElsewhere(ctx context.Context, tx *sql.Tx, uri string) error {
	_, h, err := scanHolder(tx.QueryRowContext(ctx, `SELECT `+holderColumns+` FROM holders WHERE session_uri = ?`, uri))
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if g := s.judge(); h.instance != g.instance && !g.gone(h) {
		return &HeldError{Session: uri, Holder: h}
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM holders WHERE session_uri = ?`, uri)
	return err
}

// runHeartbeat refreshes this store's holds every g.every until Close. A
// hold that is no longer there was taken over by a bridge that judged this
// one gone (it was stopped, or its disk stalled, for longer than
// HolderStale): it is forgotten, so that the next Claim asks again.
func (s *SQLite) runHeartbeat() {
	g := s.hold
	defer close(g.done)
	t := time.NewTicker(g.every)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		g.mu.Lock()
		if g.heldCount() > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), g.stale)
			s.beatLocked(ctx)
			cancel()
		}
		g.mu.Unlock()
	}
}

// beatLocked writes one heartbeat. Called with g.mu held.
func (s *SQLite) beatLocked(ctx context.Context) {
	g := s.hold
	var still []string
	err := s.write(ctx, func(tx *sql.Tx) error {
		still = still[:0]
		res, err := tx.ExecContext(ctx, `UPDATE holders SET heartbeat_ns = ? WHERE instance = ?`, toNS(g.now()), g.instance)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || int(n) == g.heldCount() {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT session_uri FROM holders WHERE instance = ?`, g.instance)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				return err
			}
			still = append(still, u)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		still = append(still, "") // marks that the list was read
		return nil
	})
	if err != nil || len(still) == 0 {
		return // a failed beat is retried on the next tick; Health says why
	}
	keep := make(map[string]bool, len(still))
	for _, u := range still[:len(still)-1] {
		keep[u] = true
	}
	g.heldMu.Lock()
	defer g.heldMu.Unlock()
	for u := range g.held {
		if !keep[u] {
			delete(g.held, u)
		}
	}
}
