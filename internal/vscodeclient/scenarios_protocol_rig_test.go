package vscodeclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// The rig of the protocol scenario tests (docs/vscode-scenarios.md): VS
// Code's conformance scenarios are host-owned and never reach a model, so
// one in-process bridge with the scripted ACP agent as provider "demo"
// serves every subtest of a suite, and the subtests run in parallel.

// protoProvider is the provider the scenarios create sessions on (VS
// Code's config.provider).
const protoProvider = "demo"

// protoVersion is VS Code's PROTOCOL_VERSION: the newest version its
// client speaks, the first it offers.
var protoVersion = vsc.OfferedVersions[0]

// protoRig is one bridge shared by the subtests of a suite.
type protoRig struct{ url string }

func startProtoRig(t *testing.T) *protoRig {
	t.Helper()
	p := acp.NewProvider(acp.Config{ID: protoProvider, Command: []string{bridgetest.ScriptAgent(t)}}, zerolog.Nop())
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})
	return &protoRig{url: env.URL}
}

// wait is the context of one wait of a scenario.
func wait(t *testing.T) context.Context { return bridgetest.Context(t, 30*time.Second) }

// dial opens a connection and sends nothing (VS Code's connectClient).
// clientID "" picks a fresh one.
func (r *protoRig) dial(t *testing.T, clientID string) *vsc.Client {
	t.Helper()
	c, err := vsc.Dial(wait(t), vsc.Options{Address: r.url, ClientID: clientID, SessionURIs: vsc.SessionURIsProvider})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// handshake is the conformance suite's initialize: the root channel, VS
// Code's protocol version, the connection's clientId and no initial
// subscriptions, with extra merged over those.
func handshake(t *testing.T, c *vsc.Client, extra map[string]any) (json.RawMessage, error) {
	t.Helper()
	params := map[string]any{"channel": vsc.RootChannel, "protocolVersions": []string{protoVersion}, "clientId": c.ClientID()}
	for k, v := range extra {
		params[k] = v
	}
	return c.Call(wait(t), "initialize", params)
}

// bare is a connection that completed the conformance suite's handshake
// (its initializeAdditionalClient).
func (r *protoRig) bare(t *testing.T) *vsc.Client {
	t.Helper()
	c := r.dial(t, "")
	_, err := handshake(t, c, nil)
	require.NoError(t, err)
	return c
}

// window is a connection that completed VS Code's own handshake, as the
// suite's shared client stands for.
func (r *protoRig) window(t *testing.T) *vsc.Client {
	t.Helper()
	c := r.dial(t, "")
	_, err := c.Connect(wait(t))
	require.NoError(t, err)
	return c
}

// protoSession is the suite's createRealSession: a session of the provider
// on a fresh workspace, subscribed with its default chat, ready, and
// settled (what the agent reports right after session/new has arrived,
// so that later checks see only what the scenario causes).
func protoSession(t *testing.T, c *vsc.Client) (session, chat, workspace string) {
	t.Helper()
	workspace = t.TempDir()
	session, err := c.CreateSession(wait(t), protoProvider, []string{workspace})
	require.NoError(t, err)
	chat, err = c.OpenSession(wait(t), session)
	require.NoError(t, err)
	require.NoError(t, c.WaitFor(wait(t), "session ready", func() bool {
		s, _ := c.Session(session)
		return s.Lifecycle != wire.SessionLifecycleCreating
	}))
	s, _ := c.Session(session)
	require.Equal(t, wire.SessionLifecycleReady, s.Lifecycle, "session creation failed: %+v", s.CreationError)
	// The agent's settings come right after it is ready.
	require.NoError(t, c.WaitFor(wait(t), "the session's settings", func() bool {
		s, _ := c.Session(session)
		return s.Config != nil
	}))
	settle(t, c, session, chat)
	return session, chat, workspace
}

// settle waits until the host has sent c everything it had for channels:
// a ping answered, then a short quiet spell with no new action on them.
// Other channels are left out: a window subscribed to the root hears of
// every session the parallel scenarios make.
func settle(t *testing.T, c *vsc.Client, channels ...string) {
	t.Helper()
	count := func() int {
		n := 0
		for _, e := range envelopes(c) {
			if slices.Contains(channels, e.Channel) {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := count()
		require.NoError(t, c.Ping(wait(t)))
		time.Sleep(100 * time.Millisecond)
		if count() == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%v never fell quiet", channels)
	}
}

// envelope is an action notification as VS Code's tests read it.
type envelope struct {
	Channel   string         `json:"channel"`
	ServerSeq int64          `json:"serverSeq"`
	Action    map[string]any `json:"action"`
	Origin    *struct {
		ClientID  string `json:"clientId"`
		ClientSeq int64  `json:"clientSeq"`
	} `json:"origin"`
	RejectionReason *string `json:"rejectionReason"`
}

func (e envelope) typ() string { s, _ := e.Action["type"].(string); return s }

// envelopes returns the action notifications c received, in order.
func envelopes(c *vsc.Client) []envelope {
	var out []envelope
	for _, n := range c.Notifications() {
		if n.Method != "action" {
			continue
		}
		var e envelope
		if json.Unmarshal(n.Params, &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// findAction returns the first action of type typ on channel c received
// (from index from on) that match accepts.
func findAction(c *vsc.Client, from int, channel, typ string, match func(envelope) bool) (envelope, bool) {
	envs := envelopes(c)
	for _, e := range envs[min(from, len(envs)):] {
		if e.Channel == channel && e.typ() == typ && (match == nil || match(e)) {
			return e, true
		}
	}
	return envelope{}, false
}

// waitAction waits for findAction.
func waitAction(t *testing.T, c *vsc.Client, from int, channel, typ string, match func(envelope) bool) envelope {
	t.Helper()
	var got envelope
	require.NoError(t, c.WaitFor(wait(t), typ+" on "+channel, func() bool {
		var ok bool
		got, ok = findAction(c, from, channel, typ, match)
		return ok
	}))
	return got
}

// fromSeq matches the echo of c's own dispatch with clientSeq seq.
func fromSeq(c *vsc.Client, seq int64) func(envelope) bool {
	return func(e envelope) bool {
		return e.Origin != nil && e.Origin.ClientID == c.ClientID() && e.Origin.ClientSeq == seq
	}
}

// protoDispatchAndWait is the suite's dispatchAndWaitOnShared: dispatch, then
// wait for the host to echo the action back. It returns the echo.
func protoDispatchAndWait(t *testing.T, c *vsc.Client, channel string, action map[string]any) envelope {
	t.Helper()
	seq, err := c.DispatchAction(channel, action)
	require.NoError(t, err)
	return waitAction(t, c, 0, channel, action["type"].(string), fromSeq(c, seq))
}

func titleAction(title string) map[string]any {
	return map[string]any{"type": "session/titleChanged", "title": title}
}

func draftAction(text string) map[string]any {
	return map[string]any{"type": "chat/draftChanged", "draft": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}}
}

// snapshotState subscribes to channel again and returns the state of the
// snapshot as JSON.
func snapshotState(t *testing.T, c *vsc.Client, channel string) map[string]any {
	t.Helper()
	raw, err := c.Call(wait(t), "subscribe", map[string]any{"channel": channel})
	require.NoError(t, err)
	var res struct {
		Snapshot *struct {
			State map[string]any `json:"state"`
		} `json:"snapshot"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), "%s", raw)
	require.NotNil(t, res.Snapshot, "subscribe %s: no snapshot: %s", channel, raw)
	return res.Snapshot.State
}

// subscribeFromSeq subscribes and returns the snapshot's fromSeq.
func subscribeFromSeq(t *testing.T, c *vsc.Client, channel string) int64 {
	t.Helper()
	raw, err := c.Call(wait(t), "subscribe", map[string]any{"channel": channel})
	require.NoError(t, err)
	var res struct {
		Snapshot *struct {
			FromSeq int64 `json:"fromSeq"`
		} `json:"snapshot"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	require.NotNil(t, res.Snapshot, "subscribe %s: no snapshot: %s", channel, raw)
	return res.Snapshot.FromSeq
}

// A traffic golden file is our reading of one of VS Code's conformance
// traffic snapshots (conformance/__snapshots__/*.traffic.ahp.yaml): the
// actions of a round, in order, ids and times aside. One line a frame:
//
//	send|recv  session|chat  <action type>  [<response part kind>]
//
// "send" is what the client dispatches, "recv" what the host sends on the
// session's and the chat's channels; "#" starts a comment.
type trafficLine struct{ dir, channel, typ, part string }

func (l trafficLine) String() string {
	return strings.TrimSpace(strings.Join([]string{l.dir, l.channel, l.typ, l.part}, " "))
}

func readTrafficGolden(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "traffic", name))
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if fields := strings.Fields(line); len(fields) > 0 {
			out = append(out, strings.Join(fields, " "))
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "golden %s is empty", name)
	return out
}

// turnTraffic is the recorded traffic of one turn of c in the golden's
// terms: the turnStarted c sent, then every action on session and chat
// from its echo to the turn's end, projected as VS Code's snapshot
// recorder projects them (harness: a delta that continues a markdown or
// reasoning part is folded into it; customization updates are left out;
// root/sessionSummaryChanged is not an action on these channels).
func turnTraffic(c *vsc.Client, session, chat, turnID string) []string {
	kind := func(channel string) string {
		switch channel {
		case session:
			return "session"
		case chat:
			return "chat"
		}
		return ""
	}
	var out []string
	for _, raw := range c.Sent() {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Channel string         `json:"channel"`
				Action  map[string]any `json:"action"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Method == "dispatchAction" && m.Params.Action["turnId"] == turnID {
			out = append(out, trafficLine{"send", kind(m.Params.Channel), fmt.Sprint(m.Params.Action["type"]), ""}.String())
		}
	}
	in := false
	parts := map[string]bool{} // markdown and reasoning parts, by channel and id
	for _, e := range envelopes(c) {
		k := kind(e.Channel)
		if k == "" || e.typ() == "session/customizationUpdated" {
			// VS Code's projection leaves customization updates out.
			continue
		}
		if !in && e.typ() == "chat/turnStarted" && e.Action["turnId"] == turnID {
			in = true
		}
		if !in {
			continue
		}
		part := ""
		if p, ok := e.Action["part"].(map[string]any); ok {
			part, _ = p["kind"].(string)
			if id, _ := p["id"].(string); part == "markdown" || part == "reasoning" {
				parts[e.Channel+"\x00"+id] = true
			}
		}
		if id, _ := e.Action["partId"].(string); e.typ() == "chat/delta" && parts[e.Channel+"\x00"+id] {
			// VS Code's projection folds a delta into the markdown or
			// reasoning part it continues.
			continue
		}
		out = append(out, trafficLine{"recv", k, e.typ(), part}.String())
		if (e.typ() == "chat/turnComplete" || e.typ() == "chat/turnCancelled" || e.typ() == "chat/error") && e.Action["turnId"] == turnID {
			break
		}
	}
	return out
}

// renameTurn plays VS Code's "/rename <title>" turn, which its host runs
// locally, with the scripted agent: a session_info_update with the title,
// then one text reply. It waits for the turn's end and checks the turn's
// traffic against our reading of VS Code's conformance snapshot of that
// turn ("rename completion appears after a locally renamed turn").
func renameTurn(t *testing.T, c *vsc.Client, session, chat, title string) string {
	t.Helper()
	turnID, err := c.StartTurn(chat, "multi title "+title+" ;; recall", "")
	require.NoError(t, err)
	turn, inTurns, err := c.WaitTurnEnd(wait(t), chat, turnID)
	require.NoError(t, err)
	require.True(t, inTurns, "the turn is in turns[]")
	require.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, readTrafficGolden(t, "rename-turn.txt"), turnTraffic(c, session, chat, turnID),
		"the turn's traffic, semantically, as in VS Code's conformance snapshot of a /rename turn")
	return turnID
}

// rpcCode asserts err is a JSON-RPC error with code.
func rpcCode(t *testing.T, err error, code int, msgAndArgs ...any) bool {
	t.Helper()
	if !assert.Error(t, err, msgAndArgs...) {
		return false
	}
	return assert.Equalf(t, code, vsc.ErrorCode(err), "%v (%s)", err, fmt.Sprint(msgAndArgs...))
}
