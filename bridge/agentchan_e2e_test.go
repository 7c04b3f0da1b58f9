package bridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/agentchan"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	fake "github.com/ahp-bridge/ahp-bridge/internal/fakeagentchan"
)

// These tests drive an agent-channel backend (the scriptable fake server)
// through the whole bridge — agentchan provider, bridge, host, WebSocket
// transport — with the Go AHP 0.7.0 client, as a real client would, and
// check the session and chat states the client ends up with and the frames
// the backend received. A session URI stands for its default chat where a
// chat is meant.

// acWait bounds every wait: generous, because a loaded 2-core machine
// running the race detector is slow; a passing test never waits this long.
const acWait = 30 * time.Second

// acToken is the agent-channel backend's token.
const acToken = "ws-secret"

// acEnv is a bridge over one agent-channel provider "ws" backed by a fake
// server, with a client and a ready session.
type acEnv struct {
	fake    *fake.Server
	c       *client.Client
	channel string // the session
	url     string // the bridge's WebSocket URL
}

// startAgentchan starts the fake with script, a bridge over it, a client,
// and a session on provider "ws".
func startAgentchan(t *testing.T, script fake.Script) *acEnv {
	t.Helper()
	return startAgentchanWith(t, script, acSetup{})
}

// acSetup tunes startAgentchanWith.
type acSetup struct {
	opts bridgetest.Options
	// config adjusts the provider's configuration.
	config func(*agentchan.Config)
}

// startAgentchanWith is startAgentchan with a setup.
func startAgentchanWith(t *testing.T, script fake.Script, setup acSetup) *acEnv {
	t.Helper()
	srv := fake.New(fake.Options{Token: acToken, Script: script})
	t.Cleanup(srv.Close) // runs after the bridge's cleanup (LIFO)
	cfg := agentchan.Config{
		ID:             "ws",
		URL:            srv.URL(),
		Token:          acToken,
		Models:         []backend.ModelInfo{{ID: "model-a"}, {ID: "model-b"}},
		BackoffInitial: 20 * time.Millisecond,
		BackoffMax:     200 * time.Millisecond,
	}
	if setup.config != nil {
		setup.config(&cfg)
	}
	p := agentchan.NewProvider(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel))
	env := bridgetest.Start(t, []backend.Provider{p}, setup.opts)
	c := env.Client(t)
	ch := bridgetest.CreateSession(t, c, "ws", t.TempDir())
	return &acEnv{fake: srv, c: c, channel: ch, url: env.URL}
}

// acCtx is the context of one wait: it ends after acWait or with the test.
func acCtx(t *testing.T) context.Context { return bridgetest.Context(t, acWait) }

// waitReceived waits until the fake has received n agent frames of type typ
// and returns them.
func (e *acEnv) waitReceived(t *testing.T, typ string, n int) []fake.ClientFrame {
	t.Helper()
	ok := e.fake.WaitFor(acWait, func() bool { return len(e.fake.ReceivedOfType(typ)) >= n })
	require.True(t, ok, "the backend did not receive %d %q frame(s); got %v", n, typ, acFrameTypes(e.fake.Received()))
	return e.fake.ReceivedOfType(typ)
}

// waitActive waits until the default chat's active turn satisfies pred.
func (e *acEnv) waitActive(t *testing.T, what string, pred func(*wire.ActiveTurn) bool) *wire.ChatState {
	t.Helper()
	st, err := e.c.WaitForChat(acCtx(t), e.channel, func(s *wire.ChatState) bool {
		return s.ActiveTurn != nil && pred(s.ActiveTurn)
	})
	require.NoError(t, err, "waiting for %s", what)
	return st
}

// chat is the session's default chat.
func (e *acEnv) chat(t *testing.T) string {
	t.Helper()
	chat, err := e.c.DefaultChat(e.channel)
	require.NoError(t, err)
	return chat
}

// dispatch dispatches a chat action on the default chat, or a session
// action on the session, and waits for its echo.
func (e *acEnv) dispatch(t *testing.T, v any) {
	t.Helper()
	a := wire.Action(v)
	ch := e.channel
	if strings.HasPrefix(a.Type(), "chat/") {
		ch = e.chat(t)
	}
	_, err := e.c.Confirm(acCtx(t), ch, a)
	require.NoError(t, err)
}

// waitNoInput waits until the session waits for no answer any more (the
// host updates the session's inputNeeded right after the chat, so a
// client sees the chat change first).
func (e *acEnv) waitNoInput(t *testing.T, what string) {
	t.Helper()
	_, err := e.c.WaitFor(acCtx(t), e.channel, func(s *wire.SessionState) bool { return len(client.PendingInputs(s)) == 0 })
	require.NoError(t, err, "waiting for %s", what)
}

// waitInput waits until the session waits for an answer to an input
// request and returns it.
func (e *acEnv) waitInput(t *testing.T) wire.ChatInputRequest {
	t.Helper()
	st, err := e.c.WaitFor(acCtx(t), e.channel, func(s *wire.SessionState) bool { return len(client.PendingInputs(s)) > 0 })
	require.NoError(t, err)
	inputs := client.PendingInputs(st)
	require.Len(t, inputs, 1)
	assert.Equal(t, e.chat(t), inputs[0].Chat, "the request is the default chat's")
	return inputs[0].Request
}

func acFrameTypes(fs []fake.ClientFrame) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Channel+"/"+f.Type)
	}
	return out
}

