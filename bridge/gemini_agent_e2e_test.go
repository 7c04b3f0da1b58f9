//go:build slowagents

package bridge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/mockgemini"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// The slow tier, Gemini CLI: `gemini --acp` behind the bridge, talking to
// a local mock of the Gemini API (internal/mockgemini) instead of a model:
// no network, no key. .ci/run installs it (keep the version in step, and
// in README.md).
const geminiCLI = "@google/gemini-cli@0.61.0"

// geminiAllowOnce is the id of Gemini CLI's allow_once option. It lists
// "allow always" (proceed_always) first, and refuses it in a folder the
// user has not trusted, as every test folder is: a client approves once.
const geminiAllowOnce = "proceed_once"

// geminiProvider runs Gemini CLI against llm, in a home directory of its
// own whose settings pick API-key authentication and turn off telemetry,
// usage statistics and the update check.
func geminiProvider(t *testing.T, llm *mockgemini.Server) *acp.Provider {
	t.Helper()
	script := testenv.NPMFile(t, geminiCLI, "@google/gemini-cli/bundle/gemini.js")
	node := testenv.Command(t, "node")
	home := t.TempDir()
	settings := map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
	}
	b, err := json.Marshal(settings)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o644))
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GOOGLE_GEMINI_BASE_URL=" + llm.URL,
		"GEMINI_API_KEY=test-not-a-key",
		// The CLI otherwise starts itself again with a larger heap.
		"GEMINI_CLI_NO_RELAUNCH=true",
		"PATH=" + os.Getenv("PATH"),
	}
	// StartTimeout: the CLI loads a large bundle before it answers
	// initialize, which takes long on a loaded two-core machine.
	return acp.NewProvider(acp.Config{ID: "gemini", DisplayName: "Gemini CLI", Command: []string{node, script, "--acp"},
		Env: env, CoalesceText: true, StartTimeout: acpTimeout}, testLogger(t).With().Str("component", "acp").Logger())
}

// TestGeminiAgent runs the scenarios of the slow tier against one
// Gemini process (one provider), each in sessions of its own, at the
// same time, as a client that uses several sessions would.
func TestGeminiAgent(t *testing.T) {
	r, llm := geminiRig(t)
	runAgentScenarios(t, r, llm, []agentScenario[*mockgemini.Server]{
		{"Text", geminiText},
		{"ShellWithoutApproval", geminiShellWithoutApproval},
		{"ShellWithApproval", geminiShellWithApproval},
		{"Edit", geminiEdit},
		{"Cancel", geminiCancel},
		{"ModelChange", geminiModelChange},
		{"TwoSessions", geminiTwoSessions},
	})
}

// geminiRig is a bridge over Gemini CLI against a scripted mock.
func geminiRig(t *testing.T) (*acpRig, *mockgemini.Server) {
	t.Helper()
	llm := mockgemini.Start(geminiScripted)
	t.Cleanup(llm.Close)
	p := geminiProvider(t, llm)
	return newACPRig(t, acpRigOptions{providers: []backend.Provider{p}}), llm
}

// geminiScripted answers the conversation: "shell:CMD" runs CMD with
// run_shell_command, "write:PATH:TEXT" writes a file with write_file,
// "slow" streams slowCancelText slowly, anything else is answered with
// "Answer to: PROMPT" in three pieces. Once a function result came back,
// the model answers "Tool said: " and the result.
func geminiScripted(req mockgemini.Request) mockgemini.Reply {
	if res := req.FunctionResponses(); len(res) > 0 {
		var out []string
		for _, r := range res {
			out = append(out, string(r.Response))
		}
		return mockgemini.Reply{Text: "Tool said: " + strings.Join(out, " | ")}
	}
	prompt := req.LastUserText()
	switch {
	case strings.HasPrefix(prompt, "shell:") && req.HasFunction("run_shell_command"):
		return mockgemini.Reply{Calls: []mockgemini.FunctionCall{{Name: "run_shell_command", Args: map[string]any{
			"command": strings.TrimPrefix(prompt, "shell:"), "description": "Run the command"}}}}
	case strings.HasPrefix(prompt, "write:") && req.HasFunction("write_file"):
		path, text, _ := strings.Cut(strings.TrimPrefix(prompt, "write:"), ":")
		return mockgemini.Reply{Calls: []mockgemini.FunctionCall{{Name: "write_file", Args: map[string]any{
			"file_path": path, "content": text}}}}
	case prompt == "slow":
		return mockgemini.Reply{Text: slowCancelText(), Chunks: slowCancelChunks, Delay: slowCancelDelay}
	}
	return mockgemini.Reply{Text: "Answer to: " + prompt, Chunks: 3}
}

