package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two stores on one file (two bridges) each see what the other writes, and
// the change counter tells them something changed.
func TestTwoStoresShareOneFile(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	a := openTest(t, path, Options{})
	b := openTest(t, path, Options{})

	n0, err := b.ChangeCount(ctx)
	require.NoError(t, err)
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, a.PutSession(ctx, sess, chat))
	rec, err := b.GetSession(ctx, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, sess, rec.Session)
	n1, err := b.ChangeCount(ctx)
	require.NoError(t, err)
	assert.Greater(t, n1, n0, "a session added by A raises the counter B reads")

	require.NoError(t, b.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "t1", Data: turnJSON("t1", 100), EndedAt: at(5)}}))
	page, err := a.Turns(ctx, chat.URI, TurnQuery{})
	require.NoError(t, err)
	require.Len(t, page.Turns, 1)
	n2, err := a.ChangeCount(ctx)
	require.NoError(t, err)
	assert.Greater(t, n2, n1, "a turn appended raises it")

	require.NoError(t, a.PutChat(ctx, chat))
	n3, _ := a.ChangeCount(ctx)
	assert.Greater(t, n3, n2, "a chat rewritten raises it")

	// Writes nobody lists (checkpoints, serverSeq, holds) leave it.
	require.NoError(t, a.PutCheckpoints(ctx, []Checkpoint{{ChatURI: chat.URI, TurnID: "t2", Data: activeState(1, 50), Updated: at(6)}}))
	require.NoError(t, a.RaiseSeqHighWater(ctx, 99))
	_, err = a.Claim(ctx, sess.URI)
	require.NoError(t, err)
	n4, _ := a.ChangeCount(ctx)
	assert.Equal(t, n3, n4)

	require.NoError(t, a.Release(ctx, sess.URI))
	require.NoError(t, b.DeleteSession(ctx, sess.URI))
	n5, _ := a.ChangeCount(ctx)
	assert.Greater(t, n5, n4, "a session deleted raises it")
	removed, err := a.RemovedSince(ctx, n4)
	require.NoError(t, err)
	assert.Equal(t, []string{sess.URI}, removed, "and says which")
	removed, err = a.RemovedSince(ctx, n5)
	require.NoError(t, err)
	assert.Empty(t, removed)
}

// Bridges started at once on a file that does not exist yet all open it,
// and it ends at the current schema, migrated once.
func TestManyOpenANewFileAtOnce(t *testing.T) {
	path := testPath(t)
	const n = 6
	stores := make([]*SQLite, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), path, Options{}) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "store %d", i)
		require.NoError(t, stores[i].PutSession(context.Background(), testSession(i)))
	}
	for _, s := range stores {
		require.NoError(t, s.Close())
	}
	assert.Contains(t, schemaDump(t, path), fmt.Sprintf("version %d\n", len(migrations)))
	s := openTest(t, path, Options{})
	page, err := s.ListSessions(context.Background(), ListQuery{})
	require.NoError(t, err)
	assert.Len(t, page.Sessions, n)
}

