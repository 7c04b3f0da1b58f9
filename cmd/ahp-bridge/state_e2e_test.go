package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// These tests run the built binary on a state file of their own.

// serveState starts `serve` on the state file with the scripted agent as
// provider "demo".
func serveState(t *testing.T, state string) (string, *exec.Cmd, *lockedWriter) {
	t.Helper()
	bin := bridgetest.Binary(t)
	return startBinary(t, "serve", "--listen", "127.0.0.1:0", "--state", state, "--acp", "demo="+bin+" demo-agent")
}

// stopServe ends a bridge with SIGTERM, as a user's Ctrl-C would, and waits
// for it (so that its sessions are released).
func stopServe(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()
}

// dialBridge connects a client to a running bridge.
func dialBridge(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.Dial(bridgetest.Context(t, 10*time.Second), url, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(bridgetest.Context(t, 10*time.Second), client.RootChannel)
	require.NoError(t, err)
	return c
}

// TestStateTwoBridgesShareAFile: a second bridge on the same state file
// starts and shows the first one's session read-only (its history, then
// the first's next turn); a turn there is refused, naming the first, until
// the first is killed; then the second takes it over.
func TestStateTwoBridgesShareAFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.db")
	urlA, bridgeA, _ := serveState(t, state)
	urlB, bridgeB, _ := serveState(t, state)
	a, b := dialBridge(t, urlA), dialBridge(t, urlB)
	session := bridgetest.CreateSession(t, a, "demo", demoDir(t))
	// B's root subscribers hear of the session A created, and B lists it.
	waitNotification(t, b, "root/sessionAdded", session)
	listed, err := b.ListSessions(bridgetest.Context(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(listed, func(s wire.SessionSummary) bool { return s.Resource == session }), "B lists A's session")
	turn := bridgetest.StartTurn(t, a, session, "echo one file, two bridges")
	bridgetest.WaitTurnEnd(t, a, session, turn, 30*time.Second)

	code, out, errOut := runBin(t, 30*time.Second, "", "sessions", "list", "--state", state)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, session, "sessions list reads the file while two bridges run")

	// B's turn on A's session is refused, naming A.
	url := strings.TrimSuffix(strings.SplitN(urlA, "?", 2)[0], "/")
	reason := rejectedTurn(t, b, defaultChat(t, a, session))
	assert.Contains(t, reason, "pid "+strconv.Itoa(bridgeA.Process.Pid))
	assert.Contains(t, reason, url)
	// B serves it read-only: its history, then A's next turn once A
	// completed it; a turn there is still refused, naming A.
	_, err = b.Subscribe(bridgetest.Context(t, 10*time.Second), session)
	require.NoError(t, err)
	chat := defaultChat(t, b, session)
	history, err := b.WaitForChat(bridgetest.Context(t, 10*time.Second), chat, func(*wire.ChatState) bool { return true })
	require.NoError(t, err)
	require.Len(t, history.Turns, 1, "B shows A's history")
	assert.Equal(t, turn, history.Turns[0].ID)
	next := bridgetest.StartTurn(t, a, session, "echo seen from the other bridge")
	bridgetest.WaitTurnEnd(t, a, session, next, 30*time.Second)
	seen := bridgetest.WaitTurnEnd(t, b, chat, next, 10*time.Second)
	assert.Equal(t, wire.TurnStateComplete, seen.State, "B's subscriber sees A's turn complete")
	assert.Contains(t, rejectedTurn(t, b, chat), "pid "+strconv.Itoa(bridgeA.Process.Pid))

	// A is killed (kill -9: no chance to release anything). B's next
	// turn there runs: B sees A's pid is gone and takes the session over,
	// under the subscription B's client already has.
	require.NoError(t, bridgeA.Process.Kill())
	_ = bridgeA.Wait()
	turn = bridgetest.StartTurn(t, b, chat, "echo taken over")
	bridgetest.WaitTurnEnd(t, b, chat, turn, 30*time.Second)

	// B stops: nobody holds the session, so it can be deleted while
	// another bridge runs.
	stopServe(t, bridgeB)
	urlC, _, _ := serveState(t, state)
	c := dialBridge(t, urlC)
	code, out, errOut = runBin(t, 30*time.Second, "", "sessions", "delete", "--state", state, session)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "deleted "+session+"\n", out)
	waitNotification(t, c, "root/sessionRemoved", session)
}

