//go:build slowagents

package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/mockllm"
	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// VS Code's end-to-end scenarios that need a model-backed agent
// (docs/vscode-scenarios.md, "slow tier"): claude-agent-acp, the real
// Claude ACP adapter with the Claude Code CLI under it, behind the bridge,
// its model our Anthropic mock (internal/mockllm) playing what the model
// does in VS Code's recorded exchange for the scenario (captures/*.yaml in
// VS Code's e2e folder): which tool it calls with what, and how it answers
// from the tool's result. The scripts are ours; the mock's answers are
// computed from what the tools returned, so a tool result that does not
// reach the model fails the scenario. The bridge is driven over the wire
// by the VS Code-dialect client (internal/vscodeclient) only. Each test
// shares one agent process among its parallel scenarios; they run only
// with the slowagents build tag, in .ci/run's step of
// their own.

// vsScenarioTimeout bounds one wait of a scenario; the agent starts a CLI
// process for each session, which is slow on a loaded two-core machine.
const vsScenarioTimeout = 3 * time.Minute

// step is one reply of the scripted model within a turn: req is the
// agent's request, results the texts of the tool results the turn got so
// far, in order.
type step func(req mockllm.Request, results []string) mockllm.Reply

// promptBook is the scripted model of every scenario sharing one agent
// process: each scenario registers the steps of its turns under the prompt
// that starts them (prompts are unique across scenarios).
type promptBook struct {
	mu      sync.Mutex
	scripts map[string][]step
}

func newPromptBook() *promptBook { return &promptBook{scripts: map[string][]step{}} }

// add registers the steps of the turn that prompt starts.
func (b *promptBook) add(t *testing.T, prompt string, steps ...step) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	_, dup := b.scripts[prompt]
	require.False(t, dup, "two scenarios script the prompt %q", prompt)
	b.scripts[prompt] = steps
}

// respond answers the agent's requests. Requests that offer no tools are
// the CLI's side requests (titles, topic checks): a short text. A request
// of the main conversation is answered by the step of its turn's script
// that comes after the tool results it carries.
func (b *promptBook) respond(req mockllm.Request) mockllm.Reply {
	if len(req.Tools) == 0 {
		return mockllm.Reply{Text: "Scenario notes"}
	}
	prompt, results := currentTurn(req)
	b.mu.Lock()
	steps, ok := b.scripts[prompt]
	b.mu.Unlock()
	switch {
	case !ok:
		return mockllm.Reply{Text: "the mock has no script for the prompt " + prompt}
	case len(results) >= len(steps):
		return mockllm.Reply{Text: fmt.Sprintf("the script of %q has no step after %d tool results", prompt, len(results))}
	}
	return steps[len(results)](req, results)
}

// currentTurn returns the user prompt of the request's last turn and the
// texts of the tool results that followed it, in order.
func currentTurn(req mockllm.Request) (prompt string, results []string) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		var texts, res []string
		for _, b := range m.Blocks() {
			switch {
			case b.Type == "tool_result":
				res = append(res, toolResultText(b))
			case b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>"):
				texts = append(texts, b.Text)
			}
		}
		results = append(res, results...)
		if len(texts) > 0 {
			return strings.TrimSpace(texts[len(texts)-1]), results
		}
	}
	return "", results
}

// say is a step answering with a text computed from the tool results.
func say(answer func(results []string) string) step {
	return func(_ mockllm.Request, results []string) mockllm.Reply {
		return mockllm.Reply{Text: answer(results)}
	}
}

// sayText is a step answering text.
func sayText(text string) step { return say(func([]string) string { return text }) }

// use is a step calling the agent's tool named tool (its own name or an
// MCP name ending in it) with input, after a short text as the model
// says what it does.
func use(text, tool string, input map[string]any) step {
	return func(req mockllm.Request, _ []string) mockllm.Reply {
		name := toolNamed(req, tool)
		if name == "" {
			return mockllm.Reply{Text: "the agent offers no " + tool + " tool"}
		}
		return mockllm.Reply{Text: text, ToolUses: []mockllm.ToolUse{{Name: name, Input: input}}}
	}
}

// bash is a step running command with the agent's Bash tool.
func bash(command string) step {
	return use("", "Bash", map[string]any{"command": command, "description": "Run the requested command", "timeout": 60000})
}

// lineNumbers matches the line numbers the Read tool puts before each line
// ("     1\t" or "1→").
var lineNumbers = regexp.MustCompile(`(?m)^\s*\d+(\t|→)`)

// fileText is a Read tool result without its line numbers.
func fileText(result string) string {
	return strings.TrimRight(lineNumbers.ReplaceAllString(result, ""), "\n")
}