// acMarkdown concatenates the markdown parts, as a client displays them.
func acMarkdown(parts []wire.ResponsePart) string {
	var b strings.Builder
	for _, p := range parts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// acPartKinds lists the parts as "markdown", "reasoning" or "tool:<id>".
func acPartKinds(parts []wire.ResponsePart) []string {
	var out []string
	for _, p := range parts {
		switch v := p.Value.(type) {
		case *wire.MarkdownResponsePart:
			out = append(out, "markdown")
		case *wire.ReasoningResponsePart:
			out = append(out, "reasoning")
		case *wire.ToolCallResponsePart:
			out = append(out, "tool:"+acToolCallID(v.ToolCall))
		default:
			out = append(out, p.Kind())
		}
	}
	return out
}

func acToolCallID(tc wire.ToolCallState) string {
	b, err := json.Marshal(tc)
	if err != nil {
		return ""
	}
	var v struct {
		ToolCallID string `json:"toolCallId"`
	}
	_ = json.Unmarshal(b, &v)
	return v.ToolCallID
}

// toolCall returns the state of tool call id among parts.
func acToolCall(t *testing.T, parts []wire.ResponsePart, id string) any {
	t.Helper()
	for _, p := range parts {
		if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok && acToolCallID(tc.ToolCall) == id {
			return tc.ToolCall.Value
		}
	}
	require.Failf(t, "no such tool call", "tool call %q not in parts %v", id, acPartKinds(parts))
	return nil
}

func acCompletedTool(t *testing.T, parts []wire.ResponsePart, id string) *wire.ToolCallCompletedState {
	t.Helper()
	v := acToolCall(t, parts, id)
	c, ok := v.(*wire.ToolCallCompletedState)
	require.True(t, ok, "tool call %q is %T, want completed", id, v)
	return c
}

func acResultTexts(content []wire.ToolResultContent) []string {
	var out []string
	for _, c := range content {
		if tx, ok := c.Value.(*wire.ToolResultTextContent); ok {
			out = append(out, tx.Text)
		}
	}
	return out
}

// A whole task: thinking, text, a tool call with its result, more text and
// the result; the prompt carries the AHP turn id as its taskId.
func TestAgentchanFullTask(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.Thinking("Let me look."),
			fake.Text("Reading "),
			fake.Text("the README."),
			fake.ToolInvocation("tc-1", "read_file", map[string]any{"path": "README.md"}),
			fake.ToolResult("tc-1", "# Title"),
			fake.Text("It has a title."),
			fake.Result("A summary that repeats the answer."),
		}
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "What is in the README?")
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)

	prompts := e.waitReceived(t, "prompt", 1)
	require.Len(t, prompts, 1)
	assert.Equal(t, turnID, prompts[0].String("taskId"), "the taskId is the AHP turn id")
	assert.Equal(t, "What is in the README?", prompts[0].String("prompt"))

	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Nil(t, client.TurnError(&turn))
	assert.Equal(t, []string{"reasoning", "markdown", "tool:tc-1", "markdown"}, acPartKinds(turn.ResponseParts))
	r, ok := turn.ResponseParts[0].Value.(*wire.ReasoningResponsePart)
	require.True(t, ok)
	assert.Equal(t, "Let me look.", r.Content)
	assert.Equal(t, "Reading the README.It has a title.", acMarkdown(turn.ResponseParts),
		"streamed text, without the summary that repeats it")

	tc := acCompletedTool(t, turn.ResponseParts, "tc-1")
	assert.True(t, tc.Success)
	assert.Equal(t, "read_file", tc.DisplayName)
	assert.Equal(t, "read", tc.ToolName, "the tool kind guessed from the name")
	assert.Equal(t, []string{"# Title"}, acResultTexts(tc.Content))
	assert.Equal(t, map[string]any{"value": "# Title"}, tc.StructuredContent, "a string result, as structured content")
	require.NotNil(t, tc.ToolInput)
	assert.JSONEq(t, `{"path":"README.md"}`, tc.ToolInput.Text)
	assert.Nil(t, tc.Intention, "a title that only names the tool says nothing about the intent")
}

// Permission requests of every plausible frame type, naming a tool call or
// not, approved or rejected: the client sees a pending confirmation, and
// the backend gets approve/reject with the request id.
func TestAgentchanPermission(t *testing.T) {
	for _, typ := range []string{"permission", "permission_request", "approval_request"} {
		for _, withCall := range []bool{true, false} {
			for _, approve := range []bool{true, false} {
				name := typ
				if withCall {
					name += "/toolCallId"
				} else {
					name += "/noToolCallId"
				}
				if approve {
					name += "/approve"
				} else {
					name += "/reject"
				}
				t.Run(name, func(t *testing.T) {
					testAgentchanPermission(t, typ, withCall, approve)
				})
			}
		}
	}
}

func testAgentchanPermission(t *testing.T, typ string, withCall, approve bool) {
	callID, wantID := "", "perm-req-7"
	if withCall {
		callID, wantID = "tc-1", "tc-1"
	}
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		var steps []fake.Step
		if withCall {
			steps = append(steps, fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "rm -rf build"}))
		}
		return append(steps,
			fake.Permission(typ, "req-7", callID, "Delete build/?"),
			fake.Await("approve", "reject"),
			fake.Text("Answered."),
			fake.Result("done"),
		)
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "clean up")
	id := bridgetest.WaitPendingTool(t, e.c, e.channel, acWait)
	require.Equal(t, wantID, id)

	st, err := e.c.Chat(e.channel)
	require.NoError(t, err)
	pending, ok := acToolCall(t, st.ActiveTurn.ResponseParts, id).(*wire.ToolCallPendingConfirmationState)
	require.True(t, ok)
	assert.Equal(t, "Delete build/?", pending.InvocationMessage.Text)
	var optionIDs []string
	for _, o := range pending.Options {
		optionIDs = append(optionIDs, o.ID)
	}
	assert.Equal(t, []string{agentchan.OptionApprove, agentchan.OptionReject}, optionIDs)

	if approve {
		e.dispatch(t, acApprove(turnID, id))
	} else {
		e.dispatch(t, acDeny(turnID, id))
	}
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)

	answer, other := "approve", "reject"
	if !approve {
		answer, other = other, answer
	}
	got := e.waitReceived(t, answer, 1)
	require.Len(t, got, 1)
	assert.Equal(t, "req-7", got[0].String("requestId"))
	assert.Empty(t, e.fake.ReceivedOfType(other))

	if approve {
		tc := acCompletedTool(t, turn.ResponseParts, id)
		assert.True(t, tc.Success, "an approved call still running at the result is completed")
	} else {
		c, ok := acToolCall(t, turn.ResponseParts, id).(*wire.ToolCallCancelledState)
		require.True(t, ok, "a rejected call is cancelled")
		assert.Equal(t, wire.ToolCallCancellationReasonDenied, c.Reason)
	}
	assert.Equal(t, "Answered.", acMarkdown(turn.ResponseParts))
}

