package persist

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// TestRowsRoundTrip: a session's and a chat's rows decode to the states
// they were encoded from, without what lives only in the process.
func TestRowsRoundTrip(t *testing.T) {
	sess := &wire.SessionState{
		Provider: "fake", Title: "t", WorkingDirectories: []string{"/w"},
		Config:        &wire.SessionConfigState{Values: map[string]any{"mode": "ask"}},
		ActiveClients: []wire.SessionActiveClient{{ClientID: "c"}},
	}
	sum := wire.SessionSummary{Resource: "ahp-session:/s", CreatedAt: "2026-01-01T00:00:00.000Z", ModifiedAt: "2026-01-02T00:00:00.000Z"}
	row, blob, err := SessionRow("ahp-session:/s", sess, sum, 42)
	require.NoError(t, err)
	assert.Equal(t, blob, []byte(row.Summary))
	assert.Equal(t, time.UnixMilli(1767225600000), row.Created)
	assert.NotNil(t, sess.ActiveClients, "the live state is not changed")
	ss, err := DecodeSession(row)
	require.NoError(t, err)
	assert.Equal(t, sum, ss.Summary)
	assert.Equal(t, int64(42), ss.ArchivedAt)
	assert.Equal(t, "ask", ss.State.Config.Values["mode"], "the config comes back from its own column")
	assert.Empty(t, ss.State.ActiveClients, "active clients are not stored")
	want, err := json.Marshal(&sum)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(SummaryJSON(blob)))

	chat := &wire.ChatState{
		Turns: []wire.Turn{{ID: "old"}},
		ActiveTurn: &wire.ActiveTurn{ID: "a", StartedAt: "2026-01-01T00:00:00.000Z", Message: userMsg("q"), ResponseParts: []wire.ResponsePart{
			wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: "streamed"})}},
	}
	cr, err := ChatRow("ahp-session:/s", "ahp-chat:/c", chat, "acp-1", 1000)
	require.NoError(t, err)
	assert.Equal(t, "acp-1", cr.ACPSessionID)
	st, err := DecodeChat(store.ChatRecord{Chat: cr})
	require.NoError(t, err)
	assert.Empty(t, st.Turns, "turns have rows of their own")
	require.NotNil(t, st.ActiveTurn)
	assert.Equal(t, userMsg("q"), st.ActiveTurn.Message, "the active turn's start is kept")
	assert.Empty(t, st.ActiveTurn.ResponseParts, "its content is the checkpoint's")

	row.Summary = []byte(`{"v":99,"state":{}}`)
	_, err = DecodeSession(row)
	assert.ErrorContains(t, err, "stored by a newer ahp-bridge")
}

// flaky fails every PutSession while fail is set, as a full disk does.
type flaky struct {
	store.Store
	fail atomic.Bool
}

func (f *flaky) PutSession(ctx context.Context, s store.Session, chats ...store.Chat) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Store.PutSession(ctx, s, chats...)
}

// TestWriteBatch: a batch's rows and turns are stored, a failed write
// raises the warning and stops the batch, and the next success clears it.
func TestWriteBatch(t *testing.T) {
	sq, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sq.Close() })
	f := &flaky{Store: sq}
	var writes atomic.Int32
	st := Observe(f, Options{OnWrite: func(time.Duration, error) { writes.Add(1) }})

	sess := &wire.SessionState{Provider: "fake"}
	row, _, err := SessionRow("ahp-session:/s", sess, wire.SessionSummary{Resource: "ahp-session:/s"}, 0)
	require.NoError(t, err)
	cr, err := ChatRow("ahp-session:/s", "ahp-chat:/c", &wire.ChatState{}, "", 0)
	require.NoError(t, err)
	turn := func(id string) *store.TurnCommit {
		e, err := EncodeTurn(&wire.Turn{ID: id, Message: userMsg(id), ResponseParts: []wire.ResponsePart{}, State: wire.TurnStateComplete})
		require.NoError(t, err)
		return &store.TurnCommit{ChatURI: "ahp-chat:/c", Turn: store.Turn{ID: id, Encode: e.Encode}}
	}
	b := &Batch{PutCatalogue: true, Session: row, Chats: []store.Chat{cr}}

	f.fail.Store(true)
	res := st.WriteBatch(b)
	assert.False(t, res.Catalogue)
	require.NotNil(t, st.Warning(), "a failed write raises the warning")
	assert.Contains(t, st.Warning().Message, "disk full")

	f.fail.Store(false)
	b.Turns = []ChatTurns{{Row: 0, Commits: []*store.TurnCommit{turn("t1"), nil, turn("t2")}}}
	res = st.WriteBatch(b)
	assert.True(t, res.Catalogue)
	assert.Equal(t, []int{3}, res.Stored, "a turn that could not be encoded is skipped")
	assert.Nil(t, st.Warning(), "a successful write clears it")
	assert.GreaterOrEqual(t, writes.Load(), int32(4), "every write is observed")

	ctx, cancel := WriteCtx()
	defer cancel()
	page, err := sq.Turns(ctx, "ahp-chat:/c", store.TurnQuery{})
	require.NoError(t, err)
	got, err := DecodeTurns("ahp-chat:/c", page.Turns)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "t1", got[0].ID)
	assert.Equal(t, "t2", got[1].ID)
}

// TestEndInterrupted: a turn the restart interrupted ends cancelled, its
// duration up to its last save, after a notice saying why.
func TestEndInterrupted(t *testing.T) {
	st := &wire.ChatState{Turns: []wire.Turn{}}
	at := &wire.ActiveTurn{ID: "a", StartedAt: "2026-01-01T00:00:00.000Z", Message: userMsg("q"), ResponseParts: []wire.ResponsePart{}}
	EndInterrupted(st, at, time.UnixMilli(1767225600000).Add(1500*time.Millisecond).UnixMilli(), func() int64 { return 0 })
	assert.Nil(t, st.ActiveTurn)
	require.Len(t, st.Turns, 1)
	turn := st.Turns[0]
	assert.Equal(t, wire.TurnStateCancelled, turn.State)
	require.NotNil(t, turn.Duration)
	assert.Equal(t, int64(1500), *turn.Duration)
	require.Len(t, turn.ResponseParts, 1)
	n, ok := turn.ResponseParts[0].Value.(*wire.SystemNotificationResponsePart)
	require.True(t, ok)
	assert.Equal(t, "bridgeRestarted", n.Meta[RestartNoticeMeta])
}
