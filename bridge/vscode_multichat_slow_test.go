//go:build slowagents

package bridge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/mockllm"
)

// TestVSCodeMultiChatClaude: the model-backed scenarios of VS Code's
// multiChatSuite against the bridge with claude-agent-acp
// (docs/vscode-scenarios.md). A peer chat is an agent session of its own
// in the session's working directory; the scenarios check that its tools
// work there and that each chat's conversation with the model holds its
// own turns and no other chat's.
func TestVSCodeMultiChatClaude(t *testing.T) {
	t.Parallel()
	rig := newVSSlowRig(t)

	// open opens a session in a new workspace with files.
	open := func(t *testing.T, files map[string]string) (s *vsScenario, session, defaultChat, dir string) {
		dir = t.TempDir()
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		}
		s = rig.window(t)
		session, defaultChat = s.session(dir)
		return s, session, defaultChat, dir
	}
	// peer is open with a peer chat id on the session.
	peer := func(t *testing.T, files map[string]string, id string) (s *vsScenario, session, chat, dir string) {
		s, session, _, dir = open(t, files)
		return s, session, s.createChat(session, id), dir
	}
	// anyRequestHas reports whether any main request of the turn prompt
	// started carries text, failing when the turn made none.
	anyRequestHas := func(t *testing.T, prompt, text string) bool {
		reqs := rig.mainRequests(prompt)
		require.NotEmpty(t, reqs, "the turn %q asked the model nothing", prompt)
		for _, r := range reqs {
			if strings.Contains(string(r.Raw), text) {
				return true
			}
		}
		return false
	}
	readPeer := func(t *testing.T, file, content, prompt string) {
		s, _, chat, dir := peer(t, map[string]string{file: content}, "peer")
		rig.book.add(t, prompt,
			use("Reading it.", "Read", map[string]any{"file_path": filepath.Join(dir, filepath.FromSlash(file))}),
			say(func(r []string) string { return fileText(r[0]) }))
		turn := s.completeTurn(chat, prompt)
		assert.Equal(t, content, answerText(turn))
		tc := completedTool(t, turn)
		assert.True(t, tc.Success, "%s", toolResult(tc))
		assert.Contains(t, toolResult(tc), content, "the peer chat's client sees what the read returned")
	}
	writePeer := func(s *vsScenario, chat, path, content, prompt string) {
		rig.book.add(s.t, prompt, use("Writing it.", "Write", map[string]any{"file_path": path, "content": content}), sayText("created"))
		s.completeTurn(chat, prompt)
	}

	t.Run("peer chat retains context across consecutive turns", func(t *testing.T) {
		t.Parallel()
		s, _, chat, _ := peer(t, nil, "peer")
		first, second := "Keep the code word QUINCE in mind and answer ready.", "Which code word did I give you in this peer chat?"
		rig.book.add(t, first, sayText("ready"))
		rig.book.add(t, second, recall())
		firstTurn := s.completeTurn(chat, first)
		require.Equal(t, "ready", answerText(firstTurn))
		assert.Equal(t, "QUINCE", answerText(s.completeTurn(chat, second)))
		reqs := rig.mainRequests(second)
		require.NotEmpty(t, reqs)
		last := reqs[len(reqs)-1]
		assert.Contains(t, last.Text("user"), first, "the second request holds the first user message")
		assert.Contains(t, last.Text("assistant"), "ready", "the second request holds the first answer")
	})
	t.Run("peer chat reads a file from the parent workspace", func(t *testing.T) {
		t.Parallel()
		readPeer(t, "peer-memo.txt", "PEER_MEMO_77", "In the peer chat, show peer-memo.txt verbatim.")
	})
	t.Run("peer chat reads a file from a nested directory", func(t *testing.T) {
		t.Parallel()
		readPeer(t, "inner/peer.txt", "PEER_INNER_19", "In the peer chat, show inner/peer.txt verbatim.")
	})
	t.Run("peer chat reads a filename containing spaces", func(t *testing.T) {
		t.Parallel()
		readPeer(t, "peer memo copy.txt", "PEER_SPACES_40", `In the peer chat, show "peer memo copy.txt" verbatim.`)
	})
	t.Run("peer chat creates a file in the parent workspace", func(t *testing.T) {
		t.Parallel()
		s, _, chat, dir := peer(t, nil, "peer")
		path := filepath.Join(dir, "peer-made.txt")
		writePeer(s, chat, path, "PEER_MADE_5", "From the peer chat, create peer-made.txt holding PEER_MADE_5.")
		b, err := os.ReadFile(path)
		require.NoError(t, err, "the peer chat's write reached the session's workspace")
		assert.Equal(t, "PEER_MADE_5", string(b))
	})
	t.Run("peer chat edits an existing workspace file", func(t *testing.T) {
		t.Parallel()
		s, _, chat, dir := peer(t, map[string]string{"peer-edit.txt": "PEER_BEFORE"}, "peer")
		path := filepath.Join(dir, "peer-edit.txt")
		prompt := "From the peer chat, change peer-edit.txt to read PEER_AFTER."
		// As VS Code's recorded model does: check that the file is there
		// with the shell, read it (the Write tool refuses to overwrite a
		// file it has not read), then write it whole.
		rig.book.add(t, prompt,
			bash("test -f "+path+" && echo PRESENT || echo ABSENT"),
			func(req mockllm.Request, r []string) mockllm.Reply {
				if !strings.Contains(r[0], "PRESENT") {
					return mockllm.Reply{Text: "the check returned " + r[0]}
				}
				return use("", "Read", map[string]any{"file_path": path})(req, r)
			},
			func(req mockllm.Request, r []string) mockllm.Reply {
				if !strings.Contains(r[1], "PEER_BEFORE") {
					return mockllm.Reply{Text: "the read returned " + r[1]}
				}
				return use("", "Write", map[string]any{"file_path": path, "content": "PEER_AFTER"})(req, r)
			},
			sayText("edited"))
		turn := s.completeTurn(chat, prompt)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "PEER_AFTER", string(b), "tools: %s", toolSummary(turn))
		assert.Len(t, completedTools(t, turn), 3, "the check, the read and the write")
	})
	t.Run("peer chat creates a file in a nested directory", func(t *testing.T) {
		t.Parallel()
		s, _, chat, dir := peer(t, nil, "peer")
		prompt := "From the peer chat, run `mkdir -p peer-out && printf PEER_NESTED_8 > peer-out/report.txt`."
		rig.book.add(t, prompt, bash("mkdir -p peer-out && printf PEER_NESTED_8 > peer-out/report.txt"), sayText("created"))
		s.completeTurn(chat, prompt)
		b, err := os.ReadFile(filepath.Join(dir, "peer-out", "report.txt"))
		require.NoError(t, err, "the command ran in the session's workspace")
		assert.Equal(t, "PEER_NESTED_8", string(b))
	})
	t.Run("peer chat handles a missing workspace file without an error", func(t *testing.T) {
		t.Parallel()
		s, session, chat, dir := peer(t, nil, "peer")
		prompt := `From the peer chat, look at peer-absent.txt and answer "missing" if it is not there.`
		rig.book.add(t, prompt,
			use("Trying it.", "Read", map[string]any{"file_path": filepath.Join(dir, "peer-absent.txt")}),
			say(func(r []string) string {
				if strings.Contains(strings.ToLower(r[0]), "not exist") {
					return "missing"
				}
				return "the read returned " + r[0]
			}))
		turn := s.completeTurn(chat, prompt)
		assert.Equal(t, "missing", answerText(turn))
		tc := completedTool(t, turn)
		assert.False(t, tc.Success, "%s", toolResult(tc))
		assert.Contains(t, strings.ToLower(toolResult(tc)), "not exist")
		st, _ := s.c.Session(session)
		assert.Zero(t, st.Status&wire.SessionStatusError, "the session shows no error")
	})
	t.Run("two peer chats write distinct workspace files", func(t *testing.T) {
		t.Parallel()
		s, session, first, dir := peer(t, nil, "first")
		second := s.createChat(session, "second")
		writePeer(s, first, filepath.Join(dir, "one.txt"), "FROM_FIRST_PEER", "First peer: write one.txt with FROM_FIRST_PEER.")
		writePeer(s, second, filepath.Join(dir, "two.txt"), "FROM_SECOND_PEER", "Second peer: write two.txt with FROM_SECOND_PEER.")
		for name, want := range map[string]string{"one.txt": "FROM_FIRST_PEER", "two.txt": "FROM_SECOND_PEER"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			assert.Equal(t, want, string(b))
		}
	})
	t.Run("fresh peer chat does not inherit default chat context", func(t *testing.T) {
		t.Parallel()
		s, session, defaultChat, _ := open(t, nil)
		secret := "Keep the code word DEFAULT_SECRET_PLUM in mind and answer ready."
		rig.book.add(t, secret, sayText("ready"))
		s.completeTurn(defaultChat, secret)
		chat := s.createChat(session, "fresh")
		prompt := "Fresh peer: answer the word fresh."
		rig.book.add(t, prompt, sayText("fresh"))
		s.completeTurn(chat, prompt)
		assert.True(t, anyRequestHas(t, secret, "DEFAULT_SECRET_PLUM"), "the default chat told its model")
		assert.False(t, anyRequestHas(t, prompt, "DEFAULT_SECRET_PLUM"), "the peer chat's model requests hold nothing of the default chat")
	})
	t.Run("two peer chats keep independent provider contexts", func(t *testing.T) {
		t.Parallel()
		s, session, first, _ := peer(t, nil, "first")
		second := s.createChat(session, "second")
		p1, p2 := "First peer: keep the code word ALPHA_PEAR in mind, answer ready.", "Second peer: keep the code word BETA_PLUM in mind, answer ready."
		f1, f2 := "First peer: which code word do you hold?", "Second peer: which code word do you hold?"
		for _, p := range []string{p1, p2} {
			rig.book.add(t, p, sayText("ready"))
		}
		rig.book.add(t, f1, recall())
		rig.book.add(t, f2, recall())
		s.completeTurn(first, p1)
		s.completeTurn(second, p2)
		assert.Equal(t, "ALPHA_PEAR", answerText(s.completeTurn(first, f1)))
		assert.Equal(t, "BETA_PLUM", answerText(s.completeTurn(second, f2)))
		assert.True(t, anyRequestHas(t, f1, "ALPHA_PEAR"))
		assert.False(t, anyRequestHas(t, f1, "BETA_PLUM"), "the first peer's model never hears of the second's word")
		assert.True(t, anyRequestHas(t, f2, "BETA_PLUM"))
		assert.False(t, anyRequestHas(t, f2, "ALPHA_PEAR"), "the second peer's model never hears of the first's word")
	})
	t.Run("peer provider context survives unsubscribe and resubscribe", func(t *testing.T) {
		t.Parallel()
		s, _, chat, _ := peer(t, nil, "peer")
		p1, p2 := "Resubscribed peer: keep the code word RESUMED_FIG in mind, answer ready.", "Resubscribed peer: which code word do you hold?"
		rig.book.add(t, p1, sayText("ready"))
		rig.book.add(t, p2, recall())
		s.completeTurn(chat, p1)
		require.NoError(t, s.c.Unsubscribe(chat))
		_, err := s.c.Subscribe(s.ctx(), chat)
		require.NoError(t, err)
		assert.Equal(t, "RESUMED_FIG", answerText(s.completeTurn(chat, p2)))
		assert.True(t, anyRequestHas(t, p2, "RESUMED_FIG"), "the model still has the first turn")
	})
	t.Run("recreated peer chat starts with fresh provider context", func(t *testing.T) {
		t.Parallel()
		s, session, chat, _ := peer(t, nil, "peer")
		p1, p2 := "Recreated peer: keep the code word STALE_DATE in mind, answer ready.", "Recreated peer: which code word do you hold?"
		rig.book.add(t, p1, sayText("ready"))
		rig.book.add(t, p2, recall())
		s.completeTurn(chat, p1)
		s.disposeChat(chat)
		again := s.createChat(session, "peer")
		require.Equal(t, chat, again)
		st, _ := s.c.Chat(chat)
		assert.Empty(t, st.Turns, "the recreated chat starts empty")
		assert.Equal(t, "no code word", answerText(s.completeTurn(chat, p2)))
		assert.False(t, anyRequestHas(t, p2, "STALE_DATE"), "the recreated chat's model knows nothing of the disposed one")
	})
}
