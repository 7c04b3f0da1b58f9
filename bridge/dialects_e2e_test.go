package bridge_test

import (
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	w3wire "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	w7wire "github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// End-to-end tests of every protocol version the bridge speaks (issue 12):
// each runs the scripted ACP agent behind a real bridge and talks to it
// over a real WebSocket as a client of that version would (see
// dialect_client_test.go). Every client checks, when its test ends, that
// it never received an action or notification its version does not know.

// scriptBridge starts a bridge over the scripted agent.
func scriptBridge(t *testing.T, opts bridgetest.Options) *bridgetest.Env {
	t.Helper()
	return bridgetest.Start(t, []backend.Provider{acpScriptProvider(t, nil)}, opts)
}

// demoText is the answer of the scripted agent's demo turn, plan checklist
// aside, when it may read README.md and when it may not.
const (
	demoApprovedText = "Hello from the script agent. I read README.md. Done."
	demoDeniedText   = "Hello from the script agent. You did not let me read README.md. Done."
)

// withoutChecklist drops the plan checklist the bridge appends to a demo
// turn's text.
func withoutChecklist(text string) string {
	if i := strings.Index(text, "- ["); i >= 0 {
		if j := strings.LastIndex(text[:i], "Done."); j >= 0 {
			return text[:j+len("Done.")]
		}
	}
	return text
}

func TestDialectNegotiation(t *testing.T) {
	t.Parallel()
	env := scriptBridge(t, bridgetest.Options{})
	spoken := codec.Supported()
	// Versions no bridge speaks, offered alongside.
	unspoken := []string{"0.4.0", "0.2.0", "0.6.1", "0.5.3"}
	// A fixed seed: the same shuffles every run, so a failure reproduces.
	rng := rand.New(rand.NewPCG(12, 7))

	negotiate := func(t *testing.T, offer []string) (string, json.RawMessage) {
		t.Helper()
		rc := bridgetest.DialRaw(t, env.URL, "negotiate-"+client.NewUUID())
		res := rc.MustCall("initialize", map[string]any{
			"channel": "ahp-root://", "protocolVersions": offer, "clientId": rc.ClientID(),
			"initialSubscriptions": []string{"ahp-root://"},
		})
		var r struct {
			ProtocolVersion string     `json:"protocolVersion"`
			Snapshots       []snapshot `json:"snapshots"`
		}
		require.NoError(t, json.Unmarshal(res, &r))
		require.Len(t, r.Snapshots, 1)
		rc.Ping() // the connection stays open and answers
		return r.ProtocolVersion, r.Snapshots[0].State
	}

	for i, v := range spoken {
		t.Run(v, func(t *testing.T) {
			older := spoken[i+1:]
			offers := map[string][]string{"alone": {v}}
			withOlder := append(append([]string{v}, older...), unspoken...)
			asc := slices.Clone(withOlder)
			slices.SortFunc(asc, func(a, b string) int {
				return codec.MustParseVersion(a).Compare(codec.MustParseVersion(b))
			})
			desc := slices.Clone(asc)
			slices.Reverse(desc)
			shuffled := slices.Clone(withOlder)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			offers["oldest first"], offers["newest first"], offers["shuffled"] = asc, desc, shuffled
			for name, offer := range offers {
				got, root := negotiate(t, offer)
				assert.Equal(t, v, got, "%s: offered %v", name, offer)
				// The root snapshot is in the negotiated version's shape.
				d := dialectOf(v)
				switch {
				case d.is030():
					var st w3wire.RootState
					require.NoError(t, json.Unmarshal(root, &st))
					require.Len(t, st.Agents, 1)
					assert.Equal(t, "script", st.Agents[0].Provider)
				case d.is070():
					var st w7wire.RootState
					require.NoError(t, json.Unmarshal(root, &st))
					require.Len(t, st.Agents, 1)
					assert.Equal(t, "script", st.Agents[0].Provider)
				case d.is1x():
					var st wire.RootState
					require.NoError(t, json.Unmarshal(root, &st))
					require.Len(t, st.Agents, 1)
					assert.Equal(t, "script", st.Agents[0].Provider)
				default:
					var st map[string]any
					require.NoError(t, json.Unmarshal(root, &st))
					agents := array(st["agents"])
					require.Len(t, agents, 1)
					assert.Equal(t, "script", object(agents[0])["provider"])
					if d.before("0.5.1") {
						assert.NotContains(t, object(agents[0]), "capabilities", "0.5.0 has no agent capabilities")
					}
				}
			}
		})
	}

	t.Run("highest of all", func(t *testing.T) {
		offer := append(slices.Clone(spoken), unspoken...)
		rng.Shuffle(len(offer), func(i, j int) { offer[i], offer[j] = offer[j], offer[i] })
		got, _ := negotiate(t, offer)
		assert.Equal(t, codec.Current.String(), got, "offered %v", offer)
	})

	t.Run("none in common", func(t *testing.T) {
		rc := bridgetest.DialRaw(t, env.URL, "negotiate-"+client.NewUUID())
		rpcErr := rc.CallError("initialize", map[string]any{
			"channel": "ahp-root://", "protocolVersions": unspoken, "clientId": rc.ClientID(),
		})
		assert.Equal(t, -32005, rpcErr.Code, rpcErr.Message)
		var data struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		require.NoError(t, json.Unmarshal(rpcErr.Data, &data))
		assert.Equal(t, spoken, data.SupportedVersions)
		rc.WaitClosed() // then the server closes the connection
	})
}

// TestDialectTurns runs, for each version spoken, a turn whose tool call
// is approved, one whose tool call is denied, one cancelled while its tool
// call waits for a confirmation and one the agent fails, checking each end
// in that version's shapes. A 1.0.0 client on the same session meanwhile
// changes the default chat's working directories, which only 0.7.0 and
// later can say: the older clients must never receive those actions.
func TestDialectTurns(t *testing.T) {
	t.Parallel()
	env := scriptBridge(t, bridgetest.Options{})
	for _, v := range codec.Supported() {
		d := dialectOf(v)
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			dir := acpProjectDir(t)
			c := newDClient(t, env, d)
			session := c.createSession("", "script", dir)
			c.checkSessionShape(dir)

			peer := newDClient(t, env, dialectOf(codec.Current.String()))
			peer.subscribe(session)
			peer.mustDispatch(action("chat/workingDirectorySet", map[string]any{"directory": "file://" + dir}))
			peer.mustDispatch(action("chat/workingDirectoryRemoved", map[string]any{"directory": "file://" + dir}))
			c.rc.Ping() // the client would have received them by now

			// Approved: the tool call completes and the agent reads README.md.
			turn := c.startTurn("demo please")
			tool := c.pendingTool(turn)
			assert.Equal(t, "read-1", tool)
			c.mustDispatch(c.approval(turn, tool))
			assert.Equal(t, "turnComplete", c.waitTurnEnd(turn))
			got := c.turn(turn)
			assert.Equal(t, "complete", got.State)
			assert.Equal(t, demoApprovedText, withoutChecklist(got.Text))
			assert.Equal(t, toolView{Status: "completed", Success: true}, got.Tools["read-1"])

			// Denied: the tool call is cancelled with reason denied.
			turn = c.startTurn("demo again")
			tool = c.pendingTool(turn)
			c.mustDispatch(c.denial(turn, tool))
			assert.Equal(t, "turnComplete", c.waitTurnEnd(turn))
			got = c.turn(turn)
			assert.Equal(t, "complete", got.State)
			assert.Equal(t, demoDeniedText, withoutChecklist(got.Text))
			assert.Equal(t, toolView{Status: "cancelled", Reason: "denied"}, got.Tools["read-1"])

			// Cancelled while the tool call waits: the turn is cancelled,
			// and so is the tool call.
			turn = c.startTurn("demo once more")
			tool = c.pendingTool(turn)
			c.mustDispatch(c.cancellation(turn))
			assert.Equal(t, "turnCancelled", c.waitTurnEnd(turn))
			got = c.turn(turn)
			assert.Equal(t, "cancelled", got.State)
			assert.Equal(t, "cancelled", got.Tools[tool].Status)

			// Failed by the agent: the turn ends with chat/error, whose
			// error each version spells its own way (a response part since
			// 0.9.0, the turn's error before).
			turn = c.startTurn("error")
			assert.Equal(t, "error", c.waitTurnEnd(turn))
			got = c.turn(turn)
			assert.Equal(t, "error", got.State)
			assert.Contains(t, got.Error, "runtime: ")
			assert.Contains(t, got.Error, "scripted failure")
			if d.is1x() {
				parts := c.c1.Turns[len(c.c1.Turns)-1].ResponseParts
				last, ok := parts[len(parts)-1].Value.(*wire.ErrorResponsePart)
				require.True(t, ok, "a %s turn ends with its error part", d)
				assert.Nil(t, last.Resumable, "the bridge never offers to resume a turn")
			}

			// A file the agent writes counts in the session's changes, in
			// every version's session summary (issue 19).
			turn = c.startTurn(`write notes.txt one\ntwo\n`)
			assert.Equal(t, "turnComplete", c.waitTurnEnd(turn))
			var listed struct {
				Items []struct {
					Resource string                  `json:"resource"`
					Changes  *map[string]json.Number `json:"changes"`
				} `json:"items"`
			}
			require.NoError(t, json.Unmarshal(c.rc.MustCall("listSessions", map[string]any{"channel": "ahp-root://"}), &listed))
			found := false
			for _, it := range listed.Items {
				if it.Resource == session {
					found = true
					require.NotNil(t, it.Changes, "%s: the summary has changes", d)
					assert.Equal(t, map[string]json.Number{"additions": "2", "deletions": "0", "files": "1"}, *it.Changes, "%s", d)
				}
			}
			assert.True(t, found, "%s lists the session", d)

			// Actions this version does not know were sequenced on the
			// session (the 1.0.0 client got them), so the check that its
			// client never received one (checkReceived) means something.
			for _, typ := range []string{"chat/workingDirectorySet", "chat/workingDirectoryRemoved", "session/inputNeededSet"} {
				assert.NotNil(t, peer.findEnvelope(func(e bridgetest.Envelope) bool { return e.Type() == typ }), typ)
			}
			assert.NotEmpty(t, c.rc.Envelopes())
			if d.typed() {
				c.assertEqualsFresh()
			}
		})
	}
}

