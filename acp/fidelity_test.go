package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file replay what Claude's ACP agents sent (issue 15),
// from testdata/replay.

// TestTerminalsOfTwoSessionsStayApart: two sessions of one claude-code-acp
// process run commands at once. Their bridge session ids share a long
// prefix, as AHP session URIs do; terminal ids made from a prefix of it
// collided, so one session's output landed in the other's tool call and
// releasing one killed the other's.
func TestTerminalsOfTwoSessionsStayApart(t *testing.T) {
	p := replayProvider(t, "terminals_two_sessions", nil)
	sa, reca := openReplaySession(t, p, "ahp-session:/1f0c2d4e-aaaa-4000-8000-000000000001", t.TempDir(), "")
	sb, recb := openReplaySession(t, p, "ahp-session:/1f0c2d4e-aaaa-4000-8000-000000000002", t.TempDir(), "")
	doneA := startPrompt(t, sa, "run marker A")
	doneB := startPrompt(t, sb, "run marker B")
	for _, r := range []promptResult{waitPrompt(t, doneA), waitPrompt(t, doneB)} {
		require.NoError(t, r.err)
		assert.Equal(t, backend.StopEndTurn, r.res.StopReason)
	}

	startedA := eventsOf[backend.TerminalStarted](reca)
	startedB := eventsOf[backend.TerminalStarted](recb)
	require.Len(t, startedA, 1)
	require.Len(t, startedB, 1)
	idA, idB := startedA[0].TerminalID, startedB[0].TerminalID
	assert.NotEqual(t, idA, idB, "two sessions' terminals share an id")
	assert.NotEqual(t, idA, newTerminalID(), "a terminal id is handed out again")

	// Each session sees its own terminal's output, and only that.
	output := func(rec *recorder, id string) string {
		var b strings.Builder
		for _, o := range eventsOf[backend.TerminalOutput](rec) {
			assert.Equal(t, id, o.TerminalID, "output of another terminal")
			b.WriteString(o.Data)
		}
		return b.String()
	}
	assert.Equal(t, "from-session-a\n", output(reca, idA))
	assert.Equal(t, "from-session-b\n", output(recb, idB))
	assert.Equal(t, "A saw: from-session-a\n", reca.text())
	// Releasing A's terminal left B's running (no exit status yet), and B
	// cannot reach A's terminal; B's ends when the agent kills it.
	assert.Equal(t, "B after A's release: exit=null; A's terminal from B: -32002\nB saw: from-session-b\n", recb.text())

	released := eventsOf[backend.TerminalReleased](reca)
	require.Len(t, released, 1)
	assert.Equal(t, idA, released[0].TerminalID)
	exitedB := eventsOf[backend.TerminalExited](recb)
	require.Len(t, exitedB, 1)
	assert.Equal(t, "killed", exitedB[0].Signal, "B's command ran until the agent killed it")

	// The tool call shows the session's own terminal.
	var shown []string
	for _, tc := range eventsOf[backend.ToolCall](reca) {
		for _, c := range tc.Content {
			if c.Type == "terminal" {
				shown = append(shown, c.TerminalID)
			}
		}
	}
	assert.Equal(t, []string{idA}, shown)
}

// TestModelsOfClaudeCodeACP: claude-code-acp's models come in the
// session/new result outside the ACP schema, which the SDK's typed result
// dropped; they become the session's model setting, and a change is made
// with session/set_model.
func TestModelsOfClaudeCodeACP(t *testing.T) {
	p := replayProvider(t, "models_claude_code_acp", nil)
	s, rec := openReplaySession(t, p, "ahp-session:/m1", t.TempDir(), "")
	settle(t, s)
	cfg := lastConfig(t, rec)
	require.Equal(t, []string{ModeOptionID, ModelOptionID}, optionIDs(cfg.Options))
	model := cfg.Options[1]
	assert.Equal(t, "model", model.Category)
	assert.Equal(t, "default", model.Current)
	assert.Equal(t, []backend.ConfigValue{
		{ID: "default", Name: "Default (recommended)", Description: "Use the default model (currently Sonnet 4.5)"},
		{ID: "opus", Name: "Opus", Description: "Opus 4.5 · Most capable for complex work"},
		{ID: "haiku", Name: "Haiku", Description: "Haiku 4.5 · Fastest for quick answers"},
	}, model.Values)
	assert.Equal(t, []backend.ModelInfo{{ID: "default", Name: "Default (recommended)"}, {ID: "opus", Name: "Opus"}, {ID: "haiku", Name: "Haiku"}}, p.Info().Models)

	require.NoError(t, s.SetConfig(waitCtx(t), "model", "haiku"))
	settle(t, s)
	cfg = lastConfig(t, rec)
	assert.Equal(t, "haiku", cfg.Options[1].Current)
	assert.Equal(t, "default", cfg.Options[0].Current, "the mode is unchanged")

	// A model asked for at creation is selected the same way.
	s2, rec2 := openReplaySession(t, p, "ahp-session:/m2", t.TempDir(), "opus")
	settle(t, s2)
	assert.Equal(t, "opus", lastConfig(t, rec2).Options[1].Current)
}

