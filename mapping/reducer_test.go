package mapping

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

func pinnedClock() int64 { return 9999 }

// newActiveSession is a ready session whose turn t1 has just started.
func newActiveSession(t *testing.T) *wire.SessionState {
	t.Helper()
	cfg := SessionConfig(nil)
	s := &wire.SessionState{
		Summary:   wire.SessionSummary{Resource: "ahp-session:/s1", Provider: "test", Title: "test"},
		Lifecycle: wire.SessionLifecycleReady,
		Turns:     []wire.Turn{},
		Config:    &cfg,
	}
	reducer.Session(s, wire.Action(&wire.SessionTurnStartedAction{
		TurnID:  "t1",
		Message: wire.Message{Text: "go", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}},
	}), pinnedClock)
	require.NotNil(t, s.ActiveTurn)
	return s
}

// TestGoldenThroughReducer feeds every scenario's actions (with the client's
// confirmations in between) through the AHP session reducer and checks that
// each action takes effect — the reducer silently ignores actions that do not
// fit the state, which would hide a mapping bug — and that the resulting
// state says what the events said.
func TestGoldenThroughReducer(t *testing.T) {
	for _, file := range scenarioFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".in.json")
		t.Run(name, func(t *testing.T) {
			steps := loadSteps(t, file)
			_, _, timeline := runTimeline(t, steps)
			s := newActiveSession(t)

			text := map[string]string{} // part id → streamed text
			completed := map[string]bool{}
			for i, a := range timeline {
				before, err := json.Marshal(s)
				require.NoError(t, err)
				reducer.Session(s, a, pinnedClock)
				after, err := json.Marshal(s)
				require.NoError(t, err)
				raw, _ := json.Marshal(a)
				require.NotEqual(t, string(before), string(after), "action %d had no effect: %s", i, raw)

				switch v := a.Value.(type) {
				case *wire.SessionDeltaAction:
					text[v.PartID] += v.Content
				case *wire.SessionReasoningAction:
					text[v.PartID] += v.Content
				case *wire.SessionToolCallCompleteAction:
					completed[v.ToolCallID] = v.Result.Success
				}
			}

			// The state must survive JSON.
			b, err := json.Marshal(s)
			require.NoError(t, err)
			var back wire.SessionState
			require.NoError(t, json.Unmarshal(b, &back))

			parts := finalParts(t, s)
			seen := map[string]bool{}
			for _, p := range parts {
				switch v := p.Value.(type) {
				case *wire.MarkdownResponsePart:
					if want, ok := text[v.ID]; ok {
						require.Equal(t, want, v.Content, "markdown part %s", v.ID)
						seen[v.ID] = true
					}
				case *wire.ReasoningResponsePart:
					require.Equal(t, text[v.ID], v.Content, "reasoning part %s", v.ID)
					seen[v.ID] = true
				case *wire.ToolCallResponsePart:
					id, status := toolCallStatus(t, v.ToolCall)
					if success, ok := completed[id]; ok {
						require.Equal(t, string(wire.ToolCallStatusCompleted), status, "tool call %s", id)
						c := v.ToolCall.Value.(*wire.ToolCallCompletedState)
						require.Equal(t, success, c.Success, "tool call %s", id)
					} else {
						require.NotEqual(t, string(wire.ToolCallStatusCompleted), status, "tool call %s completed without toolCallComplete", id)
					}
				}
			}
			for id := range text {
				require.True(t, seen[id], "streamed part %s is not in the state", id)
			}

			ended := lastEnd(steps)
			if ended == "" {
				require.NotNil(t, s.ActiveTurn, "turn must still be active")
				return
			}
			require.Nil(t, s.ActiveTurn, "turn must have ended")
			require.Len(t, s.Turns, 1)
			require.Equal(t, ended, string(s.Turns[0].State))
		})
	}
}

// lastEnd is the AHP turn state the scenario's first end step leads to, or
// "" when the turn never ends.
func lastEnd(steps []step) string {
	for _, s := range steps {
		switch {
		case s.Disconnect != nil:
			return string(wire.TurnStateError)
		case s.End != nil:
			switch {
			case s.End.Error != "", s.End.StopReason == "refusal":
				return string(wire.TurnStateError)
			case s.End.StopReason == "cancelled":
				return string(wire.TurnStateCancelled)
			default:
				return string(wire.TurnStateComplete)
			}
		}
	}
	return ""
}

func finalParts(t *testing.T, s *wire.SessionState) []wire.ResponsePart {
	t.Helper()
	if s.ActiveTurn != nil {
		return s.ActiveTurn.ResponseParts
	}
	require.NotEmpty(t, s.Turns)
	return s.Turns[len(s.Turns)-1].ResponseParts
}

func toolCallStatus(t *testing.T, tc wire.ToolCallState) (id, status string) {
	t.Helper()
	b, err := json.Marshal(tc)
	require.NoError(t, err)
	var head struct {
		ToolCallID string `json:"toolCallId"`
		Status     string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(b, &head))
	return head.ToolCallID, head.Status
}

// TestReducerToolCallOutcomes pins the end states of the tool calls of a
// few scenarios.
func TestReducerToolCallOutcomes(t *testing.T) {
	cases := map[string]map[string]string{
		"permission_denied": {"c1": "cancelled"},
		"auto_policy":       {"r1": "completed", "w1": "cancelled"},
		"end_cancelled":     {"c1": "cancelled"},
		"end_error":         {"c1": "cancelled"},
		"agentchan_task":    {"tc1": "completed", "tc2": "completed"},
		"permission_reopen": {"c1": "completed", "c1#2": "completed"},
		"tool_failed":       {"c1": "completed"},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, timeline := runTimeline(t, loadSteps(t, filepath.Join("testdata", "turn", name+".in.json")))
			s := newActiveSession(t)
			for _, a := range timeline {
				reducer.Session(s, a, pinnedClock)
			}
			got := map[string]string{}
			for _, p := range finalParts(t, s) {
				if v, ok := p.Value.(*wire.ToolCallResponsePart); ok {
					id, status := toolCallStatus(t, v.ToolCall)
					got[id] = status
				}
			}
			require.Equal(t, want, got)
		})
	}
}
