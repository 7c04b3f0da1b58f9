package reducer070

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

const (
	stIdle        = wire.SessionStatusIdle
	stError       = wire.SessionStatusError
	stInProgress  = wire.SessionStatusInProgress
	stInputNeeded = wire.SessionStatusInputNeeded
	stIsRead      = wire.SessionStatusIsRead
	stIsArchived  = wire.SessionStatusIsArchived
	stUnknown     = wire.SessionStatus(1 << 9)
)

func TestWithInputNeeded(t *testing.T) {
	cases := []struct {
		status wire.SessionStatus
		needed bool
		want   wire.SessionStatus
	}{
		{stIdle, true, stInputNeeded},
		{stInProgress, true, stInputNeeded},
		{stError | stIsRead, true, stInputNeeded | stIsRead},
		{stInputNeeded | stIsArchived | stUnknown, true, stInputNeeded | stIsArchived | stUnknown},
		{stInputNeeded, false, stInProgress},
		{stInputNeeded | stIsRead | stIsArchived, false, stInProgress | stIsRead | stIsArchived},
		{stIdle | stIsRead, false, stIdle | stIsRead},
		{stError, false, stError},
		{stInProgress, false, stInProgress},
		{0, false, 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, WithInputNeeded(c.status, c.needed), "WithInputNeeded(%d, %v)", c.status, c.needed)
	}
}

func catalogueChat(uri string, status wire.SessionStatus, modifiedAt string) wire.ChatSummary {
	return wire.ChatSummary{Resource: uri, Status: status, ModifiedAt: modifiedAt, Activity: wire.Ptr("activity of " + uri)}
}

// atSecond returns the ISO timestamp of second s.
func atSecond(s int) string { return FormatTime(int64(s) * 1000) }

func TestAggregateStatus(t *testing.T) {
	cases := []struct {
		name        string
		session     wire.SessionStatus
		chats       []wire.ChatSummary
		defaultChat string
		want        wire.SessionStatus
		wantChat    int
	}{
		{
			name:    "no chats: the session as it is",
			session: stInProgress | stIsRead | stUnknown, want: stInProgress | stIsRead | stUnknown, wantChat: -1,
		},
		{
			name:    "one chat passes through, flags stay the session's",
			session: stIdle | stIsArchived, chats: []wire.ChatSummary{catalogueChat("a", stInProgress|stIsRead, atSecond(1))},
			want: stInProgress | stIsArchived, wantChat: 0,
		},
		{
			name:    "the default chat's bits, not the newer chat's",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(1)), catalogueChat("b", stInProgress, atSecond(2))}, defaultChat: "a",
			want: stIdle, wantChat: 0,
		},
		{
			name:    "no default chat: the most recently modified",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stInProgress, atSecond(3)), catalogueChat("b", stIdle, atSecond(2))},
			want: stInProgress, wantChat: 0,
		},
		{
			name:    "a default chat not in the catalogue counts as none",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(1)), catalogueChat("b", stInProgress, atSecond(2))}, defaultChat: "gone",
			want: stInProgress, wantChat: 1,
		},
		{
			name:    "timestamps compare as times, not as strings",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stInProgress, "1970-01-01T01:00:09+01:00"), catalogueChat("b", stIdle, "1970-01-01T00:00:10.000Z")},
			want: stIdle, wantChat: 1,
		},
		{
			name:    "an unparseable modifiedAt is older than any other",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(1)), catalogueChat("b", stInProgress, "yesterday")},
			want: stIdle, wantChat: 0,
		},
		{
			name:    "equal times: the chat added last",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(1)), catalogueChat("b", stInProgress, atSecond(1))},
			want: stInProgress, wantChat: 1,
		},
		{
			name:    "any chat needing input is promoted over the default chat",
			session: stIdle | stIsRead, chats: []wire.ChatSummary{catalogueChat("a", stInProgress, atSecond(5)), catalogueChat("b", stInputNeeded, atSecond(1))}, defaultChat: "a",
			want: stInputNeeded | stIsRead, wantChat: 1,
		},
		{
			name:    "any chat in error is promoted over the default chat",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stInProgress, atSecond(5)), catalogueChat("b", stError, atSecond(1))}, defaultChat: "a",
			want: stError, wantChat: 1,
		},
		{
			name:    "input needed outranks error",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stError, atSecond(5)), catalogueChat("b", stInputNeeded, atSecond(1))}, defaultChat: "a",
			want: stInputNeeded, wantChat: 1,
		},
		{
			name:    "among chats needing input, the default chat",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stInputNeeded, atSecond(1)), catalogueChat("b", stInputNeeded, atSecond(5))}, defaultChat: "a",
			want: stInputNeeded, wantChat: 0,
		},
		{
			name:    "among chats in error, the most recently modified",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(9)), catalogueChat("b", stError, atSecond(5)), catalogueChat("c", stError, atSecond(3))}, defaultChat: "a",
			want: stError, wantChat: 1,
		},
		{
			name:    "InProgress alone does not promote",
			session: stIdle, chats: []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(5)), catalogueChat("b", stInProgress, atSecond(1))}, defaultChat: "a",
			want: stIdle, wantChat: 0,
		},
		{
			name:    "the session's own stale activity bits are not an input",
			session: stInputNeeded | stIsRead, chats: []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(1))},
			want: stIdle | stIsRead, wantChat: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := AggregateStatus(c.session, c.chats, c.defaultChat)
			require.Equal(t, c.want, got, "status %d, want %d", got, c.want)
			require.Equal(t, c.wantChat, AggregateChat(c.chats, c.defaultChat))
		})
	}
}

func TestSessionSummaryStatus(t *testing.T) {
	require.Zero(t, SessionSummaryStatus(nil))

	s := &wire.SessionState{
		Status:      stInProgress | stIsArchived,
		Chats:       []wire.ChatSummary{catalogueChat("a", stIdle, atSecond(1)), catalogueChat("b", stError, atSecond(2))},
		DefaultChat: wire.Ptr("a"),
	}
	require.Equal(t, stError|stIsArchived, SessionSummaryStatus(s))

	// A session-level block that no chat shows, e.g. an MCP server waiting
	// for authentication.
	s.InputNeeded = []wire.SessionInputRequest{{Value: []byte(`{"kind":"hologram","id":"i"}`)}}
	require.Equal(t, stInputNeeded|stIsArchived, SessionSummaryStatus(s))

	s.Chats = nil
	require.Equal(t, stInputNeeded|stIsArchived, SessionSummaryStatus(s))
}

func TestLatestModifiedAt(t *testing.T) {
	_, ok := LatestModifiedAt(nil)
	require.False(t, ok)
	for i, c := range []struct {
		chats []wire.ChatSummary
		want  string
	}{
		{[]wire.ChatSummary{catalogueChat("a", stIdle, atSecond(1))}, atSecond(1)},
		{[]wire.ChatSummary{catalogueChat("a", stIdle, atSecond(3)), catalogueChat("b", stIdle, atSecond(2))}, atSecond(3)},
		{[]wire.ChatSummary{catalogueChat("a", stIdle, "1970-01-01T00:00:02+01:00"), catalogueChat("b", stIdle, atSecond(2))}, atSecond(2)},
		{[]wire.ChatSummary{catalogueChat("a", stIdle, "?"), catalogueChat("b", stIdle, "")}, ""},
	} {
		got, ok := LatestModifiedAt(c.chats)
		require.True(t, ok)
		require.Equal(t, c.want, got, fmt.Sprint("case ", i))
	}
}
