package bridge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/bridge"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// These tests check the agent's own sessions through the bridge (issue
// 29): the scripted agent keeps sessions "made in a terminal" in its state
// directory (SCRIPTAGENT_STATE_DIR), lists them with session/list
// (SCRIPTAGENT_AGENT_SESSIONS, pages of SCRIPTAGENT_LIST_PAGE) and logs
// every request it receives (SCRIPTAGENT_LOG); each test checks what the
// client saw against what the agent got.

// agentSessionsRig is a bridge on a state file over the scripted agent
// holding three sessions of its own: ext-a and ext-b in cwd (ext-a the
// newest), ext-c in other.
type agentSessionsRig struct {
	t          *testing.T
	agentDir   string
	cwd, other string
	env        *bridgetest.Env
	c          *client.Client
	st         *store.SQLite // nil in memory
	// start runs the bridge (again, after restart stopped it).
	start func()
}

func newAgentSessionsRig(t *testing.T, sessions, caps string, refresh time.Duration) *agentSessionsRig {
	return newAgentSessionsRigOn(t, sessions, caps, refresh, true)
}

// newAgentSessionsRigOn is newAgentSessionsRig with a state file or
// without (withStore false: --state none).
func newAgentSessionsRigOn(t *testing.T, sessions, caps string, refresh time.Duration, withStore bool) *agentSessionsRig {
	dir := t.TempDir()
	r := &agentSessionsRig{t: t, agentDir: filepath.Join(dir, "agent"), cwd: acpProjectDir(t), other: t.TempDir()}
	require.NoError(t, os.Mkdir(r.agentDir, 0o700))
	base := time.Now().Add(-time.Hour)
	r.agentSession("ext-a", r.cwd, "Fix the parser", base.Add(3*time.Minute), "hello there")
	r.agentSession("ext-b", r.cwd, "", base.Add(2*time.Minute), "older")
	r.agentSession("ext-c", r.other, "Elsewhere", base.Add(time.Minute), "far")

	r.start = func() {
		var hopts host.Options
		if withStore {
			ctx, cancel := context.WithTimeout(t.Context(), acpTimeout)
			defer cancel()
			st, err := store.Open(ctx, filepath.Join(dir, "state.db"), store.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			hopts.Store = st
			r.st = st
		}
		p := acpScriptProvider(t, func(c *acp.Config) {
			c.Env = []string{"SCRIPTAGENT_SESSIONS=" + sessions, "SCRIPTAGENT_STATE_DIR=" + r.agentDir,
				"SCRIPTAGENT_AGENT_SESSIONS=" + caps, "SCRIPTAGENT_LIST_PAGE=2", "SCRIPTAGENT_LOG=" + r.log()}
			c.ListAgentSessions = true
		})
		r.env = bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{Host: hopts, ListRefresh: refresh})
		r.c = r.env.Client(t)
	}
	r.start()
	return r
}

// restart stops the bridge and its agent and starts them again.
func (r *agentSessionsRig) restart() {
	_ = r.c.Close()
	r.env.Close()
	if r.st != nil {
		require.NoError(r.t, r.st.Close())
	}
	r.start()
}

// agentSession writes one of the agent's own sessions, as a terminal
// session of the agent would have left it.
func (r *agentSessionsRig) agentSession(id, cwd, title string, at time.Time, prompts ...string) {
	b, err := json.Marshal(map[string]any{"id": id, "cwd": cwd, "title": title, "prompts": prompts})
	require.NoError(r.t, err)
	f := filepath.Join(r.agentDir, id+".json")
	require.NoError(r.t, os.WriteFile(f, b, 0o600))
	require.NoError(r.t, os.Chtimes(f, at, at))
}

func (r *agentSessionsRig) log() string { return filepath.Join(r.agentDir, "received.log") }

// requests are the params of each request of method the agent received.
func (r *agentSessionsRig) requests(method string) []map[string]any {
	var out []map[string]any
	for _, raw := range agentLog(r.t, r.log(), method) {
		var m map[string]any
		require.NoError(r.t, json.Unmarshal(raw, &m))
		out = append(out, m)
	}
	return out
}

