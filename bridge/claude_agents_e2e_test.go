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
	"github.com/ahp-bridge/ahp-bridge/internal/mockllm"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// The slow tier: the real Claude ACP agents (claude-code-acp and
// claude-agent-acp, with the Claude Code CLI they drive) behind the bridge,
// talking to a local mock of the Anthropic Messages API (internal/mockllm)
// instead of a model: no network, no key. .ci/run installs the agents
// (keep the versions in step).
const (
	claudeCodeACP  = "@zed-industries/claude-code-acp@0.16.2"
	claudeAgentACP = "@agentclientprotocol/claude-agent-acp@0.101.0"
)

// claudeAgent describes one of the agents.
type claudeAgent struct {
	name, pkg, script string
}

var claudeAgents = []claudeAgent{
	{"claude-code-acp", claudeCodeACP, "@zed-industries/claude-code-acp/dist/index.js"},
	{"claude-agent-acp", claudeAgentACP, "@agentclientprotocol/claude-agent-acp/dist/index.js"},
}

// claudeProvider runs agent against llm, in a home directory of its own
// (the CLI keeps its settings and transcripts there), under the id
// ag.name.
func claudeProvider(t *testing.T, ag claudeAgent, llm *mockllm.Server) *acp.Provider {
	t.Helper()
	return claudeProviderIn(t, ag, llm, t.TempDir(), nil)
}

// claudeProviderWith is claudeProvider with MCP servers configured for
// every session (an agent's mcpServers in the bridge's config).
func claudeProviderWith(t *testing.T, ag claudeAgent, llm *mockllm.Server, mcp []backend.McpServer) *acp.Provider {
	t.Helper()
	return claudeProviderIn(t, ag, llm, t.TempDir(), mcp)
}

// claudeProviderIn is claudeProvider with the agent's home directory given,
// so that a second agent process finds the first one's transcripts, and
// the MCP servers configured for every session.
func claudeProviderIn(t *testing.T, ag claudeAgent, llm *mockllm.Server, home string, mcp []backend.McpServer) *acp.Provider {
	t.Helper()
	script := testenv.NPMFile(t, ag.pkg, ag.script)
	node := testenv.Command(t, "node")
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + llm.URL,
		"ANTHROPIC_API_KEY=sk-ant-test-not-a-key",
		// The CLI refuses to run as root (as CI does) outside a sandbox.
		"IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"PATH=" + os.Getenv("PATH"),
	}
	return acp.NewProvider(acp.Config{ID: ag.name, DisplayName: ag.name, Command: []string{node, script}, Env: env, CoalesceText: true,
		McpServers: mcp},
		testLogger(t).With().Str("component", "acp").Logger())
}

// toolNamed returns the name of the offered tool that is name or ends in
// "__"+name (claude-code-acp offers its own as mcp__acp__Bash).
func toolNamed(req mockllm.Request, name string) string {
	for _, tl := range req.Tools {
		if tl.Name == name || strings.HasSuffix(tl.Name, "__"+name) {
			return tl.Name
		}
	}
	return ""
}

// scripted answers the agent's main conversation: a prompt starting with
// "bash:" runs the rest with the Bash tool, "write:PATH:TEXT" writes a
// file, anything else is answered with text. Once a tool result came
// back, the model answers with the result. Side requests (titles, topic
// checks) get a short text.
func scripted(req mockllm.Request) mockllm.Reply {
	if res := req.ToolResults(); len(res) > 0 {
		var out []string
		for _, b := range res {
			out = append(out, toolResultText(b))
		}
		return mockllm.Reply{Text: "Tool said: " + strings.Join(out, " | ")}
	}
	prompt := lastUserText(req)
	switch {
	case strings.HasPrefix(prompt, "bash:"):
		if name := toolNamed(req, "Bash"); name != "" {
			return mockllm.Reply{ToolUses: []mockllm.ToolUse{{Name: name, Input: map[string]any{
				// claude-code-acp's Bash requires a timeout.
				"command": strings.TrimSpace(strings.TrimPrefix(prompt, "bash:")), "description": "Run the command", "timeout": 60000}}}}
		}
	case strings.HasPrefix(prompt, "write:"):
		parts := strings.SplitN(strings.TrimPrefix(prompt, "write:"), ":", 2)
		if name := toolNamed(req, "Write"); name != "" && len(parts) == 2 {
			return mockllm.Reply{ToolUses: []mockllm.ToolUse{{Name: name, Input: map[string]any{
				"file_path": parts[0], "content": parts[1]}}}}
		}
	}
	return mockllm.Reply{Text: "Answer to: " + prompt}
}

