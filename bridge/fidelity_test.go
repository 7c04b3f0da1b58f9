package bridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// The tests of this file run the bridge over an ACP provider whose agent
// replays what Claude's ACP agents sent (issue 15; the frames are in
// acp/testdata/replay, the format at scriptagent.Replay), and check what
// AHP clients get from it. The agent is this test binary, re-run with
// SCRIPTAGENT_REPLAY set (TestMain).

// replayRig is a rig whose provider "fake" runs the replay of
// acp/testdata/replay/NAME.jsonl.
func replayRig(t *testing.T, name string) *rig {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "acp", "testdata", "replay", name+".jsonl"))
	require.NoError(t, err)
	_, err = os.Stat(path)
	require.NoError(t, err)
	p := acp.NewProvider(acp.Config{
		ID: "fake", DisplayName: name, Command: []string{os.Args[0]},
		// The race runtime sleeps a second before exiting unless told not to.
		Env: []string{scriptagent.ReplayEnv + "=" + path, "GORACE=atexit_sleep_ms=0"},
	}, zerolog.New(zerolog.NewTestWriter(t)).With().Str("component", "acp").Logger())
	return newRigOver(t, mapping.PolicyAsk, p)
}

// projectDir is a working directory with the README.md the replays read.
func projectDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# demo\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "notes"), 0o755))
	return dir
}

// actionsOf returns the actions dispatched on channel so far.
func (h *fakeHost) actionsOf(channel string) []wire.StateAction {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]wire.StateAction(nil), h.actions[channel]...)
}

// toolActions returns the chat actions of one tool call, in order.
func toolActions(acts []wire.StateAction, toolCallID string) []wire.StateAction {
	var out []wire.StateAction
	for _, a := range acts {
		b, _ := json.Marshal(a)
		var head struct {
			ToolCallID string `json:"toolCallId"`
		}
		_ = json.Unmarshal(b, &head)
		if head.ToolCallID == toolCallID {
			out = append(out, a)
		}
	}
	return out
}

// toolCallState finds a tool call of a turn's response.
func toolCallState(t *testing.T, turn wire.Turn, id string) wire.ToolCallState {
	t.Helper()
	for _, p := range turn.ResponseParts {
		if tp, ok := p.Value.(*wire.ToolCallResponsePart); ok {
			if tid, _ := reducer.ToolCallID(tp.ToolCall); tid == id {
				return tp.ToolCall
			}
		}
	}
	require.Failf(t, "no such tool call", "%s in %+v", id, turn.ResponseParts)
	return wire.ToolCallState{}
}

// metaOf is a value's `_meta` as JSON ("" when it has none).
func metaOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m struct {
		Meta json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(b, &m))
	return string(m.Meta)
}

