package host

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// These tests send what VS Code's Agents window and editor window send
// (docs/protocol-versions.md "Channel names"; ../shared/clients/vscode.md),
// in their order: the names it computes itself, the root as `ahp-root:`,
// its extension notifications and requests, and a rename on a chat channel.

// vscodeVersions are the versions current VS Code builds offer (it never
// offers 0.8.0), and the host's own.
var vscodeVersions = [][]string{{"0.9.0", "0.7.0", "0.6.0", "0.5.2"}, {current}}

// vscodeSession is a session URI as VS Code mints it: <provider>:/<uuid>.
const vscodeSession = "fake:/4f0c9a52-7d1e-4b6a-9c3f-2e8d5a1b7c60"

// vscodeInitialize initializes as VS Code's newest client does, with the
// root spelled as root.
func vscodeInitialize(tc *testClient, versions []string, root string) initResult {
	tc.t.Helper()
	var r initResult
	tc.mustCall("initialize", map[string]any{
		"channel": root, "protocolVersions": versions, "clientId": tc.clientID,
		"clientInfo":           map[string]any{"name": "vscode-agents-window", "version": "1.120.0"},
		"initialSubscriptions": []string{root},
		"_meta":                map[string]any{"vscode.clientConnectionKind": "remote"},
	}, &r)
	return r
}

// sessionNames is what a session snapshot says about its chats, in any
// dialect that has chats.
type sessionNames struct {
	Title       string  `json:"title"`
	DefaultChat *string `json:"defaultChat"`
	Chats       []struct {
		Resource string `json:"resource"`
	} `json:"chats"`
}

func TestVSCodeSessionAndChatNames(t *testing.T) {
	for _, versions := range vscodeVersions {
		t.Run(versions[0], func(t *testing.T) {
			hs := newHarness(t, Options{Agents: []wire.AgentInfo{multiChatAgent()}})
			c := hs.dial(t, "vscode")
			init := vscodeInitialize(c, versions, "ahp-root://")
			require.Len(t, init.Snapshots, 1)

			// createSession on the client's URI, then subscribe at once.
			c.mustCall("createSession", map[string]any{"channel": vscodeSession, "provider": "fake",
				"workingDirectories": []string{"/w"}, "progressToken": "p-1"}, nil)
			var st sessionNames
			require.NoError(t, json.Unmarshal(c.subscribe(vscodeSession).State, &st))
			chat := wire.DefaultChatURI(vscodeSession)
			require.NotNil(t, st.DefaultChat, "the first snapshot names the default chat")
			assert.Equal(t, chat, *st.DefaultChat, "defaultChat is VS Code's derived name")
			require.Len(t, st.Chats, 1)
			assert.Equal(t, chat, st.Chats[0].Resource, "and so is its catalogue entry")

			// VS Code subscribes to the name it derives; the chat says it too.
			var cs struct {
				Resource string `json:"resource"`
			}
			require.NoError(t, json.Unmarshal(c.subscribe(chat).State, &cs))
			assert.Equal(t, chat, cs.Resource)
			hs.readChat(t, chat)

			// A side chat the client names is echoed verbatim and parses
			// back to its chat id.
			side := wire.ChatURI(vscodeSession, "9b2e77c4-0c55-4d8f-a1e3-6f4b2d0c8e19")
			c.mustCall("createChat", map[string]any{"channel": vscodeSession, "chat": side}, nil)
			added := c.nextEnvelope(isAction(vscodeSession, wire.ActionTypeSessionChatAdded))
			var summary struct {
				Summary struct {
					Resource string `json:"resource"`
				} `json:"summary"`
			}
			raw, _ := json.Marshal(added.Action)
			require.NoError(t, json.Unmarshal(raw, &summary))
			assert.Equal(t, side, summary.Summary.Resource)
			name, ok := wire.ParseChatURI(summary.Summary.Resource)
			require.True(t, ok)
			assert.Equal(t, "9b2e77c4-0c55-4d8f-a1e3-6f4b2d0c8e19", name.ChatID)
			require.NoError(t, json.Unmarshal(c.subscribe(side).State, &cs))
			assert.Equal(t, side, cs.Resource)

			// The older form is still a name a client may give a chat.
			c.mustCall("createChat", map[string]any{"channel": vscodeSession, "chat": "ahp-chat:/an-older-client"}, nil)
			c.subscribe("ahp-chat:/an-older-client")
		})
	}
}

