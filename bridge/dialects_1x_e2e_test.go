package bridge_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// The WebSocket tests of issue 13: the clients people use today offer AHP
// 1.x and 0.9.0 first, and each gets the newest dialect it asked for. Like
// every dialect test, each client checks when its test ends that it never
// received a message newer than its version (checkReceived: for 0.9.0
// nothing 1.0.0 released, for 1.0.0 nothing of 1.1.0).

// TestDialectTodaysClients runs a full approve turn for the version lists
// of VS Code (0.9.0 first), of the official SDK clients at 1.0.x (1.1.0
// first: the bridge echoes 1.1.0 and speaks 1.0.0) and of
// agent-host-protocol-ui (1.0.0 and 0.9.0 only). A 1.0.0 client on the
// same session marks the chat read, an action 1.0.0 added, so that the
// 0.9.0 client's check that it never gets one means something.
func TestDialectTodaysClients(t *testing.T) {
	t.Parallel()
	env := scriptBridge(t, bridgetest.Options{})
	for _, tc := range []struct {
		name    string
		offer   []string
		answer  string // the protocolVersion the bridge answers with
		dialect string // the dialect the client then gets
	}{
		{"VS Code", []string{"0.9.0", "0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "0.9.0", "0.9.0"},
		{"official 1.0 clients", []string{"1.1.0", "1.0.0", "0.10.0", "0.9.0", "0.8.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"}, "1.1.0", "1.0.0"},
		{"agent-host-protocol-ui", []string{"1.0.0", "0.9.0"}, "1.0.0", "1.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newDClientOffering(t, env, tc.offer, tc.answer)
			require.Equal(t, tc.dialect, c.d.String(), "the dialect of %s", tc.answer)
			dir := acpProjectDir(t)
			session := c.createSession("", "script", dir)
			c.checkSessionShape(dir)

			peer := newDClient(t, env, dialectOf(codec.Current.String()))
			peer.subscribe(session)

			turn := c.startTurn("demo please")
			tool := c.pendingTool(turn)
			assert.Equal(t, "read-1", tool)
			require.Equal(t, tool, peer.pendingTool(turn))
			c.mustDispatch(c.approval(turn, tool))
			require.Equal(t, "turnComplete", c.waitTurnEnd(turn))
			got := c.turn(turn)
			assert.Equal(t, "complete", got.State)
			assert.Equal(t, demoApprovedText, withoutChecklist(got.Text))
			assert.Equal(t, toolView{Status: "completed", Success: true}, got.Tools[tool])
			assert.Empty(t, c.s1.InputNeeded, "the answered confirmation leaves the session's inputNeeded")
			peer.waitTurnEnd(turn)
			assert.Equal(t, got, peer.turn(turn), "a 1.0.0 client on the session sees the same turn")

			c.assertEqualsFresh()

			// chat/isReadChanged (1.0.0) is sequenced on the chat both
			// follow: the 1.0.0 clients get it, a 0.9.0 client must not.
			// Every client learns the read state from the session's chat
			// catalogue (session/chatUpdated).
			require.Len(t, c.s1.Chats, 1)
			require.Zero(t, c.s1.Chats[0].Status&wire.SessionStatusIsRead, "the chat is not read yet")
			peer.mustDispatch(action("chat/isReadChanged", map[string]any{"isRead": true}))
			c.wait("the chat marked read in the session's catalogue", func() bool {
				return c.s1.Chats[0].Status&wire.SessionStatusIsRead != 0
			})
			c.rc.Ping() // chat/isReadChanged came first, if at all
			seen := c.findEnvelope(func(e bridgetest.Envelope) bool { return e.Type() == "chat/isReadChanged" }) != nil
			assert.Equal(t, c.d.current(), seen, "a %s client and chat/isReadChanged", c.d)
			peer.assertEqualsFresh()
			if c.d.current() {
				// A 0.9.0 chat subscriber's own chat status keeps the old
				// read bit until its next snapshot
				// (docs/protocol-versions.md §11.1).
				c.assertEqualsFresh()
			}
		})
	}
}

// TestDialectShared10And030 has a 1.0.0 and a 0.3.0 client on one
// session. Both see the same turns, whichever of them starts, confirms or
// cancels one; a failed turn's error reaches both, as a response part and
// as the 0.3.0 turn's error. Each leaves once while a tool call waits and
// comes back with reconnect, getting what it missed as a replay in its
// own dialect.
func TestDialectShared10And030(t *testing.T) {
	t.Parallel()
	env := scriptBridge(t, bridgetest.Options{})
	cur := newDClient(t, env, dialectOf("1.0.0"))
	old := newDClient(t, env, dialectOf("0.3.0"))
	dir := acpProjectDir(t)
	session := cur.createSession("", "script", dir)
	old.subscribe(session)
	clients := []*dclient{cur, old}

	// ended waits until both clients saw turn end as end and returns the
	// turn as both see it.
	ended := func(turn, end string) turnView {
		t.Helper()
		for _, c := range clients {
			require.Equal(t, end, c.waitTurnEnd(turn), "a %s client", c.d)
		}
		a, b := cur.turn(turn), old.turn(turn)
		require.Equal(t, a, b, "both see the same turn")
		return a
	}

	// Started by the 1.0.0 client, approved by the 0.3.0 client.
	turn := cur.startTurn("demo shared")
	tool := cur.pendingTool(turn)
	require.Equal(t, tool, old.pendingTool(turn), "both see the same tool call wait")
	old.mustDispatch(old.approval(turn, tool))
	got := ended(turn, "turnComplete")
	assert.Equal(t, demoApprovedText, withoutChecklist(got.Text))
	assert.Equal(t, toolView{Status: "completed", Success: true}, got.Tools[tool])

	// Started by the 0.3.0 client, cancelled by the 1.0.0 client while its
	// tool call waits.
	turn = old.startTurn("demo to cancel")
	tool = old.pendingTool(turn)
	require.Equal(t, tool, cur.pendingTool(turn))
	cur.mustDispatch(cur.cancellation(turn))
	got = ended(turn, "turnCancelled")
	assert.Equal(t, "cancelled", got.State)
	assert.Equal(t, "cancelled", got.Tools[tool].Status)

	// Started by the 1.0.0 client, cancelled by the 0.3.0 client.
	turn = cur.startTurn("demo to cancel again")
	tool = cur.pendingTool(turn)
	require.Equal(t, tool, old.pendingTool(turn))
	old.mustDispatch(old.cancellation(turn))
	got = ended(turn, "turnCancelled")
	assert.Equal(t, "cancelled", got.State)
	assert.Equal(t, "cancelled", got.Tools[tool].Status)

	// Failed by the agent: one error, each client's way.
	turn = old.startTurn("error")
	got = ended(turn, "error")
	assert.Equal(t, "error", got.State)
	assert.Contains(t, got.Error, "scripted failure")

	// Each client leaves while a tool call waits; the other approves it
	// and the turn ends while it is away. It comes back with reconnect and
	// gets the rest of the turn replayed, in its own dialect.
	for _, tc := range []struct{ away, stays *dclient }{{cur, old}, {old, cur}} {
		away, stays := tc.away, tc.stays
		turn := stays.startTurn("demo while " + away.d.String() + " is away")
		tool := stays.pendingTool(turn)
		require.Equal(t, tool, away.pendingTool(turn))
		away.rc.Ping()
		away.rc.Close()
		stays.mustDispatch(stays.approval(turn, tool))
		require.Equal(t, "turnComplete", stays.waitTurnEnd(turn))

		r := away.reconnect()
		require.Equal(t, "replay", r.Type, "a %s client", away.d)
		var ends []string
		for _, e := range r.Actions {
			var a struct {
				TurnID string `json:"turnId"`
			}
			_ = json.Unmarshal(e.Action, &a)
			if a.TurnID == turn {
				require.Equal(t, away.chat, e.Channel, "a %s client's turn actions are on %s", away.d, away.chat)
				ends = append(ends, e.Type())
			}
		}
		assert.Contains(t, ends, away.d.turnAction("toolCallConfirmed"), "the %s client gets the confirmation", away.d)
		require.NotEmpty(t, ends)
		assert.Equal(t, away.d.turnAction("turnComplete"), ends[len(ends)-1], "the %s client gets the turn's end", away.d)
		a, b := away.turn(turn), stays.turn(turn)
		assert.Equal(t, b, a, "the %s client, back, sees the turn as the other does", away.d)
		assert.Equal(t, demoApprovedText, withoutChecklist(a.Text))
		assert.Equal(t, toolView{Status: "completed", Success: true}, a.Tools[tool])
	}

	// Both follow the session live again.
	turn = old.startTurn("echo back again")
	got = ended(turn, "turnComplete")
	assert.Equal(t, "text:echo back again", got.Text)
	cur.assertEqualsFresh()
	old.assertEqualsFresh()
}