// geminiMain is the last request of the conversation (not a side question)
// whose prompt was prompt.
func geminiMain(t *testing.T, llm *mockgemini.Server, prompt string) mockgemini.Request {
	t.Helper()
	reqs := llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !reqs[i].WantsJSON() && reqs[i].LastUserText() == prompt {
			return reqs[i]
		}
	}
	require.Failf(t, "no request", "for %q among %d", prompt, len(reqs))
	return mockgemini.Request{}
}

// geminiText: a text answer streamed in pieces reaches the client
// whole and in order.
func geminiText(t *testing.T, r *acpRig, llm *mockgemini.Server) {
	ch := r.session("gemini", t.TempDir())
	turn := r.turn(ch, "hello gemini")
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	assert.Equal(t, "Answer to: hello gemini", acpTurnText(turn.ResponseParts))
	assert.Empty(t, acpPartsOf[wire.ToolCallResponsePart](turn.ResponseParts))
	main := geminiMain(t, llm, "hello gemini")
	t.Logf("other requests: %v", llm.Other())
	// Gemini CLI reports the tokens the model reported for the turn's
	// conversation (not its side questions) in the prompt's result
	// (_meta.quota) only (issue 26, finding 5).
	require.NotNil(t, turn.Usage, "the client sees the turn's tokens")
	assert.Equal(t, int64(main.PromptTokens), valueOf(turn.Usage.InputTokens), "input tokens")
	assert.Equal(t, int64(main.CandidatesTokens), valueOf(turn.Usage.OutputTokens), "output tokens")
}

// geminiShellWithoutApproval: a read-only command (echo) runs without
// asking; the client sees the call completed, and the model's answer
// carrying its output.
func geminiShellWithoutApproval(t *testing.T, r *acpRig, llm *mockgemini.Server) {
	ch := r.session("gemini", t.TempDir())
	turnID := bridgetest.StartTurn(t, r.c, ch, "shell:echo hi-without-asking")
	turn, asked := approveWith(t, r, ch, turnID, geminiAllowOnce)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	assert.Empty(t, asked, "echo runs without asking")
	tools := completedTools(t, turn)
	require.Len(t, tools, 1)
	assert.True(t, tools[0].Success)
	assert.Contains(t, tools[0].DisplayName, "echo hi-without-asking")
	assert.Equal(t, wire.ToolCallConfirmationReasonNotNeeded, tools[0].Confirmed)
	res := geminiMain(t, llm, "shell:echo hi-without-asking").FunctionResponses()
	require.Len(t, res, 1, "the command's result went back to the model")
	assert.Contains(t, string(res[0].Response), "hi-without-asking")
	assert.Equal(t, "Tool said: "+string(res[0].Response), acpTurnText(turn.ResponseParts))
}

// geminiShellWithApproval: a command that changes the folder asks
// first; the client approves once, the command runs, and afterwards the
// session is idle again.
func geminiShellWithApproval(t *testing.T, r *acpRig, llm *mockgemini.Server) {
	dir := t.TempDir()
	ch := r.session("gemini", dir)
	prompt := "shell:mkdir made-by-shell && echo made-it"
	turnID := bridgetest.StartTurn(t, r.c, ch, prompt)
	turn, asked := approveWith(t, r, ch, turnID, geminiAllowOnce)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	require.Len(t, asked, 1, "the command asked the user first")
	tools := completedTools(t, turn)
	require.Len(t, tools, 1)
	assert.True(t, tools[0].Success)
	assert.Equal(t, wire.ToolCallConfirmationReasonUserAction, tools[0].Confirmed)
	require.NotNil(t, tools[0].SelectedOption)
	assert.Equal(t, geminiAllowOnce, tools[0].SelectedOption.ID)
	assert.DirExists(t, filepath.Join(dir, "made-by-shell"), "the approved command ran")
	res := geminiMain(t, llm, prompt).FunctionResponses()
	require.Len(t, res, 1)
	assert.Contains(t, string(res[0].Response), "made-it")
	assert.Equal(t, "Tool said: "+string(res[0].Response), acpTurnText(turn.ResponseParts))
	assertSessionIdle(t, r, ch)
}