// list is one listSessions call with the given params.
func (r *agentSessionsRig) list(params wire.ListSessionsParams) wire.ListSessionsResult {
	params.Channel = client.RootChannel
	var res wire.ListSessionsResult
	require.NoError(r.t, r.c.Call(bridgetest.Context(r.t, acpTimeout), wire.MethodListSessions, params, &res))
	return res
}

func resources(items []wire.SessionSummary) []string {
	out := []string{}
	for _, s := range items {
		out = append(out, s.Resource)
	}
	return out
}

// TestAgentSessionsListed: listSessions shows the agent's own sessions,
// marked as the agent's, named <provider>:/<id>, with title, working
// directory and time; the agent's list is paged as the client pages,
// filtered by the client's working directory, and asked again only once
// the refresh interval passed.
func TestAgentSessionsListed(t *testing.T) {
	for _, withStore := range []bool{true, false} {
		t.Run(map[bool]string{true: "state-file", false: "in-memory"}[withStore], func(t *testing.T) {
			testAgentSessionsListed(t, withStore)
		})
	}
}

func testAgentSessionsListed(t *testing.T, withStore bool) {
	r := newAgentSessionsRigOn(t, "load", "list", time.Hour, withStore)
	first := r.list(wire.ListSessionsParams{Limit: wire.Ptr(int64(10))})
	assert.Equal(t, []string{"script:/ext-a", "script:/ext-b"}, resources(first.Items), "the agent's first page")
	require.NotNil(t, first.NextCursor, "the agent has more")
	a := first.Items[0]
	assert.Equal(t, "Fix the parser", a.Title)
	assert.Equal(t, "script", a.Provider)
	assert.Equal(t, []string{fileURI(r.cwd)}, a.WorkingDirectories)
	assert.Equal(t, true, a.Meta[bridge.AgentSessionMeta])
	assert.Equal(t, "ext-a", a.Meta[bridge.AgentSessionIDMeta])
	assert.Equal(t, "Script ext-b", first.Items[1].Title, "the agent's title")
	assert.Greater(t, a.ModifiedAt, first.Items[1].ModifiedAt)

	second := r.list(wire.ListSessionsParams{Limit: wire.Ptr(int64(10)), Cursor: first.NextCursor})
	assert.Equal(t, []string{"script:/ext-c"}, resources(second.Items), "the agent's next page, as the client pages")
	assert.Nil(t, second.NextCursor)

	filtered := r.list(wire.ListSessionsParams{Meta: map[string]any{"workingDirectory": fileURI(r.other)}})
	assert.Equal(t, []string{"script:/ext-c"}, resources(filtered.Items))

	// Within the refresh interval the agent is not asked again.
	r.agentSession("ext-d", r.cwd, "New in the terminal", time.Now(), "new")
	again := r.list(wire.ListSessionsParams{})
	assert.Equal(t, []string{"script:/ext-a", "script:/ext-b", "script:/ext-c"}, resources(again.Items))
	assert.Equal(t, []map[string]any{{}, {"cursor": "off:2"}, {"cwd": r.other}}, r.requests("session/list"))
}

// TestAgentSessionsAnnouncedToTheRoot: a client subscribed to the root
// hears of each agent session (root/sessionAdded, once) when a listing
// finds it, as it hears of the bridge's own.
func TestAgentSessionsAnnouncedToTheRoot(t *testing.T) {
	r := newAgentSessionsRig(t, "load", "list", time.Nanosecond)
	watcher := r.env.Client(t) // subscribed to the root
	var mu sync.Mutex
	added := map[string]int{}
	go func() { // ends when the client is closed at the test's end
		for {
			ev, err := watcher.Next(context.Background())
			if err != nil {
				return
			}
			var p wire.SessionAddedParams
			if ev.Method == "root/sessionAdded" && json.Unmarshal(ev.Params, &p) == nil {
				mu.Lock()
				added[p.Summary.Resource]++
				mu.Unlock()
			}
		}
	}()
	count := func(uri string) int {
		mu.Lock()
		defer mu.Unlock()
		return added[uri]
	}
	r.list(wire.ListSessionsParams{})
	require.Eventually(t, func() bool { return count("script:/ext-a") == 1 && count("script:/ext-b") == 1 }, acpTimeout, 10*time.Millisecond,
		"the root's subscribers heard of the agent's sessions")
	r.agentSession("ext-d", r.cwd, "New in the terminal", time.Now(), "new")
	r.list(wire.ListSessionsParams{})
	require.Eventually(t, func() bool { return count("script:/ext-d") == 1 }, acpTimeout, 10*time.Millisecond,
		"a session made in the terminal meanwhile is announced at the next listing")
	r.list(wire.ListSessionsParams{})
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 1, count("script:/ext-a"), "each is announced once")
}