func TestClaimRefusesLiveHolderAndTakesOverAStaleOne(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	opt := Options{Heartbeat: 20 * time.Millisecond, HolderStale: 300 * time.Millisecond}
	a := openTest(t, path, opt)
	b := openTest(t, path, opt)
	require.NoError(t, b.SetAddress(ctx, "ws://127.0.0.1:9999"))
	const uri = "copilot:/held"

	took, err := b.Claim(ctx, uri)
	require.NoError(t, err)
	assert.Nil(t, took)
	assert.True(t, b.Holds(uri))
	took, err = b.Claim(ctx, uri)
	require.NoError(t, err, "claiming one's own session again is fine")
	assert.Nil(t, took)

	_, err = a.Claim(ctx, uri)
	require.ErrorIs(t, err, ErrHeld)
	var he *HeldError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, os.Getpid(), he.Holder.PID)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
	assert.Contains(t, err.Error(), "ws://127.0.0.1:9999")
	assert.False(t, a.Holds(uri))

	h, ok, err := a.HolderOf(ctx, uri)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "ws://127.0.0.1:9999", h.Address)

	// B's heartbeat keeps its hold alive past HolderStale.
	time.Sleep(2 * opt.HolderStale)
	_, err = a.Claim(ctx, uri)
	require.ErrorIs(t, err, ErrHeld, "a beating holder is not stale")

	// B stops beating (a hung bridge in this very process, whose pid
	// says nothing): once its heartbeat is stale, A takes the session.
	close(b.hold.stop)
	<-b.hold.done
	b.hold.stop, b.hold.done = make(chan struct{}), make(chan struct{})
	require.Eventually(t, func() bool {
		took, err = a.Claim(ctx, uri)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	require.NotNil(t, took, "A says whom it took the session from")
	assert.Equal(t, "ws://127.0.0.1:9999", took.Address)
	assert.True(t, a.Holds(uri))

	// B's next heartbeat finds the hold gone and forgets it, so B asks
	// again (and is refused) instead of driving the session.
	b.hold.mu.Lock()
	b.beatLocked(ctx)
	b.hold.mu.Unlock()
	assert.False(t, b.Holds(uri))
	_, err = b.Claim(ctx, uri)
	require.ErrorIs(t, err, ErrHeld)
	go b.runHeartbeat() // for Close to stop

	// A releases: B may claim it.
	require.NoError(t, a.Release(ctx, uri))
	_, ok, err = b.HolderOf(ctx, uri)
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = b.Claim(ctx, uri)
	require.NoError(t, err)
}

// Claims that race end with one holder.
func TestClaimRaceHasOneWinner(t *testing.T) {
	path := testPath(t)
	const n = 6
	stores := make([]*SQLite, n)
	for i := range stores {
		stores[i] = openTest(t, path, Options{})
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range stores {
		wg.Go(func() { _, errs[i] = s.Claim(context.Background(), "copilot:/contested") })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(t, err, ErrHeld)
		}
	}
	assert.Equal(t, 1, won)
}

// Close releases a store's holds, and only its own.
func TestCloseReleasesHolds(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	a, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	b := openTest(t, path, Options{})
	_, err = a.Claim(ctx, "copilot:/a")
	require.NoError(t, err)
	_, err = b.Claim(ctx, "copilot:/b")
	require.NoError(t, err)
	require.NoError(t, a.Close())
	assert.Equal(t, 1, countRows(t, b, "holders"))
	_, err = b.Claim(ctx, "copilot:/a")
	require.NoError(t, err)
}

// DeleteSession refuses a session another live bridge holds, whoever asks
// (the sessions command opens the file as a store of its own).
func TestDeleteRefusesAHeldSession(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	a := openTest(t, path, Options{})
	b := openTest(t, path, Options{})
	sess := testSession(1)
	require.NoError(t, a.PutSession(ctx, sess))
	_, err := a.Claim(ctx, sess.URI)
	require.NoError(t, err)

	err = b.DeleteSession(ctx, sess.URI)
	require.ErrorIs(t, err, ErrHeld)
	assert.False(t, b.Health().Failing, "a refusal is not the file failing")
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(os.Getpid()))
	_, err = b.GetSession(ctx, sess.URI)
	require.NoError(t, err, "still there")

	ro := openTest(t, path, Options{ReadOnly: true})
	h, ok, err := ro.HolderOf(ctx, sess.URI)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, os.Getpid(), h.PID)

	require.NoError(t, a.DeleteSession(ctx, sess.URI), "the holder deletes its own session")
	assert.False(t, a.Holds(sess.URI))
	assert.Equal(t, 0, countRows(t, a, "holders"))
}

// holdHelper is the second process of TestKilledHolderIsTakenOver: it
// opens the store, claims the sessions, says so, and waits to be killed.
func holdHelper(path string) error {
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		return err
	}
	if err := s.SetAddress(context.Background(), "ws://127.0.0.1:4321"); err != nil {
		return err
	}
	for _, u := range []string{"copilot:/one", "copilot:/two"} {
		if _, err := s.Claim(context.Background(), u); err != nil {
			return err
		}
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return s.Close()
}

// A bridge killed with SIGKILL leaves its holds behind; the next bridge that
// wants one sees the pid is gone and takes it over at once, without waiting
// for the heartbeat to go stale.
func TestKilledHolderIsTakenOver(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold", helperPathEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the helper did not claim its sessions")
	require.Equal(t, "held\n", line)

	s := openTest(t, path, Options{HolderStale: time.Hour})
	_, err = s.Claim(ctx, "copilot:/one")
	var he *HeldError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, cmd.Process.Pid, he.Holder.PID)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid))
	assert.Contains(t, err.Error(), "ws://127.0.0.1:4321")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait() // killed: the error says so
	took, err := s.Claim(ctx, "copilot:/one")
	require.NoError(t, err, "a holder whose pid is gone is taken over, stale or not")
	require.NotNil(t, took)
	assert.Equal(t, cmd.Process.Pid, took.PID)
	_, ok, err := s.HolderOf(ctx, "copilot:/two")
	require.NoError(t, err)
	assert.False(t, ok, "the dead bridge's other session is free too")
}

// The same process (a test) with another start time is a reused pid; a pid
// no process has is gone.
func TestProcessGone(t *testing.T) {
	self := thisProcess()
	assert.False(t, processGone(self))
	if self.started != 0 {
		assert.True(t, processGone(processID{pid: self.pid, started: self.started + 1}), "a pid reused by a later process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=none")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	_ = cmd.Wait() // the unknown role fails: that is all it does
	if _, known := processAlive(pid); known {
		assert.True(t, processGone(processID{pid: pid}), "an exited process")
	}
}
