package reducer030

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

func streamClock() int64 { return 1700000000000 }

// streamActions is a turn with interleaved text and reasoning parts.
func streamActions(chunks int) []wire.StateAction {
	acts := []wire.StateAction{
		wire.Action(&wire.SessionTurnStartedAction{TurnID: "t1", Message: wire.Message{Text: "hi", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}}),
		wire.Action(&wire.SessionResponsePartAction{TurnID: "t1", Part: wire.ResponsePart{Value: &wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "p1"}}}),
		wire.Action(&wire.SessionResponsePartAction{TurnID: "t1", Part: wire.ResponsePart{Value: &wire.ReasoningResponsePart{Kind: wire.ResponsePartKindReasoning, ID: "r1"}}}),
	}
	for i := 0; i < chunks; i++ {
		acts = append(acts, wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p1", Content: fmt.Sprintf("<%d>", i)}))
		if i%3 == 0 {
			acts = append(acts, wire.Action(&wire.SessionReasoningAction{TurnID: "t1", PartID: "r1", Content: fmt.Sprintf("(%d)", i)}))
		}
		if i%50 == 0 {
			// A delta for a part that does not exist is a no-op.
			acts = append(acts, wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "nope", Content: "x"}))
		}
	}
	return append(acts, wire.Action(&wire.SessionTurnCompleteAction{TurnID: "t1"}))
}

func newSessionState() *wire.SessionState {
	return &wire.SessionState{Summary: wire.SessionSummary{Resource: "ahp-session:/s", Provider: "p", Title: "t"},
		Lifecycle: wire.SessionLifecycleReady, Turns: []wire.Turn{}}
}

func TestStreamingMatchesSession(t *testing.T) {
	for _, chunks := range []int{0, 1, 7, 600} {
		t.Run(fmt.Sprint(chunks), func(t *testing.T) {
			plain, fast := newSessionState(), newSessionState()
			var st Streaming
			for i, a := range streamActions(chunks) {
				Session(plain, a, streamClock)
				st.Session(fast, a, streamClock)
				if i%97 == 0 {
					requireSameJSON(t, plain, fast)
				}
			}
			requireSameJSON(t, plain, fast)
			assert.Nil(t, st.bufs, "buffers are dropped when the turn ends")
		})
	}
}

func requireSameJSON(t *testing.T, want, got *wire.SessionState) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}

// Content handed out earlier (e.g. captured in a snapshot) never changes,
// and content edited behind the Streaming's back is respected.
func TestStreamingViewsAreImmutable(t *testing.T) {
	s := newSessionState()
	var st Streaming
	acts := streamActions(0)
	st.Session(s, acts[0], streamClock)
	st.Session(s, acts[1], streamClock)
	delta := func(c string) {
		st.Session(s, wire.Action(&wire.SessionDeltaAction{TurnID: "t1", PartID: "p1", Content: c}), streamClock)
	}
	part := func() *wire.MarkdownResponsePart {
		return s.ActiveTurn.ResponseParts[0].Value.(*wire.MarkdownResponsePart)
	}
	var views []string
	var want strings.Builder
	for i := 0; i < 300; i++ {
		c := strings.Repeat(string(rune('a'+i%26)), i%5+1)
		delta(c)
		want.WriteString(c)
		views = append(views, part().Content)
	}
	require.Equal(t, want.String(), part().Content)
	prefix := ""
	for i, v := range views {
		assert.True(t, strings.HasPrefix(want.String(), v), "view %d changed", i)
		assert.Greater(t, len(v), len(prefix))
		prefix = v
	}
	// Replaced elsewhere (e.g. a restored state): the next delta builds on
	// the replacement, not on the buffer.
	part().Content = "reset"
	delta("!")
	assert.Equal(t, "reset!", part().Content)
	assert.True(t, strings.HasPrefix(want.String(), views[len(views)-1]))
	// A shorter earlier view put back must not be extended in place.
	part().Content = views[3]
	old := views[3]
	delta("?")
	assert.Equal(t, old+"?", part().Content)
	assert.Equal(t, old, views[3])
	assert.True(t, strings.HasPrefix(want.String(), views[4]))
}