// checkSessionShape checks the followed session's snapshot for the
// working directory, as the client's version spells it.
func (dc *dclient) checkSessionShape(dir string) {
	t := dc.t
	t.Helper()
	want := "file://" + dir
	switch {
	case dc.d.is030():
		assert.Equal(t, want, acpDeref(dc.s3.Summary.WorkingDirectory))
		assert.Equal(t, "script", dc.s3.Summary.Provider)
	case dc.d.is070():
		assert.Equal(t, []string{want}, dc.s7.WorkingDirectories)
		assert.Equal(t, dc.chat, acpDeref(dc.s7.DefaultChat))
	case dc.d.is1x():
		assert.Equal(t, []string{want}, dc.s1.WorkingDirectories)
		assert.Equal(t, dc.chat, acpDeref(dc.s1.DefaultChat))
	default:
		assert.Equal(t, want, dc.sj["workingDirectory"])
		assert.Equal(t, dc.chat, dc.sj["defaultChat"])
		assert.Equal(t, dc.chat, dc.cj["resource"])
	}
}

// TestDialectGoSDKExampleAgent runs the approve turn of the acp-go-sdk
// example agent, an agent we did not write, for a 0.3.0 and a 0.7.0 client.
func TestDialectGoSDKExampleAgent(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "agent")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/coder/acp-go-sdk/example/agent").CombinedOutput()
	require.NoError(t, err, "building the acp-go-sdk example agent: %s", out)
	p := acp.NewProvider(acp.Config{ID: "go-example", Command: []string{bin}}, testLogger(t))
	env := bridgetest.Start(t, []backend.Provider{p}, bridgetest.Options{})

	for _, v := range []string{"0.3.0", codec.Current.String()} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			c := newDClient(t, env, dialectOf(v))
			// The example agent moves its edit's location after starting
			// it, which 0.3.0 cannot say (see ignoreToolMeta).
			c.ignoreToolMeta = c.d.is030()
			c.createSession("", "go-example", t.TempDir())
			turn := c.startTurn("Please update the configuration.")
			tool := c.pendingTool(turn)
			c.mustDispatch(c.approval(turn, tool))
			assert.Equal(t, "turnComplete", c.waitTurnEnd(turn))
			got := c.turn(turn)
			assert.Equal(t, "complete", got.State)
			assert.True(t, strings.HasPrefix(got.Text, "ACP Go Example Agent"), got.Text)
			assert.Contains(t, got.Text, "successfully updated the configuration")
			assert.Equal(t, toolView{Status: "completed", Success: true}, got.Tools[tool])
			assert.GreaterOrEqual(t, len(got.Tools), 2, "the read and the edit")
			c.assertEqualsFresh()
		})
	}
}

