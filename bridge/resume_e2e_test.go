package bridge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// These tests check that a chat's agent remembers the conversation after a
// restart of the bridge (on a real SQLite state file) and after its agent
// process crashed: the scripted agent advertises session/resume,
// session/load or neither (SCRIPTAGENT_SESSIONS), keeps its sessions in a
// directory of the test's and logs there which way each session was
// opened (paths.log); its "recall" prompt answers with the earlier
// prompts it remembers.

// memoryCase is one way the agent offers (or not) to continue a session.
type memoryCase struct {
	name     string
	sessions string // SCRIPTAGENT_SESSIONS
	// reopened is the paths.log line of the second opening of the chat's
	// agent session (%s: the first session's id), "" for a new session.
	reopened string
	// remembers says the agent continued the conversation.
	remembers bool
}

var memoryCases = []memoryCase{
	{name: "resume", sessions: "both", reopened: "resume sess-1", remembers: true},
	{name: "load", sessions: "load", reopened: "load sess-1", remembers: true},
	{name: "fresh", sessions: "", remembers: false},
	{name: "load-fails", sessions: "load-fail", reopened: "load-failed sess-1", remembers: false},
}

// memoryRig is a bridge on a state file over the scripted agent, which
// keeps its sessions in agentDir.
type memoryRig struct {
	t        *testing.T
	mc       memoryCase
	state    string
	agentDir string
	cwd      string
	env      *bridgetest.Env
	st       *store.SQLite
	c        *client.Client
}

func newMemoryRig(t *testing.T, mc memoryCase) *memoryRig {
	dir := t.TempDir()
	r := &memoryRig{t: t, mc: mc, state: filepath.Join(dir, "state.db"), agentDir: filepath.Join(dir, "agent"), cwd: acpProjectDir(t)}
	require.NoError(t, os.Mkdir(r.agentDir, 0o700))
	r.start()
	return r
}

// start runs a bridge on the state file.
func (r *memoryRig) start() {
	t := r.t
	ctx, cancel := context.WithTimeout(t.Context(), acpTimeout)
	defer cancel()
	st, err := store.Open(ctx, r.state, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	p := acpScriptProvider(t, func(c *acp.Config) {
		c.Env = []string{"SCRIPTAGENT_SESSIONS=" + r.mc.sessions, "SCRIPTAGENT_STATE_DIR=" + r.agentDir,
			"SCRIPTAGENT_LOG=" + filepath.Join(r.agentDir, "received.log")}
		// A configured MCP server: re-attaching passes it too (issue 19).
		c.McpServers = []backend.McpServer{{Name: "files", Transport: backend.McpStdio, Command: "/bin/mcp-files"}}
	})
	r.st = st
	r.env = bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{Host: host.Options{Store: st}})
	r.c = r.env.Client(t)
}

// restart stops the bridge (its agent with it) and starts a new one on
// the same state file.
func (r *memoryRig) restart() {
	_ = r.c.Close()
	r.env.Close()
	require.NoError(r.t, r.st.Close())
	r.start()
}

// turn runs a turn on a chat and returns it once ended.
func (r *memoryRig) turn(chat, text string) wire.Turn {
	id := bridgetest.StartTurn(r.t, r.c, chat, text)
	return bridgetest.WaitTurnEnd(r.t, r.c, chat, id, acpTimeout)
}