// geminiEdit: the model rewrites a file with write_file; the client
// approves once; the file has the model's text and the client saw the
// edit.
func geminiEdit(t *testing.T, r *acpRig, _ *mockgemini.Server) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(path, []byte("old text\n"), 0o644))
	ch := r.session("gemini", dir)
	turnID := bridgetest.StartTurn(t, r.c, ch, "write:"+path+":hello from the model")
	turn, asked := approveWith(t, r, ch, turnID, geminiAllowOnce)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	require.Len(t, asked, 1, "the edit asked the user first")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hello from the model", string(b), "the approved edit happened")
	tools := completedTools(t, turn)
	require.Len(t, tools, 1)
	assert.True(t, tools[0].Success, "error: %+v", tools[0].Error)
	var edited []string
	for _, c := range tools[0].Content {
		if e, ok := c.Value.(*wire.ToolResultFileEditContent); ok && e.After != nil {
			edited = append(edited, e.After.URI)
		}
	}
	assert.Equal(t, []string{"file://" + path}, edited, "the client saw the file edited")
	assertSessionIdle(t, r, ch)
}

// geminiCancel: a turn cancelled while the model streams ends
// cancelled with what had arrived, and the next turn works.
func geminiCancel(t *testing.T, r *acpRig, _ *mockgemini.Server) {
	ch := r.session("gemini", t.TempDir())
	took := cancelMidStream(t, r, ch, "slow")
	t.Logf("cancel round trip: %v", took)
	next := r.turn(ch, "after the cancel")
	require.Equal(t, wire.TurnStateComplete, next.State, "error: %+v", client.TurnError(&next))
	assert.Equal(t, "Answer to: after the cancel", acpTurnText(next.ResponseParts))
}

// geminiModelChange: a turn that picks another model makes the agent
// ask that model.
func geminiModelChange(t *testing.T, r *acpRig, llm *mockgemini.Server) {
	ch := r.session("gemini", t.TempDir())
	first := r.turn(ch, "first question")
	require.Equal(t, wire.TurnStateComplete, first.State, "error: %+v", client.TurnError(&first))
	const model = "gemini-2.5-pro"
	require.NotEqual(t, model, geminiMain(t, llm, "first question").Model)

	msg := client.UserMessage("second question")
	msg.Model = &wire.ModelSelection{ID: model}
	turnID := client.NewUUID()
	_, err := r.c.StartTurn(r.ctx(), r.chat(r.c, ch), turnID, msg)
	require.NoError(t, err)
	second := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)
	require.Equal(t, wire.TurnStateComplete, second.State, "error: %+v", client.TurnError(&second))
	assert.Empty(t, acpPartsOf[wire.SystemNotificationResponsePart](second.ResponseParts), "the agent took the model")
	assert.Equal(t, model, geminiMain(t, llm, "second question").Model, "the agent asks the new model")
}

// geminiTwoSessions: two sessions of one agent process run commands
// at the same time; each sees only its own.
func geminiTwoSessions(t *testing.T, r *acpRig, _ *mockgemini.Server) {
	a := r.session("gemini", t.TempDir())
	b := r.session("gemini", t.TempDir())
	ta := bridgetest.StartTurn(t, r.c, a, "shell:echo session-a-output")
	tb := bridgetest.StartTurn(t, r.c, b, "shell:echo session-b-output")
	turnA, _ := approveWith(t, r, a, ta, geminiAllowOnce)
	turnB, _ := approveWith(t, r, b, tb, geminiAllowOnce)
	for name, tr := range map[string]wire.Turn{"a": turnA, "b": turnB} {
		require.Equal(t, wire.TurnStateComplete, tr.State, "%s: %+v", name, client.TurnError(&tr))
	}
	textA, textB := acpTurnText(turnA.ResponseParts), acpTurnText(turnB.ResponseParts)
	assert.Contains(t, textA, "session-a-output")
	assert.NotContains(t, textA, "session-b-output")
	assert.Contains(t, textB, "session-b-output")
	assert.NotContains(t, textB, "session-a-output")
}