// TestDialectConfirmationRace has a 0.3.0 and a 0.7.0 client confirm the
// same tool call at once, round after round, alternating who sends first
// and who approves: exactly one confirmation wins, the other is echoed to
// its sender alone as a rejection in its own dialect, and both clients end
// with the same tool call state, the winner's.
func TestDialectConfirmationRace(t *testing.T) {
	t.Parallel()
	env := scriptBridge(t, bridgetest.Options{})
	old := newDClient(t, env, dialectOf("0.3.0"))
	cur := newDClient(t, env, dialectOf(codec.Current.String()))
	session := cur.createSession("", "script", t.TempDir())
	old.subscribe(session)

	const rounds = 20
	wins := map[string]int{}
	for i := range rounds {
		turn := cur.startTurn("permission")
		tool := cur.pendingTool(turn)
		require.Equal(t, tool, old.pendingTool(turn))

		oldApproves := i%2 == 0
		oldAction, curAction := old.denial(turn, tool), cur.approval(turn, tool)
		if oldApproves {
			oldAction, curAction = old.approval(turn, tool), cur.denial(turn, tool)
		}
		var oldSeq, curSeq int64
		if i%4 < 2 {
			oldSeq = old.rc.Dispatch(session, oldAction)
			curSeq = cur.rc.Dispatch(cur.chat, curAction)
		} else {
			curSeq = cur.rc.Dispatch(cur.chat, curAction)
			oldSeq = old.rc.Dispatch(session, oldAction)
		}
		oldEcho, curEcho := old.rc.Echo(oldSeq), cur.rc.Echo(curSeq)
		assert.Equal(t, "session/toolCallConfirmed", oldEcho.Type(), "the 0.3.0 client's answer is in its dialect")
		assert.Equal(t, session, oldEcho.Channel)
		assert.Equal(t, "chat/toolCallConfirmed", curEcho.Type())
		require.True(t, (oldEcho.RejectionReason == nil) != (curEcho.RejectionReason == nil),
			"round %d: exactly one confirmation wins (0.3.0 rejected: %v, 0.7.0 rejected: %v)", i, oldEcho.RejectionReason, curEcho.RejectionReason)
		approved := oldApproves == (oldEcho.RejectionReason == nil)
		winner := "0.7.0"
		if oldEcho.RejectionReason == nil {
			winner = "0.3.0"
			// The loser's rejection went to its sender alone.
			assert.Nil(t, old.findEnvelope(func(e bridgetest.Envelope) bool {
				return e.Origin != nil && e.Origin.ClientID == cur.id && e.Origin.ClientSeq == curSeq
			}), "round %d: the 0.3.0 client saw the 0.7.0 client's rejection", i)
		} else {
			assert.Nil(t, cur.findEnvelope(func(e bridgetest.Envelope) bool {
				return e.Origin != nil && e.Origin.ClientID == old.id && e.Origin.ClientSeq == oldSeq
			}), "round %d: the 0.7.0 client saw the 0.3.0 client's rejection", i)
		}
		wins[winner]++

		cur.waitTurnEnd(turn)
		old.waitTurnEnd(turn)
		a, b := old.turn(turn), cur.turn(turn)
		assert.Equal(t, b, a, "round %d: both clients see the same turn", i)
		want := toolView{Status: "cancelled", Reason: "denied"}
		text := "selected: reject-once"
		if approved {
			want, text = toolView{Status: "completed", Success: true}, "selected: allow-once"
		}
		assert.Equal(t, want, a.Tools[tool], "round %d: the winner's confirmation decides", i)
		assert.Equal(t, text, a.Text, "round %d: the agent got the winner's answer", i)
	}
	t.Logf("winners: %v", wins)
	old.assertEqualsFresh()
	cur.assertEqualsFresh()
}