// A question becomes an input request; the client's answers (or its
// refusal) reach the backend as the tool_response of the asking tool call.
func TestAgentchanQuestion(t *testing.T) {
	cases := []struct {
		name     string
		response wire.ChatInputResponseKind
		answers  []string
		want     string
	}{
		{"answered", wire.ChatInputResponseKindAccept, []string{"blue", "large"}, "blue\nlarge"},
		{"declined", wire.ChatInputResponseKindDecline, nil, agentchan.DeclinedAnswer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
				return []fake.Step{
					fake.ToolInvocation("tc-ask", "ask_user", map[string]any{}),
					fake.Question("Which color?", "Which size?"),
					fake.Await("tool_response"),
					fake.ToolResult("tc-ask", "noted"),
					fake.Result("Ordered."),
				}
			})
			turnID := bridgetest.StartTurn(t, e.c, e.channel, "order a shirt")
			req := e.waitInput(t)
			require.Len(t, req.Questions, 2)
			var qids, messages []string
			for _, q := range req.Questions {
				tq, ok := q.Value.(*wire.ChatInputTextQuestion)
				require.True(t, ok, "question is %T, want a text question", q.Value)
				qids = append(qids, tq.ID)
				messages = append(messages, tq.Message)
			}
			assert.Equal(t, []string{"Which color?", "Which size?"}, messages)

			act := &wire.ChatInputCompletedAction{RequestID: req.ID, Response: tc.response}
			if tc.answers != nil {
				act.Answers = map[string]wire.ChatInputAnswer{}
				for i, a := range tc.answers {
					act.Answers[qids[i]] = acTextAnswer(a)
				}
			}
			e.dispatch(t, act)

			got := e.waitReceived(t, "tool_response", 1)
			require.Len(t, got, 1)
			assert.Equal(t, "tc-ask", got[0].String("toolCallId"))
			assert.Equal(t, tc.want, got[0].String("result"))

			turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
			assert.Equal(t, wire.TurnStateComplete, turn.State)
			assert.Equal(t, []string{"noted"}, acResultTexts(acCompletedTool(t, turn.ResponseParts, "tc-ask").Content))
			assert.Equal(t, "Ordered.", acMarkdown(turn.ResponseParts), "the summary is the answer when no text streamed")
			e.waitNoInput(t, "the answered question to leave the session's inputNeeded")
		})
	}
}

// An error frame ends the turn in error; a tool call still running fails.
func TestAgentchanError(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.Text("Working on it."),
			fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "make"}),
			fake.Error("quota exceeded"),
		}
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "build it")
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateError, turn.State)
	require.NotNil(t, client.TurnError(&turn))
	assert.Equal(t, "runtime", client.TurnError(&turn).ErrorType)
	assert.Contains(t, client.TurnError(&turn).Message, "quota exceeded")
	assert.Equal(t, "Working on it.", acMarkdown(turn.ResponseParts))
	tc := acCompletedTool(t, turn.ResponseParts, "tc-1")
	assert.False(t, tc.Success, "a tool call running when the task failed has failed")
}

// Cancelling a turn aborts the task; the task's late frames are dropped and
// the next turn works.
func TestAgentchanAbort(t *testing.T) {
	var first atomic.Value // the first prompt's taskId, as the backend saw it
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		if p.String("prompt") == "first" {
			first.Store(p.String("taskId"))
			return []fake.Step{
				fake.Text("Working."),
				fake.Await("abort"),
				fake.Text(" late text"),
				fake.Result("late result"),
			}
		}
		// Late frames of the aborted task, sent before this task's own.
		first, _ := first.Load().(string)
		return []fake.Step{
			fake.Send(map[string]any{"type": "text", "content": "late again", "taskId": first}),
			fake.Send(map[string]any{"type": "tool_invocation", "toolCallId": "late-tc", "toolName": "bash", "taskId": first}),
			fake.Send(map[string]any{"type": "result", "summary": "late", "taskId": first}),
			fake.Text("Second answer."),
			fake.Result("done"),
		}
	})
	turn1 := bridgetest.StartTurn(t, e.c, e.channel, "first")
	e.waitActive(t, "the first text", func(a *wire.ActiveTurn) bool { return acMarkdown(a.ResponseParts) == "Working." })
	e.dispatch(t, &wire.ChatTurnCancelledAction{TurnID: turn1})

	aborts := e.waitReceived(t, "abort", 1)
	require.Len(t, aborts, 1)
	assert.Equal(t, turn1, aborts[0].String("taskId"))
	ended := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn1, acWait)
	assert.Equal(t, wire.TurnStateCancelled, ended.State)

	turn2 := bridgetest.StartTurn(t, e.c, e.channel, "second")
	done := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn2, acWait)
	assert.Equal(t, wire.TurnStateComplete, done.State)
	assert.Equal(t, []string{"markdown"}, acPartKinds(done.ResponseParts), "no late frame of the aborted task")
	assert.Equal(t, "Second answer.", acMarkdown(done.ResponseParts))

	st, err := e.c.Chat(e.channel)
	require.NoError(t, err)
	require.Len(t, st.Turns, 2)
	assert.Equal(t, "Working.", acMarkdown(st.Turns[0].ResponseParts), "the cancelled turn kept what it had")
	prompts := e.fake.ReceivedOfType("prompt")
	require.Len(t, prompts, 2)
	assert.Equal(t, turn2, prompts[1].String("taskId"))
}

