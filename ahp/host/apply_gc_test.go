package host

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// A turn's end that is about to join more than joinCollectAbove bytes of
// lazy text collects the garbage first; a short turn's end does not need
// to (not asserted: a collection may happen anyway).
func TestCollectBeforeJoinOfALongText(t *testing.T) {
	clock := func() int64 { return 1700000000000 }
	s := &wire.ChatState{Resource: "ahp-chat:/s/c", Turns: []wire.Turn{}}
	st := reducer.Streaming{Lazy: true}
	st.Chat(s, wire.Action(&wire.ChatTurnStartedAction{TurnID: "t", Message: userMsg("go")}), clock)
	st.Chat(s, wire.Action(&wire.ChatResponsePartAction{TurnID: "t", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})}), clock)
	chunk := strings.Repeat("x", 1<<20)
	for st.Pending() <= joinCollectAbove {
		st.Chat(s, wire.Action(&wire.ChatDeltaAction{TurnID: "t", PartID: "m", Content: chunk}), clock)
	}
	runtime.GC() // no cycle under way that could end in between and pass for ours
	before := numGC()
	collectBeforeJoin(&st, wire.Action(&wire.ChatDeltaAction{TurnID: "t", PartID: "m", Content: "more"}))
	end := wire.Action(&wire.ChatTurnCompleteAction{TurnID: "t"})
	collectBeforeJoin(&st, end)
	assert.Greater(t, numGC(), before, "no collection before joining %d bytes", st.Pending())
}

func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}
