package mapping

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

func pinnedClock() int64 { return turnStart + turnDuration }

// replay is a ready session and its chat, whose turn t1 has just started:
// what the bridge's actions land on in the host.
type replay struct {
	session *wire.SessionState
	chat    *wire.ChatState
}

func newReplay(t *testing.T) *replay {
	t.Helper()
	cfg := SessionConfig(nil)
	r := &replay{
		session: &wire.SessionState{
			Provider: "test", Title: "test", Lifecycle: wire.SessionLifecycleReady,
			ActiveClients: []wire.SessionActiveClient{}, Chats: []wire.ChatSummary{}, Config: &cfg,
		},
		chat: &wire.ChatState{Resource: "ahp-chat:/c1", Turns: []wire.Turn{}},
	}
	reducer.Chat(r.chat, wire.Action(&wire.ChatTurnStartedAction{
		TurnID:    "t1",
		StartedAt: reducer.FormatTime(turnStart),
		Message:   wire.Message{Text: "go", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}},
	}), pinnedClock)
	require.NotNil(t, r.chat.ActiveTurn)
	return r
}

// apply reduces a into the state of the channel it belongs to.
func (r *replay) apply(a wire.StateAction) {
	if OnSession(a) {
		reducer.Session(r.session, a, pinnedClock)
		return
	}
	reducer.Chat(r.chat, a, pinnedClock)
}

// encoded is both states as JSON, to tell whether an action changed them.
func (r *replay) encoded(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal([]any{r.session, r.chat})
	require.NoError(t, err)
	return string(b)
}

// TestGoldenThroughReducer feeds every scenario's actions (with the client's
// confirmations in between) through the AHP 0.7.0 reducers, session/*
// actions into the session and chat/* into the chat, and checks that each
// action takes effect — the reducers silently ignore actions that do not fit
// the state, which would hide a mapping bug — and that the resulting state
// says what the events said.
func TestGoldenThroughReducer(t *testing.T) {
	for _, file := range scenarioFiles(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".in.json")
		t.Run(name, func(t *testing.T) {
			steps := loadSteps(t, file)
			_, _, timeline := runTimeline(t, steps)
			r := newReplay(t)

			text := map[string]string{} // part id → streamed text
			completed := map[string]bool{}
			for i, a := range timeline {
				before := r.encoded(t)
				r.apply(a)
				raw, _ := json.Marshal(a)
				require.NotEqual(t, before, r.encoded(t), "action %d had no effect: %s", i, raw)

				switch v := a.Value.(type) {
				case *wire.ChatDeltaAction:
					text[v.PartID] += v.Content
				case *wire.ChatReasoningAction:
					text[v.PartID] += v.Content
				case *wire.ChatToolCallCompleteAction:
					completed[v.ToolCallID] = v.Result.Success
				}
			}

			// The states must survive JSON.
			b, err := json.Marshal(r.session)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, new(wire.SessionState)))
			b, err = json.Marshal(r.chat)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, new(wire.ChatState)))

			s := r.chat
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
			require.Equal(t, wire.Ptr[int64](turnDuration), s.Turns[0].Duration, "the turn's duration")
			require.Equal(t, wire.Ptr(reducer.FormatTime(turnStart)), s.Turns[0].StartedAt)

			// Since AHP 0.9.0 a failed turn's error is its last response
			// part, and the bridge never offers to resume it.
			last := s.Turns[0].ResponseParts[len(s.Turns[0].ResponseParts)-1]
			ep, isErr := last.Value.(*wire.ErrorResponsePart)
			require.Equal(t, ended == string(wire.TurnStateError), isErr, "the turn's last part: %+v", last.Value)
			if isErr {
				require.NotEmpty(t, ep.Error.Message)
				require.Nil(t, ep.Resumable, "the bridge cannot resume an ACP prompt")
			}
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

func finalParts(t *testing.T, s *wire.ChatState) []wire.ResponsePart {
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
		"tool_intention":    {"a1": "completed", "b1": "completed", "c1": "completed"},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, timeline := runTimeline(t, loadSteps(t, filepath.Join("testdata", "turn", name+".in.json")))
			r := newReplay(t)
			for _, a := range timeline {
				r.apply(a)
			}
			got := map[string]string{}
			for _, p := range finalParts(t, r.chat) {
				if v, ok := p.Value.(*wire.ToolCallResponsePart); ok {
					id, status := toolCallStatus(t, v.ToolCall)
					got[id] = status
				}
			}
			require.Equal(t, want, got)
		})
	}
}

// TestToolCallIntentions pins what clients show as each tool call's
// intention: none for a title that only names the tool, the ACP title
// otherwise, and a title the agent changed before the call ran replaces
// the provisional one.
func TestToolCallIntentions(t *testing.T) {
	_, _, timeline := runTimeline(t, loadSteps(t, filepath.Join("testdata", "turn", "tool_intention.in.json")))
	r := newReplay(t)
	for _, a := range timeline {
		r.apply(a)
	}
	got := map[string]string{}
	for _, p := range finalParts(t, r.chat) {
		if v, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			got[v.ToolCall.ToolCallID()] = deref(v.ToolCall.Intention())
		}
	}
	require.Equal(t, map[string]string{"a1": "", "b1": "Read /p/b.txt", "c1": "Run `go test ./mapping`"}, got)
}

// TestCustomStatusSurvivesCompletion: an ACP v2 custom status stays in the
// tool call's _meta after it completes (AHP 0.7.0 replaces the _meta with
// each action's).
func TestCustomStatusSurvivesCompletion(t *testing.T) {
	_, _, timeline := runTimeline(t, loadSteps(t, filepath.Join("testdata", "turn", "tool_custom_v2.in.json")))
	r := newReplay(t)
	for _, a := range timeline {
		r.apply(a)
	}
	for _, p := range finalParts(t, r.chat) {
		if v, ok := p.Value.(*wire.ToolCallResponsePart); ok && v.ToolCall.ToolCallID() == "c1" {
			require.Equal(t, string(wire.ToolCallStatusCompleted), v.ToolCall.Status())
			require.Equal(t, "_deploying", v.ToolCall.Meta()["status"])
			return
		}
	}
	t.Fatal("no tool call c1")
}