// A connection dropped mid-task ends the turn with an error saying so; the
// provider reconnects and the next turn works. A drop between turns is
// invisible to the client.
func TestAgentchanReconnect(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		if p.String("prompt") == "drop" {
			return []fake.Step{fake.Text("Before the drop."), fake.Drop()}
		}
		return []fake.Step{fake.Text("Answer on connection."), fake.Result("done")}
	})
	turn1 := bridgetest.StartTurn(t, e.c, e.channel, "drop")
	ended := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn1, acWait)
	assert.Equal(t, wire.TurnStateError, ended.State)
	require.NotNil(t, client.TurnError(&ended))
	assert.Equal(t, "runtime", client.TurnError(&ended).ErrorType)
	assert.Contains(t, client.TurnError(&ended).Message, "connection to the agent-channel backend was lost")
	assert.Equal(t, "Before the drop.", acMarkdown(ended.ResponseParts))

	turn2 := bridgetest.StartTurn(t, e.c, e.channel, "again")
	done := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn2, acWait)
	assert.Equal(t, wire.TurnStateComplete, done.State)
	assert.Equal(t, "Answer on connection.", acMarkdown(done.ResponseParts))
	prompts := e.fake.ReceivedOfType("prompt")
	require.Len(t, prompts, 2)
	assert.Equal(t, 2, prompts[1].Conn, "the second prompt went over the new connection")
	assert.Equal(t, turn2, prompts[1].String("taskId"))

	// A drop while idle: wait for the reconnection so that the prompt is
	// not written to the socket being torn down.
	require.Equal(t, 1, e.fake.DropAll())
	require.True(t, e.fake.WaitFor(acWait, func() bool { return e.fake.Connections() == 3 }))
	turn3 := bridgetest.StartTurn(t, e.c, e.channel, "after idle drop")
	done = bridgetest.WaitTurnEnd(t, e.c, e.channel, turn3, acWait)
	assert.Equal(t, wire.TurnStateComplete, done.State)
	assert.Equal(t, "Answer on connection.", acMarkdown(done.ResponseParts))
	prompts = e.fake.ReceivedOfType("prompt")
	require.Len(t, prompts, 3)
	assert.Equal(t, 3, prompts[2].Conn)
}

// Frames of other channels, of unknown types, of other tasks, and messages
// that are not frames at all are ignored.
func TestAgentchanIgnoresUnknown(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.OtherChannel("terminal", "output"),
			fake.OtherChannel("files", "changed"),
			fake.Send(map[string]any{"type": "mystery", "content": "?"}),
			fake.Send(map[string]any{"type": "text", "content": "someone else's", "taskId": "other-task"}),
			fake.Raw([]byte("not json")),
			fake.Raw([]byte(`{"channel":"agent"}`)),
			fake.Raw([]byte(`{"channel":"agent","type":"text","content":42}`)),
			fake.Raw([]byte(`[1,2,3]`)),
			fake.Text("The real answer."),
			fake.Result("done"),
		}
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "hello")
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, []string{"markdown"}, acPartKinds(turn.ResponseParts))
	assert.Equal(t, "The real answer.", acMarkdown(turn.ResponseParts))
	assert.Equal(t, 1, e.fake.Connections(), "odd frames do not cost the connection")
}

// The result's summary is the answer when no text was streamed, and tool
// calls still running at the result are completed.
func TestAgentchanResultSummary(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.Thinking("Planning."),
			fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "make"}),
			fake.Result("Built **everything**."),
		}
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "build")
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, []string{"reasoning", "tool:tc-1", "markdown"}, acPartKinds(turn.ResponseParts))
	assert.Equal(t, "Built **everything**.", acMarkdown(turn.ResponseParts))
	tc := acCompletedTool(t, turn.ResponseParts, "tc-1")
	assert.True(t, tc.Success)
	assert.Equal(t, "execute", tc.ToolName)
}

// A turn's model becomes `settings {model}` before the turn's prompt when
// it differs from the one the backend runs; a model chosen during a turn
// (on the chat's draft, as clients do) is sent before the next turn.
func TestAgentchanModelChanged(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		if p.String("prompt") != "list" {
			return []fake.Step{fake.Result("done")}
		}
		return []fake.Step{
			fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "ls"}),
			fake.Permission("permission", "req-1", "tc-1", ""),
			fake.Await("approve", "reject"),
			fake.Result("done"),
		}
	})
	_, err := e.c.SelectModel(acCtx(t), e.channel, &wire.ModelSelection{ID: "model-b"})
	require.NoError(t, err)
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "list")
	got := e.waitReceived(t, "settings", 1)
	require.Len(t, got, 1)
	assert.Equal(t, "model-b", got[0].String("model"))
	assert.False(t, got[0].Has("provider"))

	id := bridgetest.WaitPendingTool(t, e.c, e.channel, acWait)
	_, err = e.c.SelectModel(acCtx(t), e.channel, &wire.ModelSelection{ID: "model-a"})
	require.NoError(t, err)
	e.dispatch(t, acApprove(turnID, id))
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	require.NotNil(t, turn.Message.Model)
	assert.Equal(t, "model-b", turn.Message.Model.ID, "the turn records the model it asked for")

	again := bridgetest.StartTurn(t, e.c, e.channel, "again")
	bridgetest.WaitTurnEnd(t, e.c, e.channel, again, acWait)
	same := bridgetest.StartTurn(t, e.c, e.channel, "same model")
	bridgetest.WaitTurnEnd(t, e.c, e.channel, same, acWait)
	got = e.waitReceived(t, "settings", 2)
	require.Len(t, got, 2)
	assert.Equal(t, "model-a", got[1].String("model"))
	assert.Equal(t, []string{"agent/settings", "agent/prompt", "agent/approve", "agent/settings", "agent/prompt", "agent/prompt"},
		acFrameTypes(e.fake.Received()), "a model chosen during a turn is sent before the next one, and only when it changes")
}

