package vscodeclient_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// workspaceFolders makes VS Code's workspace of the workingDirectoriesSuite:
// primary, secondary and replacement folders, each with a marker file.
func workspaceFolders(t *testing.T) (primary, secondary, replacement string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var dirs []string
	for _, name := range []string{"primary", "secondary", "replacement"} {
		d := filepath.Join(root, name)
		require.NoError(t, os.Mkdir(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "marker.txt"), []byte(name+"\n"), 0o644))
		dirs = append(dirs, d)
	}
	return dirs[0], dirs[1], dirs[2]
}

// TestVSCodeWorkingDirectories is the part of VS Code's
// workingDirectoriesSuite that applies to the bridge and needs no model
// (docs/vscode-scenarios.md). ACP agents work in one folder, so the bridge
// does not advertise multipleWorkingDirectories and a session keeps the
// first of the folders it is created with.
func TestVSCodeWorkingDirectories(t *testing.T) {
	t.Run("workspace lifecycle: rejecting an outside peer folder leaves the chat catalog unchanged", func(t *testing.T) {
		t.Parallel()
		rig := newScenarioRig(t)
		c := rig.connect(t)
		primary, secondary, replacement := workspaceFolders(t)
		session, _ := newSession(t, c, primary, secondary)
		st := sessionState(t, c, session)
		require.NotEmpty(t, st.WorkingDirectories)
		before := catalogue(st)

		_, err := createPeer(t, c, session, "outside", map[string]any{"workingDirectories": []string{fileURL(replacement)}})
		if assert.Error(t, err, "a peer in a folder that is not the session's is refused") {
			assert.Regexp(t, `(?i)working director`, err.Error())
		}
		assert.Equal(t, before, catalogue(sessionState(t, c, session)), "the refused peer left the catalogue as it was")

		inside := st.WorkingDirectories[0]
		valid, err := createPeer(t, c, session, "inside", map[string]any{"workingDirectories": []string{inside}})
		require.NoError(t, err, "a peer in the session's folder is accepted")
		assert.Equal(t, []string{inside}, chatState(t, c, valid).WorkingDirectories)
	})

	// The built bridge on a state file, restarted as VS Code's suite
	// restarts its server (e2e_test.go's rig).
	t.Run("workspace lifecycle: a session used only through a peer can reopen after restart", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		state := filepath.Join(dir, "state.db")
		primary, _, _ := workspaceFolders(t)
		bridge := startBridge(t, state, "127.0.0.1:0", primary)
		dial := func() *vsc.Client {
			c, err := vsc.Dial(scenarioCtx(t), vsc.Options{Address: bridge.url})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			_, err = c.Connect(scenarioCtx(t))
			require.NoError(t, err)
			return c
		}
		c := dial()
		session, _ := newSession(t, c, primary)
		peer := mustCreatePeer(t, c, session, "secondary")
		chatState(t, c, peer)
		driveTurn(t, c, peer, "echo ready")
		_ = c.Close()

		bridge.stop(t)
		bridge = startBridge(t, state, bridge.listen, primary)
		c = dial()
		sessionState(t, c, session)
		var messages []string
		for _, turn := range chatState(t, c, peer).Turns {
			messages = append(messages, turn.Message.Text)
		}
		assert.Equal(t, []string{"echo ready"}, messages, "the peer's history after the restart")
	})
}

// TestVSCodeChangeset is the scenario of VS Code's changesetSuite that
// applies to the bridge without a model: the session changeset, built
// from the edits the agent reports, offers no operations, so any operation
// is refused.
func TestVSCodeChangeset(t *testing.T) {
	t.Run("invoking an unknown changeset operation is rejected", func(t *testing.T) {
		rig := newScenarioRig(t)
		c := rig.connect(t)
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "seed.txt"), []byte("seed\n"), 0o644))
		session, chat := newSession(t, c, dir)
		chatState(t, c, chat)
		driveTurn(t, c, chat, "diff seed.txt edited")
		var changeset string
		require.NoError(t, c.WaitFor(scenarioCtx(t), "the session's changeset", func() bool {
			s, _ := c.Session(session)
			if len(s.Changesets) > 0 {
				changeset = s.Changesets[0].URITemplate
			}
			return changeset != ""
		}))
		_, err := c.Call(scenarioCtx(t), "invokeChangesetOperation", map[string]any{"channel": changeset, "operationId": "unknown-operation"})
		assert.Error(t, err)
		assert.NotZero(t, vsc.ErrorCode(err), "an error answer of the host: %v", err)
	})
}