// paths is the agent's log of how it opened sessions.
func (r *memoryRig) paths() []string {
	b, err := os.ReadFile(filepath.Join(r.agentDir, "paths.log"))
	require.NoError(r.t, err)
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

// checkRecall checks the turn that follows the agent's restart: it
// remembers the first turn or says, in a notice, that it does not.
func (r *memoryRig) checkRecall(turn wire.Turn, chat string) {
	t := r.t
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	notices := acpPartsOf[wire.SystemNotificationResponsePart](turn.ResponseParts)
	if r.mc.remembers {
		assert.Equal(t, "recall: echo remember 4c1e", acpTurnText(turn.ResponseParts))
		for _, n := range notices {
			t.Errorf("unexpected notice: %s", n.Content.Text)
		}
	} else {
		assert.Equal(t, "recall: nothing", acpTurnText(turn.ResponseParts))
		require.Len(t, notices, 1, "the user is told that the agent forgot")
		assert.Contains(t, notices[0].Content.Text, "does not remember earlier turns")
	}
	want := []string{"new_sess-1", "new_sess-2"}
	if r.mc.reopened != "" {
		want = []string{"new_sess-1", strings.ReplaceAll(r.mc.reopened, " ", "_")}
		if !r.mc.remembers {
			want = append(want, "new_sess-2")
		}
	}
	assert.Equal(t, want, r.paths(), "how the agent opened the chat's sessions")
	if r.mc.reopened != "" && r.mc.remembers {
		method := "session/" + strings.Fields(r.mc.reopened)[0]
		reqs := agentLog(t, filepath.Join(r.agentDir, "received.log"), method)
		require.NotEmpty(t, reqs, method)
		assert.Contains(t, string(reqs[len(reqs)-1]), `"mcpServers":[{"args":[],"command":"/bin/mcp-files","env":[],"name":"files"}]`)
	}
	id, ok := r.env.Host.AgentSessionID(chat)
	require.True(t, ok)
	if r.mc.remembers {
		assert.Equal(t, "sess-1", id)
	} else {
		assert.Equal(t, "sess-2", id, "the new agent session is recorded")
	}
}

// noReplay checks that the history a session/load replayed did not land
// in the chat: every turn is as the bridge recorded it.
func noReplay(t *testing.T, chat *wire.ChatState, turns int) {
	t.Helper()
	require.Len(t, chat.Turns, turns)
	for _, tu := range chat.Turns {
		assert.NotContains(t, acpTurnText(tu.ResponseParts), "replayed", "turn %s", tu.ID)
	}
	assert.Equal(t, "text:echo remember 4c1e", acpTurnText(chat.Turns[0].ResponseParts))
}

// TestAgentMemoryAcrossABridgeRestart: a restored chat's next turn
// continues the agent's conversation with session/resume or session/load,
// whose replay does not reach the chat; an agent that offers neither (or
// fails) gets a new session and the turn says the agent forgot.
func TestAgentMemoryAcrossABridgeRestart(t *testing.T) {
	for _, mc := range memoryCases {
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			r := newMemoryRig(t, mc)
			session := bridgetest.CreateSession(t, r.c, "script", r.cwd)
			chat, err := r.c.DefaultChat(session)
			require.NoError(t, err)
			first := r.turn(session, "echo remember 4c1e")
			require.Equal(t, wire.TurnStateComplete, first.State)
			id, ok := r.env.Host.AgentSessionID(chat)
			require.True(t, ok)
			require.Equal(t, "sess-1", id, "the bridge records the agent session")

			r.restart()
			_, err = r.c.Subscribe(bridgetest.Context(t, acpTimeout), session)
			require.NoError(t, err)
			_, err = r.c.Subscribe(bridgetest.Context(t, acpTimeout), chat)
			require.NoError(t, err)
			r.checkRecall(r.turn(chat, "recall"), chat)
			st, err := r.c.Chat(chat)
			require.NoError(t, err)
			noReplay(t, st, 2)

			// The conversation goes on as usual afterwards.
			next := r.turn(chat, "recall")
			if mc.remembers {
				assert.Equal(t, "recall: echo remember 4c1e | recall", acpTurnText(next.ResponseParts))
			} else {
				assert.Equal(t, "recall: recall", acpTurnText(next.ResponseParts))
			}
			assert.Empty(t, acpPartsOf[wire.SystemNotificationResponsePart](next.ResponseParts), "the notice is given once")

			// The restored session's changes start with its first one.
			require.Equal(t, wire.TurnStateComplete, r.turn(chat, "write after.txt x").State)
			sessions, err := r.c.ListSessions(bridgetest.Context(t, acpTimeout))
			require.NoError(t, err)
			require.Len(t, sessions, 1)
			require.NotNil(t, sessions[0].Changes)
			assert.Equal(t, int64(1), *sessions[0].Changes.Files)
		})
	}
}

// TestAgentMemoryAfterAnAgentCrash: when the agent process dies under a
// live session, the chat's next turn re-attaches the conversation on the
// restarted agent the same way.
func TestAgentMemoryAfterAnAgentCrash(t *testing.T) {
	for _, mc := range memoryCases {
		t.Run(mc.name, func(t *testing.T) {
			t.Parallel()
			r := newMemoryRig(t, mc)
			session := bridgetest.CreateSession(t, r.c, "script", r.cwd)
			chat, err := r.c.DefaultChat(session)
			require.NoError(t, err)
			require.Equal(t, wire.TurnStateComplete, r.turn(session, "echo remember 4c1e").State)
			crashed := r.turn(session, "crash")
			require.Equal(t, wire.TurnStateError, crashed.State, "the agent died in the turn")

			r.checkRecall(r.turn(chat, "recall"), chat)
			st, err := r.c.Chat(chat)
			require.NoError(t, err)
			noReplay(t, st, 3)
		})
	}
}

// TestAgentMemoryNotRecordedGivesANotice: a restored chat for which no
// agent session was recorded (a state file written before the bridge
// recorded them) starts a new agent session and says the agent forgot.
func TestAgentMemoryNotRecordedGivesANotice(t *testing.T) {
	r := newMemoryRig(t, memoryCase{name: "unrecorded", sessions: "both"})
	session := bridgetest.CreateSession(t, r.c, "script", r.cwd)
	chat, err := r.c.DefaultChat(session)
	require.NoError(t, err)
	r.turn(session, "echo remember 4c1e")
	require.NoError(t, r.env.Host.SetAgentSessionID(chat, ""))

	r.restart()
	_, err = r.c.Subscribe(bridgetest.Context(t, acpTimeout), session)
	require.NoError(t, err)
	_, err = r.c.Subscribe(bridgetest.Context(t, acpTimeout), chat)
	require.NoError(t, err)
	turn := r.turn(chat, "recall")
	assert.Equal(t, "recall: nothing", acpTurnText(turn.ResponseParts))
	notices := acpPartsOf[wire.SystemNotificationResponsePart](turn.ResponseParts)
	require.Len(t, notices, 1)
	assert.Contains(t, notices[0].Content.Text, "does not remember earlier turns")
	assert.Equal(t, []string{"new_sess-1", "new_sess-2"}, r.paths())
}