// TestReplayToolCallsOfClaudeCodeACP: claude-code-acp first reports each
// tool call with a placeholder title and an empty input, then its real
// title and input; its PostToolUse hook sends `_meta.claudeCode.toolResponse`
// in an update of its own; the Write tool creates a file. Clients must see
// the real title while the call streams, never an empty input, the hook's
// `_meta` when it comes, and a created file (no "before" side).
func TestReplayToolCallsOfClaudeCodeACP(t *testing.T) {
	r := replayRig(t, "tools_claude_code_acp")
	dir := projectDir(t)
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{WorkingDirectories: []string{"file://" + dir}}, nil))
	r.host.startTurn(r.b, chat1, "t1", "read the README and write notes/new.txt", "")

	var pending *wire.ToolCallPendingConfirmationState
	r.host.waitFor("the Write tool call to wait for confirmation", func() bool {
		tc, _, ok := reducer.FindToolCall(r.host.chats[chat1], "t1", "toolu_02Write")
		if !ok {
			return false
		}
		pending, ok = tc.Value.(*wire.ToolCallPendingConfirmationState)
		return ok
	})
	read := toolActions(r.host.actionsOf(chat1), "toolu_01Read")
	var deltas []*wire.ChatToolCallDeltaAction
	for _, a := range read {
		if d, ok := a.Value.(*wire.ChatToolCallDeltaAction); ok {
			deltas = append(deltas, d)
		}
	}
	require.NotEmpty(t, deltas, "the Read call's real title and input reach clients while it streams")
	var titles, inputs, metas []string
	for _, d := range deltas {
		if d.InvocationMessage != nil {
			titles = append(titles, d.InvocationMessage.Text)
		}
		if d.Content != nil {
			inputs = append(inputs, *d.Content)
		}
		metas = append(metas, metaOf(t, d))
	}
	assert.Equal(t, []string{"Read " + dir + "/README.md"}, titles, "the placeholder title \"Read File\" is replaced")
	require.Len(t, inputs, 1, "the input is sent once, never the placeholder's {}")
	assert.JSONEq(t, `{"file_path":"`+dir+`/README.md"}`, inputs[0])
	assert.Contains(t, strings.Join(metas, "\n"), `"toolResponse"`, "the hook's _meta-only update reaches the tool call as it comes")

	assert.Equal(t, "Write "+dir+"/notes/new.txt", pending.InvocationMessage.Text)
	require.NotNil(t, pending.ToolInput)
	assert.JSONEq(t, `{"file_path":"`+dir+`/notes/new.txt","content":"hello\n"}`, pending.ToolInput.Text, "the final input at confirmation")
	require.NotNil(t, pending.Edits)
	require.Len(t, pending.Edits.Items, 1)
	assert.Nil(t, pending.Edits.Items[0].Before, "a new file has no before side")

	r.host.client(r.b, chat1, wire.Action(&wire.ChatToolCallApprovedAction{TurnID: "t1", ToolCallID: "toolu_02Write", Approved: true,
		Confirmed: wire.ToolCallConfirmationReasonUserAction, SelectedOptionID: wire.Ptr("allow")}))
	turn := r.host.turn(chat1, "t1")
	require.Equal(t, wire.TurnStateComplete, turn.State)

	var hookMeta bool
	for _, a := range toolActions(r.host.actionsOf(chat1), "toolu_02Write") {
		if cc, ok := a.Value.(*wire.ChatToolCallContentChangedAction); ok && strings.Contains(metaOf(t, cc), `"toolResponse"`) {
			hookMeta = true
		}
	}
	assert.True(t, hookMeta, "the hook's _meta reaches the running Write call before it completes")

	done, ok := toolCallState(t, turn, "toolu_02Write").Value.(*wire.ToolCallCompletedState)
	require.True(t, ok)
	var created, texts []string
	for _, c := range done.Content {
		switch v := c.Value.(type) {
		case *wire.ToolResultFileEditContent:
			if v.Before == nil && v.After != nil {
				created = append(created, v.After.URI)
			}
		case *wire.ToolResultTextContent:
			texts = append(texts, v.Text)
		}
	}
	assert.Equal(t, []string{"file://" + dir + "/notes/new.txt"}, created)
	assert.Contains(t, texts, "Created "+dir+"/notes/new.txt (+1 -0)")
	assert.Contains(t, metaOf(t, done), `"toolResponse"`)
}

// TestReplayModelChangeRefused: claude-code-acp without session/set_model
// and without a model config option cannot change its model. A client's
// change must not stay as if it had been made: the session's value goes
// back to the agent's, the session's _meta says what was refused, and the
// chat's next turn starts by saying so.
func TestReplayModelChangeRefused(t *testing.T) {
	r := replayRig(t, "models_without_a_way")
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))
	r.host.waitFor("the agent's settings", func() bool {
		return r.host.sessions[sess1].Config.Values["model"] == "default"
	})
	r.host.client(r.b, sess1, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"model": "opus"}}))
	r.host.waitFor("the refusal", func() bool {
		_, ok := r.host.sessions[sess1].Meta[mapping.MetaConfigRejected]
		return ok
	})
	r.host.mu.Lock()
	st := r.host.sessions[sess1]
	model := st.Config.Values["model"]
	rejected := st.Meta[mapping.MetaConfigRejected]
	r.host.mu.Unlock()
	assert.Equal(t, "default", model, "the agent still runs its model")
	rej, _ := rejected.(map[string]any)
	assert.Equal(t, "model", rej["key"])
	assert.Equal(t, "opus", rej["value"])
	assert.Contains(t, rej["message"], "session/set_model")

	r.host.startTurn(r.b, chat1, "t1", "hi", "")
	turn := r.host.turn(chat1, "t1")
	require.NotEmpty(t, turn.ResponseParts)
	note, ok := turn.ResponseParts[0].Value.(*wire.SystemNotificationResponsePart)
	require.True(t, ok, "the turn starts with a notification: %+v", turn.ResponseParts[0].Value)
	assert.Contains(t, note.Content.Text, "did not change the setting `model` to `opus`; it stays `default`")
}

