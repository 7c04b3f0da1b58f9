package host

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// reconnectResult is either form of reconnect's result.
type reconnectResult struct {
	Type      string         `json:"type"`
	Snapshots []snapshotWire `json:"snapshots"`
	Actions   []envelope     `json:"actions"`
	Missing   []string       `json:"missing"`
}

// storedClientRecord waits until the store holds a record of clientID that
// satisfies ok (the host writes it off the request path).
func storedClientRecord(t *testing.T, st store.Store, clientID string, ok func(store.Client) bool) store.Client {
	t.Helper()
	var rec store.Client
	require.Eventually(t, func() bool {
		r, err := st.GetClient(t.Context(), clientID)
		if err != nil {
			return false
		}
		rec = r
		return ok(r)
	}, 10*time.Second, 10*time.Millisecond, "the store never held the expected record of client %s", clientID)
	return rec
}

// TestReconnectAfterARestart: a client of a host on a state file reconnects
// to a second host on the same file, without `channel` as VS Code sends it,
// and gets snapshots of what it subscribed to in the dialect it had
// negotiated; a session disposed meanwhile is listed missing. A client
// never seen gets -32008, then initializes with the same clientId.
func TestReconnectAfterARestart(t *testing.T) {
	for _, version := range []string{current, "0.7.0"} {
		t.Run(version, func(t *testing.T) {
			path := stateFile(t)
			hs, st := storedHarness(t, path, Options{})
			x := hs.dial(t, "vscode")
			x.initializeAs([]string{version}, RootURI)
			s := hs.newSession(x, "kept")
			richTurn(t, hs, s.chat, "t1")
			gone := hs.newSession(x, "gone") // no turns: disposed for good below
			settled(t, hs, s.uri)
			x.ping()
			last := hs.h.Stats().ServerSeq
			rec := storedClientRecord(t, st, "vscode", func(r store.Client) bool { return len(r.Subscriptions) == 5 })
			assert.Equal(t, []string{RootURI, gone.uri, s.uri}, rec.Subscriptions[:3], "the root first, then the sessions")
			assert.Equal(t, version, rec.ProtocolVersion)
			x.close()
			// The disposal of an empty session: it is gone after the restart.
			o := hs.dial(t, "other")
			o.initialize()
			o.mustCall("disposeSession", map[string]any{"channel": gone.uri}, nil)
			o.close()

			hs, _ = restart(t, hs, st, path, Options{})
			x = hs.dial(t, "vscode")
			var res reconnectResult
			x.mustCall("reconnect", map[string]any{"clientId": "vscode", "lastSeenServerSeq": last,
				"subscriptions": []string{RootURI, s.uri, s.chat, gone.uri, gone.chat}}, &res)
			assert.Equal(t, string(wire.ReconnectResultTypeSnapshot), res.Type)
			var got []string
			for _, sn := range res.Snapshots {
				got = append(got, sn.Resource)
			}
			assert.Equal(t, []string{RootURI, s.uri, s.chat}, got)
			assert.Equal(t, []string{gone.uri, gone.chat}, res.Missing)
			var chat struct {
				Turns []struct {
					ID string `json:"id"`
				} `json:"turns"`
				Requests []json.RawMessage `json:"requests"`
			}
			require.NoError(t, json.Unmarshal(res.Snapshots[2].State, &chat))
			if version == current {
				require.Len(t, chat.Turns, 1, "the history, in the client's dialect")
				assert.Equal(t, "t1", chat.Turns[0].ID)
			} else {
				assert.NotEmpty(t, chat.Turns, "the 0.7.0 chat state carries the turn")
			}
			// The connection is the client's again: subscribed and serving.
			seq := hs.dispatch(t, s.chat, &wire.ChatDraftChangedAction{Draft: wire.Ptr(userMsg("back"))})
			assert.Equal(t, seq, x.nextEnvelope(nil).ServerSeq)
			var list wire.ListSessionsResult
			x.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
			assert.Len(t, list.Items, 1)

			// A client this file never saw: -32008, then initialize works.
			u := hs.dial(t, "stranger")
			_, err := u.call("reconnect", map[string]any{"clientId": "stranger", "lastSeenServerSeq": 0, "subscriptions": []string{RootURI}})
			require.NotNil(t, err)
			assert.Equal(t, CodeNotFound, err.Code)
			u.initializeAs([]string{version}, RootURI, s.uri)
		})
	}
}

// TestReconnectWithoutAStore: with no state file there is no memory across
// a restart, so every client of a new host is unknown (-32008), and may
// initialize with the same clientId; a reconnect without `channel` to the
// same host replays.
func TestReconnectWithoutAStore(t *testing.T) {
	hs := newHarness(t, Options{})
	x := hs.dial(t, "vscode")
	x.initialize(RootURI)
	s := hs.newSession(x, "mem")
	last := hs.h.Stats().ServerSeq
	x.close()
	title := hs.dispatch(t, s.uri, &wire.SessionTitleChangedAction{Title: "while away"})
	x = hs.dial(t, "vscode")
	var res reconnectResult
	x.mustCall("reconnect", map[string]any{"clientId": "vscode", "lastSeenServerSeq": last, "subscriptions": []string{RootURI, s.uri, s.chat}}, &res)
	assert.Equal(t, "replay", res.Type)
	require.NotEmpty(t, res.Actions)
	assert.Equal(t, title, res.Actions[len(res.Actions)-1].ServerSeq)
	x.close()

	hs2 := newHarness(t, Options{})
	y := hs2.dial(t, "vscode")
	_, err := y.call("reconnect", map[string]any{"clientId": "vscode", "lastSeenServerSeq": last, "subscriptions": []string{RootURI}})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)
	y.initialize(RootURI)
}

// TestReconnectWithoutChannelEveryDialect: every dialect's reconnect is
// served without `channel` (VS Code sends none), before initialize on a
// new connection, with a replay in the dialect the client negotiated.
func TestReconnectWithoutChannelEveryDialect(t *testing.T) {
	for _, version := range []string{current, "0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1", "0.5.0", "0.3.0"} {
		t.Run(version, func(t *testing.T) {
			hs := newHarness(t, Options{})
			x := hs.dial(t, "x")
			res := x.initializeAs([]string{version}, RootURI)
			require.Equal(t, version, res.ProtocolVersion)
			last := hs.h.Stats().ServerSeq
			x.close()
			x = hs.dial(t, "x")
			var out reconnectResult
			x.mustCall("reconnect", map[string]any{"clientId": "x", "lastSeenServerSeq": last, "subscriptions": []string{RootURI}}, &out)
			assert.Equal(t, "replay", out.Type)
			assert.Empty(t, out.Missing)
			var list wire.ListSessionsResult
			x.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
		})
	}
}
