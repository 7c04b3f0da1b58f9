package vscodeclient_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// Our tests of VS Code's protocol scenarios (suites/protocolLifecycleSuite.ts
// and suites/protocolContractsSuite.ts of its agent-host e2e suite), one
// subtest per scenario under VS Code's name, over the wire only, against
// the real bridge with the scripted agent. docs/vscode-scenarios.md points
// to them. VS Code's "/rename" turns, which its host runs itself, are the
// scripted agent's title turns here (renameTurn).

func TestVSCodeProtocolLifecycle(t *testing.T) {
	rig := startProtoRig(t)

	t.Run("ping succeeds before initialize", func(t *testing.T) {
		t.Parallel()
		c := rig.dial(t, "")
		res, err := c.CallWithoutParams(wait(t), "ping")
		require.NoError(t, err, "ping without params, before initialize")
		assert.JSONEq(t, "null", string(res))
	})

	t.Run("fetchTurns acknowledges completed turn history loading", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		session, chat, _ := protoSession(t, c)
		renameTurn(t, c, session, chat, "Fetch Turns One")
		renameTurn(t, c, session, chat, "Fetch Turns Two")
		loaded := fetchTurnsPage(t, c, chat)
		assert.Equal(t, []any{}, loaded.Action["turns"], "nothing older to load: the snapshot held every turn")
		assert.NotContains(t, loaded.Action, "turnsNextCursor")
	})

	t.Run("fetchTurns rejects an unknown chat", func(t *testing.T) {
		t.Parallel()
		c := rig.bare(t)
		_, err := c.Call(wait(t), "fetchTurns", map[string]any{"channel": "ahp-chat:/missing-session/missing-chat"})
		require.Error(t, err)
		assert.Contains(t, []int{wire.CodeNotFound, wire.CodeSessionNotFound}, vsc.ErrorCode(err),
			"a chat that does not exist is not found (%v)", err)
	})

	t.Run("fetchTurns rejects an unrecognized cursor", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		_, chat, _ := protoSession(t, c)
		_, err := c.Call(wait(t), "fetchTurns", map[string]any{"channel": chat, "cursor": "unknown-cursor"})
		if rpcCode(t, err, wire.CodeInvalidParams, "AHP: an unrecognised cursor is InvalidParams") {
			assert.Contains(t, err.Error(), "cursor", "the error names the cursor")
		}
	})
}