// TestVSCodeRootAlias: `ahp-root:` is the root wherever a channel is read.
func TestVSCodeRootAlias(t *testing.T) {
	for _, versions := range vscodeVersions {
		t.Run(versions[0], func(t *testing.T) {
			hs := newHarness(t, Options{})
			c := hs.dial(t, "vscode")
			init := vscodeInitialize(c, versions, "ahp-root:")
			require.Len(t, init.Snapshots, 1, "the root snapshot for initialSubscriptions [ahp-root:]")
			assert.Contains(t, string(init.Snapshots[0].State), `"agents"`)

			// The subscription is the root's: a new session is announced.
			c.mustCall("createSession", map[string]any{"channel": vscodeSession, "provider": "fake"}, nil)
			c.nextNotification(wire.MethodRootSessionAdded)

			var list wire.ListSessionsResult
			c.mustCall("listSessions", map[string]any{"channel": "ahp-root:"}, &list)
			require.Len(t, list.Items, 1)
			snap := c.subscribe("ahp-root:")
			assert.Contains(t, string(snap.State), `"agents"`)

			// A root action dispatched on ahp-root: is the root's.
			e := c.accepted("ahp-root:", &wire.RootConfigChangedAction{Config: map[string]any{"vscode.telemetryLevel": "all"}})
			assert.Equal(t, RootURI, e.Channel)

			// Unsubscribing ahp-root: ends the root subscription.
			c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": "ahp-root:"}})
			c.ping()
			c.backlog = nil
			c.mustCall("createSession", map[string]any{"channel": "fake:/second", "provider": "fake"}, nil)
			c.ping()
			for _, m := range c.backlog {
				assert.NotEqual(t, wire.MethodRootSessionAdded, m.Method, "no root notifications after unsubscribing")
			}

			// VS Code's reconnect (no channel) with the root as ahp-root:
			// replays what the root saw and subscribes it again.
			last := hs.h.Stats().ServerSeq
			hs.dispatch(t, RootURI, &wire.RootConfigChangedAction{Config: map[string]any{"x": 1}})
			r := hs.dial(t, "vscode")
			var res struct {
				Type    string            `json:"type"`
				Actions []json.RawMessage `json:"actions"`
				Missing []string          `json:"missing"`
			}
			r.mustCall("reconnect", map[string]any{"clientId": "vscode", "lastSeenServerSeq": last,
				"subscriptions": []string{"ahp-root:", vscodeSession}}, &res)
			assert.Equal(t, "replay", res.Type)
			assert.Empty(t, res.Missing)
			require.Len(t, res.Actions, 1, "the root's action since lastSeenServerSeq")
			r.mustCall("createSession", map[string]any{"channel": "fake:/third", "provider": "fake"}, nil)
			r.nextNotification(wire.MethodRootSessionAdded)
		})
	}
}

// TestVSCodeTrafficTheHostIgnores: what VS Code sends right after
// initialize, and its extension requests, never cost an error frame where
// VS Code expects none, and requests the bridge does not serve get -32601.
func TestVSCodeTrafficTheHostIgnores(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "vscode")

	// Before initialize: ping is answered with a result, a notification is
	// dropped, a request the bridge never serves is -32601.
	res, err := c.call("ping", map[string]any{"channel": "ahp-root://"})
	require.Nil(t, err, "ping before initialize")
	assert.Equal(t, "null", string(res))
	c.send(map[string]any{"jsonrpc": "2.0", "method": "setClientManagedSettingsPermissions", "params": map[string]any{"permissions": map[string]any{}}})
	_, err = c.call("shutdown", map[string]any{})
	require.NotNil(t, err)
	assert.Equal(t, CodeMethodNotFound, err.Code)
	require.Empty(t, c.backlog, "nothing but the answers")

	vscodeInitialize(c, []string{"0.9.0", "0.7.0"}, "ahp-root://")
	c.backlog = nil

	// VS Code's config forwarder: several root/configChanged with
	// clientSeq 0 and keys the bridge has never heard of, then its
	// settings-permissions notification.
	configs := []map[string]any{
		{"vscode.telemetryLevel": "all"},
		{"chat.tools.terminal.autoApprove": map[string]any{"rm": false}, "autoApprovePolicyRestricted": false},
		{"sessionSync": true, "globalAutoApprove": false, "autoReply": false, "preferLongContext": true, "systemProxy": "", "codexEnabled": false},
	}
	for _, cfg := range configs {
		c.send(dispatchFrame("ahp-root://", 0, &wire.RootConfigChangedAction{Config: cfg}))
	}
	c.send(map[string]any{"jsonrpc": "2.0", "method": "setClientManagedSettingsPermissions", "params": map[string]any{"permissions": map[string]any{"x": true}}})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "someFutureNotification", "params": map[string]any{"channel": "ahp-root://"}})
	res, err = c.call("ping", map[string]any{"channel": "ahp-root://"})
	require.Nil(t, err, "ping after initialize")
	assert.Equal(t, "null", string(res))
	for _, m := range c.backlog {
		assert.Nil(t, m.Error, "no error frame: %s", m.raw)
		if m.Method == wire.MethodAction {
			e := decodeEnvelope(t, m)
			assert.Nil(t, e.RejectionReason, "root/configChanged was rejected: %s", m.raw)
		}
	}
	c.backlog = nil

	// VS Code's extension requests the bridge does not serve.
	for _, method := range []string{"shutdown", "getNetworkDiagnosticsInfo", "getManagedSettingsDiagnostics", "diagnosticsFetch", "runAutomation", "fetchAutomationRuns", "_vscodeUpgrade"} {
		_, err := c.call(method, map[string]any{"channel": "ahp-root://"})
		if assert.NotNil(t, err, method) {
			assert.Equal(t, CodeMethodNotFound, err.Code, "%s: %s", method, err.Message)
		}
	}
	// Served ones answer: an empty automation catalogue, completions.
	var triggers wire.ListAutomationTriggerDefinitionsResult
	c.mustCall("listAutomationTriggerDefinitions", map[string]any{"channel": wire.AutomationsChannel}, &triggers)
	assert.Empty(t, triggers.Items)
}

