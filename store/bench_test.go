package store

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchStore is a store with one session of chats chats.
func benchStore(b *testing.B, chats int) (*SQLite, Session, []Chat) {
	b.Helper()
	s := openTest(b, testPath(b), Options{})
	sess := testSession(1)
	cs := make([]Chat, chats)
	for i := range cs {
		cs[i] = testChat(sess.URI, i)
	}
	require.NoError(b, s.PutSession(context.Background(), sess, cs...))
	return s, sess, cs
}

// The synchronous write the host waits for before broadcasting the end of
// a turn: one ~4 KiB turn, one transaction.
func BenchmarkAppendTurn(b *testing.B) {
	ctx := context.Background()
	s, _, cs := benchStore(b, 1)
	data := turnJSON("t", 4096)
	b.SetBytes(int64(len(data)))
	i := 0
	for b.Loop() {
		i++
		if err := s.AppendTurn(ctx, TurnCommit{ChatURI: cs[0].URI, Turn: Turn{ID: fmt.Sprint(i), Data: data, EndedAt: at(int64(i))}}); err != nil {
			b.Fatal(err)
		}
	}
}

// The same with the session's and the chat's rows, as a turn usually
// changes both (modified time, summary).
func BenchmarkAppendTurnWithCatalogue(b *testing.B) {
	ctx := context.Background()
	s, sess, cs := benchStore(b, 1)
	data := turnJSON("t", 4096)
	b.SetBytes(int64(len(data)))
	i := 0
	for b.Loop() {
		i++
		sess.Modified = at(int64(i))
		if err := s.AppendTurn(ctx, TurnCommit{ChatURI: cs[0].URI, Turn: Turn{ID: fmt.Sprint(i), Data: data, EndedAt: at(int64(i))}, Session: &sess, Chat: &cs[0]}); err != nil {
			b.Fatal(err)
		}
	}
}

// A catalogue change alone (title, status, config).
func BenchmarkPutSession(b *testing.B) {
	ctx := context.Background()
	s, sess, _ := benchStore(b, 1)
	i := 0
	for b.Loop() {
		i++
		sess.Modified = at(int64(i))
		if err := s.PutSession(ctx, sess); err != nil {
			b.Fatal(err)
		}
	}
}

// One checkpoint write of a burst: 32 streaming chats' ~4 KiB active turns
// in one transaction, as the Checkpointer writes them. ns/op is per burst.
func BenchmarkCheckpointBurst(b *testing.B) {
	ctx := context.Background()
	s, _, cs := benchStore(b, 32)
	cps := make([]Checkpoint, len(cs))
	for i, c := range cs {
		cps[i] = Checkpoint{ChatURI: c.URI, TurnID: "active", Data: turnJSON("active", 4096), Updated: at(1)}
	}
	b.SetBytes(int64(len(cps) * 4096))
	for b.Loop() {
		if err := s.PutCheckpoints(ctx, cps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cps)), "ns/checkpoint")
}

// What a streaming delta costs the caller: Put never waits for the disk,
// while the Checkpointer writes behind it every 250 ms / 64 KiB.
func BenchmarkCheckpointPut(b *testing.B) {
	s, _, cs := benchStore(b, 8)
	cp := NewCheckpointer(s, CheckpointerOptions{})
	b.Cleanup(func() { require.NoError(b, cp.Close(context.Background())) })
	states := make([]json.RawMessage, 64)
	for i := range states {
		states[i] = turnJSON("active", 1024+64*i) // growing, as a stream does
	}
	i := 0
	for b.Loop() {
		i++
		cp.Put(cs[i%len(cs)].URI, "active", states[i%len(states)])
	}
	b.StopTimer()
	require.NoError(b, cp.Flush(context.Background()))
	st := cp.Stats()
	b.ReportMetric(float64(st.Flushes), "writes")
}

// The lazy variant the host should use for deltas: no encoding per delta.
func BenchmarkCheckpointPutFunc(b *testing.B) {
	s, _, cs := benchStore(b, 8)
	cp := NewCheckpointer(s, CheckpointerOptions{})
	b.Cleanup(func() { require.NoError(b, cp.Close(context.Background())) })
	state := turnJSON("active", 4096)
	snapshot := func(map[string]int) (TurnSnapshot, error) { return TurnSnapshot{Data: state}, nil }
	i := 0
	for b.Loop() {
		i++
		cp.PutFunc(cs[i%len(cs)].URI, "active", 40, snapshot)
	}
}

// Cover under the host's sequencer lock, per action.
func BenchmarkSeqCover(b *testing.B) {
	ctx := context.Background()
	s, _, _ := benchStore(b, 1)
	r, err := NewSeqReserve(ctx, s, 0)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, r.Close()) })
	v := r.Start()
	for b.Loop() {
		v++
		if err := r.Cover(v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.Stats().Writes), "writes")
}

// listSessions' first page out of 10 000 sessions.
func BenchmarkListSessionsFirstPage(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, testPath(b), Options{})
	seedSessions(b, s, 10_000, 0, 0)
	for b.Loop() {
		if _, err := s.ListSessions(ctx, ListQuery{}); err != nil {
			b.Fatal(err)
		}
	}
}

// fetchTurns: the newest 20 turns of a chat of 1000.
func BenchmarkTurnsPage(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, testPath(b), Options{})
	seedSessions(b, s, 1, 1000, 4096)
	chat := seedURI(0) + "/chat"
	for b.Loop() {
		if _, err := s.Turns(ctx, chat, TurnQuery{Limit: 20}); err != nil {
			b.Fatal(err)
		}
	}
}
