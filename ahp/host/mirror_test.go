package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The actions a mirror replays for a completed turn (turnActions) make
// the same turn in a reducer, however it ended.
func TestTurnActionsReplayTheTurn(t *testing.T) {
	md := wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "p1", Content: "hello"})
	errPart := wire.NewResponsePart(&wire.ErrorResponsePart{Kind: wire.ResponsePartKindError, Error: wire.ErrorInfo{ErrorType: "agent", Message: "it broke"}})
	for _, tc := range []struct {
		name  string
		state wire.TurnState
		parts []wire.ResponsePart
		usage *wire.UsageInfo
	}{
		{"complete", wire.TurnStateComplete, []wire.ResponsePart{md}, &wire.UsageInfo{InputTokens: wire.Ptr(int64(3)), OutputTokens: wire.Ptr(int64(5))}},
		{"cancelled", wire.TurnStateCancelled, []wire.ResponsePart{md}, nil},
		{"error", wire.TurnStateError, []wire.ResponsePart{md, errPart}, nil},
		{"empty", wire.TurnStateComplete, []wire.ResponsePart{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turn := wire.Turn{ID: "t1", StartedAt: wire.Ptr("2026-11-28T10:00:00.000Z"), Duration: wire.Ptr(int64(1500)),
				Message: userMsg("hi"), ResponseParts: tc.parts, Usage: tc.usage, State: tc.state}
			st := &wire.ChatState{Turns: []wire.Turn{}}
			for _, a := range turnActions(turn, "2026-11-28T11:00:00.000Z") {
				reducer.Chat(st, a, reducer.Clock(func() int64 { return 0 }))
			}
			require.Nil(t, st.ActiveTurn, "the turn ended")
			require.Len(t, st.Turns, 1)
			assert.Equal(t, turn, st.Turns[0])
		})
	}
}

// newTurns finds the stored turns a mirror lacks.
func TestNewTurns(t *testing.T) {
	turns := func(ids ...string) []wire.Turn {
		out := make([]wire.Turn, 0, len(ids))
		for _, id := range ids {
			out = append(out, wire.Turn{ID: id})
		}
		return out
	}
	ids := func(ts []wire.Turn) []string {
		out := []string{}
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	assert.Equal(t, []string{"c"}, ids(newTurns(turns("a", "b"), turns("a", "b", "c"))))
	assert.Equal(t, []string{}, ids(newTurns(turns("a", "b"), turns("a", "b"))))
	assert.Equal(t, []string{"a"}, ids(newTurns(nil, turns("a"))))
	// The newest in memory is older than the stored page: all are new.
	assert.Equal(t, []string{"x", "y"}, ids(newTurns(turns("a"), turns("x", "y"))))
}