// A server that does not echo the taskId on its frames works too: frames
// without one belong to the running task.
func TestAgentchanFramesWithoutTaskID(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.SendNoTask(map[string]any{"type": "thinking", "content": "Hmm."}),
			fake.SendNoTask(map[string]any{"type": "tool_invocation", "toolCallId": "tc-1", "toolName": "grep", "args": map[string]any{"pattern": "x"}}),
			fake.SendNoTask(map[string]any{"type": "tool_result", "toolCallId": "tc-1", "result": map[string]any{"matches": 3}}),
			fake.SendNoTask(map[string]any{"type": "text", "content": "Three matches."}),
			fake.SendNoTask(map[string]any{"type": "result", "summary": "done"}),
		}
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "count")
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, []string{"reasoning", "tool:tc-1", "markdown"}, acPartKinds(turn.ResponseParts))
	tc := acCompletedTool(t, turn.ResponseParts, "tc-1")
	assert.Equal(t, "search", tc.ToolName)
	assert.Equal(t, []string{`{"matches":3}`}, acResultTexts(tc.Content))
	assert.Equal(t, map[string]any{"matches": float64(3)}, tc.StructuredContent)
	assert.Equal(t, "Three matches.", acMarkdown(turn.ResponseParts))
}

// Cancelling a turn that waits for the user answers what it waited for,
// then aborts the task.
func TestAgentchanCancelWhileWaiting(t *testing.T) {
	t.Run("permission", func(t *testing.T) {
		e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
			return []fake.Step{
				fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "rm -rf /"}),
				fake.Permission("permission_request", "req-1", "tc-1", "Really?"),
				fake.Await("abort"),
			}
		})
		turnID := bridgetest.StartTurn(t, e.c, e.channel, "wipe")
		bridgetest.WaitPendingTool(t, e.c, e.channel, acWait)
		e.dispatch(t, &wire.ChatTurnCancelledAction{TurnID: turnID})
		turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
		assert.Equal(t, wire.TurnStateCancelled, turn.State)
		e.waitReceived(t, "abort", 1)
		assert.Equal(t, []string{"agent/prompt", "agent/reject", "agent/abort"}, acFrameTypes(e.fake.Received()),
			"the request is rejected before the task is aborted")
		assert.Equal(t, "req-1", e.fake.ReceivedOfType("reject")[0].String("requestId"))
		assert.Empty(t, e.fake.ReceivedOfType("approve"))
		_, ok := acToolCall(t, turn.ResponseParts, "tc-1").(*wire.ToolCallCancelledState)
		assert.True(t, ok, "the pending tool call is cancelled")
	})
	t.Run("question", func(t *testing.T) {
		e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
			return []fake.Step{
				fake.ToolInvocation("tc-1", "ask", nil),
				fake.Question("Why?"),
				fake.Await("abort"),
			}
		})
		turnID := bridgetest.StartTurn(t, e.c, e.channel, "ask me")
		e.waitInput(t)
		e.dispatch(t, &wire.ChatTurnCancelledAction{TurnID: turnID})
		turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
		assert.Equal(t, wire.TurnStateCancelled, turn.State)
		aborts := e.waitReceived(t, "abort", 1)
		assert.Equal(t, turnID, aborts[0].String("taskId"))
		assert.Equal(t, []string{"agent/prompt", "agent/tool_response", "agent/abort"}, acFrameTypes(e.fake.Received()),
			"the question is answered as declined before the task is aborted")
		assert.Equal(t, agentchan.DeclinedAnswer, e.fake.ReceivedOfType("tool_response")[0].String("result"))
		e.waitNoInput(t, "the question to go with the turn")
	})
}

// A question that no open tool call asked is answered with a follow-up
// prompt of the same task.
func TestAgentchanQuestionWithoutToolCall(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		if p.String("prompt") != "greet me" {
			return nil // the follow-up carrying the answer; the first script goes on
		}
		return []fake.Step{
			fake.Question("What is your name?"),
			fake.Await("prompt"),
			fake.Text("Hello!"),
			fake.Result("done"),
		}
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "greet me")
	req := e.waitInput(t)
	require.Len(t, req.Questions, 1)
	q, ok := req.Questions[0].Value.(*wire.ChatInputTextQuestion)
	require.True(t, ok)
	e.dispatch(t, &wire.ChatInputCompletedAction{
		RequestID: req.ID, Response: wire.ChatInputResponseKindAccept,
		Answers: map[string]wire.ChatInputAnswer{q.ID: acTextAnswer("Ada")},
	})
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "Hello!", acMarkdown(turn.ResponseParts))
	prompts := e.fake.ReceivedOfType("prompt")
	require.Len(t, prompts, 2)
	assert.Equal(t, "Ada", prompts[1].String("prompt"))
	assert.Equal(t, turnID, prompts[1].String("taskId"), "the answer continues the same task")
	assert.Empty(t, e.fake.ReceivedOfType("tool_response"))
}

// The --approve policy answers agent-channel permission requests without
// asking the clients.
func TestAgentchanApprovePolicy(t *testing.T) {
	for _, tc := range []struct {
		policy, want string
		cancelled    bool
	}{
		{"all", "approve", false},
		{"none", "reject", true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			e := startAgentchanWith(t, func(p fake.ClientFrame) []fake.Step {
				return []fake.Step{
					fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "make"}),
					fake.Permission("approval_request", "req-1", "tc-1", ""),
					fake.Await("approve", "reject"),
					fake.Result("done"),
				}
			}, acSetup{opts: bridgetest.Options{Approve: tc.policy}})
			turnID := bridgetest.StartTurn(t, e.c, e.channel, "build")
			turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
			assert.Equal(t, wire.TurnStateComplete, turn.State)
			got := e.waitReceived(t, tc.want, 1)
			assert.Equal(t, "req-1", got[0].String("requestId"))
			v := acToolCall(t, turn.ResponseParts, "tc-1")
			if tc.cancelled {
				c, ok := v.(*wire.ToolCallCancelledState)
				require.True(t, ok, "tool call is %T", v)
				assert.Equal(t, wire.ToolCallCancellationReasonDenied, c.Reason)
			} else {
				c, ok := v.(*wire.ToolCallCompletedState)
				require.True(t, ok, "tool call is %T", v)
				assert.True(t, c.Success)
			}
		})
	}
}