func lastUserText(req mockllm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		var texts []string
		for _, b := range m.Blocks() {
			if b.Type == "text" && !strings.HasPrefix(b.Text, "<system-reminder>") {
				texts = append(texts, b.Text)
			}
		}
		if len(texts) > 0 {
			return strings.TrimSpace(texts[len(texts)-1])
		}
	}
	return ""
}

func toolResultText(b mockllm.Block) string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var bs []mockllm.Block
	_ = json.Unmarshal(b.Content, &bs)
	var out []string
	for _, x := range bs {
		out = append(out, x.Text)
	}
	return strings.Join(out, "")
}

// TestClaudeAgentsRunBash: a turn in which the model calls the Bash tool
// the agent offers (claude-code-acp offers its own, mcp__acp__Bash, run in
// a client terminal; claude-agent-acp runs Bash itself), approved by the
// user; the command's output reaches the model and the answer the client.
func TestClaudeAgentsRunBash(t *testing.T) {
	for _, ag := range claudeAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			llm := mockllm.Start(scripted)
			t.Cleanup(llm.Close)
			p := claudeProvider(t, ag, llm)
			r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
			ch := r.session(ag.name, t.TempDir())

			turnID := bridgetest.StartTurn(t, r.c, ch, "bash: echo hi-from-bash")
			turn := approveAll(t, r, ch, turnID)
			require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
			assert.Contains(t, acpTurnText(turn.ResponseParts), "hi-from-bash")
			tools := acpPartsOf[wire.ToolCallResponsePart](turn.ResponseParts)
			require.NotEmpty(t, tools, "the Bash call is shown")
		})
	}
}

// approveAll approves every tool call of a turn that waits for
// confirmation, until the turn ends, and returns it.
func approveAll(t *testing.T, r *acpRig, ch, turnID string) wire.Turn {
	t.Helper()
	turn, _ := approveAllCount(t, r, ch, turnID)
	return turn
}

// approveAllCount is approveAll that also says how many it approved.
func approveAllCount(t *testing.T, r *acpRig, ch, turnID string) (wire.Turn, int) {
	t.Helper()
	chat := r.chat(r.c, ch)
	approved := map[string]bool{}
	for {
		var pending *wire.ToolCallPendingConfirmationState
		var ended *wire.Turn
		_, err := r.c.WaitForChat(r.ctx(), chat, func(s *wire.ChatState) bool {
			for i := range s.Turns {
				if s.Turns[i].ID == turnID {
					ended = &s.Turns[i]
					return true
				}
			}
			if p := acpPendingIn(activeParts(s)); p != nil && !approved[p.ToolCallID] {
				pending = p
				return true
			}
			return false
		})
		require.NoError(t, err, "turn %s neither ended nor asked", turnID)
		if ended != nil {
			return *ended, len(approved)
		}
		approved[pending.ToolCallID] = true
		option := ""
		for _, o := range pending.Options {
			if o.Kind == wire.ConfirmationOptionKindApprove {
				option = o.ID
				break
			}
		}
		require.NoError(t, r.confirm(r.c, ch, acpApprove(turnID, pending.ToolCallID, option)))
	}
}

func activeParts(s *wire.ChatState) []wire.ResponsePart {
	if s.ActiveTurn == nil {
		return nil
	}
	return s.ActiveTurn.ResponseParts
}