// TestVSCodeNewSessionIsListedAtOnce: a session that has just been created
// (no turn yet) is in listSessions and in root/sessionAdded, with ISO
// dates, with and without a state file.
func TestVSCodeNewSessionIsListedAtOnce(t *testing.T) {
	for _, stored := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "state file"}[stored], func(t *testing.T) {
			hs := newHarness(t, Options{})
			if stored {
				hs, _ = storedHarness(t, stateFile(t), Options{})
			}
			c := hs.dial(t, "vscode")
			vscodeInitialize(c, []string{"0.9.0"}, "ahp-root://")
			c.mustCall("createSession", map[string]any{"channel": vscodeSession, "provider": "fake", "workingDirectories": []string{"/w"}}, nil)
			var added struct {
				Summary struct {
					Resource   string `json:"resource"`
					CreatedAt  string `json:"createdAt"`
					ModifiedAt string `json:"modifiedAt"`
				} `json:"summary"`
			}
			require.NoError(t, json.Unmarshal(c.nextNotification(wire.MethodRootSessionAdded).Params, &added))
			assert.Equal(t, vscodeSession, added.Summary.Resource)
			for _, d := range []string{added.Summary.CreatedAt, added.Summary.ModifiedAt} {
				_, perr := time.Parse(time.RFC3339Nano, d)
				assert.NoError(t, perr, "an ISO date: %q", d)
			}

			var list struct {
				Items []struct {
					Resource   string `json:"resource"`
					CreatedAt  string `json:"createdAt"`
					ModifiedAt string `json:"modifiedAt"`
				} `json:"items"`
			}
			c.mustCall("listSessions", map[string]any{"channel": "ahp-root://"}, &list)
			require.Len(t, list.Items, 1, "the new session is listed before any turn")
			assert.Equal(t, vscodeSession, list.Items[0].Resource)
			for _, d := range []string{list.Items[0].CreatedAt, list.Items[0].ModifiedAt} {
				_, perr := time.Parse(time.RFC3339Nano, d)
				assert.NoError(t, perr, "an ISO date: %q", d)
			}
			assert.Empty(t, hs.readChat(t, wire.DefaultChatURI(vscodeSession)).Turns)
		})
	}
}

// TestVSCodeRenameOnTheChatChannel: the editor window dispatches
// session/titleChanged on the chat it shows; it renames the session.
func TestVSCodeRenameOnTheChatChannel(t *testing.T) {
	for _, versions := range vscodeVersions {
		t.Run(versions[0], func(t *testing.T) {
			hs := newHarness(t, Options{Agents: []wire.AgentInfo{multiChatAgent()}})
			c := hs.dial(t, "editor")
			vscodeInitialize(c, versions, "ahp-root://")
			watcher := hs.dial(t, "agents-window")
			vscodeInitialize(watcher, versions, "ahp-root://")
			c.mustCall("createSession", map[string]any{"channel": vscodeSession, "provider": "fake"}, nil)
			chat := wire.DefaultChatURI(vscodeSession)
			c.subscribe(chat)
			watcher.subscribe(vscodeSession)

			e := c.accepted(chat, &wire.SessionTitleChangedAction{Title: "Fix the build"})
			assert.Equal(t, vscodeSession, e.Channel, "applied to the chat's session")
			assert.Equal(t, "Fix the build", hs.readSession(t, vscodeSession).Title)
			seen := watcher.nextEnvelope(isAction(vscodeSession, wire.ActionTypeSessionTitleChanged))
			require.NotNil(t, seen.Origin)
			assert.Equal(t, "editor", seen.Origin.ClientID)

			// On a side chat, too; on the session channel as before.
			side := wire.ChatURI(vscodeSession, "c2")
			c.mustCall("createChat", map[string]any{"channel": vscodeSession, "chat": side}, nil)
			c.accepted(side, &wire.SessionTitleChangedAction{Title: "From a side chat"})
			assert.Equal(t, "From a side chat", hs.readSession(t, vscodeSession).Title)
			c.subscribe(vscodeSession)
			c.accepted(vscodeSession, &wire.SessionTitleChangedAction{Title: "On the session"})
			assert.Equal(t, "On the session", hs.readSession(t, vscodeSession).Title)

			// Other session actions stay refused on a chat.
			assert.Contains(t, c.rejected(chat, &wire.SessionActiveClientRemovedAction{ClientID: "editor"}), "cannot be dispatched")
		})
	}
}