// vsSlowRig is one bridge with one claude-agent-acp process behind it and
// the scripted model, shared by a test's parallel subtests. A rig made by
// newVSRestartRig keeps its sessions in a state file and can restart.
type vsSlowRig struct {
	env  *bridgetest.Env
	llm  *mockllm.Server
	book *promptBook

	// For restarts: the agent's home (its transcripts), the state file
	// and the store open on it.
	home, state string
	st          *store.SQLite
}

// claudeAgentACPAgent is the agent the scenarios run.
var claudeAgentACPAgent = claudeAgent{"claude-agent-acp", claudeAgentACP, "@agentclientprotocol/claude-agent-acp/dist/index.js"}

func newVSSlowRig(t *testing.T) *vsSlowRig {
	t.Helper()
	book := newPromptBook()
	llm := mockllm.Start(book.respond)
	t.Cleanup(llm.Close)
	p := claudeProvider(t, claudeAgentACPAgent, llm)
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})
	return &vsSlowRig{env: env, llm: llm, book: book}
}

// newVSRestartRig is newVSSlowRig with the sessions kept in a state file,
// as `serve --state` keeps them, so that restart can stop the bridge and
// its agent and start them again.
func newVSRestartRig(t *testing.T) *vsSlowRig {
	t.Helper()
	book := newPromptBook()
	llm := mockllm.Start(book.respond)
	t.Cleanup(llm.Close)
	r := &vsSlowRig{llm: llm, book: book, home: t.TempDir(), state: filepath.Join(t.TempDir(), "state.db")}
	r.start(t)
	return r
}

func (r *vsSlowRig) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), vsScenarioTimeout)
	defer cancel()
	st, err := store.Open(ctx, r.state, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	p := claudeProviderIn(t, claudeAgentACPAgent, r.llm, r.home, nil)
	r.st = st
	r.env = bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{Host: host.Options{Store: st}})
}

// restart stops the bridge and its agent as `serve` does on its way out
// and starts them again on the same state file and agent home. Windows
// connected before must connect again (window).
func (r *vsSlowRig) restart(t *testing.T) {
	t.Helper()
	r.env.Close()
	require.NoError(t, r.st.Close())
	r.start(t)
}

// vsScenario is one scenario's VS Code window on the shared rig.
type vsScenario struct {
	t   *testing.T
	rig *vsSlowRig
	c   *vsc.Client
}

// window connects a VS Code client to the rig for test t.
func (r *vsSlowRig) window(t *testing.T) *vsScenario {
	t.Helper()
	s := &vsScenario{t: t, rig: r}
	c, err := vsc.Dial(s.ctx(), vsc.Options{Address: r.env.URL, SessionURIs: vsc.SessionURIsProvider})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Connect(s.ctx())
	require.NoError(t, err)
	s.c = c
	return s
}

func (s *vsScenario) ctx() context.Context { return bridgetest.Context(s.t, vsScenarioTimeout) }

// session creates a session of the agent in dirs (the first is its
// working directory) as VS Code does and opens its default chat; it
// returns the session and the chat.
func (s *vsScenario) session(dirs ...string) (session, chat string) {
	s.t.Helper()
	// VS Code's createSession, with the session config its new-session
	// picker sets: the permission mode that asks before edits and
	// commands (claude-agent-acp starts in "auto", where a classifier
	// request decides and the CLI adds a billing notice to the answer).
	session = claudeAgentACPAgent.name + ":/" + client.NewUUID()
	_, err := s.c.Call(s.ctx(), "createSession", map[string]any{
		"channel":            session,
		"provider":           claudeAgentACPAgent.name,
		"workingDirectories": fileURIs(dirs),
		"config":             map[string]any{"mode": "default"},
		"progressToken":      client.NewUUID(),
	})
	require.NoError(s.t, err)
	chat, err = s.c.OpenSession(s.ctx(), session)
	require.NoError(s.t, err)
	return session, chat
}

// turn runs a turn on chat as VS Code's driveTurnToCompletion does: it
// starts it and approves every tool call that asks, with the approve
// option, until the turn ends. It returns the ended turn and how many
// tool calls asked.
func (s *vsScenario) turn(chat, prompt string) (wire.Turn, int) {
	s.t.Helper()
	turnID, err := s.c.StartTurn(chat, prompt, "")
	require.NoError(s.t, err)
	approved := map[string]bool{}
	for {
		var pending *wire.ToolCallPendingConfirmationState
		err := s.c.WaitFor(s.ctx(), "the end of turn "+turnID+" or a tool call to confirm", func() bool {
			if s.c.TurnEnded(chat, turnID) {
				return true
			}
			st, _ := s.c.Chat(chat)
			if p := acpPendingIn(activeParts(&st)); p != nil && !approved[p.ToolCallID] {
				pending = p
				return true
			}
			return false
		})
		require.NoError(s.t, err)
		if pending == nil {
			break
		}
		approved[pending.ToolCallID] = true
		option := ""
		for _, o := range pending.Options {
			if o.Kind == wire.ConfirmationOptionKindApprove {
				option = o.ID
				break
			}
		}
		require.NoError(s.t, s.c.Approve(chat, turnID, pending.ToolCallID, option))
	}
	turn, inTurns, err := s.c.WaitTurnEnd(s.ctx(), chat, turnID)
	require.NoError(s.t, err)
	require.True(s.t, inTurns, "turn %s ended without moving into turns[]", turnID)
	require.Empty(s.t, s.c.Rejected(), "the bridge rejected actions of the client")
	require.Empty(s.t, s.c.StrayFrames(), "the bridge sent frames VS Code does not expect")
	return turn, len(approved)
}

