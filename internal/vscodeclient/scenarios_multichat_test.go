package vscodeclient_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// createPeer is VS Code's createPeer: createChat on the session with VS
// Code's name for the chat, ahp-chat://<id>/<b64url(session)>.
func createPeer(t *testing.T, c *vsc.Client, session, id string, params map[string]any) (string, error) {
	t.Helper()
	chat := vsc.ChatURI(session, id)
	p := map[string]any{"channel": session, "chat": chat}
	for k, v := range params {
		p[k] = v
	}
	_, err := c.Call(scenarioCtx(t), "createChat", p)
	return chat, err
}

func mustCreatePeer(t *testing.T, c *vsc.Client, session, id string) string {
	t.Helper()
	chat, err := createPeer(t, c, session, id, nil)
	require.NoError(t, err, "createChat %s", chat)
	return chat
}

func disposeChat(t *testing.T, c *vsc.Client, chat string) {
	t.Helper()
	_, err := c.Call(scenarioCtx(t), "disposeChat", map[string]any{"channel": chat})
	require.NoError(t, err, "disposeChat %s", chat)
}

// catalogue returns the chat URIs of a session's catalogue, in order.
func catalogue(st wire.SessionState) []string {
	var out []string
	for _, ch := range st.Chats {
		out = append(out, ch.Resource)
	}
	return out
}

