package host

import (
	"context"
	"database/sql"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// TestStoreMemoryFollowsWhatIsSubscribed: a host on a state file of 10 000
// sessions of 10 turns each holds no more than an empty one (within
// 20 MiB, 2 KiB a session) until sessions are subscribed: nothing is
// loaded at start, and listSessions pages the catalogue without loading
// any. Subscribing loads just the session named.
//
// Under -race it runs with 1 000 sessions and the same 2 KiB a session:
// SQLite is Go code here, instrumented like the rest, and copying 100 000
// turns took most of the test's 27 s. .ci/run also runs it without -race,
// at full size.
func TestStoreMemoryFollowsWhatIsSubscribed(t *testing.T) {
	sessions, turns := 10_000, 10
	if testenv.Race {
		sessions = 1_000
	}
	path := stateFile(t)
	seedStoredSessions(t, path, sessions, turns)

	empty := heapWith(t, stateFile(t), nil)
	full := heapWith(t, path, func(hs *harness, c *testClient) {
		var listed int
		var cursor *string
		for {
			params := map[string]any{"channel": RootURI, "limit": 500}
			if cursor != nil {
				params["cursor"] = *cursor
			}
			var res wire.ListSessionsResult
			c.mustCall("listSessions", params, &res)
			listed += len(res.Items)
			if cursor = res.NextCursor; cursor == nil {
				break
			}
		}
		assert.Equal(t, sessions, listed, "every stored session is listed")
		assert.Zero(t, hs.h.Stats().Sessions, "and none loaded")
	})
	t.Logf("heap with an empty state file %.1f MiB, with %d stored sessions %.1f MiB", mib(empty), sessions, mib(full))
	assert.Less(t, full-empty, int64(sessions)*2<<10, "stored sessions cost memory before they are subscribed")

	// Subscribing loads one session: its chat holds its turns.
	hs, _ := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	c.subscribe("ahp-session:/seed-42")
	assert.Equal(t, 1, hs.h.Stats().Sessions)
	assert.Len(t, hs.readChat(t, "ahp-chat:/seed-42").Turns, turns)
}

// heapWith opens a host on the state file, runs use, and returns the live
// heap while the host is open.
func heapWith(t *testing.T, path string, use func(hs *harness, c *testClient)) int64 {
	t.Helper()
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	if use != nil {
		use(hs, c)
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.close()
	hs.h.Close()
	require.NoError(t, st.Close())
	return int64(ms.HeapAlloc)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// seedStoredSessions writes n sessions of turns completed turns each: one
// made by a host, then copied inside SQLite (row-by-row writes of 100 000
// turns take minutes under -race), its URIs renumbered seed-0 … seed-n-1.
func seedStoredSessions(t *testing.T, path string, n, turns int) {
	t.Helper()
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "seed")
	for i := range turns {
		id := "t" + strconv.Itoa(i)
		hs.dispatch(t, s.chat, &wire.ChatTurnStartedAction{TurnID: id, Message: userMsg("question " + id)},
			&wire.ChatResponsePartAction{TurnID: id, Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m", Content: "an answer of a few words"})},
			&wire.ChatTurnCompleteAction{TurnID: id, Duration: 10})
	}
	c.close()
	hs.h.Close()
	require.NoError(t, st.Close())
	// The copies' chats are named by the renumbering, not derived from
	// their sessions' URIs, as in a state file from before VS Code's
	// names: give the seed's chat the older name its copies extend.
	renameChatInStore(t, path, s.chat, "ahp-chat:/seed")

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	// seed → seed-N in every URI and blob of the copy N.
	renumber := func(col string) string {
		return `CAST(replace(replace(CAST(` + col + ` AS TEXT), 'ahp-session:/seed', 'ahp-session:/seed-' || i.n), 'ahp-chat:/seed', 'ahp-chat:/seed-' || i.n) AS BLOB)`
	}
	for _, q := range []string{
		`INSERT INTO sessions (uri, provider, title, working_dirs, config, summary, created_ns, modified_ns)
			SELECT s.uri || '-' || i.n, s.provider, s.title, s.working_dirs, s.config, ` + renumber("s.summary") + `, s.created_ns, s.modified_ns + i.n
			FROM sessions s, i`,
		`INSERT INTO chats (uri, session_uri, acp_session_id, summary, created_ns)
			SELECT c.uri || '-' || i.n, c.session_uri || '-' || i.n, c.acp_session_id, ` + renumber("c.summary") + `, c.created_ns
			FROM chats c, i`,
		`INSERT INTO turns (chat_uri, idx, turn_id, ended_ns, data)
			SELECT t.chat_uri || '-' || i.n, t.idx, t.turn_id, t.ended_ns, t.data FROM turns t, i`,
		`DELETE FROM sessions WHERE uri = 'ahp-session:/seed'`,
	} {
		_, err := tx.ExecContext(ctx, `WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n + 1 < ?) `+q, n)
		require.NoError(t, err, q)
	}
	require.NoError(t, tx.Commit())
}