// The model a turn asked for is sent as settings before its prompt, and the
// latest settings are sent again after a reconnection.
func TestAgentchanModelAndReconnect(t *testing.T) {
	e := startAgentchan(t, nil)
	acTurnWithModel(t, e, "hi", "model-b")
	got := e.waitReceived(t, "settings", 1)
	assert.Equal(t, "model-b", got[0].String("model"))
	assert.Equal(t, 1, got[0].Conn)

	acTurnWithModel(t, e, "hi again", "model-a")
	got = e.waitReceived(t, "settings", 2)
	assert.Equal(t, "model-a", got[1].String("model"))

	require.Equal(t, 1, e.fake.DropAll())
	got = e.waitReceived(t, "settings", 3)
	assert.Equal(t, "model-a", got[2].String("model"))
	assert.Equal(t, 2, got[2].Conn, "restored on the new connection")

	turnID := bridgetest.StartTurn(t, e.c, e.channel, "hi")
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "done", acMarkdown(turn.ResponseParts))
}

// acTurnWithModel runs a turn whose message names a model.
func acTurnWithModel(t *testing.T, e *acEnv, text, model string) wire.Turn {
	t.Helper()
	msg := client.UserMessage(text)
	msg.Model = &wire.ModelSelection{ID: model}
	turnID := client.NewUUID()
	_, err := e.c.StartTurn(acCtx(t), e.channel, turnID, msg)
	require.NoError(t, err)
	turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	return turn
}