// TestModelChangeWithoutAWayFails: an agent that reports models but knows
// neither session/set_model nor a model config option cannot change the
// model: the change fails and the setting stays as it was.
func TestModelChangeWithoutAWayFails(t *testing.T) {
	p := replayProvider(t, "models_without_a_way", nil)
	s, rec := openReplaySession(t, p, "ahp-session:/m3", t.TempDir(), "")
	settle(t, s)
	before := len(eventsOf[backend.ConfigChanged](rec))
	err := s.SetConfig(waitCtx(t), "model", "haiku")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `changing the model to "haiku"`)
	// A second try fails at once: the agent is not asked again.
	require.Error(t, s.SetConfig(waitCtx(t), "model", "opus"))
	settle(t, s)
	assert.Len(t, eventsOf[backend.ConfigChanged](rec), before, "a failed change reported a new setting")
	assert.Equal(t, "default", lastConfig(t, rec).Options[1].Current)
}

// TestModelAsConfigOptionAndReplacedSettings replays claude-agent-acp,
// which offers the model as a config option and has no session/set_model,
// and whose settings change as a whole: a config_option_update or a
// session/set_config_option answer replaces the list, removals included,
// and legacy modes from session/new never come back in their place.
func TestModelAsConfigOptionAndReplacedSettings(t *testing.T) {
	p := replayProvider(t, "models_config_option", nil)
	s, rec := openReplaySession(t, p, "ahp-session:/c1", t.TempDir(), "")
	settle(t, s)
	assert.Equal(t, []string{"mode", "model", "effort"}, optionIDs(lastConfig(t, rec).Options),
		"the agent's modes are not offered twice")

	require.NoError(t, s.SetConfig(waitCtx(t), "model", "haiku"))
	settle(t, s)
	assert.Equal(t, "haiku", lastConfig(t, rec).Options[1].Current)
	require.NoError(t, s.SetConfig(waitCtx(t), "model", "opus"))
	settle(t, s)
	assert.Equal(t, "opus", lastConfig(t, rec).Options[1].Current)

	r := prompt(t, s, "switch")
	require.NoError(t, r.err)
	cfg := lastConfig(t, rec)
	assert.Equal(t, []string{"model"}, optionIDs(cfg.Options), "removed options are gone")

	require.NoError(t, s.SetConfig(waitCtx(t), "model", "default"))
	settle(t, s)
	assert.Empty(t, lastConfig(t, rec).Options, "an answer listing no option leaves none")
}

// TestUsageOfClaudeAgentACP: usage_update is the context window and the
// session's cost, not tokens a turn spent (it was passed on as the turn's
// input tokens, with cost and size lost, and "used": null became a junk
// custom event); the prompt result's usage is the turn's, with only the
// counts the agent sent.
func TestUsageOfClaudeAgentACP(t *testing.T) {
	p := replayProvider(t, "usage_claude_agent_acp", nil)
	s, rec := openReplaySession(t, p, "ahp-session:/u1", t.TempDir(), "")
	r := prompt(t, s, "hello")
	require.NoError(t, r.err)
	i64 := func(n int64) *int64 { return &n }
	model := map[string]any{"_claude/model": "claude-sonnet-4-5-20250929"}
	assert.Equal(t, []backend.ContextUsage{
		{Used: i64(14210), Size: i64(200000), Meta: model},
		{Size: i64(200000)},
		{Used: i64(14690), Size: i64(200000), Cost: &backend.Cost{Amount: 0.0521, Currency: "USD"}, Meta: model},
	}, eventsOf[backend.ContextUsage](rec))
	assert.Empty(t, eventsOf[backend.UsageUpdate](rec), "the context window is not tokens spent")
	assert.Empty(t, eventsOf[backend.Custom](rec), "nothing is left undecoded")
	assert.Equal(t, &backend.Usage{InputTokens: 12, OutputTokens: 480, CachedInputTokens: 14198, CacheWriteTokens: 0, TotalTokens: 14690,
		Model:    "default",
		Reported: backend.UsageInput | backend.UsageOutput | backend.UsageCacheRead | backend.UsageCacheWrite | backend.UsageTotal,
	}, r.res.Usage)

	r = prompt(t, s, "no usage")
	require.NoError(t, r.err)
	assert.Nil(t, r.res.Usage, "no usage sent, none made up")

	r = prompt(t, s, "some usage")
	require.NoError(t, r.err)
	require.NotNil(t, r.res.Usage)
	assert.Equal(t, backend.UsageInput|backend.UsageOutput, r.res.Usage.Reported)
	assert.False(t, r.res.Usage.Has(backend.UsageCacheRead))
	assert.False(t, r.res.Usage.Has(backend.UsageTotal), "a total the agent did not send is not reported")
}