// TestDialectSharedSession has a 0.3.0 and a 0.7.0 client on one session:
// both see the same turns; the 0.3.0 client's confirmation resolves the
// first turn's tool call for both, the 0.7.0 client's the second's.
func TestDialectSharedSession(t *testing.T) {
	t.Parallel()
	env := scriptBridge(t, bridgetest.Options{})
	old := newDClient(t, env, dialectOf("0.3.0"))
	cur := newDClient(t, env, dialectOf(codec.Current.String()))
	dir := acpProjectDir(t)
	session := old.createSession("", "script", dir)
	cur.subscribe(session)

	// Started and approved by the 0.3.0 client.
	turn := old.startTurn("demo shared")
	tool := old.pendingTool(turn)
	require.Equal(t, tool, cur.pendingTool(turn), "both see the same tool call wait")
	old.mustDispatch(old.approval(turn, tool))
	old.waitTurnEnd(turn)
	cur.waitTurnEnd(turn)
	a, b := old.turn(turn), cur.turn(turn)
	assert.Equal(t, demoApprovedText, withoutChecklist(a.Text))
	assert.Equal(t, a, b, "both see the same turn")
	assert.Equal(t, toolView{Status: "completed", Success: true}, b.Tools[tool])

	// Started by the 0.3.0 client, denied by the 0.7.0 client.
	turn = old.startTurn("demo shared again")
	tool = cur.pendingTool(turn)
	require.Equal(t, tool, old.pendingTool(turn))
	cur.mustDispatch(cur.denial(turn, tool))
	old.waitTurnEnd(turn)
	cur.waitTurnEnd(turn)
	a, b = old.turn(turn), cur.turn(turn)
	assert.Equal(t, demoDeniedText, withoutChecklist(a.Text))
	assert.Equal(t, a, b, "both see the same turn")
	assert.Equal(t, toolView{Status: "cancelled", Reason: "denied"}, a.Tools[tool])

	old.assertEqualsFresh()
	cur.assertEqualsFresh()
}

