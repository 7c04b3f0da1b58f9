package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// agentLog reads SCRIPTAGENT_LOG: the params of every request of method
// the agent received.
func agentLog(t *testing.T, file, method string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == method {
			out = append(out, m.Params)
		}
	}
	return out
}

// TestAgentSessions: with an agent that advertises them, the provider
// reports the session capabilities (only once the agent ran), pages
// session/list filtered by cwd, forks, deletes, passes the other working
// directories as additionalDirectories, and opens one of the agent's own
// sessions by session/load with its replay passed on between Replay
// events, user messages included.
func TestAgentSessions(t *testing.T) {
	state, logFile := t.TempDir(), filepath.Join(t.TempDir(), "agent.log")
	p := scriptProvider(t, func(c *Config) {
		c.Env = append(c.Env, "SCRIPTAGENT_SESSIONS=both", "SCRIPTAGENT_STATE_DIR="+state, "SCRIPTAGENT_LIST_PAGE=2",
			"SCRIPTAGENT_AGENT_SESSIONS=list,fork,delete,additionalDirectories", "SCRIPTAGENT_LOG="+logFile)
		c.ListAgentSessions = true
	})
	_, known, running := p.SessionCaps()
	assert.False(t, known || running, "no capabilities before the agent ran")
	assert.True(t, p.ListsWithoutRunning())

	other := t.TempDir()
	for i, text := range []string{"echo one", "echo two", "echo three"} {
		if i == 2 {
			// A session elsewhere, filtered out below.
			s, _, _ := openSession(t, p)
			require.NoError(t, prompt(t, s, text).err)
			continue
		}
		rec := newRecorder()
		s, err := p.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: "x", Cwd: other, Roots: []string{other, state}}, rec)
		require.NoError(t, err)
		require.NoError(t, prompt(t, s, text).err)
	}
	caps, known, running := p.SessionCaps()
	require.True(t, known && running)
	assert.Equal(t, backend.SessionCaps{List: true, Load: true, Resume: true, Fork: true, Close: true, Delete: true, AdditionalDirectories: true}, caps)
	news := agentLog(t, logFile, "session/new")
	require.Len(t, news, 3)
	assert.Equal(t, []any{state}, news[0]["additionalDirectories"], "the other working directories reach the agent")

	page, err := p.ListAgentSessions(waitCtx(t), other, "")
	require.NoError(t, err)
	require.Len(t, page.Sessions, 2)
	assert.Empty(t, page.Next)
	for _, s := range page.Sessions {
		assert.Equal(t, other, s.Cwd)
		assert.NotEmpty(t, s.UpdatedAt)
		assert.Equal(t, "Script "+s.ID, s.Title)
	}
	page, err = p.ListAgentSessions(waitCtx(t), "", "")
	require.NoError(t, err)
	require.Len(t, page.Sessions, 2)
	require.Equal(t, "off:2", page.Next)
	page2, err := p.ListAgentSessions(waitCtx(t), "", page.Next)
	require.NoError(t, err)
	require.Len(t, page2.Sessions, 1)
	lists := agentLog(t, logFile, "session/list")
	assert.Equal(t, []map[string]any{{"cwd": other}, {}, {"cursor": "off:2"}}, lists)

	// Fork sess-1 and open sess-2 as one of the agent's own, by load.
	rec := newRecorder()
	f, err := p.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: "f", Cwd: other, Fork: "sess-1"}, rec)
	require.NoError(t, err)
	require.NoError(t, prompt(t, f, "recall").err)
	assert.Equal(t, "recall: echo one", rec.text(), "the fork has the conversation it was forked from")
	assert.Equal(t, map[string]any{"sessionId": "sess-1", "cwd": other, "mcpServers": []any{}}, agentLog(t, logFile, "session/fork")[0])

	rec = newRecorder()
	im, err := p.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: "i", Cwd: other, Resume: "sess-2", Import: true}, rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = im.Close(context.Background()) })
	rec.waitFor(t, "attached", func(ev backend.Event) bool {
		a, ok := ev.(backend.Attached)
		return ok && a.How == backend.AttachLoaded
	})
	var replay []string
	for _, ev := range rec.all() {
		switch e := ev.(type) {
		case backend.Replay:
			replay = append(replay, map[bool]string{false: "start", true: "done"}[e.Done])
		case backend.UserMessage:
			replay = append(replay, "user:"+e.Text)
		case backend.TextChunk:
			replay = append(replay, "agent:"+e.Text)
		}
	}
	assert.Equal(t, []string{"start", "user:echo two", "agent:replayed: echo two", "done"}, replay)

	ok, err := p.DeleteAgentSession(waitCtx(t), "sess-3")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.NoFileExists(t, filepath.Join(state, "sess-3.json"))
	assert.Equal(t, []map[string]any{{"sessionId": "sess-3"}}, agentLog(t, logFile, "session/delete"))
}

// TestAgentSessionsNotAdvertised: an agent that advertises none of them
// lists nothing, deletes nothing and refuses to fork, and gets no
// additionalDirectories.
func TestAgentSessionsNotAdvertised(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "agent.log")
	p := scriptProvider(t, func(c *Config) { c.Env = append(c.Env, "SCRIPTAGENT_LOG="+logFile) })
	other := t.TempDir()
	_, err := p.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: "x", Cwd: other, Roots: []string{other, t.TempDir()}}, newRecorder())
	require.NoError(t, err)
	_, err = p.ListAgentSessions(waitCtx(t), "", "")
	assert.ErrorContains(t, err, "cannot list its sessions")
	ok, err := p.DeleteAgentSession(waitCtx(t), "sess-1")
	assert.NoError(t, err)
	assert.False(t, ok)
	_, err = p.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: "f", Cwd: other, Fork: "sess-1"}, newRecorder())
	assert.ErrorContains(t, err, "cannot fork")
	assert.NotContains(t, agentLog(t, logFile, "session/new")[0], "additionalDirectories")
	assert.Empty(t, agentLog(t, logFile, "session/list"))
	assert.Empty(t, agentLog(t, logFile, "session/delete"))
}

// TestAgentSessionsHidden: a provider configured never to list them
// reports no list, whatever the agent advertised.
func TestAgentSessionsHidden(t *testing.T) {
	p := scriptProvider(t, func(c *Config) {
		c.Env = append(c.Env, "SCRIPTAGENT_AGENT_SESSIONS=list,delete")
		c.HideAgentSessions = true
	})
	openSession(t, p)
	caps, known, _ := p.SessionCaps()
	require.True(t, known)
	assert.False(t, caps.List)
	assert.True(t, caps.Delete)
}
