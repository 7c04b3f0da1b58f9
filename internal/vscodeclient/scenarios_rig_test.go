package vscodeclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// The rig of the scenario tests that port VS Code's agent-host e2e suites
// (docs/vscode-scenarios.md): one in-process bridge per suite, shared by
// its subtests, with the scripted ACP agent as provider "demo". Each
// subtest connects its own VS Code client and makes its own sessions, as
// each of VS Code's scenarios does, so that they can run in parallel.

// scenarioProvider is the provider id of the scripted agent.
const scenarioProvider = "demo"

// scenarioRig is one bridge over the scripted agent.
type scenarioRig struct {
	env *bridgetest.Env
	// agentLog is the scripted agent's SCRIPTAGENT_LOG: every message it
	// received, the prompts included. It is what VS Code's suites read as
	// the provider's requests (observedModelRequestBodies).
	agentLog string
}

// newScenarioRig starts a bridge for one suite.
func newScenarioRig(t *testing.T) *scenarioRig {
	t.Helper()
	agentLog := filepath.Join(t.TempDir(), "agent.log")
	cfg := acp.Config{ID: scenarioProvider, DisplayName: "Script agent", Command: []string{bridgetest.ScriptAgent(t)},
		CoalesceText: true, Env: []string{"SCRIPTAGENT_LOG=" + agentLog}}
	p := acp.NewProvider(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})
	return &scenarioRig{env: env, agentLog: agentLog}
}

// scenarioCtx bounds one wait of a scenario. Generous for -race on a
// loaded machine; a passing test never waits for it.
func scenarioCtx(t *testing.T) context.Context { return bridgetest.Context(t, 60*time.Second) }

// connect returns a VS Code editor window connected to the rig.
func (r *scenarioRig) connect(t *testing.T) *vsc.Client {
	t.Helper()
	c, err := vsc.Dial(scenarioCtx(t), vsc.Options{Address: r.env.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Connect(scenarioCtx(t))
	require.NoError(t, err)
	return c
}

// newSession is VS Code's createRealSession: createSession in dirs (a
// fresh folder when none), subscribe, wait until it is ready. It returns
// the session and its default chat's derived name.
func newSession(t *testing.T, c *vsc.Client, dirs ...string) (session, chat string) {
	t.Helper()
	if len(dirs) == 0 {
		dirs = []string{t.TempDir()}
	}
	session, err := c.CreateSession(scenarioCtx(t), scenarioProvider, dirs)
	require.NoError(t, err)
	_, err = c.Subscribe(scenarioCtx(t), session)
	require.NoError(t, err)
	require.NoError(t, c.WaitFor(scenarioCtx(t), "session "+session+" ready", func() bool {
		s, _ := c.Session(session)
		return s.Lifecycle != wire.SessionLifecycleCreating
	}))
	s, _ := c.Session(session)
	require.Equal(t, wire.SessionLifecycleReady, s.Lifecycle, "session creation failed: %+v", s.CreationError)
	return session, vsc.DefaultChatURI(session)
}

// sessionState is VS Code's sessionState(): a fresh subscribe's snapshot.
func sessionState(t *testing.T, c *vsc.Client, session string) wire.SessionState {
	t.Helper()
	snap, err := c.Subscribe(scenarioCtx(t), session)
	require.NoError(t, err)
	var st wire.SessionState
	require.NoError(t, json.Unmarshal(snap.State, &st), "%s", snap.State)
	return st
}

// chatState is VS Code's chatState(): a fresh subscribe's snapshot.
func chatState(t *testing.T, c *vsc.Client, chat string) wire.ChatState {
	t.Helper()
	snap, err := c.Subscribe(scenarioCtx(t), chat)
	require.NoError(t, err)
	var st wire.ChatState
	require.NoError(t, json.Unmarshal(snap.State, &st), "%s", snap.State)
	return st
}

// echo is the host's envelope of one of the client's own actions.
type echo struct {
	Channel         string          `json:"channel"`
	Action          json.RawMessage `json:"action"`
	RejectionReason *string         `json:"rejectionReason"`
	Origin          *struct {
		ClientID  string `json:"clientId"`
		ClientSeq int64  `json:"clientSeq"`
	} `json:"origin"`
}

// dispatchAndWait is VS Code's dispatchAndWait: dispatch an action and wait
// for the host's envelope of it (applied or rejected). It returns the
// envelope.
func dispatchAndWait(t *testing.T, c *vsc.Client, channel string, action map[string]any) echo {
	t.Helper()
	seq, err := c.DispatchAction(channel, action)
	require.NoError(t, err)
	var got echo
	require.NoError(t, c.WaitFor(scenarioCtx(t), "the host's envelope of "+action["type"].(string), func() bool {
		for _, n := range c.Notifications() {
			if n.Method != "action" {
				continue
			}
			var e echo
			if json.Unmarshal(n.Params, &e) == nil && e.Origin != nil && e.Origin.ClientID == c.ClientID() && e.Origin.ClientSeq == seq {
				got = e
				return true
			}
		}
		return false
	}))
	return got
}

// requireApplied dispatches an action and requires the host to apply it.
func requireApplied(t *testing.T, c *vsc.Client, channel string, action map[string]any) {
	t.Helper()
	e := dispatchAndWait(t, c, channel, action)
	require.Nil(t, e.RejectionReason, "%s on %s was rejected: %v", action["type"], channel, deref(e.RejectionReason))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// userMessage is VS Code's userMessage(text).
func userMessage(text string) map[string]any {
	return map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}
}

// driveTurn is VS Code's driveTurn: start a turn on a subscribed chat (with
// attachments, if any), approve every tool call that asks, wait for its
// end. It returns the ended turn.
func driveTurn(t *testing.T, c *vsc.Client, chat, text string, attachments ...map[string]any) wire.Turn {
	t.Helper()
	turnID := client.NewUUID()
	msg := userMessage(text)
	if len(attachments) > 0 {
		msg["attachments"] = attachments
	}
	_, err := c.DispatchAction(chat, map[string]any{"type": "chat/turnStarted", "turnId": turnID,
		"startedAt": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "message": msg})
	require.NoError(t, err)
	approved := map[string]bool{}
	for !c.TurnEnded(chat, turnID) {
		var pending toolCall
		require.NoError(t, c.WaitFor(scenarioCtx(t), "turn "+text+" to end", func() bool {
			if c.TurnEnded(chat, turnID) {
				return true
			}
			for _, tc := range toolCalls(c, chat) {
				if tc.Status == string(wire.ToolCallStatusPendingConfirmation) && !approved[tc.ToolCallID] {
					pending = tc
					return true
				}
			}
			return false
		}))
		if pending.ToolCallID != "" {
			approved[pending.ToolCallID] = true
			require.NoError(t, c.Approve(chat, turnID, pending.ToolCallID, optionOfKind(pending, "approve")))
		}
	}
	turn, inTurns, err := c.WaitTurnEnd(scenarioCtx(t), chat, turnID)
	require.NoError(t, err)
	require.True(t, inTurns, "turn %s is in turns[]", turnID)
	return turn
}

// agentRequest returns the prompt request the scripted agent received
// whose text holds marker, as received: the provider request VS Code's
// suites read.
func (r *scenarioRig) agentRequest(t *testing.T, marker string) string {
	t.Helper()
	f, err := os.Open(r.agentLog)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `"session/prompt"`) && strings.Contains(line, marker) {
			return line
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("the agent received no prompt with %q", marker)
	return ""
}

// newID is a fresh UUID.
func newID() string { return client.NewUUID() }
