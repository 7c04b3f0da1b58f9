package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// for it (so that its lock is released).
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

// TestStateLockRefusesASecondBridge: a second bridge on the same state
// file stops at once with exit status 1, naming the file and the pid that
// holds it.
func TestStateLockRefusesASecondBridge(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.db")
	_, first, _ := serveState(t, state)
	code, out, errOut := runBin(t, 30*time.Second, "", "serve", "--listen", "127.0.0.1:0", "--state", state)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out, "no READY line")
	assert.Contains(t, errOut, "state file "+state+" is locked")
	assert.Contains(t, errOut, fmt.Sprintf("pid %d", first.Process.Pid))
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
// bridge runs; delete is refused until it stops, then deletes.
func TestStateSessionsCommand(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.db")
	url, bridge, _ := serveState(t, state)
	c := dialBridge(t, url)
	session := bridgetest.CreateSession(t, c, "demo", demoDir(t))
	turn := bridgetest.StartTurn(t, c, session, "echo kept across restarts")
	bridgetest.WaitTurnEnd(t, c, session, turn, 30*time.Second)
	// disposeSession archives a session with turns; it stays in the file
	// (issue 23), and `sessions delete` is what deletes it.
	require.NoError(t, c.DisposeSession(bridgetest.Context(t, 30*time.Second), session))

	code, out, errOut := runBin(t, 30*time.Second, "", "sessions", "list", "--state", state)
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

	code, _, errOut = runBin(t, 30*time.Second, "", "sessions", "delete", "--state", state, session)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "is locked", "delete needs the file to itself")

	stopServe(t, bridge)
	code, out, errOut = runBin(t, 30*time.Second, "", "sessions", "delete", "--state", state, session)
	require.Equal(t, exitOK, code, errOut)
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