// TestClaudeAgentsEditWithApproval: the model writes a new file with the
// agent's Write tool; the user approves; the file is there and the client
// saw a created file.
func TestClaudeAgentsEditWithApproval(t *testing.T) {
	for _, ag := range claudeAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			llm := mockllm.Start(scripted)
			t.Cleanup(llm.Close)
			p := claudeProvider(t, ag, llm)
			r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
			dir := t.TempDir()
			// The permission mode that asks before edits (claude-agent-acp
			// starts in "auto", where a classifier decides).
			ch := bridgetest.CreateSessionWith(t, r.c, wire.CreateSessionParams{Provider: wire.Ptr(ag.name),
				WorkingDirectories: []string{"file://" + dir}, Config: map[string]any{"mode": "default"}})
			st, err := r.c.Session(ch)
			require.NoError(t, err)
			t.Logf("settings: %v", st.Config.Values)
			path := filepath.Join(dir, "notes.txt")

			turnID := bridgetest.StartTurn(t, r.c, ch, "write:"+path+":hello from the model")
			turn, approved := approveAllCount(t, r, ch, turnID)
			require.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
			b, err := os.ReadFile(path)
			require.NoError(t, err, "the approved write happened")
			assert.Equal(t, "hello from the model", string(b))
			assert.Equal(t, 1, approved, "the write asked the user first")
		})
	}
}

// TestClaudeAgentsModelChange: a turn asking for another model switches
// the agent to it: its next request to the model names the new one.
func TestClaudeAgentsModelChange(t *testing.T) {
	for _, ag := range claudeAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			llm := mockllm.Start(scripted)
			t.Cleanup(llm.Close)
			p := claudeProvider(t, ag, llm)
			r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
			ch := r.session(ag.name, t.TempDir())

			first := r.turn(ch, "first question")
			require.Equal(t, wire.TurnStateComplete, first.State, "error: %+v", client.TurnError(&first))
			before := mainRequest(t, llm, "first question")
			require.NotContains(t, strings.ToLower(before.Model), "haiku")

			chat := r.chat(r.c, ch)
			msg := client.UserMessage("second question")
			msg.Model = &wire.ModelSelection{ID: "haiku"}
			turnID := client.NewUUID()
			_, err := r.c.StartTurn(r.ctx(), chat, turnID, msg)
			require.NoError(t, err)
			second := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)
			require.Equal(t, wire.TurnStateComplete, second.State, "error: %+v", client.TurnError(&second))
			for _, part := range second.ResponseParts {
				_, note := part.Value.(*wire.SystemNotificationResponsePart)
				assert.False(t, note, "the agent took the model")
			}
			after := mainRequest(t, llm, "second question")
			assert.Contains(t, strings.ToLower(after.Model), "haiku", "the agent asks the new model")
		})
	}
}

// mainRequest is the last request of the agent's main conversation whose
// user prompt was prompt.
func mainRequest(t *testing.T, llm *mockllm.Server, prompt string) mockllm.Request {
	t.Helper()
	reqs := llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].Tools) > 0 && lastUserText(reqs[i]) == prompt {
			return reqs[i]
		}
	}
	require.Failf(t, "no request", "for %q among %d", prompt, len(reqs))
	return mockllm.Request{}
}

// TestClaudeAgentsTwoSessions: two sessions of one agent process run
// commands at the same time; each sees only its own.
func TestClaudeAgentsTwoSessions(t *testing.T) {
	for _, ag := range claudeAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			llm := mockllm.Start(scripted)
			t.Cleanup(llm.Close)
			p := claudeProvider(t, ag, llm)
			r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
			a := r.session(ag.name, t.TempDir())
			b := r.session(ag.name, t.TempDir())
			ta := bridgetest.StartTurn(t, r.c, a, "bash: echo session-a-output")
			tb := bridgetest.StartTurn(t, r.c, b, "bash: echo session-b-output")
			turnA := approveAll(t, r, a, ta)
			turnB := approveAll(t, r, b, tb)
			for name, tr := range map[string]wire.Turn{"a": turnA, "b": turnB} {
				require.Equal(t, wire.TurnStateComplete, tr.State, "%s: %+v", name, client.TurnError(&tr))
			}
			textA, textB := acpTurnText(turnA.ResponseParts), acpTurnText(turnB.ResponseParts)
			assert.Contains(t, textA, "session-a-output")
			assert.NotContains(t, textA, "session-b-output")
			assert.Contains(t, textB, "session-b-output")
			assert.NotContains(t, textB, "session-a-output")
		})
	}
}