// completedTool returns the turn's only completed tool call, failing when
// the turn has none or several.
func completedTool(t *testing.T, turn wire.Turn) *wire.ToolCallCompletedState {
	t.Helper()
	tools := completedTools(t, turn)
	require.Len(t, tools, 1, "the turn's tool calls: %s", toolSummary(turn))
	return tools[0]
}

// toolSummary describes a turn's tool calls for a failure message.
func toolSummary(turn wire.Turn) string {
	var out []string
	for _, tc := range acpPartsOf[wire.ToolCallResponsePart](turn.ResponseParts) {
		b, _ := json.Marshal(tc.ToolCall.Value)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// toolResult is a completed tool call's result content as JSON, for
// checks on what it shows.
func toolResult(tc *wire.ToolCallCompletedState) string {
	b, _ := json.Marshal(map[string]any{"content": tc.Content, "structured": tc.StructuredContent, "error": tc.Error})
	return string(b)
}

// answerText is the markdown a turn shows after its last tool call: the
// model's answer from the tools' results.
func answerText(turn wire.Turn) string {
	var b strings.Builder
	for _, p := range turn.ResponseParts {
		switch v := p.Value.(type) {
		case *wire.ToolCallResponsePart:
			b.Reset()
		case *wire.MarkdownResponsePart:
			b.WriteString(v.Content)
		}
	}
	return strings.TrimSpace(b.String())
}

// fileURIs are dirs as the file URIs VS Code sends.
func fileURIs(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = (&url.URL{Scheme: "file", Path: d}).String()
	}
	return out
}

// createChat is VS Code's createChat of a peer chat id of session (its
// name is VS Code's, ahp-chat://<id>/<base64url(session)>), then its
// subscribe, as the multiChatSuite does before a turn. It returns the
// chat.
func (s *vsScenario) createChat(session, id string) string {
	s.t.Helper()
	return s.createChatIn(session, id)
}

// createChatIn is createChat with the peer's working directories chosen
// among the session's (none: the session's).
func (s *vsScenario) createChatIn(session, id string, dirs ...string) string {
	s.t.Helper()
	chat := vsc.ChatURI(session, id)
	params := map[string]any{"channel": session, "chat": chat}
	if len(dirs) > 0 {
		params["workingDirectories"] = fileURIs(dirs)
	}
	_, err := s.c.Call(s.ctx(), "createChat", params)
	require.NoError(s.t, err, "createChat %s", chat)
	_, err = s.c.Subscribe(s.ctx(), chat)
	require.NoError(s.t, err)
	return chat
}

// disposeChat is VS Code's disposeChat of a peer chat.
func (s *vsScenario) disposeChat(chat string) {
	s.t.Helper()
	_, err := s.c.Call(s.ctx(), "disposeChat", map[string]any{"channel": chat})
	require.NoError(s.t, err, "disposeChat %s", chat)
}

// completeTurn is turn, requiring that it completed.
func (s *vsScenario) completeTurn(chat, prompt string) wire.Turn {
	s.t.Helper()
	turn, _ := s.turn(chat, prompt)
	require.Equal(s.t, wire.TurnStateComplete, turn.State, "turn %q; tools: %s", prompt, toolSummary(turn))
	return turn
}

// mainRequests are the requests of the agent's main conversation (those
// offering tools) made for the turn that prompt started, in order.
func (r *vsSlowRig) mainRequests(prompt string) []mockllm.Request {
	var out []mockllm.Request
	for _, req := range r.llm.Requests() {
		if p, _ := currentTurn(req); len(req.Tools) > 0 && p == prompt {
			out = append(out, req)
		}
	}
	return out
}

// codeWord matches what the recall scripts look for in earlier user
// messages.
var codeWord = regexp.MustCompile(`code word ([A-Z_]+)`)

// recall is a step answering with the code word an earlier user message
// of the conversation the agent sent gave, as a model with that context
// would; "no code word" when there is none.
func recall() step {
	return func(req mockllm.Request, _ []string) mockllm.Reply {
		if m := codeWord.FindStringSubmatch(req.Text("user")); m != nil {
			return mockllm.Reply{Text: m[1]}
		}
		return mockllm.Reply{Text: "no code word"}
	}
}
