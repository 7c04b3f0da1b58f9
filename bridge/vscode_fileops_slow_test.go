//go:build slowagents

package bridge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/mockllm"
)

// TestVSCodeFileOperationsClaude: VS Code's fileOperationsSuite against the
// bridge with claude-agent-acp (docs/vscode-scenarios.md). Each scenario
// makes a workspace, opens a session on it as VS Code does, runs one turn
// whose model reads, writes or runs what VS Code's recorded exchange has
// it do, and checks what VS Code checks: the answer, the completed tool
// call and its result as the client sees them, and the files on disk.
func TestVSCodeFileOperationsClaude(t *testing.T) {
	t.Parallel()
	rig := newVSSlowRig(t)

	// workspace makes a folder with files (name → content; a name with
	// slashes makes its folders).
	workspace := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		}
		return dir
	}
	// readScenario is a turn that reads one file with the Read tool and
	// answers from what it returned.
	readScenario := func(t *testing.T, file, content, prompt string, answer func(string) string) (wire.Turn, *wire.ToolCallCompletedState) {
		dir := workspace(t, map[string]string{file: content})
		rig.book.add(t, prompt,
			use("Reading the file.", "Read", map[string]any{"file_path": filepath.Join(dir, filepath.FromSlash(file))}),
			say(func(r []string) string { return answer(fileText(r[0])) }))
		s := rig.window(t)
		_, chat := s.session(dir)
		turn, _ := s.turn(chat, prompt)
		require.Equal(t, wire.TurnStateComplete, turn.State, "the turn completes; tools: %s", toolSummary(turn))
		tc := completedTool(t, turn)
		return turn, tc
	}
	// shellScenario is a turn that runs command with the Bash tool in a
	// workspace with files and answers with answer's text of its output.
	shellScenario := func(t *testing.T, dir, prompt, command string, answer func(string) string) (wire.Turn, *wire.ToolCallCompletedState) {
		rig.book.add(t, prompt, bash(command), say(func(r []string) string { return answer(r[0]) }))
		s := rig.window(t)
		_, chat := s.session(dir)
		turn, asked := s.turn(chat, prompt)
		require.Equal(t, wire.TurnStateComplete, turn.State, "the turn completes; tools: %s", toolSummary(turn))
		t.Logf("the shell command asked for confirmation %d times", asked)
		return turn, completedTool(t, turn)
	}
	same := func(s string) string { return s }

	t.Run("reads an existing text file", func(t *testing.T) {
		t.Parallel()
		turn, tc := readScenario(t, "note.txt", "KIWI MANGO PAPAYA", "Show me what note.txt says, word for word, and nothing else.", same)
		assert.Contains(t, answerText(turn), "KIWI MANGO PAPAYA")
		assert.True(t, tc.Success, "the read succeeded: %s", toolResult(tc))
		assert.Contains(t, toolResult(tc), "KIWI MANGO PAPAYA", "the client sees what the read returned")
	})
	t.Run("reads a file from a nested directory", func(t *testing.T) {
		t.Parallel()
		turn, tc := readScenario(t, "deep/inner/value.txt", "INNER_VALUE_917", "What does deep/inner/value.txt contain? Answer with the contents only.", same)
		assert.Contains(t, answerText(turn), "INNER_VALUE_917")
		assert.True(t, tc.Success, "the read succeeded: %s", toolResult(tc))
		assert.Contains(t, toolResult(tc), "INNER_VALUE_917")
	})
	t.Run("reads a value from JSON", func(t *testing.T) {
		t.Parallel()
		turn, tc := readScenario(t, "settings.json", `{"threshold": 58, "name": "probe"}`,
			`Open settings.json and tell me the number stored under "threshold", nothing more.`,
			func(file string) string {
				var v map[string]any
				if err := json.Unmarshal([]byte(file), &v); err != nil {
					return "the file is not JSON: " + err.Error()
				}
				return fmt.Sprint(v["threshold"])
			})
		assert.Regexp(t, `\b58\b`, answerText(turn))
		assert.True(t, tc.Success, "the read succeeded: %s", toolResult(tc))
		assert.Regexp(t, `threshold[^\n]*58`, toolResult(tc))
	})
	t.Run("counts lines in a file", func(t *testing.T) {
		t.Parallel()
		turn, tc := readScenario(t, "rows.txt", "red\ngreen\nblue\ncyan\nteal", "How many lines does rows.txt have? Just the number.",
			func(file string) string { return fmt.Sprint(len(strings.Split(file, "\n"))) })
		assert.Equal(t, "5", answerText(turn), "five lines came back through the read")
		assert.True(t, tc.Success, "the read succeeded: %s", toolResult(tc))
		for _, w := range []string{"red", "green", "blue", "cyan", "teal"} {
			assert.Contains(t, toolResult(tc), w)
		}
	})
	t.Run("reads a filename containing spaces", func(t *testing.T) {
		t.Parallel()
		turn, tc := readScenario(t, "my notes file.txt", "SPACED_OUT_204", `Print the contents of "my notes file.txt" exactly.`, same)
		assert.Contains(t, answerText(turn), "SPACED_OUT_204")
		assert.True(t, tc.Success, "the read succeeded: %s", toolResult(tc))
		assert.Contains(t, toolResult(tc), "SPACED_OUT_204")
	})
	t.Run("handles a missing file without a session error", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, nil)
		prompt := `Look at absent.txt; if there is no such file, answer with the single word "missing".`
		rig.book.add(t, prompt,
			use("Trying the file.", "Read", map[string]any{"file_path": filepath.Join(dir, "absent.txt")}),
			say(func(r []string) string {
				if strings.Contains(strings.ToLower(r[0]), "not exist") {
					return "missing"
				}
				return "the read returned " + r[0]
			}))
		s := rig.window(t)
		session, chat := s.session(dir)
		turn, _ := s.turn(chat, prompt)
		require.Equal(t, wire.TurnStateComplete, turn.State, "a failed read is no turn error; tools: %s", toolSummary(turn))
		assert.Equal(t, "missing", answerText(turn))
		tc := completedTool(t, turn)
		assert.False(t, tc.Success, "the read of a missing file failed: %s", toolResult(tc))
		assert.Contains(t, strings.ToLower(toolResult(tc)), "not exist", "the client sees why")
		st, _ := s.c.Session(session)
		assert.Zero(t, st.Status&wire.SessionStatusError, "the session shows no error")
	})
	t.Run("creates a new text file", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, nil)
		prompt := "Make a file output.txt whose whole content is FRESH_FILE_31."
		rig.book.add(t, prompt,
			use("Creating it.", "Write", map[string]any{"file_path": filepath.Join(dir, "output.txt"), "content": "FRESH_FILE_31"}),
			sayText("done"))
		s := rig.window(t)
		_, chat := s.session(dir)
		turn, _ := s.turn(chat, prompt)
		require.Equal(t, wire.TurnStateComplete, turn.State, "tools: %s", toolSummary(turn))
		b, err := os.ReadFile(filepath.Join(dir, "output.txt"))
		require.NoError(t, err, "the file was created")
		assert.Equal(t, "FRESH_FILE_31", string(b))
		assert.True(t, completedTool(t, turn).Success)
	})
	t.Run("edits an existing text file", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, map[string]string{"draft.txt": "OLD_TEXT_5"})
		path := filepath.Join(dir, "draft.txt")
		prompt := "Overwrite draft.txt so that it holds NEW_TEXT_6 and nothing else."
		// The model reads the file first (the Write tool refuses to
		// overwrite a file it has not read), then writes it.
		rig.book.add(t, prompt,
			use("Reading it first.", "Read", map[string]any{"file_path": path}),
			func(req mockllm.Request, r []string) mockllm.Reply {
				if !strings.Contains(r[0], "OLD_TEXT_5") {
					return mockllm.Reply{Text: "the read returned " + r[0]}
				}
				return use("", "Write", map[string]any{"file_path": path, "content": "NEW_TEXT_6"})(req, r)
			},
			sayText("done"))
		s := rig.window(t)
		_, chat := s.session(dir)
		turn, _ := s.turn(chat, prompt)
		require.Equal(t, wire.TurnStateComplete, turn.State, "tools: %s", toolSummary(turn))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "NEW_TEXT_6", string(b), "the file was edited; tools: %s", toolSummary(turn))
		for _, tc := range completedTools(t, turn) {
			assert.True(t, tc.Success, "%s", toolResult(tc))
		}
	})
	t.Run("lists workspace entries", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, map[string]string{"alpha.txt": "a", "beta.md": "b"})
		turn, tc := shellScenario(t, dir, "Run `ls -1` here and reply with the names it printed, nothing else.", "ls -1",
			func(out string) string { return strings.Join(strings.Fields(out), " ") })
		assert.Equal(t, "alpha.txt beta.md", answerText(turn))
		assert.True(t, tc.Success, "%s", toolResult(tc))
		assert.Regexp(t, `alpha\.txt\\nbeta\.md`, toolResult(tc), "the client sees the command's output")
	})
	t.Run("runs a deterministic shell command", func(t *testing.T) {
		t.Parallel()
		turn, tc := shellScenario(t, workspace(t, nil), "Run `echo ECHOED_88` and reply with what it printed only.", "echo ECHOED_88", strings.TrimSpace)
		assert.Equal(t, "ECHOED_88", answerText(turn))
		assert.True(t, tc.Success, "%s", toolResult(tc))
		assert.Contains(t, toolResult(tc), "ECHOED_88")
	})
	t.Run("creates a file in a new nested directory", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, nil)
		shellScenario(t, dir, "Run `mkdir -p out/reports && printf NESTED_MADE_12 > out/reports/summary.txt`, then say created.",
			"mkdir -p out/reports && printf NESTED_MADE_12 > out/reports/summary.txt", func(string) string { return "created" })
		b, err := os.ReadFile(filepath.Join(dir, "out", "reports", "summary.txt"))
		require.NoError(t, err, "the nested file was created")
		assert.Equal(t, "NESTED_MADE_12", string(b))
	})
	t.Run("renames a workspace file", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, map[string]string{"old-name.txt": "MOVED_VALUE_3"})
		shellScenario(t, dir, "Run `mv old-name.txt new-name.txt`, then say renamed.", "mv old-name.txt new-name.txt",
			func(string) string { return "renamed" })
		assert.NoFileExists(t, filepath.Join(dir, "old-name.txt"))
		b, err := os.ReadFile(filepath.Join(dir, "new-name.txt"))
		require.NoError(t, err, "the file was renamed")
		assert.Equal(t, "MOVED_VALUE_3", string(b))
	})
	t.Run("deletes a workspace file", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, map[string]string{"scratch.txt": "GONE_SOON"})
		shellScenario(t, dir, "Run `rm scratch.txt`, then say deleted.", "rm scratch.txt", func(string) string { return "deleted" })
		assert.NoFileExists(t, filepath.Join(dir, "scratch.txt"))
	})
	t.Run("inspects git status", func(t *testing.T) {
		t.Parallel()
		dir := workspace(t, map[string]string{"kept.txt": "first"})
		git := func(args ...string) {
			cmd := exec.Command("git", append([]string{"-c", "user.name=Scenario", "-c", "user.email=scenario@example.invalid",
				"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "git %v: %s", args, out)
		}
		git("init", "-q")
		git("add", "kept.txt")
		git("commit", "-q", "-m", "first")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "kept.txt"), []byte("changed"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "fresh.txt"), []byte("new"), 0o644))
		turn, tc := shellScenario(t, dir, "Which files are modified or untracked according to git? Names only.", "git status --short",
			func(out string) string {
				var names []string
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					if f := strings.Fields(line); len(f) == 2 {
						names = append(names, f[1])
					}
				}
				return strings.Join(names, ", ")
			})
		text := answerText(turn)
		assert.Contains(t, text, "kept.txt")
		assert.Contains(t, text, "fresh.txt")
		assert.True(t, tc.Success, "%s", toolResult(tc))
		assert.Contains(t, toolResult(tc), "M kept.txt")
		assert.Contains(t, toolResult(tc), "?? fresh.txt")
	})
}