// TestReplayModelAtCreationRefused: a model asked for at createSession
// (an AHP 0.3.0 client's, through the default chat's draft) that the agent
// cannot switch to is said in the chat's first turn.
func TestReplayModelAtCreationRefused(t *testing.T) {
	r := replayRig(t, "models_without_a_way")
	draft := &wire.Message{Model: &wire.ModelSelection{ID: "opus"}}
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, draft))
	r.host.waitFor("the refusal", func() bool {
		_, ok := r.host.sessions[sess1].Meta[mapping.MetaConfigRejected]
		return ok
	})
	r.host.mu.Lock()
	model := r.host.sessions[sess1].Config.Values["model"]
	r.host.mu.Unlock()
	assert.Equal(t, "default", model)
	// The draft still asks for opus: the turn tries once more, and says so
	// again.
	r.host.startTurn(r.b, chat1, "t1", "hi", "")
	turn := r.host.turn(chat1, "t1")
	var notes []string
	for _, p := range turn.ResponseParts {
		if n, ok := p.Value.(*wire.SystemNotificationResponsePart); ok {
			notes = append(notes, n.Content.Text)
		}
	}
	require.NotEmpty(t, notes)
	assert.Contains(t, notes[0], "did not change the setting `model` to `opus`")
}

// TestReplayUsageOfClaudeAgentACP: claude-agent-acp's usage_update is the
// context window and cost, not tokens spent; the prompt result's usage is
// the turn's. Clients get the turn's counts the agent sent and nothing
// made up, and the context window in the session's _meta, each figure as
// last reported (a "used": null leaves "used" as it was).
func TestReplayUsageOfClaudeAgentACP(t *testing.T) {
	r := replayRig(t, "usage_claude_agent_acp")
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))

	r.host.startTurn(r.b, chat1, "t1", "one", "")
	turn := r.host.turn(chat1, "t1")
	require.NotNil(t, turn.Usage)
	b, err := json.Marshal(turn.Usage)
	require.NoError(t, err)
	assert.JSONEq(t, `{"inputTokens":12,"outputTokens":480,"cacheReadTokens":14198,"model":"default",
		"_meta":{"ahp-bridge/usage":{"cacheWriteTokens":0,"totalTokens":14690}}}`, string(b))
	for _, p := range turn.ResponseParts {
		_, junk := p.Value.(*wire.SystemNotificationResponsePart)
		assert.False(t, junk, "usage updates are not shown as notifications")
	}
	r.host.mu.Lock()
	cw := r.host.sessions[sess1].Meta[mapping.MetaContextWindow]
	r.host.mu.Unlock()
	b, err = json.Marshal(cw)
	require.NoError(t, err)
	assert.JSONEq(t, `{"`+chat1+`":{"used":14690,"size":200000,"cost":{"amount":0.0521,"currency":"USD"},
		"_meta":{"_claude/model":"claude-sonnet-4-5-20250929"}}}`, string(b))

	r.host.startTurn(r.b, chat1, "t2", "two", "")
	assert.Nil(t, r.host.turn(chat1, "t2").Usage, "no usage is made up for a turn the agent reported none for")

	r.host.startTurn(r.b, chat1, "t3", "three", "")
	turn = r.host.turn(chat1, "t3")
	require.NotNil(t, turn.Usage)
	b, err = json.Marshal(turn.Usage)
	require.NoError(t, err)
	assert.JSONEq(t, `{"inputTokens":3,"outputTokens":5,"model":"default"}`, string(b), "only the counts sent")
}