// renameChatInStore rewrites a chat's name everywhere in a closed state
// file, as a bridge before VS Code's names would have written it.
func renameChatInStore(t testing.TB, path, from, to string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	blob := func(col string) string {
		return col + ` = CAST(replace(CAST(` + col + ` AS TEXT), ?1, ?2) AS BLOB)`
	}
	for _, q := range []string{
		`UPDATE sessions SET ` + blob("summary"),
		`UPDATE chats SET uri = replace(uri, ?1, ?2), ` + blob("summary"),
		`UPDATE turns SET chat_uri = replace(chat_uri, ?1, ?2)`,
		`UPDATE turn_chunks SET chat_uri = replace(chat_uri, ?1, ?2)`,
		`UPDATE checkpoints SET chat_uri = replace(chat_uri, ?1, ?2)`,
		`UPDATE checkpoint_texts SET chat_uri = replace(chat_uri, ?1, ?2)`,
	} {
		_, err := tx.ExecContext(ctx, q, from, to)
		require.NoError(t, err, q)
	}
	require.NoError(t, tx.Commit())
}

// TestStoredOldChatNamesKeepWorking: a session stored before VS Code's
// names, its default chat `ahp-chat:/<id>`, keeps that one name after an
// upgrade; a new session gets the derived name; and a rename VS Code
// dispatches on the derived name of the old session's default chat still
// renames it.
func TestStoredOldChatNamesKeepWorking(t *testing.T) {
	path := stateFile(t)
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	s := hs.newSession(c, "old")
	richTurn(t, hs, s.chat, "t1")
	c.close()
	hs.h.Close()
	hs.handler.wait()
	require.NoError(t, st.Close())
	const old = "ahp-chat:/old"
	renameChatInStore(t, path, s.chat, old)

	hs, st = storedHarness(t, path, Options{})
	c = hs.dial(t, "vscode")
	vscodeInitialize(c, []string{"0.9.0", "0.7.0"}, "ahp-root://")
	var names sessionNames
	require.NoError(t, json.Unmarshal(c.subscribe(s.uri).State, &names))
	require.NotNil(t, names.DefaultChat)
	assert.Equal(t, old, *names.DefaultChat, "a stored default chat keeps its name")
	require.Len(t, names.Chats, 1)
	assert.Equal(t, old, names.Chats[0].Resource)
	var chat wire.ChatState
	require.NoError(t, json.Unmarshal(c.subscribe(old).State, &chat))
	assert.Equal(t, old, chat.Resource)
	assert.Len(t, chat.Turns, 1, "with its history")
	c.accepted(old, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("again")})

	// One name per chat: the derived one is not a second name of it.
	_, err := c.call("subscribe", map[string]any{"channel": wire.DefaultChatURI(s.uri)})
	require.NotNil(t, err)
	assert.Equal(t, CodeNotFound, err.Code)
	// But a rename sent there (VS Code's fallback) renames the session.
	e := c.accepted(wire.DefaultChatURI(s.uri), &wire.SessionTitleChangedAction{Title: "Renamed"})
	assert.Equal(t, s.uri, e.Channel)
	assert.Equal(t, "Renamed", hs.readSession(t, s.uri).Title)

	// A session made now takes the derived name, and keeps it in the
	// state file: after a restart its chat is found by that name alone.
	fresh := hs.createSession(c, vscodeSession)
	assert.Equal(t, wire.DefaultChatURI(vscodeSession), fresh.chat)
	c.accepted(fresh.chat, &wire.ChatTurnStartedAction{TurnID: "f1", Message: userMsg("hi")})
	c.close()
	hs, _ = restart(t, hs, st, path, Options{})
	c = hs.dial(t, "vscode-again")
	vscodeInitialize(c, []string{"0.9.0"}, "ahp-root:")
	require.NoError(t, json.Unmarshal(c.subscribe(fresh.chat).State, &chat))
	assert.Equal(t, fresh.chat, chat.Resource)
	assert.NotEmpty(t, chat.Turns, "with its turn")
	require.NoError(t, json.Unmarshal(c.subscribe(vscodeSession).State, &names))
	assert.Equal(t, fresh.chat, *names.DefaultChat)
}
