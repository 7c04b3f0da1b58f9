package reducer070

import (
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
)

func catalogueChat(uri string, status wire.SessionStatus, modifiedAt string) wire.ChatSummary {
	return wire.ChatSummary{Resource: uri, Status: status, ModifiedAt: modifiedAt, Activity: wire.Ptr("activity of " + uri)}
}

// atSecond returns the ISO timestamp of second s.
func atSecond(s int) string { return FormatTime(int64(s) * 1000) }

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

	// 0.7.0 has no toolClientExecution entry: every entry is input needed,
	// where 1.0.0 (ahp/reducer) leaves work delegated to a client out.
	s.Chats = []wire.ChatSummary{catalogueChat("a", stInProgress, atSecond(1))}
	s.InputNeeded = []wire.SessionInputRequest{{Value: []byte(`{"kind":"toolClientExecution","id":"x","chat":"a","turnId":"t1","clientId":"k1"}`)}}
	require.Equal(t, stInputNeeded|stIsArchived, SessionSummaryStatus(s))
}