// TestReplaySettingsReplaced: claude-agent-acp's config_option_update (and
// set_config_option's answer) is the whole list of its settings. Options it
// drops leave the session's config values and the schema in its _meta;
// its permission mode is a setting while it offers one.
func TestReplaySettingsReplaced(t *testing.T) {
	r := replayRig(t, "models_config_option")
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))
	schemaProps := func() map[string]any {
		r.host.mu.Lock()
		defer r.host.mu.Unlock()
		s, _ := r.host.sessions[sess1].Meta[mapping.MetaConfigSchema].(map[string]any)
		props, _ := s["properties"].(map[string]any)
		return props
	}
	r.host.waitFor("the agent's settings", func() bool {
		_, ok := r.host.sessions[sess1].Meta[mapping.MetaConfigSchema]
		return ok && r.host.sessions[sess1].Config.Values["effort"] == "default"
	})
	mode, _ := schemaProps()["mode"].(map[string]any)
	assert.Equal(t, "Session permission mode", mode["description"], "the agent's permission mode is a session setting")
	assert.Equal(t, []any{"default", "acceptEdits", "plan"}, mode["enum"])

	r.host.client(r.b, sess1, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"model": "haiku"}}))
	r.host.client(r.b, sess1, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"model": "opus"}}))
	r.host.startTurn(r.b, chat1, "t1", "hi", "")
	r.host.turn(chat1, "t1")
	r.host.waitFor("the options the turn dropped to go", func() bool {
		props, _ := r.host.sessions[sess1].Meta[mapping.MetaConfigSchema].(map[string]any)["properties"].(map[string]any)
		return len(props) == 1
	})
	r.host.mu.Lock()
	values := r.host.sessions[sess1].Config.Values
	r.host.mu.Unlock()
	assert.Equal(t, map[string]any{"model": "opus"}, values)
	assert.ElementsMatch(t, []string{"model"}, keys(schemaProps()))

	// At last the agent answers a change with no settings at all.
	r.host.client(r.b, sess1, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"model": "default"}}))
	r.host.waitFor("every option to go", func() bool {
		props, _ := r.host.sessions[sess1].Meta[mapping.MetaConfigSchema].(map[string]any)["properties"].(map[string]any)
		return len(props) == 0
	})
	r.host.mu.Lock()
	values = r.host.sessions[sess1].Config.Values
	r.host.mu.Unlock()
	assert.Empty(t, values)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestReplayPlanEndsWithItsTurn: claude-code-acp's plan of a turn the
// client cancels, then of a turn that ends with a step in progress, then a
// turn without a plan. No plan stays live after its turn; a cancelled
// turn leaves no step in progress; a turn's record keeps its last plan.
func TestReplayPlanEndsWithItsTurn(t *testing.T) {
	r := replayRig(t, "plan_cancelled_claude_code_acp")
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))
	livePlan := func() any {
		r.host.mu.Lock()
		defer r.host.mu.Unlock()
		return r.host.sessions[sess1].Meta[mapping.MetaPlan]
	}

	r.host.startTurn(r.b, chat1, "t1", "fix it", "")
	r.host.waitFor("the plan", func() bool { _, ok := r.host.sessions[sess1].Meta[mapping.MetaPlan]; return ok })
	r.host.client(r.b, chat1, wire.Action(&wire.ChatTurnCancelledAction{TurnID: "t1"}))
	r.host.waitFor("the cancelled turn's plan to end", func() bool {
		_, ok := r.host.sessions[sess1].Meta[mapping.MetaPlan]
		return !ok
	})

	r.host.startTurn(r.b, chat1, "t2", "go on", "")
	turn := r.host.turn(chat1, "t2")
	assert.Contains(t, lastMarkdown(turn), "- [x] Write the fix\n- [~] Run the tests", "the turn's record ends with its last plan")
	assert.Nil(t, livePlan(), "the next turn starts without a plan")

	r.host.startTurn(r.b, chat1, "t3", "and now?", "")
	turn = r.host.turn(chat1, "t3")
	assert.NotContains(t, lastMarkdown(turn), "**Plan**")
	assert.Nil(t, livePlan())
	r.host.mu.Lock()
	activity := r.host.chats[chat1].Activity
	r.host.mu.Unlock()
	assert.Nil(t, activity)
}

func lastMarkdown(turn wire.Turn) string {
	for i := len(turn.ResponseParts) - 1; i >= 0; i-- {
		if m, ok := turn.ResponseParts[i].Value.(*wire.MarkdownResponsePart); ok {
			return m.Content
		}
	}
	return ""
}

// TestReplayCrashShowsStderr: claude-code-acp dies mid-turn after writing
// its error to stderr; the turn's error says so, with the last lines.
func TestReplayCrashShowsStderr(t *testing.T) {
	r := replayRig(t, "crash_with_stderr")
	require.Equal(t, wire.SessionLifecycleReady, r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil))
	r.host.startTurn(r.b, chat1, "t1", "crash", "")
	turn := r.host.turn(chat1, "t1")
	require.Equal(t, wire.TurnStateError, turn.State)
	var msg string
	for _, p := range turn.ResponseParts {
		if e, ok := p.Value.(*wire.ErrorResponsePart); ok {
			msg = e.Error.Message
		}
	}
	assert.Contains(t, msg, "exit status 1")
	assert.True(t, strings.HasSuffix(msg, "claude-code-acp: stderr line 100"), msg)
	assert.NotContains(t, msg, "stderr line 36\n", "the last 64 lines only")
}
