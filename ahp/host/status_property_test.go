package host

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// statusChat is what the property test's model knows of one chat.
type statusChat struct {
	uri   string
	turn  string // the active turn, "" when idle
	tool  string // its tool call waiting for a confirmation, or running
	ask   bool   // whether tool waits for a confirmation (else it runs)
	input string // its input request waiting for an answer
	n     int
}

// TestSessionStatusIdleWhenNothingIsBusy is a property over random turn
// sequences on several chats of a session, with and without permission
// prompts, approvals, denials, input requests and cancels (issue 26,
// finding 1): whenever no chat of the session is busy and nothing waits for
// the user, the session's own status is idle — in the host's state, and in
// a fresh snapshot of the session channel in every dialect (0.3.0, 0.7.0,
// 0.9.0, 1.0.0). Before the fix a permission prompt left the session at
// InProgress (8) for ever once its inputNeeded entry was removed.
//
// Under the race detector two seeds run (each still has permission prompts,
// denials and cancels on several chats); .ci/run runs all six without it.
func TestSessionStatusIdleWhenNothingIsBusy(t *testing.T) {
	seeds := uint64(6)
	if testenv.Race {
		seeds = 2
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { sessionStatusProperty(t, seed) })
	}
}

func sessionStatusProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 26))
	hs := newHarness(t, Options{Agents: []wire.AgentInfo{multiChatAgent()}})
	hs.handler.set(func(b *fakeHandler) { b.runTurns = false })
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	s := hs.newSession(c, fmt.Sprint("status-", seed))
	chats := []*statusChat{{uri: s.chat}}
	for i := 1; i < 1+rng.IntN(3); i++ {
		uri := fmt.Sprintf("ahp-chat:/status-%d-%d", seed, i)
		c.mustCall("createChat", map[string]any{"channel": s.uri, "chat": uri}, nil)
		chats = append(chats, &statusChat{uri: uri})
	}
	readers := map[string]*testClient{}
	for _, v := range []string{"0.3.0", "0.7.0", "0.9.0", current} {
		r := hs.dial(t, "reader-"+v)
		res := r.initializeAs([]string{v})
		require.Equal(t, v, res.ProtocolVersion)
		readers[v] = r
	}

	var history []string
	step := func(ch *statusChat, what string, actions ...any) {
		history = append(history, ch.uri+": "+what)
		hs.dispatch(t, ch.uri, actions...)
	}
	for i := 0; i < 60; i++ {
		ch := chats[rng.IntN(len(chats))]
		switch {
		case ch.turn == "":
			ch.n++
			ch.turn = fmt.Sprint("t", ch.n)
			step(ch, "turn", &wire.ChatTurnStartedAction{TurnID: ch.turn, Message: userMsg("go")})
		case ch.tool != "" && ch.ask:
			switch rng.IntN(3) {
			case 0:
				step(ch, "approve", &wire.ChatToolCallApprovedAction{TurnID: ch.turn, ToolCallID: ch.tool, Confirmed: wire.ToolCallConfirmationReasonUserAction})
				ch.ask = false
			case 1:
				step(ch, "deny", &wire.ChatToolCallDeniedAction{TurnID: ch.turn, ToolCallID: ch.tool, Reason: wire.ToolCallCancellationReasonDenied})
				ch.tool = ""
			default:
				step(ch, "cancel while asking", &wire.ChatTurnCancelledAction{TurnID: ch.turn})
				ch.turn, ch.tool = "", ""
			}
		case ch.tool != "":
			step(ch, "tool done", &wire.ChatToolCallCompleteAction{TurnID: ch.turn, ToolCallID: ch.tool,
				Result: wire.ToolCallResult{Success: true, PastTenseMessage: wire.PlainText("Ran it")}})
			ch.tool = ""
		case ch.input != "":
			if rng.IntN(2) == 0 {
				step(ch, "answer", &wire.ChatInputCompletedAction{RequestID: ch.input, Response: wire.ChatInputResponseKindAccept,
					Answers: map[string]wire.ChatInputAnswer{}})
			} else {
				step(ch, "cancel while asking for input", &wire.ChatTurnCancelledAction{TurnID: ch.turn})
				ch.turn = ""
			}
			ch.input = ""
		default:
			switch rng.IntN(5) {
			case 0, 1:
				ch.tool, ch.ask = fmt.Sprintf("tc-%s-%d", ch.turn, i), rng.IntN(3) > 0
				ready := &wire.ChatToolCallReadyAction{TurnID: ch.turn, ToolCallID: ch.tool, InvocationMessage: wire.PlainText("Run it")}
				if !ch.ask {
					ready.Confirmed = wire.Ptr(wire.ToolCallConfirmationReasonNotNeeded)
				}
				step(ch, fmt.Sprintf("tool (asks: %v)", ch.ask),
					&wire.ChatToolCallStartAction{TurnID: ch.turn, ToolCallID: ch.tool, ToolName: "shell", DisplayName: "Shell"}, ready)
			case 2:
				ch.input = fmt.Sprintf("in-%s-%d", ch.turn, i)
				step(ch, "input request", &wire.ChatInputRequestedAction{Request: wire.ChatInputRequest{ID: ch.input, Message: wire.Ptr("Which?")}})
			case 3:
				step(ch, "cancel", &wire.ChatTurnCancelledAction{TurnID: ch.turn})
				ch.turn = ""
			default:
				step(ch, "complete", &wire.ChatTurnCompleteAction{TurnID: ch.turn})
				ch.turn = ""
			}
		}
		checkSessionStatus(t, hs, s.uri, chats, readers, history)
	}
	// Wind every chat down: the session must end idle.
	for _, ch := range chats {
		if ch.turn != "" {
			step(ch, "cancel at the end", &wire.ChatTurnCancelledAction{TurnID: ch.turn})
			ch.turn, ch.tool, ch.input = "", "", ""
		}
	}
	st := checkSessionStatus(t, hs, s.uri, chats, readers, history)
	require.Equal(t, wire.SessionStatusIdle, st.Status.Activity(), "the session after every turn ended\n%v", history)
}

// checkSessionStatus checks the property after one step and returns the
// host's session state.
func checkSessionStatus(t *testing.T, hs *harness, uri string, chats []*statusChat, readers map[string]*testClient, history []string) *wire.SessionState {
	t.Helper()
	st := hs.readSession(t, uri)
	busy := false
	for _, ch := range chats {
		if hs.readChat(t, ch.uri).Status.Has(wire.SessionStatusInProgress) {
			busy = true
		}
	}
	waits := false
	for _, r := range st.InputNeeded {
		if r.Kind() != string(wire.SessionInputRequestKindToolClientExecution) {
			waits = true
		}
	}
	if busy || waits {
		return st
	}
	require.Equal(t, wire.SessionStatusIdle, st.Status.Activity(),
		"the host's session status %d with no chat busy and nothing waiting, after\n%v", st.Status, history)
	for v, r := range readers {
		snap := r.subscribe(uri)
		var got struct {
			Status  wire.SessionStatus `json:"status"`
			Summary *struct {
				Status wire.SessionStatus `json:"status"`
			} `json:"summary"` // 0.3.0: the session's status is its summary's
		}
		require.NoError(t, json.Unmarshal(snap.State, &got))
		if got.Summary != nil {
			got.Status = got.Summary.Status
		}
		require.Equal(t, wire.SessionStatusIdle, got.Status.Activity(),
			"a fresh %s snapshot of the session shows status %d with no chat busy and nothing waiting, after\n%v", v, got.Status, history)
		r.mustCall("unsubscribe", map[string]any{"channel": uri}, nil)
	}
	return st
}