func TestVSCodeProtocolContracts(t *testing.T) {
	rig := startProtoRig(t)
	// The suite's shared client: a VS Code window.
	shared := rig.window(t)

	t.Run("ping answers before the client initializes", func(t *testing.T) {
		t.Parallel()
		c := rig.dial(t, "")
		res, err := c.Call(wait(t), "ping", map[string]any{"channel": vsc.RootChannel})
		require.NoError(t, err)
		assert.JSONEq(t, "null", string(res))
	})

	for _, tc := range []struct {
		name     string
		versions []string
	}{
		{"initialize rejects incompatible protocol versions", []string{"999.0.0"}},
		{"initialize rejects an empty protocol version list", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := rig.dial(t, "")
			_, err := handshake(t, c, map[string]any{"protocolVersions": tc.versions})
			rpcCode(t, err, wire.CodeUnsupportedProtocolVersion)
		})
	}

	t.Run("initialize without subscriptions returns no snapshots", func(t *testing.T) {
		t.Parallel()
		c := rig.dial(t, "")
		raw, err := handshake(t, c, nil)
		require.NoError(t, err)
		var res struct {
			Snapshots *[]json.RawMessage `json:"snapshots"`
		}
		require.NoError(t, json.Unmarshal(raw, &res))
		if assert.NotNil(t, res.Snapshots, "snapshots is present: %s", raw) {
			assert.Empty(t, *res.Snapshots)
		}
	})

	t.Run("initialize selects a supported fallback protocol version", func(t *testing.T) {
		t.Parallel()
		c := rig.dial(t, "")
		raw, err := handshake(t, c, map[string]any{"protocolVersions": []string{"999.0.0", protoVersion}})
		require.NoError(t, err)
		assert.Equal(t, protoVersion, negotiated(t, raw))
	})

	for _, tc := range []struct {
		name  string
		extra map[string]any
	}{
		{"initialize accepts locale metadata", map[string]any{"locale": "ja-JP"}},
		{"initialize accepts declared client capabilities", map[string]any{"capabilities": map[string]any{"mcpApps": map[string]any{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := rig.dial(t, "")
			raw, err := handshake(t, c, tc.extra)
			require.NoError(t, err)
			assert.Equal(t, protoVersion, negotiated(t, raw))
		})
	}

	t.Run("initialize cannot be repeated after the handshake", func(t *testing.T) {
		t.Parallel()
		c := rig.bare(t)
		_, err := handshake(t, c, map[string]any{"clientId": client.NewUUID()})
		// Differs: VS Code's host answers -32601; the bridge answers
		// -32600, a request out of order on this connection.
		rpcCode(t, err, wire.CodeInvalidRequest, "a second initialize on the connection")
	})

	t.Run("listSessions includes provider-backed session metadata", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		session, chat, workspace := protoSession(t, c)
		renameTurn(t, c, session, chat, "Listed Session")
		items, err := c.ListSessions(wait(t))
		require.NoError(t, err)
		item := listItem(items, session)
		require.NotNil(t, item, "the session is listed")
		assert.Equal(t, protoProvider, item["provider"])
		title, _ := item["title"].(string)
		assert.NotEmpty(t, title, "a title")
		_, isNumber := item["status"].(float64)
		assert.True(t, isNumber, "status is a number: %v", item["status"])
		assert.Equal(t, []any{fileURL(workspace)}, item["workingDirectories"])
		assert.True(t, isTime(item["createdAt"]), "createdAt is a time: %v", item["createdAt"])
		assert.True(t, isTime(item["modifiedAt"]), "modifiedAt is a time: %v", item["modifiedAt"])
	})

	t.Run("listSessions reflects live title and status changes", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		session, chat, _ := protoSession(t, c)
		renameTurn(t, c, session, chat, "Catalog Title")
		protoDispatchAndWait(t, c, session, map[string]any{"type": "session/isReadChanged", "isRead": true})
		protoDispatchAndWait(t, c, session, map[string]any{"type": "session/isArchivedChanged", "isArchived": true})
		items, err := c.ListSessions(wait(t))
		require.NoError(t, err)
		item := listItem(items, session)
		require.NotNil(t, item, "the session is listed")
		assert.Equal(t, "Catalog Title", item["title"])
		status, _ := item["status"].(float64)
		assert.NotZero(t, wire.SessionStatus(status)&wire.SessionStatusIsRead, "read (status %v)", item["status"])
		assert.NotZero(t, wire.SessionStatus(status)&wire.SessionStatusIsArchived, "archived (status %v)", item["status"])
	})

	t.Run("fetchTurns currently emits an empty loaded-turns page", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		session, chat, _ := protoSession(t, c)
		renameTurn(t, c, session, chat, "Fetch Turns")
		loaded := fetchTurnsPage(t, c, chat)
		assert.Equal(t, map[string]any{"type": "chat/turnsLoaded", "turns": []any{}}, loaded.Action)
	})

	t.Run("fetchTurns rejects a cursor the host did not issue", func(t *testing.T) {
		t.Parallel()
		_, chat, _ := protoSession(t, shared)
		_, err := shared.Call(wait(t), "fetchTurns", map[string]any{"channel": chat, "cursor": "not-a-host-cursor"})
		rpcCode(t, err, wire.CodeInvalidParams)
	})

	t.Run("fetchTurns rejects an unknown chat channel", func(t *testing.T) {
		t.Parallel()
		session, _, _ := protoSession(t, shared)
		_, err := shared.Call(wait(t), "fetchTurns", map[string]any{"channel": vsc.ChatURI(session, "missing")})
		assert.Error(t, err)
	})

	t.Run("initialize returns snapshots for initial subscriptions", func(t *testing.T) {
		t.Parallel()
		session, chat, _ := protoSession(t, shared)
		c := rig.dial(t, "")
		raw, err := handshake(t, c, map[string]any{"initialSubscriptions": []string{session, chat}})
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{session, chat}, snapshotResources(t, raw))
	})

	t.Run("a session action is broadcast to every subscribed client", func(t *testing.T) {
		t.Parallel()
		session, _, _ := protoSession(t, shared)
		c := rig.bare(t)
		subscribeFromSeq(t, c, session)
		seq, err := shared.DispatchAction(session, titleAction("Shared Title"))
		require.NoError(t, err)
		seen := waitAction(t, c, 0, session, "session/titleChanged", func(e envelope) bool { return e.Action["title"] == "Shared Title" })
		if assert.NotNil(t, seen.Origin, "the broadcast names its origin") {
			assert.Equal(t, seq, seen.Origin.ClientSeq)
		}
		assert.Equal(t, "Shared Title", snapshotState(t, c, session)["title"])
	})

	t.Run("a chat action is broadcast to every subscribed client", func(t *testing.T) {
		t.Parallel()
		_, chat, _ := protoSession(t, shared)
		c := rig.bare(t)
		subscribeFromSeq(t, c, chat)
		protoDispatchAndWait(t, shared, chat, draftAction("shared draft"))
		seen := waitAction(t, c, 0, chat, "chat/draftChanged", nil)
		want := map[string]any{"text": "shared draft", "origin": map[string]any{"kind": "user"}}
		assert.Equal(t, want, seen.Action["draft"])
		assert.Equal(t, want, snapshotState(t, c, chat)["draft"])
	})

	t.Run("an unsubscribed client stops receiving channel actions", func(t *testing.T) {
		t.Parallel()
		session, _, _ := protoSession(t, shared)
		c := rig.bare(t)
		subscribeFromSeq(t, c, session)
		require.NoError(t, c.Unsubscribe(session))
		require.NoError(t, c.Ping(wait(t)))
		from := len(envelopes(c))
		protoDispatchAndWait(t, shared, session, titleAction("After Unsubscribe"))
		settle(t, c, session)
		_, got := findAction(c, from, session, "session/titleChanged", nil)
		assert.False(t, got, "no session/titleChanged after unsubscribe")
	})

	t.Run("initial subscriptions include current session and chat state", func(t *testing.T) {
		t.Parallel()
		session, chat, _ := protoSession(t, shared)
		protoDispatchAndWait(t, shared, session, titleAction("Initial Snapshot Title"))
		protoDispatchAndWait(t, shared, chat, draftAction("initial snapshot draft"))
		c := rig.dial(t, "")
		raw, err := handshake(t, c, map[string]any{"initialSubscriptions": []string{session, chat}})
		require.NoError(t, err)
		states := snapshotStates(t, raw)
		assert.Equal(t, "Initial Snapshot Title", states[session]["title"])
		assert.Equal(t, map[string]any{"text": "initial snapshot draft", "origin": map[string]any{"kind": "user"}}, states[chat]["draft"])
	})

	t.Run("session disposal invalidates another client subscription", func(t *testing.T) {
		t.Parallel()
		// The scenario's session has no turns: the bridge removes such a
		// session on disposeSession (one with turns is kept, archived;
		// issue 23 §5).
		session, chat, _ := protoSession(t, shared)
		c := rig.bare(t)
		subscribeFromSeq(t, c, session)
		subscribeFromSeq(t, c, chat)
		require.NoError(t, shared.DisposeSession(wait(t), session))
		_, err := c.Call(wait(t), "subscribe", map[string]any{"channel": session})
		assert.Error(t, err, "the disposed session cannot be subscribed again")
		_, err = c.Call(wait(t), "subscribe", map[string]any{"channel": chat})
		assert.Error(t, err, "nor its chat")
	})

	t.Run("root session summaries are broadcast to every subscribed client", func(t *testing.T) {
		t.Parallel()
		session, _, _ := protoSession(t, shared)
		c := rig.bare(t)
		subscribeFromSeq(t, c, vsc.RootChannel)
		protoDispatchAndWait(t, shared, session, titleAction("Broadcast Summary"))
		require.NoError(t, c.WaitFor(wait(t), "root/sessionSummaryChanged", func() bool {
			for _, n := range c.Notifications() {
				var p struct {
					Session string         `json:"session"`
					Changes map[string]any `json:"changes"`
				}
				if n.Method == "root/sessionSummaryChanged" && json.Unmarshal(n.Params, &p) == nil &&
					p.Session == session && p.Changes["title"] == "Broadcast Summary" {
					return true
				}
			}
			return false
		}), "root/sessionSummaryChanged with the new title")
	})

	t.Run("reconnect replays only the actions a dropped client missed", func(t *testing.T) {
		t.Parallel()
		_, chat, _ := protoSession(t, shared)
		id, seen := dropAfter(t, rig, chat)
		protoDispatchAndWait(t, shared, chat, draftAction("missed while disconnected"))
		res := reconnect(t, rig, id, seen, chat)
		require.Equal(t, "replay", res.Type)
		var after int
		for _, a := range res.Actions {
			assert.Greater(t, a.ServerSeq, seen, "nothing at or before lastSeenServerSeq is replayed: %+v", a)
			if a.ServerSeq > seen {
				after++
			}
		}
		assert.NotZero(t, after, "the missed action is replayed")
	})

	t.Run("reconnect with no missed actions returns an empty replay", func(t *testing.T) {
		t.Parallel()
		_, chat, _ := protoSession(t, shared)
		id, seen := dropAfter(t, rig, chat)
		raw := reconnectRaw(t, rig, id, seen, chat)
		assert.JSONEq(t, `{"type":"replay","actions":[],"missing":[]}`, string(raw))
	})

	t.Run("reconnect excludes actions from channels the client did not restore", func(t *testing.T) {
		t.Parallel()
		_, first, _ := protoSession(t, shared)
		_, second, _ := protoSession(t, shared)
		id, seen := dropAfter(t, rig, first)
		protoDispatchAndWait(t, shared, first, draftAction("included"))
		protoDispatchAndWait(t, shared, second, draftAction("excluded"))
		res := reconnect(t, rig, id, seen, first)
		require.Equal(t, "replay", res.Type)
		assert.Equal(t, []string{first + " chat/draftChanged"}, res.kinds())
	})

	t.Run("reconnect replays missed session and chat actions together", func(t *testing.T) {
		t.Parallel()
		session, chat, _ := protoSession(t, shared)
		id, seen := dropAfter(t, rig, session, chat)
		protoDispatchAndWait(t, shared, session, titleAction("Replay Session"))
		protoDispatchAndWait(t, shared, chat, draftAction("replay draft"))
		res := reconnect(t, rig, id, seen, session, chat)
		require.Equal(t, "replay", res.Type)
		assert.Equal(t, []string{session + " session/titleChanged", chat + " chat/draftChanged"}, res.kinds())
	})

	t.Run("reconnected state subscriptions receive subsequent live actions", func(t *testing.T) {
		t.Parallel()
		session, chat, _ := protoSession(t, shared)
		id, seen := dropAfter(t, rig, session, chat)
		c := rig.dial(t, id)
		_, err := c.Call(wait(t), "reconnect", reconnectParams(id, seen, session, chat))
		require.NoError(t, err)
		_, err = shared.DispatchAction(session, titleAction("Reconnected Live"))
		require.NoError(t, err)
		_, err = shared.DispatchAction(chat, draftAction("live"))
		require.NoError(t, err)
		waitAction(t, c, 0, session, "session/titleChanged", nil)
		waitAction(t, c, 0, chat, "chat/draftChanged", nil)
	})

	t.Run("reconnect reports a subscription it cannot resume as missing", func(t *testing.T) {
		t.Parallel()
		_, chat, _ := protoSession(t, shared)
		id, seen := dropAfter(t, rig, chat)
		gone := "agenthost-terminal://e2e/never-existed"
		res := reconnect(t, rig, id, seen, chat, gone)
		assert.Equal(t, "replay", res.Type)
		assert.Equal(t, []string{gone}, res.Missing)
	})

	t.Run("resource requests before initialize are rejected", func(t *testing.T) {
		t.Parallel()
		c := rig.dial(t, "")
		_, err := c.Call(wait(t), "resourceResolve", map[string]any{"channel": vsc.RootChannel, "uri": fileURL(t.TempDir())})
		// Differs: VS Code's host answers -32601; the bridge answers
		// -32600, a method it serves asked for before the handshake.
		rpcCode(t, err, wire.CodeInvalidRequest)
	})

	t.Run("creating a session with an unknown provider is rejected", func(t *testing.T) {
		t.Parallel()
		c := rig.bare(t)
		_, err := c.Call(wait(t), "createSession", map[string]any{"channel": "missing-provider:/session", "provider": "missing-provider"})
		rpcCode(t, err, wire.CodeProviderNotFound)
	})

	t.Run("creating a duplicate session resource is rejected", func(t *testing.T) {
		t.Parallel()
		session, _, workspace := protoSession(t, shared)
		_, err := shared.Call(wait(t), "createSession", map[string]any{"channel": session, "provider": protoProvider,
			"workingDirectories": []string{fileURL(workspace)}, "config": map[string]any{"isolation": "folder"}})
		rpcCode(t, err, wire.CodeSessionAlreadyExists)
	})

	t.Run("a session cannot fork onto its own resource", func(t *testing.T) {
		t.Parallel()
		session, _, _ := protoSession(t, shared)
		_, err := shared.Call(wait(t), "createSession", map[string]any{"channel": session, "provider": protoProvider,
			"fork": map[string]any{"session": session, "turnId": "irrelevant"}})
		// Differs: VS Code's host answers -32003; the bridge refuses every
		// createSession fork (AHP 1.0 dropped it) before it looks further.
		rpcCode(t, err, wire.CodeInvalidParams)
	})

	t.Run("forking from a missing session is rejected", func(t *testing.T) {
		t.Parallel()
		c := rig.bare(t)
		_, err := c.Call(wait(t), "createSession", map[string]any{"channel": protoProvider + ":/" + client.NewUUID(), "provider": protoProvider,
			"fork": map[string]any{"session": protoProvider + ":/" + client.NewUUID(), "turnId": "missing-turn"}})
		// Differs: VS Code's host answers -32001; the bridge refuses every
		// createSession fork (AHP 1.0 dropped it) before it looks further.
		rpcCode(t, err, wire.CodeInvalidParams)
	})

	t.Run("createSession rejects an active client owned by another connection", func(t *testing.T) {
		t.Parallel()
		c := rig.bare(t)
		_, err := c.Call(wait(t), "createSession", map[string]any{"channel": protoProvider + ":/" + client.NewUUID(), "provider": protoProvider,
			"activeClient": map[string]any{"clientId": "different-client", "displayName": "Different Client", "tools": []any{}}})
		rpcCode(t, err, wire.CodeInvalidParams)
	})

	t.Run("createSession seeds a matching active client into session state", func(t *testing.T) {
		t.Parallel()
		c := rig.bare(t)
		session := protoProvider + ":/" + client.NewUUID()
		_, err := c.Call(wait(t), "createSession", map[string]any{"channel": session, "provider": protoProvider,
			"workingDirectories": []string{fileURL(t.TempDir())}, "config": map[string]any{"isolation": "folder"},
			"activeClient": map[string]any{"clientId": c.ClientID(), "displayName": "Creating Client", "tools": []any{}}})
		require.NoError(t, err)
		st := snapshotState(t, c, session)
		assert.Equal(t, []any{map[string]any{"clientId": c.ClientID(), "displayName": "Creating Client", "tools": []any{}}}, st["activeClients"])
	})

	t.Run("creating a chat for a missing session is rejected", func(t *testing.T) {
		t.Parallel()
		c := rig.bare(t)
		session := protoProvider + ":/missing-chat-session"
		_, err := c.Call(wait(t), "createChat", map[string]any{"channel": session, "chat": vsc.ChatURI(session, "peer")})
		rpcCode(t, err, wire.CodeSessionNotFound)
	})

	t.Run("subscribing twice does not duplicate action delivery", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		_, chat, _ := protoSession(t, c)
		subscribeFromSeq(t, c, chat)
		subscribeFromSeq(t, c, chat)
		from := len(envelopes(c))
		seq, err := c.DispatchAction(chat, draftAction("single delivery"))
		require.NoError(t, err)
		waitAction(t, c, from, chat, "chat/draftChanged", fromSeq(c, seq))
		require.NoError(t, c.Ping(wait(t)))
		n := 0
		for _, e := range envelopes(c)[from:] {
			if e.Channel == chat && e.typ() == "chat/draftChanged" && fromSeq(c, seq)(e) {
				n++
			}
		}
		assert.Equal(t, 1, n, "one delivery")
	})

	t.Run("resubscribing receives state changed while unsubscribed", func(t *testing.T) {
		t.Parallel()
		c := rig.window(t)
		_, chat, _ := protoSession(t, c)
		require.NoError(t, c.Unsubscribe(chat))
		_, err := c.DispatchAction(chat, draftAction("changed while unsubscribed"))
		require.NoError(t, err)
		require.NoError(t, c.Ping(wait(t)))
		draft, _ := snapshotState(t, c, chat)["draft"].(map[string]any)
		assert.Equal(t, "changed while unsubscribed", draft["text"])
	})

	for _, tc := range []struct{ action, on string }{
		{"session/workingDirectorySet", "session"},
		{"session/workingDirectoryRemoved", "session"},
		{"chat/workingDirectorySet", "chat"},
		{"chat/workingDirectoryRemoved", "chat"},
	} {
		t.Run(tc.action+" is rejected rather than silently dropped", func(t *testing.T) {
			t.Parallel()
			c := rig.window(t)
			session, chat, workspace := protoSession(t, c)
			channel := session
			if tc.on == "chat" {
				channel = chat
			}
			dir := fileURL(filepath.Join(workspace, "second-root"))
			seq, err := c.DispatchAction(channel, map[string]any{"type": tc.action, "directory": dir})
			require.NoError(t, err)
			e := waitAction(t, c, 0, channel, tc.action, nil)
			if assert.NotNil(t, e.RejectionReason, "the action comes back rejected") {
				assert.NotEmpty(t, *e.RejectionReason)
			}
			if assert.NotNil(t, e.Origin) {
				assert.Equal(t, seq, e.Origin.ClientSeq, "the rejection echoes the clientSeq")
			}
			dirs, _ := snapshotState(t, c, channel)["workingDirectories"].([]any)
			assert.NotContains(t, dirs, dir, "the state did not move")
		})
	}
}