// TestStateWatcherTakesOverAKilledBridgesTurn: bridge B shows A's session
// read-only while A streams a turn; A is killed mid-turn; B's next turn
// takes the session over, and B's client, under the subscription it had,
// sees A's interrupted turn end as a restart ends it, then its own turn.
func TestStateWatcherTakesOverAKilledBridgesTurn(t *testing.T) {
	t.Parallel() // mostly waits on subprocesses: overlaps the CPU-bound tests
	state := filepath.Join(t.TempDir(), "state.db")
	urlA, bridgeA, _ := serveState(t, state)
	urlB, _, _ := serveState(t, state)
	a, b := dialBridge(t, urlA), dialBridge(t, urlB)
	session := bridgetest.CreateSession(t, a, "demo", demoDir(t))
	chat, err := a.DefaultChat(session)
	require.NoError(t, err)
	waitNotification(t, b, "root/sessionAdded", session)
	_, err = b.Subscribe(bridgetest.Context(t, 10*time.Second), session)
	require.NoError(t, err)

	// 1 KiB chunks, 100 a second; killed once a client of A saw 100 KiB.
	streaming := bridgetest.StartTurn(t, a, session, "bench 100000 1024 100")
	_, err = a.WaitForChat(bridgetest.Context(t, 60*time.Second), chat, func(s *wire.ChatState) bool {
		return s.ActiveTurn != nil && len(activeText(s.ActiveTurn)) >= 100<<10
	})
	require.NoError(t, err)
	watched, err := b.Chat(chat)
	require.NoError(t, err)
	assert.Nil(t, watched.ActiveTurn, "B shows completed turns only")
	require.NoError(t, bridgeA.Process.Signal(syscall.SIGKILL))
	_ = bridgeA.Wait()

	mine := bridgetest.StartTurn(t, b, chat, "echo taken over mid-turn")
	cut := bridgetest.WaitTurnEnd(t, b, chat, streaming, 10*time.Second)
	assert.Equal(t, wire.TurnStateCancelled, cut.State)
	assert.NotEmpty(t, turnText(cut.ResponseParts), "what A's checkpoint kept")
	last := cut.ResponseParts[len(cut.ResponseParts)-1].Value
	require.IsType(t, &wire.SystemNotificationResponsePart{}, last)
	assert.Contains(t, last.(*wire.SystemNotificationResponsePart).Content.Text, "restarted")
	bridgetest.WaitTurnEnd(t, b, chat, mine, 30*time.Second)
	after, err := b.Chat(chat)
	require.NoError(t, err)
	require.Len(t, after.Turns, 2)
	assert.Equal(t, []string{streaming, mine}, []string{after.Turns[0].ID, after.Turns[1].ID})
}

// TestStateCorruptFileIsMovedAside: a state file that is not a database
// is moved aside, said on stderr, and the bridge starts empty.
func TestStateCorruptFileIsMovedAside(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	junk := []byte("this is not a SQLite database, but somebody's notes\n")
	require.NoError(t, os.WriteFile(state, junk, 0o600))
	url, _, stderr := serveState(t, state)
	moved, err := filepath.Glob(state + ".corrupt-*")
	require.NoError(t, err)
	require.Len(t, moved, 1, "stderr:\n%s", readLocked(stderr))
	kept, err := os.ReadFile(moved[0])
	require.NoError(t, err)
	assert.Equal(t, junk, kept, "moved as it was")
	log := readLocked(stderr)
	assert.Contains(t, log, "could not be used")
	assert.Contains(t, log, filepath.Base(moved[0]))
	sessions, err := dialBridge(t, url).ListSessions(bridgetest.Context(t, 10*time.Second))
	require.NoError(t, err)
	assert.Empty(t, sessions, "started empty")
}

