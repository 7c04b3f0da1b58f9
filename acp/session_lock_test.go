package acp

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// These tests cover the session's lock discipline: work marked in the
// guarded state (prompting, recreating) instead of being done under a lock.

func TestPromptsRunOneAtATime(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	first := startPrompt(t, s, "wait")
	rec.waitFor(t, "waiting", func(ev backend.Event) bool { tc, ok := ev.(backend.TextChunk); return ok && tc.Text == "waiting" })

	// A Prompt that finds another one running waits for it; giving up its
	// context ends the wait without reaching the agent.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Prompt(ctx, backend.Prompt{TurnID: "t2", Text: "echo too early"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "waiting for the previous one to end")

	// One that keeps waiting runs after the first, and Cancel meanwhile
	// ends the first, which is the running turn.
	second := startPrompt(t, s, "echo second")
	require.NoError(t, s.Cancel(t.Context()))
	r := waitPrompt(t, first)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopCancelled, r.res.StopReason)
	r = waitPrompt(t, second)
	require.NoError(t, r.err)
	assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
	assert.Equal(t, "waitingtext:echo second", rec.text())
}

func TestConcurrentCallersShareOneRecreation(t *testing.T) {
	p := scriptProvider(t, nil)
	s, rec, _ := openSession(t, p)
	sess := s.(*session)
	old := p.proc
	old.kill("test")
	<-old.done
	rec.waitFor(t, "disconnected", func(ev backend.Event) bool { _, ok := ev.(backend.Disconnected); return ok })

	const n = 8
	type result struct {
		a   *agentProc
		id  string
		err error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, id, err := sess.agentSession(t.Context())
			results[i] = result{a, id, err}
		}()
	}
	wg.Wait()
	for i, r := range results {
		require.NoError(t, r.err, "caller %d", i)
		assert.NotSame(t, old, r.a, "caller %d got the dead agent", i)
		assert.Same(t, results[0].a, r.a, "caller %d", i)
		assert.Equal(t, results[0].id, r.id, "caller %d got an ACP session of its own", i)
	}
	registered := 0
	for _, o := range results[0].a.allSessions() {
		if o == sess {
			registered++
		}
	}
	assert.Equal(t, 1, registered, "the session was re-created more than once on the new agent")
}