// TestAgentSessionsRefreshed: once the refresh interval passed, the next
// listSessions asks the agent again, and a session made meanwhile shows.
func TestAgentSessionsRefreshed(t *testing.T) {
	r := newAgentSessionsRig(t, "load", "list", time.Nanosecond)
	assert.Equal(t, []string{"script:/ext-a", "script:/ext-b"}, resources(r.list(wire.ListSessionsParams{}).Items))
	r.agentSession("ext-d", r.cwd, "New in the terminal", time.Now(), "new")
	assert.Equal(t, []string{"script:/ext-d", "script:/ext-a"}, resources(r.list(wire.ListSessionsParams{}).Items))
	assert.GreaterOrEqual(t, len(r.requests("session/list")), 2)
}

// waitChat waits until the chat's state satisfies cond.
func (r *agentSessionsRig) waitChat(chat, what string, cond func(*wire.ChatState) bool) *wire.ChatState {
	r.t.Helper()
	deadline := time.Now().Add(acpTimeout)
	for {
		st, err := r.c.Chat(chat)
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; chat: %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// open subscribes to one of the agent's sessions and its default chat.
func (r *agentSessionsRig) open(session string) string {
	ctx := bridgetest.Context(r.t, acpTimeout)
	snap, err := r.c.Subscribe(ctx, session)
	require.NoError(r.t, err)
	require.Equal(r.t, session, snap.Resource)
	chat := wire.DefaultChatURI(session)
	_, err = r.c.Subscribe(ctx, chat)
	require.NoError(r.t, err)
	return chat
}

// TestAgentSessionOpenedByLoad: subscribing to one of the agent's sessions
// opens it with session/load; its replayed conversation becomes the chat's
// turns, the conversation goes on with the agent remembering it, and the
// session is an ordinary one of the bridge's (no longer marked the
// agent's). Disposing it closes the agent's session.
func TestAgentSessionOpenedByLoad(t *testing.T) {
	for _, withStore := range []bool{true, false} {
		t.Run(map[bool]string{true: "state-file", false: "in-memory"}[withStore], func(t *testing.T) {
			testAgentSessionOpenedByLoad(t, withStore)
		})
	}
}

func testAgentSessionOpenedByLoad(t *testing.T, withStore bool) {
	r := newAgentSessionsRigOn(t, "load", "list", time.Hour, withStore)
	require.Len(t, r.list(wire.ListSessionsParams{}).Items, 2, "a client that does not page sees the agent's first page")
	chat := r.open("script:/ext-a")
	st := r.waitChat(chat, "the replayed turn", func(st *wire.ChatState) bool { return len(st.Turns) == 1 })
	assert.Equal(t, "hello there", st.Turns[0].Message.Text)
	assert.Equal(t, wire.TurnStateComplete, st.Turns[0].State)
	assert.Equal(t, "replayed: hello there", acpTurnText(st.Turns[0].ResponseParts))
	loads := r.requests("session/load")
	require.Len(t, loads, 1)
	assert.Equal(t, "ext-a", loads[0]["sessionId"])
	assert.Equal(t, r.cwd, loads[0]["cwd"])
	assert.Empty(t, r.requests("session/resume"))

	id := bridgetest.StartTurn(t, r.c, chat, "recall")
	turn := bridgetest.WaitTurnEnd(t, r.c, chat, id, acpTimeout)
	assert.Equal(t, "recall: hello there", acpTurnText(turn.ResponseParts), "the agent remembers its session")
	assert.Empty(t, acpPartsOf[wire.SystemNotificationResponsePart](turn.ResponseParts))
	agentID, ok := r.env.Host.AgentSessionID(chat)
	require.True(t, ok)
	assert.Equal(t, "ext-a", agentID, "recorded, so that a restart continues it")
	if withStore {
		rec, err := r.st.GetSession(bridgetest.Context(t, acpTimeout), "script:/ext-a")
		require.NoError(t, err, "kept in the state file like the bridge's own sessions")
		require.Len(t, rec.Chats, 1)
		assert.Equal(t, "ext-a", rec.Chats[0].ACPSessionID)
		assert.Equal(t, 2, rec.Chats[0].Turns, "the replayed turn and the new one")
	}

	items := r.list(wire.ListSessionsParams{}).Items
	require.Equal(t, []string{"script:/ext-a", "script:/ext-b"}, resources(items))
	assert.Nil(t, items[0].Meta[bridge.AgentSessionMeta], "an opened session is the bridge's")

	require.NoError(t, r.c.DisposeSession(bridgetest.Context(t, acpTimeout), "script:/ext-a"))
	require.Eventually(t, func() bool { return len(r.requests("session/close")) == 1 }, acpTimeout, 20*time.Millisecond)
	assert.Equal(t, "ext-a", r.requests("session/close")[0]["sessionId"], "a released session closes the agent's")
}

// TestAgentSessionOpenedByResume: an agent that cannot load continues its
// session with session/resume: the chat starts without turns, and its
// first turn says that the earlier turns live in the agent.
func TestAgentSessionOpenedByResume(t *testing.T) {
	r := newAgentSessionsRig(t, "resume", "list", time.Hour)
	require.Len(t, r.list(wire.ListSessionsParams{}).Items, 2)
	chat := r.open("script:/ext-b")
	require.Eventually(t, func() bool { return len(r.requests("session/resume")) == 1 }, acpTimeout, 20*time.Millisecond)
	assert.Equal(t, "ext-b", r.requests("session/resume")[0]["sessionId"])
	st, err := r.c.Chat(chat)
	require.NoError(t, err)
	assert.Empty(t, st.Turns)

	id := bridgetest.StartTurn(t, r.c, chat, "recall")
	turn := bridgetest.WaitTurnEnd(t, r.c, chat, id, acpTimeout)
	assert.Equal(t, "recall: older", acpTurnText(turn.ResponseParts))
	notices := acpPartsOf[wire.SystemNotificationResponsePart](turn.ResponseParts)
	require.Len(t, notices, 1)
	assert.Contains(t, notices[0].Content.Text, "earlier turns")
	assert.Empty(t, r.requests("session/load"))
}

// TestAgentSessionsNotListedWithoutTheCapability: an agent that does not
// advertise session/list shows nothing of its own, and is never asked.
func TestAgentSessionsNotListedWithoutTheCapability(t *testing.T) {
	r := newAgentSessionsRig(t, "load", "", time.Nanosecond)
	session := bridgetest.CreateSession(t, r.c, "script", r.cwd) // the agent runs
	assert.Equal(t, []string{session}, resources(r.list(wire.ListSessionsParams{}).Items))
	assert.Empty(t, r.requests("session/list"))
	_, err := r.c.Subscribe(bridgetest.Context(t, acpTimeout), "script:/ext-a")
	assert.Error(t, err, "not one of the bridge's sessions")
}

// agentInfo is the scripted provider's entry in the root state.
func (r *agentSessionsRig) agentInfo() wire.AgentInfo {
	root, err := r.c.Root()
	require.NoError(r.t, err)
	for _, a := range root.Agents {
		if a.Provider == "script" {
			return a
		}
	}
	r.t.Fatal("no script agent in the root state")
	return wire.AgentInfo{}
}

// TestAgentSessionForkAndDirectories: an agent that can fork has
// multipleChats.fork advertised once it ran; createChat with a fork source
// at the chat's latest turn forks the agent's session (session/fork) into
// a chat that starts with the copied turns and whose agent remembers them;
// a fork at an earlier turn is refused. A session with several working
// directories passes the others as additionalDirectories.
func TestAgentSessionForkAndDirectories(t *testing.T) {
	r := newAgentSessionsRig(t, "both", "fork,additionalDirectories", time.Hour)
	session := bridgetest.CreateSession(t, r.c, "script", r.cwd)
	chat := wire.DefaultChatURI(session)
	first := bridgetest.StartTurn(t, r.c, chat, "echo first")
	bridgetest.WaitTurnEnd(t, r.c, chat, first, acpTimeout)
	second := bridgetest.StartTurn(t, r.c, chat, "echo second")
	bridgetest.WaitTurnEnd(t, r.c, chat, second, acpTimeout)
	require.Eventually(t, func() bool {
		caps := r.agentInfo().Capabilities
		return caps != nil && caps.MultipleChats != nil && caps.MultipleChats.Fork != nil && *caps.MultipleChats.Fork
	}, acpTimeout, 20*time.Millisecond, "multipleChats.fork advertised once the agent said it can")
	assert.NotNil(t, r.agentInfo().Capabilities.MultipleWorkingDirectories)

	ctx := bridgetest.Context(t, acpTimeout)
	early := wire.ChatURI(session, "early")
	err := r.c.CreateChat(ctx, wire.CreateChatParams{Channel: session, Chat: early,
		Source: &wire.ChatSource{Value: &wire.ForkChatSource{Kind: wire.ChatSourceKindFork, Chat: chat, TurnID: first}}})
	require.Error(t, err, "the agent forks the whole conversation: not at an earlier turn")
	assert.Contains(t, err.Error(), "latest completed turn")

	fork := wire.ChatURI(session, "fork1")
	require.NoError(t, r.c.CreateChat(ctx, wire.CreateChatParams{Channel: session, Chat: fork,
		Source: &wire.ChatSource{Value: &wire.ForkChatSource{Kind: wire.ChatSourceKindFork, Chat: chat, TurnID: second}}}))
	_, err = r.c.Subscribe(ctx, fork)
	require.NoError(t, err)
	st, err := r.c.Chat(fork)
	require.NoError(t, err)
	require.Len(t, st.Turns, 2, "the fork starts with the source's turns")
	assert.Equal(t, "echo second", st.Turns[1].Message.Text)
	require.NotNil(t, st.Origin)
	origin, ok := st.Origin.Value.(*wire.ChatOriginFork)
	require.True(t, ok, "origin %+v", st.Origin.Value)
	assert.Equal(t, chat, origin.Chat)
	assert.Equal(t, second, origin.TurnID)

	id := bridgetest.StartTurn(t, r.c, fork, "recall")
	turn := bridgetest.WaitTurnEnd(t, r.c, fork, id, acpTimeout)
	assert.Equal(t, "recall: echo first | echo second", acpTurnText(turn.ResponseParts), "the forked agent session remembers")
	forks := r.requests("session/fork")
	require.Len(t, forks, 1)
	assert.Equal(t, "sess-1", forks[0]["sessionId"])
	assert.Equal(t, r.cwd, forks[0]["cwd"])
	agentID, ok := r.env.Host.AgentSessionID(fork)
	require.True(t, ok)
	assert.Equal(t, "sess-2", agentID, "the fork's own agent session is recorded")

	// Several working directories: the others reach the agent.
	extra := t.TempDir()
	many := bridgetest.CreateSessionWith(t, r.c, wire.CreateSessionParams{Provider: wire.Ptr("script"),
		WorkingDirectories: []string{fileURI(r.cwd), fileURI(extra)}})
	st2, err := r.c.Session(many)
	require.NoError(t, err)
	assert.Len(t, st2.WorkingDirectories, 2)
	news := r.requests("session/new")
	require.Len(t, news, 2)
	assert.Nil(t, news[0]["additionalDirectories"], "one directory: none more")
	assert.Equal(t, r.cwd, news[1]["cwd"])
	assert.Equal(t, []any{extra}, news[1]["additionalDirectories"])
}

// TestAgentSessionForkNotAdvertised: an agent that cannot fork has no
// multipleChats.fork, and createChat with a fork source is refused without
// asking it.
func TestAgentSessionForkNotAdvertised(t *testing.T) {
	r := newAgentSessionsRig(t, "both", "", time.Hour)
	session := bridgetest.CreateSession(t, r.c, "script", r.cwd)
	chat := wire.DefaultChatURI(session)
	first := bridgetest.StartTurn(t, r.c, chat, "echo first")
	bridgetest.WaitTurnEnd(t, r.c, chat, first, acpTimeout)
	caps := r.agentInfo().Capabilities
	require.NotNil(t, caps)
	assert.Nil(t, caps.MultipleChats.Fork)
	assert.Nil(t, caps.MultipleWorkingDirectories)
	err := r.c.CreateChat(bridgetest.Context(t, acpTimeout), wire.CreateChatParams{Channel: session, Chat: wire.ChatURI(session, "f"),
		Source: &wire.ChatSource{Value: &wire.ForkChatSource{Kind: wire.ChatSourceKindFork, Chat: chat, TurnID: first}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot fork")
	assert.Empty(t, r.requests("session/fork"))
}

// TestAgentSessionsBridgeOwnAfterRestart: the agent's session behind a
// session the bridge made is not listed as the agent's while the bridge
// holds it, and, after a restart, no longer once a client named that
// session; a session opened from the agent's list comes back after a
// restart as the bridge's, with its history.
func TestAgentSessionsBridgeOwnAfterRestart(t *testing.T) {
	r := newAgentSessionsRig(t, "load", "list", time.Nanosecond)
	session := bridgetest.CreateSession(t, r.c, "script", r.cwd)
	id := bridgetest.StartTurn(t, r.c, session, "echo mine")
	bridgetest.WaitTurnEnd(t, r.c, session, id, acpTimeout)
	chat := r.open("script:/ext-a")
	r.waitChat(chat, "the replayed turn", func(st *wire.ChatState) bool { return len(st.Turns) == 1 })
	listed := func() []string { // every page
		var out []string
		p := wire.ListSessionsParams{Limit: wire.Ptr(int64(10))}
		for {
			res := r.list(p)
			for _, it := range res.Items {
				if it.Meta[bridge.AgentSessionMeta] == true {
					out = append(out, it.Resource)
				}
			}
			if res.NextCursor == nil {
				return out
			}
			p.Cursor = res.NextCursor
		}
	}
	assert.Equal(t, []string{"script:/ext-b", "script:/ext-c"}, listed(), "sess-1 (the bridge's) and ext-a (opened) are the bridge's")

	r.restart()
	assert.Equal(t, []string{"script:/ext-b", "script:/ext-c"}, listed(),
		"after the restart too: sess-1 is a stored chat's agent session, ext-a a stored session")
	_, err := r.c.Subscribe(bridgetest.Context(t, acpTimeout), session)
	require.NoError(t, err)
	assert.NotContains(t, listed(), "script:/sess-1", "loaded again: the bridge's")
	assert.NotContains(t, listed(), "script:/ext-a", "the opened one is stored as the bridge's")
	r.open("script:/ext-a")
	st, err := r.c.Chat(chat)
	require.NoError(t, err)
	require.Len(t, st.Turns, 1, "its history came back from the state file")
	assert.Equal(t, "replayed: hello there", acpTurnText(st.Turns[0].ResponseParts))
}

// TestAgentSessionsProbeNotListed: the throwaway session the bridge opens
// to learn an agent's models is not listed as one of the agent's.
func TestAgentSessionsProbeNotListed(t *testing.T) {
	agentDir := t.TempDir()
	p := acpScriptProvider(t, func(c *acp.Config) {
		c.Env = []string{"SCRIPTAGENT_STATE_DIR=" + agentDir, "SCRIPTAGENT_AGENT_SESSIONS=list"}
		c.ProbeModels = true
	})
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{ListRefresh: time.Nanosecond})
	c := env.Client(t)
	require.Eventually(t, func() bool {
		root, err := c.Root()
		return err == nil && len(root.Agents) == 1 && len(root.Agents[0].Models) > 0
	}, acpTimeout, 20*time.Millisecond, "the probe learned the models")
	require.FileExists(t, filepath.Join(agentDir, "sess-1.json"), "the agent keeps the probe's session")
	items, err := c.ListSessions(bridgetest.Context(t, acpTimeout))
	require.NoError(t, err)
	assert.Empty(t, resources(items))
}