// TestToolCallsOfClaudeCodeACP replays a claude-code-acp turn that reads a
// file and writes a new one. The placeholder report of each call (empty
// input, "Read File") is followed by a second full tool_call with the real
// title, input and locations: it must reach the bridge as an update of the
// same call. `_meta.claudeCode.toolResponse` from the PostToolUse hook must
// survive the result's `_meta.claudeCode`, and the file written through
// fs/write_text_file is created, not edited.
func TestToolCallsOfClaudeCodeACP(t *testing.T) {
	p := replayProvider(t, "tools_claude_code_acp", nil)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# Readme\n"), 0o644))
	s, rec := openReplaySession(t, p, "ahp-session:/t1", dir, "")
	done := startPrompt(t, s, "read and write")
	perm := rec.permission(t)
	assert.Equal(t, "toolu_02Write", perm.ToolCall.ID)
	perm.Respond(backend.PermissionOutcome{OptionID: "allow"})
	r := waitPrompt(t, done)
	require.NoError(t, r.err)

	calls := func(id string) []backend.ToolCall {
		var out []backend.ToolCall
		for _, tc := range eventsOf[backend.ToolCall](rec) {
			if tc.ID == id {
				out = append(out, tc)
			}
		}
		return out
	}
	readme := filepath.Join(dir, "README.md")
	read := calls("toolu_01Read")
	require.Len(t, read, 4)
	assert.False(t, read[0].Update)
	assert.Equal(t, "Read File", read[0].Title)
	assert.Nil(t, read[0].RawInput, "an empty input is no input")
	assert.Equal(t, []backend.Location{}, read[0].Locations)

	assert.True(t, read[1].Update, "the second tool_call re-describes the same call")
	assert.Equal(t, "Read "+readme, read[1].Title)
	assert.JSONEq(t, jsonOf(t, map[string]any{"file_path": readme}), string(read[1].RawInput))
	zero := 0
	assert.Equal(t, []backend.Location{{Path: readme, Line: &zero}}, read[1].Locations)

	hook := read[2].Meta["claudeCode"].(map[string]any)
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "# Readme\n"}}, hook["toolResponse"])
	assert.Equal(t, backend.ToolCompleted, read[3].Status)
	final := read[3].Meta["claudeCode"].(map[string]any)
	assert.Equal(t, "mcp__acp__Read", final["toolName"])
	assert.Equal(t, hook["toolResponse"], final["toolResponse"], "the hook's tool response is kept")

	// The written file did not exist: its diff is marked created once the
	// write has made it.
	newFile := filepath.Join(dir, "notes", "new.txt")
	b, err := os.ReadFile(newFile)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(b))
	write := calls("toolu_02Write")
	require.GreaterOrEqual(t, len(write), 3)
	assert.Equal(t, "Write", write[0].Title)
	assert.True(t, write[1].Update)
	assert.Equal(t, "Write "+newFile, write[1].Title)
	require.Len(t, write[1].Content, 1)
	assert.False(t, write[1].Content[0].Created, "before the write nothing is known")
	var created *backend.ToolCall
	for i, tc := range write {
		if len(tc.Content) == 1 && tc.Content[0].Created {
			created = &write[i]
			break
		}
	}
	require.NotNil(t, created, "the diff of the new file is never marked created: %s", summarize(rec.all()))
	assert.Equal(t, newFile, created.Content[0].Path)
	assert.Equal(t, "hello\n", created.Content[0].NewText)
	assert.Equal(t, backend.ContentReplace, created.ContentMode)
}

// TestCrashedAgentNamesItsLastStderrLines: the error of an agent that died
// names its last 64 stderr lines, which the bridge logs at debug level
// only.
func TestCrashedAgentNamesItsLastStderrLines(t *testing.T) {
	var logs syncBuffer
	path, err := filepath.Abs(filepath.Join("testdata", "replay", "crash_with_stderr.jsonl"))
	require.NoError(t, err)
	p := NewProvider(Config{ID: "crash", Command: []string{os.Args[0]},
		Env: []string{replayEnv + "=" + path, "GORACE=atexit_sleep_ms=0"}},
		zerolog.New(&logs).Level(zerolog.DebugLevel))
	t.Cleanup(func() {
		// Not t.Context(): it is over when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_ = p.Close(ctx)
	})
	s, _ := openReplaySession(t, p, "ahp-session:/x1", t.TempDir(), "")
	r := prompt(t, s, "crash")
	require.Error(t, r.err)
	msg := r.err.Error()
	assert.Contains(t, msg, "exit status 1")
	assert.Contains(t, msg, "claude-code-acp: stderr line 37\n")
	assert.True(t, strings.HasSuffix(msg, "claude-code-acp: stderr line 100"), msg)
	assert.NotContains(t, msg, "claude-code-acp: stderr line 36\n")

	var stderrLevels []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var entry struct {
			Level  string `json:"level"`
			Stream string `json:"stream"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &entry))
		if entry.Stream == "stderr" && !slices.Contains(stderrLevels, entry.Level) {
			stderrLevels = append(stderrLevels, entry.Level)
		}
	}
	assert.Equal(t, []string{"debug"}, stderrLevels)
}

// syncBuffer is a bytes.Buffer safe for the provider's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
