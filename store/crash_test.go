package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manualTimer stands in for the Checkpointer's interval timer: the test sees
// each arming and decides when the interval has passed.
type manualTimer struct {
	armed chan time.Duration
	fire  chan time.Time
}

func newManualTimer() *manualTimer {
	return &manualTimer{armed: make(chan time.Duration, 64), fire: make(chan time.Time)}
}

func (m *manualTimer) after(d time.Duration) <-chan time.Time {
	select {
	case m.armed <- d:
	default: // nobody is counting; never block the checkpointer
	}
	return m.fire
}

// The crash scenario's data, known to both the crashing process and the
// test that checks what survived.
var (
	crashSession = testSession(1)
	crashChat1   = testChat(crashSession.URI, 1)
	crashChat2   = testChat(crashSession.URI, 2)
	crashChat3   = testChat(crashSession.URI, 3)
)

// crashGrown is what the crash leaves of chat 3's turn, which streams in
// incremental checkpoints: the two that were written.
var crashGrown = growingTurn{answer: strings.Repeat("A", 1000) + strings.Repeat("B", 1000), thought: "ab", tools: 1}

func crashTurn(i int) Turn {
	id := fmt.Sprintf("done-%d", i)
	return Turn{ID: id, Data: turnJSON(id, 4096), EndedAt: at(int64(i))}
}

func activeState(version, size int) json.RawMessage {
	return turnJSON(fmt.Sprintf("active-v%d", version), size)
}

// crashScenario writes what a bridge writes during a session, up to the
// moment of a crash: committed turns, serverSeq values covered and handed
// out, a checkpoint written on the interval, one written on size, and two
// newer states still pending. It returns the last serverSeq handed out, and
// abandon, which stops the goroutines without writing anything more, as a
// crash would.
func crashScenario(ctx context.Context, s *SQLite) (last int64, abandon func(), err error) {
	if err := s.PutSession(ctx, crashSession, crashChat1, crashChat2, crashChat3); err != nil {
		return 0, nil, err
	}
	for i := range 3 {
		if err := s.AppendTurn(ctx, TurnCommit{ChatURI: crashChat1.URI, Turn: crashTurn(i)}); err != nil {
			return 0, nil, err
		}
	}
	r, err := NewSeqReserve(ctx, s, 16)
	if err != nil {
		return 0, nil, err
	}
	last = r.Start()
	for range 200 {
		last++
		if err := r.Cover(last); err != nil {
			return 0, nil, errors.Join(err, r.Close())
		}
	}

	timer := newManualTimer()
	flushed := make(chan error, 16)
	cp := NewCheckpointer(s, CheckpointerOptions{after: timer.after, flushed: func(_ int, err error) { flushed <- err }})
	abandon = func() {
		cp.shutdown()
		_ = r.Close()
	}
	fail := func(err error) (int64, func(), error) {
		abandon()
		return 0, nil, err
	}
	waitFlush := func(what string) error {
		select {
		case err := <-flushed:
			return err
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no checkpoint write after %s", what)
		}
	}

	// Chat 1 streams; its interval passes, so version 1 is written.
	cp.Put(crashChat1.URI, "active", activeState(1, 2000))
	if d := <-timer.armed; d != DefaultCheckpointInterval {
		return fail(fmt.Errorf("timer armed for %v, want %v", d, DefaultCheckpointInterval))
	}
	timer.fire <- time.Now()
	if err := waitFlush("the interval"); err != nil {
		return fail(err)
	}
	// Chat 2 streams 70 KiB at once: written without waiting for the timer.
	cp.Put(crashChat2.URI, "big", activeState(10, 70<<10))
	if err := waitFlush("70 KiB of new content"); err != nil {
		return fail(err)
	}
	// Chat 3 streams a growing turn, checkpointed twice on the interval,
	// each time with what it gained.
	g := &growingTurn{answer: strings.Repeat("A", 1000), thought: "a"}
	snap := func(map[string]int) (TurnSnapshot, error) { return g.snapshot(), nil }
	for round := range 2 {
		if round == 1 {
			g.answer += strings.Repeat("B", 1000)
			g.thought += "b"
			g.tools = 1
		}
		cp.PutFunc(crashChat3.URI, "grow", 1000, snap)
		<-timer.armed
		timer.fire <- time.Now()
		if err := waitFlush("chat 3's interval"); err != nil {
			return fail(err)
		}
	}
	// Newer states of all three, less than 64 KiB and no interval: the
	// crash takes these.
	g.answer += strings.Repeat("C", 1000)
	cp.PutFunc(crashChat3.URI, "grow", 1000, snap)
	cp.Put(crashChat1.URI, "active", activeState(2, 3000))
	cp.Put(crashChat2.URI, "big", activeState(11, 71<<10))
	return last, abandon, nil
}

