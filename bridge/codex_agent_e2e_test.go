//go:build slowagents

package bridge_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/mockopenai"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// The slow tier, Codex: codex-acp (the Codex agent with an ACP front) behind
// the bridge, talking to a local mock of the OpenAI Responses API
// (internal/mockopenai) instead of a model: no network, no key. .ci/run
// installs it with its linux-x64 binary package (keep the versions in
// step, and in README.md).
const (
	codexACPVersion = "0.16.0"
	codexACP        = "@zed-industries/codex-acp@" + codexACPVersion
	// codexModel is a model Codex knows (it warns in the chat about any
	// other), codexOtherModel the one a model change picks.
	codexModel      = "gpt-5.4"
	codexOtherModel = "gpt-5.4-mini"
)

// codexAllowOnce is the id of codex-acp's allow_once option.
const codexAllowOnce = "approved"

// codexProvider runs codex-acp against llm, with a CODEX_HOME of its own
// whose config.toml points the model provider at the mock.
func codexProvider(t *testing.T, llm *mockopenai.Server) *acp.Provider {
	t.Helper()
	testenv.NPMFile(t, codexACP, "@zed-industries/codex-acp/bin/codex-acp.js")
	// The binary comes in a package per platform, an optional dependency
	// of codex-acp (its bin script only finds and starts it).
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	goos, exe := runtime.GOOS, ""
	if goos == "windows" {
		goos, exe = "win32", ".exe"
	}
	platform := "codex-acp-" + goos + "-" + arch
	bin := testenv.NPMFile(t, "@zed-industries/"+platform+"@"+codexACPVersion,
		"@zed-industries/"+platform+"/bin/codex-acp"+exe)
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	// Codex refuses to set up its helper commands (apply_patch) under the
	// temporary directory, where t.TempDir is: give it another.
	tmp := filepath.Join(home, "tmp")
	require.NoError(t, os.MkdirAll(codexHome, 0o755))
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	cfg := fmt.Sprintf(`model = %q
model_provider = "mock"
check_for_update_on_startup = false

[model_providers.mock]
name = "Mock OpenAI"
base_url = "%s/v1"
env_key = "MOCK_OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, codexModel, llm.URL)
	require.NoError(t, os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o644))
	env := []string{
		"HOME=" + home,
		"CODEX_HOME=" + codexHome,
		"TMPDIR=" + tmp,
		"MOCK_OPENAI_API_KEY=test-not-a-key",
		"PATH=" + os.Getenv("PATH"),
	}
	return acp.NewProvider(acp.Config{ID: "codex", DisplayName: "Codex", Command: []string{bin}, Env: env, CoalesceText: true},
		testLogger(t).With().Str("component", "acp").Logger())
}

// TestCodexAgent runs the scenarios of the slow tier against one
// Codex process (one provider), each in sessions of its own, at the
// same time, as a client that uses several sessions would.
func TestCodexAgent(t *testing.T) {
	r, llm := codexRig(t)
	// First, alone: the agent's first session (issue 26, finding 2).
	t.Run("FirstSessionMode", func(t *testing.T) { codexFirstSessionMode(t, r.forTest(t), llm) })
	runAgentScenarios(t, r, llm, []agentScenario[*mockopenai.Server]{
		{"Text", codexText},
		{"ShellWithoutApproval", codexShellWithoutApproval},
		{"ShellWithApproval", codexShellWithApproval},
		{"Edit", codexEdit},
		{"Cancel", codexCancel},
		{"ModelChange", codexModelChange},
		{"TwoSessions", codexTwoSessions},
	})
}

// codexRig is a bridge over codex-acp against a scripted mock.
func codexRig(t *testing.T) (*acpRig, *mockopenai.Server) {
	t.Helper()
	llm := mockopenai.Start(codexScripted)
	t.Cleanup(llm.Close)
	p := codexProvider(t, llm)
	return newACPRig(t, acpRigOptions{providers: []backend.Provider{p}}), llm
}

// codexCommandMode is the session mode in which a command runs without
// asking. Codex runs commands in its sandbox, which needs bubblewrap
// (bwrap); where it is missing (as on this project's CI machine) every
// sandboxed command fails, so the command turns run in "full-access",
// where Codex runs them unsandboxed and asks nothing.
func codexCommandMode() string {
	if _, err := exec.LookPath("bwrap"); err == nil {
		return "auto"
	}
	return "full-access"
}

// codexScripted answers the conversation: "shell:CMD" runs CMD with
// exec_command, "escalate:CMD" runs it asking to leave the sandbox (which
// asks the user), "patch:NAME:TEXT" adds a file with apply_patch, "slow"
// streams slowCancelText slowly, anything else is answered with
// "Answer to: PROMPT" in three pieces. Once a tool's output came back, the
// model answers "Tool said: " and the output.
func codexScripted(req mockopenai.Request) mockopenai.Reply {
	if out := req.ToolOutputs(); len(out) > 0 {
		var texts []string
		for _, o := range out {
			texts = append(texts, o.OutputText())
		}
		return mockopenai.Reply{Text: "Tool said: " + strings.Join(texts, " | ")}
	}
	prompt := req.LastUserText()
	switch {
	case strings.HasPrefix(prompt, "shell:"):
		return mockopenai.Reply{Calls: []mockopenai.Call{{Name: "exec_command", Arguments: map[string]any{
			"cmd": strings.TrimPrefix(prompt, "shell:")}}}}
	case strings.HasPrefix(prompt, "escalate:"):
		return mockopenai.Reply{Calls: []mockopenai.Call{{Name: "exec_command", Arguments: map[string]any{
			"cmd": strings.TrimPrefix(prompt, "escalate:"), "sandbox_permissions": "require_escalated",
			"justification": "The command must run outside the sandbox."}}}}
	case strings.HasPrefix(prompt, "patch:"):
		name, text, _ := strings.Cut(strings.TrimPrefix(prompt, "patch:"), ":")
		return mockopenai.Reply{Calls: []mockopenai.Call{{Name: "apply_patch",
			Input: "*** Begin Patch\n*** Add File: " + name + "\n+" + text + "\n*** End Patch\n"}}}
	case prompt == "slow":
		return mockopenai.Reply{Text: slowCancelText(), Chunks: slowCancelChunks, Delay: slowCancelDelay}
	}
	return mockopenai.Reply{Text: "Answer to: " + prompt, Chunks: 3}
}

// codexMain is the last request whose prompt was prompt.
func codexMain(t *testing.T, llm *mockopenai.Server, prompt string) mockopenai.Request {
	t.Helper()
	reqs := llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].LastUserText() == prompt {
			return reqs[i]
		}
	}
	require.Failf(t, "no request", "for %q among %d", prompt, len(reqs))
	return mockopenai.Request{}
}

// codexSession creates a session in dir in the given mode ("" = Codex's
// own default, read-only) and checks the mode took.
func codexSession(t *testing.T, r *acpRig, dir, mode string) string {
	t.Helper()
	params := wire.CreateSessionParams{Provider: wire.Ptr("codex"), WorkingDirectories: []string{"file://" + dir}}
	if mode != "" {
		params.Config = map[string]any{"mode": mode}
	}
	ch := bridgetest.CreateSessionWith(t, r.c, params)
	if mode != "" {
		// The agent reports its settings once its session exists, which
		// may be just after the bridge called the session ready.
		ctx := bridgetest.Context(t, 10*time.Second)
		st, err := r.c.WaitFor(ctx, ch, func(s *wire.SessionState) bool { return s.Config != nil && s.Config.Values["mode"] == mode })
		if err != nil {
			st, _ = r.c.Session(ch)
		}
		require.NoError(t, err, "the session runs in mode %s; it has %+v", mode, st.Config)
	}
	return ch
}

// codexFirstSessionMode: the first session after the agent started
// switches to the mode in which commands run without asking
// (codexCommandMode); the change reaches the agent: a fresh snapshot shows
// it, and a command runs without asking.
func codexFirstSessionMode(t *testing.T, r *acpRig, llm *mockopenai.Server) {
	mode := codexCommandMode()
	ch := codexSession(t, r, t.TempDir(), "")
	_, err := r.c.Confirm(r.ctx(), ch, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"mode": mode}}))
	require.NoError(t, err, "the agent's first session takes a change of its settings")
	fresh := r.env.Client(t)
	_, err = fresh.Subscribe(r.ctx(), ch)
	require.NoError(t, err)
	// The agent's first report of its settings (read-only) can reach the
	// session just after the change; the agent's answer to the change
	// follows it, so a client settles on the new mode.
	st, err := fresh.WaitFor(bridgetest.Context(t, 10*time.Second), ch, func(s *wire.SessionState) bool {
		return s.Config != nil && s.Config.Values["mode"] == mode
	})
	if err != nil {
		st, _ = fresh.Session(ch)
	}
	require.NoError(t, err, "a fresh client settles on the new mode; it has %+v", st.Config)

	prompt := "shell:echo first-session"
	turnID := bridgetest.StartTurn(t, r.c, ch, prompt)
	turn, asked := approveWith(t, r, ch, turnID, codexAllowOnce)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	assert.Empty(t, asked, "in mode %s the command runs without asking", mode)
	out := codexMain(t, llm, prompt).ToolOutputs()
	require.Len(t, out, 1)
	assert.Contains(t, out[0].OutputText(), "first-session", "the command ran (outside the sandbox)")
}

// codexText: a text answer streamed in pieces reaches the client whole
// and in order.
func codexText(t *testing.T, r *acpRig, llm *mockopenai.Server) {
	ch := codexSession(t, r, t.TempDir(), "")
	turn := r.turn(ch, "hello codex")
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	assert.Equal(t, "Answer to: hello codex", acpTurnText(turn.ResponseParts))
	assert.Empty(t, acpPartsOf[wire.ToolCallResponsePart](turn.ResponseParts))
	assert.Equal(t, codexModel, codexMain(t, llm, "hello codex").Model)
	t.Logf("other requests: %v", llm.Other())
}

// codexShellWithoutApproval: a command runs without asking (in
// full-access mode where bwrap is missing: codexCommandMode); the client
// sees the call completed with the command's output, the output the model
// got.
func codexShellWithoutApproval(t *testing.T, r *acpRig, llm *mockopenai.Server) {
	ch := codexSession(t, r, t.TempDir(), codexCommandMode())
	prompt := "shell:echo hi-without-asking"
	turnID := bridgetest.StartTurn(t, r.c, ch, prompt)
	turn, asked := approveWith(t, r, ch, turnID, codexAllowOnce)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	assert.Empty(t, asked, "the command runs without asking")
	tools := completedTools(t, turn)
	require.Len(t, tools, 1)
	assert.True(t, tools[0].Success)
	assert.Contains(t, tools[0].DisplayName, "echo hi-without-asking")
	assert.Contains(t, toolText(tools[0]), "hi-without-asking", "the client sees the command's output")
	out := codexMain(t, llm, prompt).ToolOutputs()
	require.Len(t, out, 1, "the command's output went back to the model")
	assert.Contains(t, out[0].OutputText(), "hi-without-asking")
	assert.Equal(t, "Tool said: "+out[0].OutputText(), acpTurnText(turn.ResponseParts))
}

// codexShellWithApproval: in Codex's default read-only mode a command
// that asks to leave the sandbox asks the user first; approved once, it
// runs unsandboxed (so bwrap is not needed), the client sees its output as
// the result (not the approval's text), and afterwards the session is
// idle again.
func codexShellWithApproval(t *testing.T, r *acpRig, llm *mockopenai.Server) {
	dir := t.TempDir()
	ch := codexSession(t, r, dir, "")
	prompt := "escalate:mkdir made-by-shell && echo made-it"
	turnID := bridgetest.StartTurn(t, r.c, ch, prompt)
	turn, asked := approveWith(t, r, ch, turnID, codexAllowOnce)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	require.Len(t, asked, 1, "the command asked the user first")
	tools := completedTools(t, turn)
	require.Len(t, tools, 1)
	assert.True(t, tools[0].Success)
	assert.Equal(t, wire.ToolCallConfirmationReasonUserAction, tools[0].Confirmed)
	require.NotNil(t, tools[0].SelectedOption)
	assert.Equal(t, codexAllowOnce, tools[0].SelectedOption.ID)
	assert.DirExists(t, filepath.Join(dir, "made-by-shell"), "the approved command ran")
	out := codexMain(t, llm, prompt).ToolOutputs()
	require.Len(t, out, 1)
	assert.Contains(t, out[0].OutputText(), "made-it")
	assert.Equal(t, "Tool said: "+out[0].OutputText(), acpTurnText(turn.ResponseParts))
	// Issue 26, finding 5: the result is the command's output, not the
	// justification the permission request carried.
	assert.Contains(t, toolText(tools[0]), "made-it", "the client sees the command's output")
	assert.NotContains(t, toolText(tools[0]), "must run outside the sandbox", "the approval's text is not the result")
	assertSessionIdle(t, r, ch)
}

// codexEdit: in read-only mode the model adds a file with apply_patch;
// the client approves once; the file has the model's text and the client
// saw it created.
func codexEdit(t *testing.T, r *acpRig, llm *mockopenai.Server) {
	dir := t.TempDir()
	ch := codexSession(t, r, dir, "")
	prompt := "patch:notes.txt:hello from the model"
	turnID := bridgetest.StartTurn(t, r.c, ch, prompt)
	turn, asked := approveWith(t, r, ch, turnID, codexAllowOnce)
	require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	require.Len(t, asked, 1, "the edit asked the user first")
	path := filepath.Join(dir, "notes.txt")
	b, err := os.ReadFile(path)
	require.NoError(t, err, "the approved edit happened")
	assert.Equal(t, "hello from the model\n", string(b))
	tools := completedTools(t, turn)
	require.Len(t, tools, 1)
	assert.True(t, tools[0].Success, "error: %+v", tools[0].Error)
	var created []string
	for _, c := range tools[0].Content {
		if e, ok := c.Value.(*wire.ToolResultFileEditContent); ok && e.After != nil && e.Before == nil {
			created = append(created, e.After.URI)
		}
	}
	assert.Equal(t, []string{"file://" + path}, created, "the client saw the file created")
	out := codexMain(t, llm, prompt).ToolOutputs()
	require.Len(t, out, 1)
	assert.Equal(t, "Tool said: "+out[0].OutputText(), acpTurnText(turn.ResponseParts))
	assertSessionIdle(t, r, ch)
}

// codexCancel: a turn cancelled while the model streams ends cancelled
// with what had arrived, and the next turn works.
func codexCancel(t *testing.T, r *acpRig, _ *mockopenai.Server) {
	ch := codexSession(t, r, t.TempDir(), "")
	took := cancelMidStream(t, r, ch, "slow")
	t.Logf("cancel round trip: %v", took)
	next := r.turn(ch, "after the cancel")
	require.Equal(t, wire.TurnStateComplete, next.State, "error: %+v", client.TurnError(&next))
	assert.Equal(t, "Answer to: after the cancel", acpTurnText(next.ResponseParts))
}

// codexModelChange: a turn that picks another model makes the agent
// ask that model.
func codexModelChange(t *testing.T, r *acpRig, llm *mockopenai.Server) {
	ch := codexSession(t, r, t.TempDir(), "")
	first := r.turn(ch, "first question")
	require.Equal(t, wire.TurnStateComplete, first.State, "error: %+v", client.TurnError(&first))
	require.Equal(t, codexModel, codexMain(t, llm, "first question").Model)

	msg := client.UserMessage("second question")
	msg.Model = &wire.ModelSelection{ID: codexOtherModel}
	turnID := client.NewUUID()
	_, err := r.c.StartTurn(r.ctx(), r.chat(r.c, ch), turnID, msg)
	require.NoError(t, err)
	second := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)
	require.Equal(t, wire.TurnStateComplete, second.State, "error: %+v", client.TurnError(&second))
	assert.Empty(t, acpPartsOf[wire.SystemNotificationResponsePart](second.ResponseParts), "the agent took the model")
	assert.Equal(t, codexOtherModel, codexMain(t, llm, "second question").Model, "the agent asks the new model")
}

// codexTwoSessions: two sessions of one agent process run commands at
// the same time (in codexCommandMode); each sees only its own.
func codexTwoSessions(t *testing.T, r *acpRig, _ *mockopenai.Server) {
	a := codexSession(t, r, t.TempDir(), codexCommandMode())
	b := codexSession(t, r, t.TempDir(), codexCommandMode())
	ta := bridgetest.StartTurn(t, r.c, a, "shell:echo session-a-output")
	tb := bridgetest.StartTurn(t, r.c, b, "shell:echo session-b-output")
	turnA, _ := approveWith(t, r, a, ta, codexAllowOnce)
	turnB, _ := approveWith(t, r, b, tb, codexAllowOnce)
	for name, tr := range map[string]wire.Turn{"a": turnA, "b": turnB} {
		require.Equal(t, wire.TurnStateComplete, tr.State, "%s: %+v", name, client.TurnError(&tr))
	}
	textA, textB := acpTurnText(turnA.ResponseParts), acpTurnText(turnB.ResponseParts)
	assert.Contains(t, textA, "session-a-output")
	assert.NotContains(t, textA, "session-b-output")
	assert.Contains(t, textB, "session-b-output")
	assert.NotContains(t, textB, "session-a-output")
}