// TestDialectReconnect has a 0.3.0 and a 0.6.0 client leave while a tool
// call waits for a confirmation. A 0.7.0 client approves it and changes the
// chat's working directories (0.7.0-only actions) while they are away.
// Each comes back with reconnect as the first message of a new connection
// and gets what it missed in its own dialect: the replayed envelopes that
// complete the turn, or, when the replay buffer no longer covers the gap,
// fresh snapshots. Afterwards both follow the session live again.
func TestDialectReconnect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		buffer int
		want   string
	}{
		{"replay", 0, "replay"},
		{"snapshot", 4, "snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := scriptBridge(t, bridgetest.Options{Host: host.Options{ReplayBuffer: tc.buffer}})
			dir := acpProjectDir(t)
			peer := newDClient(t, env, dialectOf(codec.Current.String()))
			session := peer.createSession("", "script", dir)
			clients := []*dclient{newDClient(t, env, dialectOf("0.3.0")), newDClient(t, env, dialectOf("0.6.0"))}
			for _, c := range clients {
				c.subscribe(session)
			}

			turn := peer.startTurn("demo")
			tool := peer.pendingTool(turn)
			for _, c := range clients {
				require.Equal(t, tool, c.pendingTool(turn))
				c.rc.Ping()
				c.rc.Close() // gone mid-turn
			}
			peer.mustDispatch(peer.approval(turn, tool))
			peer.mustDispatch(action("chat/workingDirectorySet", map[string]any{"directory": "file://" + dir}))
			require.Equal(t, "turnComplete", peer.waitTurnEnd(turn))

			for _, c := range clients {
				r := c.reconnect()
				require.Equal(t, tc.want, r.Type, "a %s client", c.d)
				if r.Type == "replay" {
					// The replay completes the turn, in the client's
					// dialect, on the channel that carries its turns.
					var ends []string
					for _, e := range r.Actions {
						var a struct {
							TurnID string `json:"turnId"`
						}
						_ = json.Unmarshal(e.Action, &a)
						if a.TurnID == turn {
							require.Equal(t, c.chat, e.Channel, "a %s client's turn actions are on %s", c.d, c.chat)
							ends = append(ends, e.Type())
						}
					}
					require.NotEmpty(t, ends, "the %s client's replay has the turn", c.d)
					assert.Contains(t, ends, c.d.turnAction("toolCallConfirmed"), "the %s client gets the confirmation", c.d)
					assert.Contains(t, ends, c.d.turnAction("toolCallComplete"), "the %s client gets the tool call's end", c.d)
					assert.Equal(t, c.d.turnAction("turnComplete"), ends[len(ends)-1], "the %s client gets the turn's end", c.d)
				}
				if r.Type == "replay" && !c.d.is030() {
					// The working directory set while it was away reaches
					// it as its version spells it.
					var changes []map[string]any
					for _, e := range r.Actions {
						if e.Type() == "session/chatUpdated" {
							var a map[string]any
							require.NoError(t, json.Unmarshal(e.Action, &a))
							changes = append(changes, object(a["changes"]))
						}
					}
					assert.Contains(t, changes, map[string]any{"workingDirectory": "file://" + dir})
				}
				if c.d.typed() {
					got := c.turn(turn)
					assert.Equal(t, "complete", got.State)
					assert.Equal(t, toolView{Status: "completed", Success: true}, got.Tools[tool])
					c.assertEqualsFresh()
				} else if r.Type == "snapshot" {
					// The chat's snapshot holds the completed turn.
					turns := array(c.cj["turns"])
					require.NotEmpty(t, turns)
					got := viewJSON(object(turns[len(turns)-1]))
					assert.Equal(t, turn, got.ID)
					assert.Equal(t, toolView{Status: "completed", Success: true}, got.Tools[tool])
				}
			}

			// The reconnected clients follow the session live again.
			next := peer.startTurn("echo back again")
			peer.waitTurnEnd(next)
			for _, c := range clients {
				assert.Equal(t, "turnComplete", c.waitTurnEnd(next))
				assert.Equal(t, "text:echo back again", c.turn(next).Text)
			}
		})
	}
}

