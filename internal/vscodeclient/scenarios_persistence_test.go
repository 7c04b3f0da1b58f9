package vscodeclient_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// TestVSCodeSessionPersistence is the scenario of VS Code's
// sessionPersistenceSuite that the scripted agent can play: a session with
// a peer chat, each chat with a turn of its own, and the built bridge
// restarted on the same state file and address. The catalogue keeps both
// chats in their order and each chat its own transcript.
func TestVSCodeSessionPersistence(t *testing.T) {
	t.Run("peer chat catalog and transcript survive a host restart", func(t *testing.T) {
		t.Parallel()
		state := filepath.Join(t.TempDir(), "state.db")
		project := t.TempDir()
		bridge := startBridge(t, state, "127.0.0.1:0", project)
		dial := func() *vsc.Client {
			c, err := vsc.Dial(scenarioCtx(t), vsc.Options{Address: bridge.url})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			_, err = c.Connect(scenarioCtx(t))
			require.NoError(t, err)
			return c
		}
		c := dial()
		session, defaultChat := newSession(t, c, project)
		peer := mustCreatePeer(t, c, session, "peer")
		chatState(t, c, defaultChat)
		chatState(t, c, peer)
		driveTurn(t, c, defaultChat, "echo in the default chat")
		driveTurn(t, c, peer, "echo in the peer chat")
		before := catalogue(sessionState(t, c, session))
		require.Equal(t, []string{defaultChat, peer}, before)
		_ = c.Close()

		bridge.stop(t)
		bridge = startBridge(t, state, bridge.listen, project)
		c = dial()
		assert.Equal(t, before, catalogue(sessionState(t, c, session)), "the chat catalogue after the restart")
		transcript := func(chat string) []string {
			var out []string
			for _, turn := range chatState(t, c, chat).Turns {
				out = append(out, turn.Message.Text)
			}
			return out
		}
		assert.Equal(t, []string{"echo in the default chat"}, transcript(defaultChat), "the default chat's transcript")
		assert.Equal(t, []string{"echo in the peer chat"}, transcript(peer), "the peer chat's transcript")
	})
}