// TestStateSessionsCommand: list, show and export read the file while the
// bridge runs; delete of the session it drives is refused, naming it; once
// a client disposed of it (archived) and nobody watches it any more, the
// bridge releases it and delete deletes it while the bridge runs.
func TestStateSessionsCommand(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.db")
	url, bridge, _ := serveState(t, state)
	c := dialBridge(t, url)
	session := bridgetest.CreateSession(t, c, "demo", demoDir(t))
	turn := bridgetest.StartTurn(t, c, session, "echo kept across restarts")
	bridgetest.WaitTurnEnd(t, c, session, turn, 30*time.Second)

	code, out, errOut := runBin(t, 30*time.Second, "", "sessions", "show", session, "--state", state)
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `driven by:\s+the ahp-bridge with pid `+strconv.Itoa(bridge.Process.Pid), out, "show names the bridge driving it")
	code, _, errOut = runBin(t, 30*time.Second, "", "sessions", "delete", "--state", state, session)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "in use by the ahp-bridge with pid "+strconv.Itoa(bridge.Process.Pid), "delete refuses a session a running bridge holds")
	assert.Contains(t, errOut, strings.TrimSuffix(strings.SplitN(url, "?", 2)[0], "/"), "and says where that bridge listens")

	// disposeSession archives a session with turns; it stays in the file
	// (issue 23), and `sessions delete` is what deletes it. The bridge no
	// longer drives it.
	require.NoError(t, c.DisposeSession(bridgetest.Context(t, 30*time.Second), session))

	code, out, errOut = runBin(t, 30*time.Second, "", "sessions", "list", "--state", state)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, session)
	assert.Contains(t, out, "demo")
	assert.Contains(t, out, "[archived]")

	code, out, errOut = runBin(t, 30*time.Second, "", "sessions", "show", session, "--state", state)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "session:")
	assert.Regexp(t, `turns:\s+1\n`, out)
	assert.Regexp(t, `archived:\s+yes`, out)

	code, out, errOut = runBin(t, 30*time.Second, "", "sessions", "export", "--state", state, session)
	require.Equal(t, exitOK, code, errOut)
	var doc store.SessionExport
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, store.ExportFormat, doc.Format)
	assert.Equal(t, session, doc.Session.URI)
	require.Len(t, doc.Chats, 1)
	require.Len(t, doc.Chats[0].Turns, 1)
	var exported wire.Turn
	require.NoError(t, json.Unmarshal(doc.Chats[0].Turns[0].Turn, &exported))
	assert.Equal(t, turn, exported.ID)
	assert.Equal(t, "echo kept across restarts", exported.Message.Text)

	// Once nobody watches the archived session it leaves the bridge's
	// memory and is released: delete deletes it while the bridge runs.
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool {
		code, out, errOut = runBin(t, 30*time.Second, "", "sessions", "delete", "--state", state, session)
		return code == exitOK
	}, 30*time.Second, 100*time.Millisecond, "delete after the bridge released the session: %s", errOut)
	assert.Equal(t, "deleted "+session+"\n", out)
	code, out, _ = runBin(t, 30*time.Second, "", "sessions", "list", "--state", state)
	assert.Equal(t, exitOK, code)
	assert.NotContains(t, out, session)
	code, _, errOut = runBin(t, 30*time.Second, "", "sessions", "show", "--state", state, session)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "is not in")

	code, _, errOut = runBin(t, 30*time.Second, "", "sessions", "list", "--state", filepath.Join(t.TempDir(), "missing.db"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "there is no state file")
	for _, args := range [][]string{{"sessions"}, {"sessions", "show"}, {"sessions", "frob"}, {"sessions", "list", "--state", "none"}} {
		code, _, errOut = runBin(t, 30*time.Second, "", args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
}

// TestStateKillDuringAStreamingTurn: a bridge killed with SIGKILL while a
// turn streams loses at most the last 250 ms / 64 KiB of it; after the
// restart the turn shows as ended (cancelled, with the bridge's notice)
// and the completed turn before it is intact.
func TestStateKillDuringAStreamingTurn(t *testing.T) {
	t.Parallel() // mostly waits on a subprocess or a timer: overlaps the CPU-bound tests
	state := filepath.Join(t.TempDir(), "state.db")
	url, bridge, _ := serveState(t, state)
	c := dialBridge(t, url)
	session := bridgetest.CreateSession(t, c, "demo", demoDir(t))
	chat, err := c.DefaultChat(session)
	require.NoError(t, err)
	first := bridgetest.StartTurn(t, c, session, "echo before the crash")
	bridgetest.WaitTurnEnd(t, c, session, first, 30*time.Second)

	// 1 KiB chunks, 100 a second: 250 ms is 25 KiB of it.
	const seenAtLeast = 200 << 10
	turn := bridgetest.StartTurn(t, c, session, "bench 100000 1024 100")
	st, err := c.WaitForChat(bridgetest.Context(t, 60*time.Second), chat, func(s *wire.ChatState) bool {
		return s.ActiveTurn != nil && len(activeText(s.ActiveTurn)) >= seenAtLeast
	})
	require.NoError(t, err)
	seen := activeText(st.ActiveTurn)
	require.NoError(t, bridge.Process.Signal(syscall.SIGKILL))
	_ = bridge.Wait()

	url, _, _ = serveState(t, state)
	c = dialBridge(t, url)
	_, err = c.Subscribe(bridgetest.Context(t, 10*time.Second), session)
	require.NoError(t, err)
	_, err = c.Subscribe(bridgetest.Context(t, 10*time.Second), chat)
	require.NoError(t, err)
	after, err := c.Chat(chat)
	require.NoError(t, err)
	require.Nil(t, after.ActiveTurn, "nothing runs after the restart")
	require.Len(t, after.Turns, 2)
	assert.Equal(t, first, after.Turns[0].ID)
	assert.Equal(t, wire.TurnStateComplete, after.Turns[0].State)
	cut := after.Turns[1]
	assert.Equal(t, turn, cut.ID)
	assert.Equal(t, wire.TurnStateCancelled, cut.State)
	last := cut.ResponseParts[len(cut.ResponseParts)-1].Value
	require.IsType(t, &wire.SystemNotificationResponsePart{}, last)
	assert.Contains(t, last.(*wire.SystemNotificationResponsePart).Content.Text, "restarted")

	kept := turnText(cut.ResponseParts)
	t.Logf("a client had seen %d bytes when the bridge was killed; %d were kept", len(seen), len(kept))
	if len(kept) <= len(seen) {
		assert.Equal(t, seen[:len(kept)], kept, "what was kept is what was streamed")
		assert.LessOrEqual(t, len(seen)-len(kept), 64<<10, "lost %d bytes of the %d a client had seen", len(seen)-len(kept), len(seen))
	} else {
		assert.True(t, strings.HasPrefix(kept, seen), "what was kept is what was streamed")
	}
}

// activeText is the markdown text of an active turn.
func activeText(t *wire.ActiveTurn) string {
	return turnText(t.ResponseParts)
}

// turnText concatenates the markdown parts.
func turnText(parts []wire.ResponsePart) string {
	var b strings.Builder
	for _, p := range parts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// defaultChat is the default chat of a session the client watches.
func defaultChat(t *testing.T, c *client.Client, session string) string {
	t.Helper()
	st, err := c.WaitFor(bridgetest.Context(t, 10*time.Second), session, func(s *wire.SessionState) bool { return s.DefaultChat != nil })
	require.NoError(t, err)
	return *st.DefaultChat
}

// rejectedTurn starts a turn on a chat that the client's bridge must
// refuse, and returns the reason it gives.
func rejectedTurn(t *testing.T, c *client.Client, chat string) string {
	t.Helper()
	_, err := c.StartTurn(bridgetest.Context(t, 10*time.Second), chat, client.NewUUID(), client.UserMessage("echo not here"))
	var rej *client.RejectedError
	require.ErrorAs(t, err, &rej)
	require.NotNil(t, rej.Envelope.RejectionReason)
	return *rej.Envelope.RejectionReason
}

// waitNotification waits for a notification whose params mention what.
func waitNotification(t *testing.T, c *client.Client, method, what string) {
	t.Helper()
	ctx := bridgetest.Context(t, 10*time.Second)
	for {
		ev, err := c.Next(ctx)
		require.NoError(t, err, "no %s naming %s", method, what)
		if ev.Method == method && strings.Contains(string(ev.Params), what) {
			return
		}
	}
}