// TestDialectFetchTurns pages through a chat's history as each kind of
// client does: 0.5.0 (ahpx: a <provider>:/ session URI, fetchTurns on the
// session with before/limit → {turns, hasMore}), 0.3.0 (the same shape on
// the session channel) and 0.7.0 (a snapshot with view.turns, then the
// cursor → chat/turnsLoaded, delivered to that client alone).
func TestDialectFetchTurns(t *testing.T) {
	t.Parallel()
	env := scriptBridge(t, bridgetest.Options{})
	texts := []string{"echo one", "echo two", "echo three"}

	// runTurns runs the echo turns and returns their ids, oldest first.
	runTurns := func(c *dclient) []string {
		var ids []string
		for _, text := range texts {
			id := c.startTurn(text)
			require.Equal(t, "turnComplete", c.waitTurnEnd(id))
			ids = append(ids, id)
		}
		return ids
	}

	for _, v := range []string{"0.5.0", "0.3.0"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			c := newDClient(t, env, dialectOf(v))
			uri := ""
			if v == "0.5.0" {
				uri = "script:/" + client.NewUUID() // as ahpx names sessions
			}
			session := c.createSession(uri, "script", t.TempDir())
			ids := runTurns(c)

			type page struct {
				IDs     []string
				Texts   []string
				HasMore bool
			}
			fetch := func(params map[string]any) page {
				params["channel"] = session // ahpx pages with the session URI
				res := c.rc.MustCall("fetchTurns", params)
				var p page
				if v == "0.3.0" {
					var r w3wire.FetchTurnsResult
					require.NoError(t, json.Unmarshal(res, &r))
					for _, tr := range r.Turns {
						p.IDs, p.Texts = append(p.IDs, tr.ID), append(p.Texts, view030(tr).Text)
					}
					p.HasMore = r.HasMore
					return p
				}
				var r map[string]any
				require.NoError(t, json.Unmarshal(res, &r))
				assert.ElementsMatch(t, []string{"turns", "hasMore"}, keys(r), "a 0.5.0 fetchTurns result: %s", res)
				for _, tr := range array(r["turns"]) {
					tv := viewJSON(object(tr))
					p.IDs, p.Texts = append(p.IDs, tv.ID), append(p.Texts, tv.Text)
				}
				p.HasMore, _ = r["hasMore"].(bool)
				return p
			}
			assert.Equal(t, page{ids[1:], []string{"text:echo two", "text:echo three"}, true}, fetch(map[string]any{"limit": 2}))
			assert.Equal(t, page{ids[:1], []string{"text:echo one"}, false}, fetch(map[string]any{"before": ids[1], "limit": 2}))
			assert.Equal(t, page{ids, []string{"text:echo one", "text:echo two", "text:echo three"}, false}, fetch(map[string]any{}))
			rpcErr := c.rc.CallError("fetchTurns", map[string]any{"channel": session, "before": "no-such-turn"})
			assert.Equal(t, wire.CodeInvalidParams, rpcErr.Code, rpcErr.Message)
			if v == "0.3.0" {
				c.assertEqualsFresh()
			}
		})
	}

	t.Run(codec.Current.String(), func(t *testing.T) {
		t.Parallel()
		cur := dialectOf(codec.Current.String())
		owner := newDClient(t, env, cur)
		session := owner.createSession("", "script", t.TempDir())
		ids := runTurns(owner)

		// A client that asks for the last turn only.
		tail := newDClient(t, env, cur)
		tail.session = session
		tail.setSnapshot(tail.subscribeOne(session, nil))
		tail.chat = acpDeref(tail.s1.DefaultChat)
		tail.setSnapshot(tail.subscribeOne(tail.chat, map[string]any{"turns": 1}))
		require.Len(t, tail.c1.Turns, 1)
		assert.Equal(t, ids[2], tail.c1.Turns[0].ID)
		require.NotNil(t, tail.c1.TurnsNextCursor, "older turns remain")

		rpcErr := tail.rc.CallError("fetchTurns", map[string]any{"channel": tail.chat, "cursor": "not-a-cursor"})
		assert.Equal(t, wire.CodeInvalidParams, rpcErr.Code, rpcErr.Message)

		res := tail.rc.MustCall("fetchTurns", map[string]any{"channel": tail.chat, "cursor": *tail.c1.TurnsNextCursor})
		assert.JSONEq(t, "{}", string(res))
		loaded := tail.findEnvelope(func(e bridgetest.Envelope) bool { return e.Type() == "chat/turnsLoaded" })
		require.NotNil(t, loaded, "chat/turnsLoaded arrives before the answer")
		assert.Equal(t, tail.chat, loaded.Channel)
		tail.apply()
		assert.Equal(t, ids, turnIDs(tail.c1.Turns), "the older turns are loaded in front")
		assert.Nil(t, tail.c1.TurnsNextCursor, "nothing older remains")
		tail.assertEqualsFresh()

		// The page went to the client that asked for it alone.
		owner.rc.Ping()
		assert.Nil(t, owner.findEnvelope(func(e bridgetest.Envelope) bool { return e.Type() == "chat/turnsLoaded" }),
			"another subscriber of the chat got the page")
		owner.assertEqualsFresh()
	})
}

func turnIDs(turns []wire.Turn) []string {
	var out []string
	for _, tr := range turns {
		out = append(out, tr.ID)
	}
	return out
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