// TestVSCodeMultiChat is the part of VS Code's multiChatSuite that the
// scripted agent can play (the model-backed scenarios are the slow tier's):
// peer chats made with createChat under VS Code's names, their catalogue
// entries, titles and turns, and the attachments that reach the agent. The
// subtests are named after VS Code's scenarios (docs/vscode-scenarios.md).
func TestVSCodeMultiChat(t *testing.T) {
	rig := newScenarioRig(t)
	subtest := func(parallel bool, name string, f func(t *testing.T, c *vsc.Client)) {
		t.Run(name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			c := rig.connect(t)
			f(t, c)
			assert.Empty(t, c.StrayFrames(), "no error frames for VS Code's notifications")
		})
	}
	run := func(name string, f func(t *testing.T, c *vsc.Client)) { subtest(true, name, f) }

	// It lists every session of the bridge, so it runs before the others
	// (the parallel subtests start when this function has returned).
	subtest(false, "peer creation does not leak a provider backing as a top-level session", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		before, err := c.ListSessions(scenarioCtx(t))
		require.NoError(t, err)
		mustCreatePeer(t, c, session, "peer")
		after, err := c.ListSessions(scenarioCtx(t))
		require.NoError(t, err)
		known := map[any]bool{session: true}
		for _, it := range before {
			known[it["resource"]] = true
		}
		var unexpected []any
		for _, it := range after {
			if !known[it["resource"]] {
				unexpected = append(unexpected, it["resource"])
			}
		}
		assert.Empty(t, unexpected, "the peer's ACP session is no session of the catalogue")
	})

	run("agent advertises its multiple chat capability", func(t *testing.T, c *vsc.Client) {
		newSession(t, c)
		root, ok := c.Root()
		require.True(t, ok)
		var agent *wire.AgentInfo
		for i := range root.Agents {
			if root.Agents[i].Provider == scenarioProvider {
				agent = &root.Agents[i]
			}
		}
		require.NotNil(t, agent, "the provider is in the root state's agents")
		require.NotNil(t, agent.Capabilities)
		mc := agent.Capabilities.MultipleChats
		require.NotNil(t, mc, "every ACP agent can run several chats (each its own ACP session)")
		assert.False(t, mc.Fork != nil && *mc.Fork, "ACP agents cannot fork")
		assert.False(t, mc.SideChat != nil && *mc.SideChat, "ACP agents have no side chats")
	})

	run("creating a peer chat adds it to the session catalog", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		assert.Contains(t, catalogue(sessionState(t, c, session)), peer)
	})

	run("peer chat subscription starts empty and idle", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		st := chatState(t, c, peer)
		assert.Empty(t, st.Turns)
		assert.NotNil(t, st.Turns, "turns is [] on the wire")
		assert.Nil(t, st.ActiveTurn)
		assert.Equal(t, wire.SessionStatusIdle, st.Status)
	})

	run("creating the same peer chat twice is idempotent", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		_, err := createPeer(t, c, session, "peer", nil)
		require.NoError(t, err, "a second createChat of the same chat succeeds")
		n := 0
		for _, ch := range catalogue(sessionState(t, c, session)) {
			if ch == peer {
				n++
			}
		}
		assert.Equal(t, 1, n, "the chat is in the catalogue once")
	})

	run("creating two peer chats preserves both catalog entries", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		first := mustCreatePeer(t, c, session, "first")
		second := mustCreatePeer(t, c, session, "second")
		chats := catalogue(sessionState(t, c, session))
		assert.Contains(t, chats, first)
		assert.Contains(t, chats, second)
	})

	run("disposing a peer chat removes its catalog entry", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		disposeChat(t, c, peer)
		assert.NotContains(t, catalogue(sessionState(t, c, session)), peer)
	})

	run("disposing one peer chat preserves its sibling", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		first := mustCreatePeer(t, c, session, "first")
		second := mustCreatePeer(t, c, session, "second")
		disposeChat(t, c, first)
		chats := catalogue(sessionState(t, c, session))
		assert.NotContains(t, chats, first)
		assert.Contains(t, chats, second)
	})

	run("recreating a disposed peer chat starts empty", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		disposeChat(t, c, peer)
		mustCreatePeer(t, c, session, "peer")
		assert.Empty(t, chatState(t, c, peer).Turns)
	})

	run("peer chat survives unsubscribe and resubscribe", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		chatState(t, c, peer)
		require.NoError(t, c.Unsubscribe(peer))
		assert.Equal(t, peer, chatState(t, c, peer).Resource)
	})

	run("peer chat completes a simple turn", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		chatState(t, c, peer)
		turn := driveTurn(t, c, peer, "echo PEER_OK")
		assert.Equal(t, wire.TurnStateComplete, turn.State)
		assert.Contains(t, turnText(turn), "PEER_OK")
	})

	run("disposing a peer after a completed turn removes it from the catalog", func(t *testing.T, c *vsc.Client) {
		session, _ := newSession(t, c)
		peer := mustCreatePeer(t, c, session, "peer")
		chatState(t, c, peer)
		driveTurn(t, c, peer, "echo DONE")
		disposeChat(t, c, peer)
		assert.NotContains(t, catalogue(sessionState(t, c, session)), peer)
	})

	// The attachment scenarios read the prompt request the scripted agent
	// got, as VS Code's read the provider's model request. Each prompt
	// carries a marker of its own, for the agent's log is the suite's.
	attachmentTurn := func(t *testing.T, c *vsc.Client, dir string, attachments ...map[string]any) string {
		t.Helper()
		session, _ := newSession(t, c, dir)
		peer := mustCreatePeer(t, c, session, "peer")
		chatState(t, c, peer)
		marker := "marker-" + newID()
		turn := driveTurn(t, c, peer, "echo "+marker, attachments...)
		assert.Equal(t, wire.TurnStateComplete, turn.State, "the turn with the attachments completes")
		return rig.agentRequest(t, marker)
	}

	run("peer simple attachment reaches the provider request", func(t *testing.T, c *vsc.Client) {
		req := attachmentTurn(t, c, t.TempDir(), map[string]any{"type": "simple", "label": "peer-note.txt",
			"displayKind": "document", "modelRepresentation": "PEER_SIMPLE_ATTACHMENT"})
		assert.Contains(t, req, "PEER_SIMPLE_ATTACHMENT")
	})

	run("peer multiple simple attachments reach the provider request", func(t *testing.T, c *vsc.Client) {
		req := attachmentTurn(t, c, t.TempDir(),
			map[string]any{"type": "simple", "label": "first", "modelRepresentation": "PEER_FIRST_ATTACHMENT"},
			map[string]any{"type": "simple", "label": "second", "modelRepresentation": "PEER_SECOND_ATTACHMENT"})
		assert.Contains(t, req, "PEER_FIRST_ATTACHMENT")
		assert.Contains(t, req, "PEER_SECOND_ATTACHMENT")
	})

	run("peer resource attachment reaches the provider request", func(t *testing.T, c *vsc.Client) {
		dir := t.TempDir()
		file := filepath.Join(dir, "peer-resource.txt")
		require.NoError(t, os.WriteFile(file, []byte("PEER_RESOURCE_ATTACHMENT"), 0o644))
		req := attachmentTurn(t, c, dir, map[string]any{"type": "resource", "uri": fileURL(file),
			"label": "peer-resource.txt", "displayKind": "document"})
		assert.Contains(t, req, "peer-resource.txt")
	})

	// VS Code's host writes the line reference into the model's text
	// ("peer-selection.txt:2" or "(line 2)"); an ACP agent gets the file as
	// an embedded resource holding the selected text, the selection (0-based,
	// as AHP and LSP count) in the block's _meta.
	run("peer resource selection attachment includes its line reference", func(t *testing.T, c *vsc.Client) {
		dir := t.TempDir()
		file := filepath.Join(dir, "peer-selection.txt")
		require.NoError(t, os.WriteFile(file, []byte("first\nsecond\nthird"), 0o644))
		req := attachmentTurn(t, c, dir, map[string]any{"type": "resource", "uri": fileURL(file),
			"label": "peer-selection.txt", "displayKind": "selection",
			"selection": map[string]any{"range": map[string]any{
				"start": map[string]any{"line": 1, "character": 0}, "end": map[string]any{"line": 1, "character": 6}}}})
		var msg struct {
			Params struct {
				Prompt []struct {
					Type     string `json:"type"`
					Resource *struct {
						URI  string `json:"uri"`
						Text string `json:"text"`
					} `json:"resource"`
					Meta map[string]struct {
						Start struct{ Line int } `json:"start"`
						End   struct{ Line int } `json:"end"`
					} `json:"_meta"`
				} `json:"prompt"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(req), &msg))
		found := false
		for _, b := range msg.Params.Prompt {
			if b.Type != "resource" || b.Resource == nil || filepath.Base(b.Resource.URI) != "peer-selection.txt" {
				continue
			}
			found = true
			assert.Equal(t, "second", b.Resource.Text, "the selected line's text")
			sel, ok := b.Meta["ahp-bridge/selection"]
			if assert.True(t, ok, "the selection in the block's _meta: %s", req) {
				assert.Equal(t, 1, sel.Start.Line, "line 2, 0-based")
				assert.Equal(t, 1, sel.End.Line)
			}
		}
		assert.True(t, found, "the agent got peer-selection.txt as an embedded resource: %s", req)
	})
}