// checkAfterCrash opens the store a crash left behind and checks that it lost
// only what the policy allows.
func checkAfterCrash(t *testing.T, path string, last int64) {
	ctx := context.Background()
	s := openTest(t, path, Options{})
	page, err := s.Turns(ctx, crashChat1.URI, TurnQuery{})
	require.NoError(t, err)
	require.Len(t, page.Turns, 3)
	for i, got := range page.Turns {
		want := crashTurn(i)
		assert.Equal(t, want.ID, got.ID)
		assert.True(t, bytes.Equal(want.Data, got.Data), "committed turn %d changed", i)
	}

	cp1, err := s.Checkpoint(ctx, crashChat1.URI)
	require.NoError(t, err)
	assert.Equal(t, "active", cp1.TurnID)
	assert.True(t, bytes.Equal(activeState(1, 2000), cp1.Data), "chat 1 keeps the state written on the interval")
	cp2, err := s.Checkpoint(ctx, crashChat2.URI)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(activeState(10, 70<<10), cp2.Data), "chat 2 keeps the state written on size")
	cp3, err := s.Checkpoint(ctx, crashChat3.URI)
	require.NoError(t, err)
	whole, err := cp3.Merged()
	require.NoError(t, err)
	assert.JSONEq(t, crashGrown.want(), string(whole), "chat 3 keeps its two incremental checkpoints, joined")

	r, err := NewSeqReserve(ctx, s, 16)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	assert.Greater(t, r.Start(), last, "serverSeq continues above every value handed out before the crash")
}

func TestCrashInProcessLosesOnlyPending(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s, err := Open(ctx, path, Options{})
	require.NoError(t, err)
	last, abandon, err := crashScenario(ctx, s)
	require.NoError(t, err)
	// The test seam for a crash: the checkpointer stops without writing and
	// the database handle closes under it.
	abandon()
	require.NoError(t, s.Close())
	checkAfterCrash(t, path, last)
}

// crashHelper is the process TestCrashKill9 kills: it runs the scenario,
// prints the last serverSeq it handed out, and kills itself (SIGKILL on
// Unix, TerminateProcess on Windows) with the store open.
func crashHelper(path string) error {
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		return err
	}
	last, _, err := crashScenario(ctx, s)
	if err != nil {
		return err
	}
	// os.Stdout is unbuffered: once Println returns, the parent can read it.
	fmt.Println(last)
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		return err
	}
	if err := self.Kill(); err != nil {
		return err
	}
	time.Sleep(time.Minute)
	return errors.New("still alive a minute after killing itself")
}

func TestCrashKill9(t *testing.T) {
	path := testPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=crash", helperPathEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the helper must die, not exit: %s", stderr.String())
	if runtime.GOOS != "windows" {
		require.Equal(t, "signal: killed", ee.ProcessState.String(), stderr.String())
	}
	last, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	require.NoError(t, err, "helper output %q, stderr %s", out, stderr.String())

	// The dead process's lock went with it, though its pid is still written.
	checkAfterCrash(t, path, last)
}