func negotiated(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	return res.ProtocolVersion
}

func snapshotStates(t *testing.T, raw json.RawMessage) map[string]map[string]any {
	t.Helper()
	var res struct {
		Snapshots []struct {
			Resource string         `json:"resource"`
			State    map[string]any `json:"state"`
		} `json:"snapshots"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), "%s", raw)
	out := map[string]map[string]any{}
	for _, s := range res.Snapshots {
		out[s.Resource] = s.State
	}
	return out
}

func snapshotResources(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var out []string
	for r := range snapshotStates(t, raw) {
		out = append(out, r)
	}
	return out
}

// isTime reports whether v is a time as the list carries it: an ISO 8601
// string or milliseconds since the epoch.
func isTime(v any) bool {
	switch x := v.(type) {
	case string:
		_, err := time.Parse(time.RFC3339Nano, x)
		return err == nil
	case float64:
		return x > 0
	}
	return false
}

// dropAfter is the suite's afterConnectionDrop: a connection initializes
// under its own clientId, subscribes to channels and closes. It returns
// the clientId and the highest fromSeq of the subscriptions.
func dropAfter(t *testing.T, rig *protoRig, channels ...string) (string, int64) {
	t.Helper()
	c := rig.bare(t)
	var seen int64
	for _, ch := range channels {
		seen = max(seen, subscribeFromSeq(t, c, ch))
	}
	require.NoError(t, c.Close())
	return c.ClientID(), seen
}

func reconnectParams(clientID string, seen int64, subscriptions ...string) map[string]any {
	return map[string]any{"channel": vsc.RootChannel, "clientId": clientID, "lastSeenServerSeq": seen, "subscriptions": subscriptions}
}

// reconnectRaw reconnects clientID on a fresh connection and returns the
// answer.
func reconnectRaw(t *testing.T, rig *protoRig, clientID string, seen int64, subscriptions ...string) json.RawMessage {
	t.Helper()
	c := rig.dial(t, clientID)
	raw, err := c.Call(wait(t), "reconnect", reconnectParams(clientID, seen, subscriptions...))
	require.NoError(t, err)
	return raw
}

type reconnectResult struct {
	Type    string     `json:"type"`
	Actions []envelope `json:"actions"`
	Missing []string   `json:"missing"`
}

// kinds is "<channel> <action type>" of each replayed action.
func (r reconnectResult) kinds() []string {
	var out []string
	for _, a := range r.Actions {
		out = append(out, a.Channel+" "+a.typ())
	}
	return out
}

func reconnect(t *testing.T, rig *protoRig, clientID string, seen int64, subscriptions ...string) reconnectResult {
	t.Helper()
	raw := reconnectRaw(t, rig, clientID, seen, subscriptions...)
	var res reconnectResult
	require.NoError(t, json.Unmarshal(raw, &res), "%s", raw)
	return res
}

// fetchTurnsPage sends fetchTurns without a cursor on a chat c holds in
// full, checks the answer is {} and returns the chat/turnsLoaded that came
// with it.
func fetchTurnsPage(t *testing.T, c *vsc.Client, chat string) envelope {
	t.Helper()
	from := len(envelopes(c))
	res, err := c.Call(wait(t), "fetchTurns", map[string]any{"channel": chat})
	require.NoError(t, err)
	assert.JSONEq(t, "{}", string(res))
	return waitAction(t, c, from, chat, "chat/turnsLoaded", nil)
}
