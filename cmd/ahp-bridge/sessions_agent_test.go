package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// storedWithAgentSession writes a state file holding one session of
// provider "demo" whose chat talks to the agent session agentID.
func storedWithAgentSession(t *testing.T, agentID string) (state, session string) {
	t.Helper()
	state = filepath.Join(t.TempDir(), "state.db")
	session = "demo:/0b1c"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, state, store.Options{})
	require.NoError(t, err)
	now := time.Now()
	require.NoError(t, st.PutSession(ctx, store.Session{URI: session, Provider: "demo", Summary: json.RawMessage(`{}`), Created: now, Modified: now},
		store.Chat{URI: "ahp-chat://default/x", SessionURI: session, ACPSessionID: agentID, Summary: json.RawMessage(`{}`), Created: now}))
	require.NoError(t, st.Close())
	return state, session
}

// TestSessionsDeleteDeletesTheAgentSession: with the agent named, `sessions
// delete` says it deletes the agent's own session, sends it session/delete
// (the agent advertises it), and deletes the bridge's copy; an agent that
// cannot delete keeps it, saying so; with no agent named, no agent is
// asked.
func TestSessionsDeleteDeletesTheAgentSession(t *testing.T) {
	agentDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(agentDir, "ext-1.json"), []byte(`{"id":"ext-1","cwd":"/","prompts":[]}`), 0o600))
	t.Setenv("SCRIPTAGENT_STATE_DIR", agentDir)
	demo := "demo=" + bridgetest.Binary(t) + " demo-agent"
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runSessions(context.Background(), append([]string{"delete"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	t.Setenv("SCRIPTAGENT_AGENT_SESSIONS", "delete")
	state, session := storedWithAgentSession(t, "ext-1")
	code, out, errOut := run("--state", state, "--acp", demo, session)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "deleted "+session+"\n"+
		"deleting the demo agent's own session ext-1 (ACP session/delete)\n"+
		"deleted the demo agent's own session ext-1\n", out)
	assert.NoFileExists(t, filepath.Join(agentDir, "ext-1.json"))
	paths, err := os.ReadFile(filepath.Join(agentDir, "paths.log"))
	require.NoError(t, err)
	assert.Contains(t, strings.Split(strings.TrimSpace(string(paths)), "\n"), "delete ext-1")

	t.Setenv("SCRIPTAGENT_AGENT_SESSIONS", "")
	state, session = storedWithAgentSession(t, "ext-2")
	code, out, errOut = run("--state", state, "--acp", demo, session)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "deleted "+session+"\n"+
		"deleting the demo agent's own session ext-2 (ACP session/delete)\n"+
		"kept the demo agent's own session ext-2: the agent does not advertise session/delete\n", out)

	state, session = storedWithAgentSession(t, "ext-3")
	code, out, errOut = run("--state", state, "--acp", "other=/bin/false", session)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "kept the demo agent's own session ext-3: name the agent")

	state, session = storedWithAgentSession(t, "ext-4")
	code, out, errOut = run("--state", state, session)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "deleted "+session+"\n", out, "no agent named, none asked")
}