// An AHP 0.3.0 client chooses the model when it creates a session (the
// host keeps it as the default chat's first draft): the backend session is
// opened with it, so it is sent as settings when the socket connects,
// before any prompt.
func TestAgentchan030CreateSessionModel(t *testing.T) {
	srv := fake.New(fake.Options{Token: acToken})
	t.Cleanup(srv.Close)
	p := agentchan.NewProvider(agentchan.Config{ID: "ws", URL: srv.URL(), Token: acToken},
		zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel))
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})

	ws, _, err := websocket.DefaultDialer.DialContext(acCtx(t), env.URL, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	call := func(id int, method string, params map[string]any) {
		t.Helper()
		msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		require.NoError(t, err)
		require.NoError(t, ws.WriteMessage(websocket.TextMessage, msg))
		for {
			_, msg, err := ws.ReadMessage()
			require.NoError(t, err)
			var r struct {
				ID    *int            `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			require.NoError(t, json.Unmarshal(msg, &r))
			if r.ID != nil && *r.ID == id {
				require.Empty(t, r.Error, "%s failed: %s", method, msg)
				return
			}
		}
	}
	call(1, "initialize", map[string]any{"channel": "ahp-root://", "protocolVersions": []string{"0.3.0"}, "clientId": "old-client"})
	call(2, "createSession", map[string]any{"channel": client.NewSessionURI(), "provider": "ws", "model": map[string]any{"id": "model-b"}})

	require.True(t, srv.WaitFor(acWait, func() bool { return len(srv.ReceivedOfType("settings")) == 1 }))
	settings := srv.ReceivedOfType("settings")[0]
	assert.Equal(t, "model-b", settings.String("model"))
	assert.Equal(t, 1, settings.Conn, "sent on connecting")
	assert.Empty(t, srv.ReceivedOfType("prompt"))
}

// gatedProvider holds OpenSession until gate is closed, so that a test can
// act while the session is still being created.
type gatedProvider struct {
	backend.Provider
	gate chan struct{}
}

func (g gatedProvider) OpenSession(ctx context.Context, opts backend.SessionOptions, sink backend.Sink) (backend.Session, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Provider.OpenSession(ctx, opts, sink)
}

// A model chosen (on the default chat's draft) while the session is still
// being created reaches the backend before the first prompt.
func TestAgentchanModelChangedWhileCreating(t *testing.T) {
	srv := fake.New(fake.Options{Token: acToken})
	t.Cleanup(srv.Close)
	gate := make(chan struct{})
	p := gatedProvider{
		Provider: agentchan.NewProvider(agentchan.Config{
			ID: "ws", URL: srv.URL(), Token: acToken,
			Models: []backend.ModelInfo{{ID: "model-a"}, {ID: "model-b"}},
		}, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)),
		gate: gate,
	}
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})
	c := env.Client(t)
	ch := client.NewSessionURI()
	require.NoError(t, c.CreateSession(acCtx(t), wire.CreateSessionParams{Channel: ch, Provider: wire.Ptr("ws")}))
	_, err := c.Subscribe(acCtx(t), ch)
	require.NoError(t, err)
	_, err = c.SelectModel(acCtx(t), ch, &wire.ModelSelection{ID: "model-b"})
	require.NoError(t, err)
	close(gate)
	st, err := c.WaitFor(acCtx(t), ch, func(s *wire.SessionState) bool { return s.Lifecycle != wire.SessionLifecycleCreating })
	require.NoError(t, err)
	require.Equal(t, wire.SessionLifecycleReady, st.Lifecycle)

	turnID := bridgetest.StartTurn(t, c, ch, "hi")
	turn := bridgetest.WaitTurnEnd(t, c, ch, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	require.True(t, srv.WaitFor(acWait, func() bool { return len(srv.ReceivedOfType("settings")) == 1 }))
	assert.Equal(t, []string{"agent/settings", "agent/prompt"}, acFrameTypes(srv.Received()),
		"the model is set before the first prompt")
	assert.Equal(t, "model-b", srv.ReceivedOfType("settings")[0].String("model"))
}

// A message larger than the limit costs the connection: the turn ends with
// an error naming the limit, and the next turn runs on a new connection.
func TestAgentchanOversizeMessage(t *testing.T) {
	e := startAgentchanWith(t, func(p fake.ClientFrame) []fake.Step {
		if p.String("prompt") == "big" {
			return []fake.Step{fake.Text("Before."), fake.Oversize(8192)}
		}
		return []fake.Step{fake.Oversize(4000), fake.Result("fits")}
	}, acSetup{config: func(c *agentchan.Config) { c.MaxMessageSize = 4096 }})
	turn1 := bridgetest.StartTurn(t, e.c, e.channel, "big")
	ended := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn1, acWait)
	assert.Equal(t, wire.TurnStateError, ended.State)
	require.NotNil(t, client.TurnError(&ended))
	assert.Contains(t, client.TurnError(&ended).Message, "larger than 4096 bytes")
	assert.Equal(t, "Before.", acMarkdown(ended.ResponseParts))

	turn2 := bridgetest.StartTurn(t, e.c, e.channel, "small")
	done := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn2, acWait)
	assert.Equal(t, wire.TurnStateComplete, done.State)
	assert.Len(t, acMarkdown(done.ResponseParts), 4000-len(`{"channel":"agent","type":"text","content":""}`),
		"a message just under the limit is delivered whole")
	assert.Equal(t, 2, e.fake.ReceivedOfType("prompt")[1].Conn)
}

// A turn started while the backend refuses reconnections fails after
// ConnectWait with an error saying so; once the backend is back, the next
// turn works.
func TestAgentchanBackendDown(t *testing.T) {
	e := startAgentchanWith(t, nil, acSetup{
		config: func(c *agentchan.Config) { c.ConnectWait = time.Second },
	})
	// A model to restore gives each new connection a frame to show for it.
	acTurnWithModel(t, e, "hello", "model-a")
	e.waitReceived(t, "settings", 1)
	e.fake.SetRefusing(true)
	require.Equal(t, 1, e.fake.DropAll())
	// A refused attempt means the provider knows the connection is gone.
	require.True(t, e.fake.WaitFor(acWait, func() bool { return e.fake.Refused() >= 1 }))

	turn1 := bridgetest.StartTurn(t, e.c, e.channel, "anyone there?")
	ended := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn1, acWait)
	assert.Equal(t, wire.TurnStateError, ended.State)
	require.NotNil(t, client.TurnError(&ended))
	assert.Contains(t, client.TurnError(&ended).Message, "still reconnecting")
	assert.Contains(t, client.TurnError(&ended).Message, "503", "the last error says what the server answered")
	assert.Len(t, e.fake.ReceivedOfType("prompt"), 1, "only the first turn's")

	e.fake.SetRefusing(false)
	// The settings restored on the new connection are written just before
	// the provider counts itself connected.
	got := e.waitReceived(t, "settings", 2)
	assert.Equal(t, 2, got[1].Conn)
	turn2 := bridgetest.StartTurn(t, e.c, e.channel, "back?")
	done := bridgetest.WaitTurnEnd(t, e.c, e.channel, turn2, acWait)
	assert.Equal(t, wire.TurnStateComplete, done.State, "error: %+v", client.TurnError(&done))
	assert.Equal(t, "done", acMarkdown(done.ResponseParts))
}

// pendingTools waits until n tool calls of the active turn are pending
// confirmation and returns their ids in stream order.
func (e *acEnv) pendingTools(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	e.waitActive(t, "pending confirmations", func(a *wire.ActiveTurn) bool {
		ids = ids[:0]
		for _, p := range a.ResponseParts {
			if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok {
				if pc, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok {
					ids = append(ids, pc.ToolCallID)
				}
			}
		}
		return len(ids) >= n
	})
	return ids
}

func acApprove(turnID, id string) *wire.ChatToolCallApprovedAction {
	return &wire.ChatToolCallApprovedAction{
		TurnID: turnID, ToolCallID: id, Approved: true, Confirmed: wire.ToolCallConfirmationReasonUserAction,
	}
}

func acDeny(turnID, id string) *wire.ChatToolCallDeniedAction {
	return &wire.ChatToolCallDeniedAction{TurnID: turnID, ToolCallID: id, Reason: wire.ToolCallCancellationReasonDenied}
}

// acTextAnswer is a submitted text answer.
func acTextAnswer(text string) wire.ChatInputAnswer {
	return wire.NewChatInputAnswer(&wire.ChatInputAnswered{
		State: wire.ChatInputAnswerStateSubmitted,
		Value: wire.NewChatInputAnswerValue(&wire.ChatInputTextAnswerValue{Value: text}),
	})
}

// Permission requests in less common shapes: carried by the tool
// invocation itself, for a tool call that already finished, and two at
// once answered in reverse order.
func TestAgentchanPermissionShapes(t *testing.T) {
	t.Run("tool_invocation with requestId", func(t *testing.T) {
		e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
			return []fake.Step{
				fake.Send(map[string]any{"type": "tool_invocation", "toolCallId": "tc-1", "toolName": "write_file",
					"args": map[string]any{"path": "a.txt"}, "requestId": "req-1"}),
				fake.Await("approve", "reject"),
				fake.ToolResult("tc-1", "written"),
				fake.Result("done"),
			}
		})
		turnID := bridgetest.StartTurn(t, e.c, e.channel, "write")
		require.Equal(t, []string{"tc-1"}, e.pendingTools(t, 1))
		e.dispatch(t, acApprove(turnID, "tc-1"))
		turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
		assert.Equal(t, wire.TurnStateComplete, turn.State)
		assert.Equal(t, "req-1", e.waitReceived(t, "approve", 1)[0].String("requestId"))
		tc := acCompletedTool(t, turn.ResponseParts, "tc-1")
		assert.Equal(t, []string{"written"}, acResultTexts(tc.Content))
		assert.Equal(t, "edit", tc.ToolName)
	})
	t.Run("for a finished tool call", func(t *testing.T) {
		e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
			return []fake.Step{
				fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "make"}),
				fake.ToolResult("tc-1", "built"),
				fake.Permission("permission", "req-2", "tc-1", "Deploy it too?"),
				fake.Await("approve", "reject"),
				fake.Result("done"),
			}
		})
		turnID := bridgetest.StartTurn(t, e.c, e.channel, "build and deploy")
		ids := e.pendingTools(t, 1)
		require.Equal(t, []string{"tc-1#2"}, ids, "a finished call cannot be reopened; a new one is asked")
		e.dispatch(t, acDeny(turnID, "tc-1#2"))
		turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
		assert.Equal(t, wire.TurnStateComplete, turn.State)
		assert.Equal(t, "req-2", e.waitReceived(t, "reject", 1)[0].String("requestId"))
		assert.Equal(t, []string{"built"}, acResultTexts(acCompletedTool(t, turn.ResponseParts, "tc-1").Content))
		_, ok := acToolCall(t, turn.ResponseParts, "tc-1#2").(*wire.ToolCallCancelledState)
		assert.True(t, ok)
	})
	t.Run("two at once", func(t *testing.T) {
		e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
			return []fake.Step{
				fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "a"}),
				fake.ToolInvocation("tc-2", "bash", map[string]any{"command": "b"}),
				fake.Permission("permission", "req-1", "tc-1", ""),
				fake.Permission("permission", "req-2", "tc-2", ""),
				fake.Await("approve", "reject"),
				fake.Await("approve", "reject"),
				fake.Result("done"),
			}
		})
		turnID := bridgetest.StartTurn(t, e.c, e.channel, "both")
		require.Equal(t, []string{"tc-1", "tc-2"}, e.pendingTools(t, 2))
		e.dispatch(t, acDeny(turnID, "tc-2"))
		e.dispatch(t, acApprove(turnID, "tc-1"))
		turn := bridgetest.WaitTurnEnd(t, e.c, e.channel, turnID, acWait)
		assert.Equal(t, wire.TurnStateComplete, turn.State)
		assert.Equal(t, []string{"agent/prompt", "agent/reject", "agent/approve"}, acFrameTypes(e.fake.Received()))
		assert.Equal(t, "req-2", e.fake.ReceivedOfType("reject")[0].String("requestId"))
		assert.Equal(t, "req-1", e.fake.ReceivedOfType("approve")[0].String("requestId"))
		assert.True(t, acCompletedTool(t, turn.ResponseParts, "tc-1").Success)
		_, ok := acToolCall(t, turn.ResponseParts, "tc-2").(*wire.ToolCallCancelledState)
		assert.True(t, ok)
	})
}

// When two clients answer the same permission request at once, the first
// answer wins: the backend gets exactly one answer, the one the state
// shows.
func TestAgentchanFirstConfirmationWins(t *testing.T) {
	srv := fake.New(fake.Options{Token: acToken, Script: func(p fake.ClientFrame) []fake.Step {
		return []fake.Step{
			fake.ToolInvocation("tc-1", "bash", map[string]any{"command": "make"}),
			fake.Permission("permission", "req-1", "tc-1", ""),
			fake.Await("approve", "reject"),
			fake.Result("done"),
		}
	}})
	t.Cleanup(srv.Close)
	p := agentchan.NewProvider(agentchan.Config{ID: "ws", URL: srv.URL(), Token: acToken},
		zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel))
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})
	a, b := env.Client(t), env.Client(t)
	ch := bridgetest.CreateSession(t, a, "ws", t.TempDir())
	_, err := b.Subscribe(acCtx(t), ch)
	require.NoError(t, err)

	turnID := bridgetest.StartTurn(t, a, ch, "build")
	id := bridgetest.WaitPendingTool(t, a, ch, acWait)
	bridgetest.WaitPendingTool(t, b, ch, acWait)
	chat, err := a.DefaultChat(ch)
	require.NoError(t, err)
	errs := make(chan error, 2)
	go func() { _, err := a.DispatchAction(acCtx(t), chat, wire.Action(acApprove(turnID, id))); errs <- err }()
	go func() { _, err := b.DispatchAction(acCtx(t), chat, wire.Action(acDeny(turnID, id))); errs <- err }()
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)

	turn := bridgetest.WaitTurnEnd(t, a, ch, turnID, acWait)
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	require.True(t, srv.WaitFor(acWait, func() bool {
		return len(srv.ReceivedOfType("approve"))+len(srv.ReceivedOfType("reject")) >= 1
	}))
	approves, rejects := srv.ReceivedOfType("approve"), srv.ReceivedOfType("reject")
	require.Equal(t, 1, len(approves)+len(rejects), "exactly one answer: %v", acFrameTypes(srv.Received()))
	switch v := acToolCall(t, turn.ResponseParts, id).(type) {
	case *wire.ToolCallCompletedState:
		assert.Len(t, approves, 1, "the state says approved")
	case *wire.ToolCallCancelledState:
		assert.Len(t, rejects, 1, "the state says denied")
	default:
		t.Fatalf("tool call is %T", v)
	}
}

// Disposing of a session while its turn runs aborts the task.
func TestAgentchanDisposeDuringTurn(t *testing.T) {
	e := startAgentchan(t, func(p fake.ClientFrame) []fake.Step {
		return []fake.Step{fake.Text("Working."), fake.Await("abort")}
	})
	turnID := bridgetest.StartTurn(t, e.c, e.channel, "long job")
	e.waitActive(t, "the first text", func(a *wire.ActiveTurn) bool { return acMarkdown(a.ResponseParts) == "Working." })
	require.NoError(t, e.c.DisposeSession(acCtx(t), e.channel))
	aborts := e.waitReceived(t, "abort", 1)
	assert.Equal(t, turnID, aborts[0].String("taskId"))
	// The session is kept with its (cancelled) turn, archived: issue 23.
	sessions, err := e.c.ListSessions(acCtx(t))
	require.NoError(t, err)
	require.Len(t, sessions, 1)
	assert.True(t, sessions[0].Status.Has(wire.SessionStatusIsArchived))
}
