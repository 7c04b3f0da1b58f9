package bridge_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	w3wire "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	w7wire "github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	w3 "github.com/ahp-bridge/ahp-bridge/internal/oracle/reducer030"
	w7 "github.com/ahp-bridge/ahp-bridge/internal/oracle/reducer070"
)

// The dialect tests drive the bridge as clients of each protocol version it
// speaks would, over a raw WebSocket (bridgetest.RawClient): they send the
// shapes of their version and read what arrives as that version's JSON.
// A 0.3.0 client decodes with ahp/v030/wire and reduces with
// internal/oracle/reducer030; a 0.7.0 client (served through a codec) with
// ahp/v070/wire and internal/oracle/reducer070; a 1.0.0 client (the host's own
// dialect) and a 0.9.0 client (1.0.0 minus what 1.0.0 added, so the same
// types read it) with ahp/wire and ahp/reducer; the chat dialects between
// (0.6.0, 0.5.x), for which we have no types, are checked as JSON.

// dialect is one protocol version the bridge speaks.
type dialect struct{ v codec.Version }

func dialectOf(s string) dialect { return dialect{codec.MustParseVersion(s)} }

func (d dialect) String() string { return d.v.String() }
func (d dialect) is030() bool    { return d.v == codec.V030 }
func (d dialect) is070() bool    { return d.v == codec.V070 }

// is1x: the 1.x state model (0.9.0 and 1.0.0), read with ahp/wire.
func (d dialect) is1x() bool           { return !d.before("0.9.0") }
func (d dialect) current() bool        { return d.v == codec.Current }
func (d dialect) typed() bool          { return d.is030() || d.is070() || d.is1x() }
func (d dialect) before(s string) bool { return d.v.Less(codec.MustParseVersion(s)) }

// plural: sessions and chats have workingDirectories (0.7.0 on), not one
// workingDirectory.
func (d dialect) plural() bool { return !d.before("0.7.0") }

// turnAction is the type of a turn action in d: turns live on the session
// channel in 0.3.0 and on chats since.
func (d dialect) turnAction(name string) string {
	if d.is030() {
		return "session/" + name
	}
	return "chat/" + name
}

// dclient is one client of a dialect, following at most one session.
type dclient struct {
	t   *testing.T
	env *bridgetest.Env
	d   dialect
	id  string
	rc  *bridgetest.RawClient
	// all are every connection the client had (a reconnect opens a new
	// one), for the checks of everything received.
	all []*bridgetest.RawClient
	// replayed are the envelopes reconnect results carried.
	replayed []bridgetest.Envelope

	session string // the session followed
	chat    string // where its turns live: its default chat, or the session in 0.3.0

	fromSeq map[string]int64 // the snapshot's serverSeq per channel
	maxSeq  int64            // the highest serverSeq received
	next    int              // envelopes of rc already applied

	// ignoreToolMeta leaves tool calls' _meta out of assertEqualsFresh
	// (0.3.0): chat tool-call actions replace a call's _meta, a 0.3.0
	// reducer keeps toolCallStart's, and no 0.3.0 action can change it (the
	// codec's property test lists the same gap), so an agent that moves a
	// call's locations leaves a 0.3.0 client with the first ones.
	ignoreToolMeta bool

	s3 *w3wire.SessionState // 0.3.0
	s7 *w7wire.SessionState // 0.7.0
	c7 *w7wire.ChatState    // 0.7.0
	s1 *wire.SessionState   // 0.9.0 and 1.0.0
	c1 *wire.ChatState      // 0.9.0 and 1.0.0
	sj map[string]any       // the chat dialects: the session's snapshot
	cj map[string]any       // the chat dialects: the chat's snapshot
}

// newDClient connects a client of d and initializes it, offering d alone,
// subscribed to the root channel. When the test ends it checks everything
// the client received against what d may receive (checkReceived).
func newDClient(t *testing.T, env *bridgetest.Env, d dialect) *dclient {
	t.Helper()
	return newDClientOffering(t, env, []string{d.String()}, d.String())
}

// newDClientOffering connects a client that offers the versions offer, as
// a real client's initialize lists them, and checks that the bridge
// answers with version answer. The client then speaks the dialect that
// answer belongs to (a client that negotiated 1.1.0 gets 1.0.0's).
func newDClientOffering(t *testing.T, env *bridgetest.Env, offer []string, answer string) *dclient {
	t.Helper()
	dv, ok := codec.DialectOf(codec.MustParseVersion(answer))
	require.True(t, ok, "no dialect accepts %s", answer)
	d := dialect{dv}
	dc := &dclient{t: t, env: env, d: d, id: "dialect-" + answer + "-" + client.NewUUID(), fromSeq: map[string]int64{}}
	dc.rc = bridgetest.DialRaw(t, env.URL, dc.id)
	dc.all = append(dc.all, dc.rc)
	res := dc.rc.MustCall("initialize", map[string]any{
		"channel": "ahp-root://", "protocolVersions": offer, "clientId": dc.id,
		"initialSubscriptions": []string{"ahp-root://"},
	})
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	require.NoError(t, json.Unmarshal(res, &r))
	require.Equal(t, answer, r.ProtocolVersion, "the version negotiated for the offer %v", offer)
	t.Cleanup(dc.checkReceived)
	return dc
}

// newerThan10 are what AHP 1.1.0 added to the protocol (registry
// NOTIFICATION_INTRODUCED_IN at 0383429, docs/protocol-versions.md §9):
// no client of any dialect spoken here may receive them, a 1.0.0 client
// that negotiated 1.1.0 included.
var (
	notificationPrefixes11 = []string{"channel/", "tcp/"}
	members11              = []string{"tcpConnections", "flowControl", "windows", "vendor"}
)

// actionsOf10 are the actions AHP 1.0.0 released after 0.9.0 (the client
// CHANGELOGs, docs/protocol-versions.md §9 and §11.1; the registry labels
// them 0.9.0 and 0.10.0, but 0.9.0 did not ship them), and membersOf10 the
// members it added. A 0.9.0 client must receive none of them. The list is
// written out here rather than read from the codec, so that the check does
// not trust the table it checks.
var (
	actionsOf10 = []string{
		"session/chatsReordered", "session/mcpServerBackgroundRequested",
		"chat/isReadChanged", "chat/isArchivedChanged", "chat/movableChanged", "chat/changesetsChanged",
		"chat/backgroundWorkSet", "chat/backgroundWorkRemoved", "chat/canvasesChanged", "canvas/stateChanged",
	}
	membersOf10 = []string{"movable", "backgroundWork", "canvases", "blocking", "minItems", "maxItems"}
)

// actionsOf08And09 are the actions 0.8.0 and 0.9.0 released, which a 0.7.0
// client (or one of an older dialect) must never receive.
var actionsOf08And09 = []string{
	"session/workingDirectoryReplaced", "chat/turnResume",
	"automation/createRequested", "automation/updateRequested", "automation/set", "automation/removed",
	"automationRun/lifecycleChanged", "automationRun/sessionSet", "automationRun/sessionRemoved",
	"automationRun/primarySessionChanged", "automationRun/cancelRequested",
}

// checkReceived checks every frame the client received, live or replayed:
// no action or notification its version does not know (the 0.3.0 action
// set for 0.3.0, our 0.7.0 types for 0.7.0, our 1.0.0 types for 0.9.0 and
// 1.0.0, codec.ActionKnownTo for every chat dialect, and the lists above),
// and none of the members its version spells otherwise. An envelope of a
// typed dialect must also encode back to what arrived: a member the
// version's types do not have would be lost.
func (dc *dclient) checkReceived() {
	t := dc.t
	envs := append([]bridgetest.Envelope(nil), dc.replayed...)
	for _, rc := range dc.all {
		envs = append(envs, rc.Envelopes()...)
		for _, n := range rc.Notifications() {
			dc.checkNotification(n)
		}
		for _, f := range rc.Frames() {
			dc.checkFrame(f)
		}
	}
	for _, e := range envs {
		typ := e.Type()
		raw, err := json.Marshal(e)
		require.NoError(t, err)
		if !dc.d.is030() {
			assert.True(t, codec.ActionKnownTo(typ, dc.d.v), "a %s client got action %s", dc.d, typ)
		}
		if dc.d.before("1.0.0") {
			assert.NotContains(t, actionsOf10, typ, "a %s client got action %s, which 1.0.0 added", dc.d, typ)
		}
		if dc.d.before("0.8.0") {
			assert.NotContains(t, actionsOf08And09, typ, "a %s client got action %s, which 0.8.0 or 0.9.0 added", dc.d, typ)
		}
		switch {
		case dc.d.is030():
			var env w3wire.ActionEnvelope
			require.NoError(t, json.Unmarshal(raw, &env), "a 0.3.0 envelope: %s", raw)
			_, unknown := env.Action.Value.(json.RawMessage)
			assert.True(t, w3wire.ActionType(typ).Known() && !unknown, "a 0.3.0 client got action %s", typ)
		case dc.d.is070():
			var env w7wire.ActionEnvelope
			require.NoError(t, json.Unmarshal(raw, &env), "a 0.7.0 envelope: %s", raw)
			_, unknown := env.Action.Value.(json.RawMessage)
			assert.False(t, unknown, "a 0.7.0 client got action %s, which 0.7.0 does not define", typ)
			dc.assertRoundTrip(raw, &env)
		case dc.d.is1x():
			var env wire.ActionEnvelope
			require.NoError(t, json.Unmarshal(raw, &env), "a %s envelope: %s", dc.d, raw)
			_, unknown := env.Action.Value.(json.RawMessage)
			assert.False(t, unknown, "a %s client got action %s, which 1.0.0 does not define", dc.d, typ)
			dc.assertRoundTrip(raw, &env)
		}
	}
}

// assertRoundTrip checks that v, decoded from raw with the client's types,
// encodes back to the same JSON: nothing arrived that those types cannot
// hold.
func (dc *dclient) assertRoundTrip(raw []byte, v any) {
	dc.t.Helper()
	back, err := json.Marshal(v)
	require.NoError(dc.t, err)
	assert.JSONEq(dc.t, string(raw), string(back), "a %s client got what its version's types cannot hold", dc.d)
}

// checkNotification checks a protocol notification: one the version knows,
// nothing of 1.1.0, and no session summary with the chat catalogue 1.0.0
// added before 1.0.0.
func (dc *dclient) checkNotification(n bridgetest.Notification) {
	t := dc.t
	if n.Method == "action" {
		return
	}
	assert.True(t, codec.NotificationKnownTo(n.Method, dc.d.v), "a %s client got notification %s", dc.d, n.Method)
	for _, p := range notificationPrefixes11 {
		assert.False(t, strings.HasPrefix(n.Method, p), "a %s client got notification %s, which 1.1.0 added", dc.d, n.Method)
	}
	if dc.d.before("1.0.0") {
		if s := summaryOf(n); s != nil {
			assert.NotContains(t, s, "chats", "a %s client got a session summary with its chats (1.0.0): %s", dc.d, n.Params)
		}
	}
}

// summaryOf is the session summary (or summary change) a root/sessionAdded
// or root/sessionSummaryChanged notification carries, or nil.
func summaryOf(n bridgetest.Notification) map[string]any {
	var p struct {
		Summary map[string]any `json:"summary"`
		Changes map[string]any `json:"changes"`
	}
	switch n.Method {
	case "root/sessionAdded":
		_ = json.Unmarshal(n.Params, &p)
		return p.Summary
	case "root/sessionSummaryChanged":
		_ = json.Unmarshal(n.Params, &p)
		return p.Changes
	}
	return nil
}

// checkFrame checks one received frame for members and values the client's
// version cannot read.
func (dc *dclient) checkFrame(f []byte) {
	t := dc.t
	var tree any
	require.NoError(t, json.Unmarshal(f, &tree))
	for _, k := range members11 {
		assert.False(t, hasKey(tree, k), "a %s client got %s, which 1.1.0 added: %s", dc.d, k, f)
	}
	if dc.d.before("1.0.0") {
		for _, k := range membersOf10 {
			assert.False(t, hasKey(tree, k), "a %s client got %s, which 1.0.0 added: %s", dc.d, k, f)
		}
		assert.False(t, hasMember(tree, "status", "recomputing"), "a %s client got a recomputing changeset: %s", dc.d, f)
	}
	if dc.d.before("0.9.0") {
		// 0.9.0 made turn errors response parts, renamed creationFailed
		// and gave terminals a lifecycle and their claims a chat.
		assert.False(t, hasMember(tree, "kind", "error"), "a %s client got an error response part: %s", dc.d, f)
		assert.False(t, hasKey(tree, "resumable"), "a %s client got resumable: %s", dc.d, f)
		assert.False(t, hasMember(tree, "lifecycle", "failed"), "a %s client got lifecycle failed: %s", dc.d, f)
		assert.False(t, hasKey(tree, "enablement"), "a %s client got a customization's enablement: %s", dc.d, f)
	}
	switch {
	case dc.d.is030():
		// A 0.3.0 client sees sessions, never their chats.
		assert.NotContains(t, string(f), `"ahp-chat:`, "a 0.3.0 client got a chat URI: %s", f)
		assert.False(t, hasKey(tree, "workingDirectories"), "a 0.3.0 client got workingDirectories: %s", f)
	case !dc.d.plural():
		assert.False(t, hasKey(tree, "workingDirectories"), "a %s client got workingDirectories: %s", dc.d, f)
		if dc.d.before("0.5.1") {
			assert.False(t, hasKey(tree, "turnsNextCursor"), "a %s client got turnsNextCursor: %s", dc.d, f)
			assert.False(t, hasKey(tree, "inputNeeded"), "a %s client got inputNeeded: %s", dc.d, f)
		}
	}
}

// hasKey reports whether a decoded JSON tree has an object member key
// anywhere.
func hasKey(tree any, key string) bool {
	return findMember(tree, func(k string, _ any) bool { return k == key })
}

// hasMember reports whether a decoded JSON tree has an object member key
// whose value is the string value anywhere.
func hasMember(tree any, key, value string) bool {
	return findMember(tree, func(k string, v any) bool { return k == key && v == value })
}

func findMember(tree any, match func(string, any) bool) bool {
	switch v := tree.(type) {
	case map[string]any:
		for k, x := range v {
			if match(k, x) || findMember(x, match) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if findMember(x, match) {
				return true
			}
		}
	}
	return false
}

// createSession creates a session of provider in dir, in the shape of the
// client's version, and follows it until it is ready. uri "" is a fresh
// ahp-session: URI.
func (dc *dclient) createSession(uri, provider, dir string) string {
	dc.t.Helper()
	if uri == "" {
		uri = client.NewSessionURI()
	}
	p := map[string]any{"channel": uri, "provider": provider}
	switch {
	case dc.d.plural():
		p["workingDirectories"] = []string{"file://" + dir}
	default:
		p["workingDirectory"] = "file://" + dir
	}
	if !dc.d.is030() {
		p["progressToken"] = "create-" + uri
	}
	res := dc.rc.MustCall("createSession", p)
	require.JSONEq(dc.t, "null", string(res))
	dc.subscribe(uri)
	dc.waitReady()
	return uri
}

// waitReady waits until the followed session is ready.
func (dc *dclient) waitReady() {
	dc.t.Helper()
	dc.wait("the session to be ready", func() bool {
		switch {
		case dc.d.is030():
			return dc.s3.Lifecycle == w3wire.SessionLifecycleReady
		case dc.d.is070():
			return dc.s7.Lifecycle == w7wire.SessionLifecycleReady
		case dc.d.is1x():
			return dc.s1.Lifecycle == wire.SessionLifecycleReady
		}
		if dc.sj["lifecycle"] == "ready" {
			return true
		}
		return dc.findEnvelope(func(e bridgetest.Envelope) bool {
			return e.Channel == dc.session && e.Type() == "session/ready"
		}) != nil
	})
}

// snapshot is a subscribe result's snapshot, its state left encoded.
type snapshot struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

// subscribe follows session: the session channel, whose snapshot holds
// its default chat's turns in 0.3.0, and the default chat in the chat
// dialects.
func (dc *dclient) subscribe(session string) {
	dc.t.Helper()
	dc.session = session
	dc.setSnapshot(dc.subscribeOne(session, nil))
	if dc.d.is030() {
		dc.chat = session
		return
	}
	var chat string
	switch {
	case dc.d.is070():
		chat = acpDeref(dc.s7.DefaultChat)
	case dc.d.is1x():
		chat = acpDeref(dc.s1.DefaultChat)
	default:
		chat, _ = dc.sj["defaultChat"].(string)
	}
	require.True(dc.t, strings.HasPrefix(chat, "ahp-chat:/"), "the session's defaultChat is %q", chat)
	dc.chat = chat
	dc.setSnapshot(dc.subscribeOne(chat, nil))
}

// subscribeOne subscribes to one channel and returns its snapshot.
func (dc *dclient) subscribeOne(uri string, view map[string]any) snapshot {
	dc.t.Helper()
	p := map[string]any{"channel": uri}
	if view != nil {
		p["view"] = view
	}
	var r struct {
		Snapshot *snapshot `json:"snapshot"`
	}
	require.NoError(dc.t, json.Unmarshal(dc.rc.MustCall("subscribe", p), &r))
	require.NotNil(dc.t, r.Snapshot, "subscribing to %s gives no snapshot", uri)
	require.Equal(dc.t, uri, r.Snapshot.Resource)
	return *r.Snapshot
}

// setSnapshot makes a snapshot of the session or of its chat the client's
// state of that channel, decoded with the version's types.
func (dc *dclient) setSnapshot(s snapshot) {
	t := dc.t
	t.Helper()
	dc.fromSeq[s.Resource] = s.FromSeq
	dc.maxSeq = max(dc.maxSeq, s.FromSeq)
	isChat := strings.HasPrefix(s.Resource, "ahp-chat:")
	switch {
	case dc.d.is030():
		require.False(t, isChat)
		dc.s3 = new(w3wire.SessionState)
		require.NoError(t, json.Unmarshal(s.State, dc.s3), "a 0.3.0 session snapshot: %s", s.State)
		assert.Equal(t, s.Resource, dc.s3.Summary.Resource)
	case dc.d.is070() && isChat:
		dc.c7 = new(w7wire.ChatState)
		require.NoError(t, json.Unmarshal(s.State, dc.c7), "a 0.7.0 chat snapshot: %s", s.State)
		dc.assertRoundTrip(s.State, dc.c7)
	case dc.d.is070():
		dc.s7 = new(w7wire.SessionState)
		require.NoError(t, json.Unmarshal(s.State, dc.s7), "a 0.7.0 session snapshot: %s", s.State)
		dc.assertRoundTrip(s.State, dc.s7)
	case dc.d.is1x() && isChat:
		dc.c1 = new(wire.ChatState)
		require.NoError(t, json.Unmarshal(s.State, dc.c1), "a %s chat snapshot: %s", dc.d, s.State)
		dc.assertRoundTrip(s.State, dc.c1)
	case dc.d.is1x():
		dc.s1 = new(wire.SessionState)
		require.NoError(t, json.Unmarshal(s.State, dc.s1), "a %s session snapshot: %s", dc.d, s.State)
		dc.assertRoundTrip(s.State, dc.s1)
	case isChat:
		require.NoError(t, json.Unmarshal(s.State, &dc.cj))
	default:
		require.NoError(t, json.Unmarshal(s.State, &dc.sj))
	}
}

// apply reduces the envelopes received since the last call into the
// client's state (the typed dialects; the others keep no state).
func (dc *dclient) apply() {
	envs := dc.rc.Envelopes()
	for _, e := range envs[dc.next:] {
		dc.applyOne(e)
	}
	dc.next = len(envs)
}

func (dc *dclient) applyOne(e bridgetest.Envelope) {
	t := dc.t
	dc.maxSeq = max(dc.maxSeq, e.ServerSeq)
	if e.RejectionReason != nil {
		return // a rejected action changes nothing
	}
	from, followed := dc.fromSeq[e.Channel]
	if !followed || e.ServerSeq <= from {
		return // in the snapshot already, or a channel whose state is not kept
	}
	raw, err := json.Marshal(e)
	require.NoError(t, err)
	switch {
	case dc.d.is030():
		var env w3wire.ActionEnvelope
		require.NoError(t, json.Unmarshal(raw, &env))
		if e.Channel == dc.session {
			w3.Session(dc.s3, env.Action, w3.SystemClock)
		}
	case dc.d.is070():
		var env w7wire.ActionEnvelope
		require.NoError(t, json.Unmarshal(raw, &env))
		switch e.Channel {
		case dc.session:
			w7.Session(dc.s7, env.Action, w7.SystemClock)
		case dc.chat:
			w7.Chat(dc.c7, env.Action, w7.SystemClock)
		}
	case dc.d.is1x():
		var env wire.ActionEnvelope
		require.NoError(t, json.Unmarshal(raw, &env))
		switch e.Channel {
		case dc.session:
			reducer.Session(dc.s1, env.Action, reducer.SystemClock)
		case dc.chat:
			reducer.Chat(dc.c1, env.Action, reducer.SystemClock)
		}
	}
}

// wait waits until cond holds of the client's state, reduced up to date.
func (dc *dclient) wait(what string, cond func() bool) {
	dc.t.Helper()
	dc.rc.Until(fmt.Sprintf("%s (a %s client)", what, dc.d), func() bool {
		dc.apply()
		return cond()
	})
}

// findEnvelope returns the first envelope received on the current
// connection that matches, or nil.
func (dc *dclient) findEnvelope(match func(bridgetest.Envelope) bool) *bridgetest.Envelope {
	for _, e := range dc.rc.Envelopes() {
		if match(e) {
			return &e
		}
	}
	return nil
}

// action builds an action of the client's version.
func action(typ string, members map[string]any) map[string]any {
	a := map[string]any{"type": typ}
	for k, v := range members {
		a[k] = v
	}
	return a
}

// dispatch sends an action on the channel of the client's turns and waits
// for the server's answer to it.
func (dc *dclient) dispatch(a map[string]any) bridgetest.Envelope {
	dc.t.Helper()
	return dc.rc.Echo(dc.rc.Dispatch(dc.chat, a))
}

// mustDispatch is dispatch for actions the server must accept.
func (dc *dclient) mustDispatch(a map[string]any) bridgetest.Envelope {
	dc.t.Helper()
	e := dc.dispatch(a)
	require.Nil(dc.t, e.RejectionReason, "%s was rejected: %s", a["type"], acpDeref(e.RejectionReason))
	require.Equal(dc.t, a["type"], e.Type(), "the echo has the type the client sent")
	return e
}

// turnStarted is the client's version of a turn start with a user message.
func (dc *dclient) turnStarted(turnID, text string) map[string]any {
	m := map[string]any{"turnId": turnID, "message": map[string]any{"text": text, "origin": map[string]any{"kind": "user"}}}
	if !dc.d.before("0.6.0") {
		m["startedAt"] = reducer.FormatTime(reducer.SystemClock())
	}
	return action(dc.d.turnAction("turnStarted"), m)
}

// startTurn starts a turn with text and returns its id.
func (dc *dclient) startTurn(text string) string {
	dc.t.Helper()
	id := client.NewUUID()
	dc.mustDispatch(dc.turnStarted(id, text))
	return id
}

// approval and denial are the client's version of a tool call
// confirmation.
func (dc *dclient) approval(turnID, toolCallID string) map[string]any {
	return action(dc.d.turnAction("toolCallConfirmed"), map[string]any{
		"turnId": turnID, "toolCallId": toolCallID, "approved": true, "confirmed": "user-action"})
}

func (dc *dclient) denial(turnID, toolCallID string) map[string]any {
	return action(dc.d.turnAction("toolCallConfirmed"), map[string]any{
		"turnId": turnID, "toolCallId": toolCallID, "approved": false, "reason": "denied"})
}

// cancellation is the client's version of cancelling a turn.
func (dc *dclient) cancellation(turnID string) map[string]any {
	m := map[string]any{"turnId": turnID}
	if !dc.d.before("0.6.0") {
		m["duration"] = 0 // required since 0.6.0; the host measures it
	}
	return action(dc.d.turnAction("turnCancelled"), m)
}

// pendingTool waits until a tool call of turn turnID waits for a
// confirmation and returns its id: from the reduced state in the typed
// dialects, from the toolCallReady without `confirmed` in the others.
func (dc *dclient) pendingTool(turnID string) string {
	dc.t.Helper()
	var id string
	dc.wait("a tool call of turn "+turnID+" pending confirmation", func() bool {
		switch {
		case dc.d.is030():
			if at := dc.s3.ActiveTurn; at != nil && at.ID == turnID {
				for _, p := range at.ResponseParts {
					if tc, ok := p.Value.(*w3wire.ToolCallResponsePart); ok {
						if pc, ok := tc.ToolCall.Value.(*w3wire.ToolCallPendingConfirmationState); ok {
							id = pc.ToolCallID
							return true
						}
					}
				}
			}
			return false
		case dc.d.is070():
			if at := dc.c7.ActiveTurn; at != nil && at.ID == turnID {
				for _, p := range at.ResponseParts {
					if tc, ok := p.Value.(*w7wire.ToolCallResponsePart); ok {
						if pc, ok := tc.ToolCall.Value.(*w7wire.ToolCallPendingConfirmationState); ok {
							id = pc.ToolCallID
							return true
						}
					}
				}
			}
			return false
		case dc.d.is1x():
			if at := dc.c1.ActiveTurn; at != nil && at.ID == turnID {
				for _, p := range at.ResponseParts {
					if tc, ok := p.Value.(*wire.ToolCallResponsePart); ok {
						if pc, ok := tc.ToolCall.Value.(*wire.ToolCallPendingConfirmationState); ok {
							id = pc.ToolCallID
							return true
						}
					}
				}
			}
			return false
		}
		e := dc.findEnvelope(func(e bridgetest.Envelope) bool {
			if e.Channel != dc.chat || e.Type() != "chat/toolCallReady" {
				return false
			}
			var a map[string]any
			_ = json.Unmarshal(e.Action, &a)
			_, confirmed := a["confirmed"]
			return a["turnId"] == turnID && !confirmed
		})
		if e == nil {
			return false
		}
		var a struct {
			ToolCallID string `json:"toolCallId"`
		}
		require.NoError(dc.t, json.Unmarshal(e.Action, &a))
		id = a.ToolCallID
		return true
	})
	return id
}

// waitTurnEnd waits for the action that ends turn turnID and returns its
// type without the channel prefix (turnComplete, turnCancelled, error).
func (dc *dclient) waitTurnEnd(turnID string) string {
	dc.t.Helper()
	var end string
	dc.wait("the end of turn "+turnID, func() bool {
		e := dc.findEnvelope(func(e bridgetest.Envelope) bool {
			switch e.Type() {
			case dc.d.turnAction("turnComplete"), dc.d.turnAction("turnCancelled"), dc.d.turnAction("error"):
			default:
				return false
			}
			var a struct {
				TurnID string `json:"turnId"`
			}
			return json.Unmarshal(e.Action, &a) == nil && a.TurnID == turnID && e.RejectionReason == nil
		})
		if e == nil {
			return false
		}
		require.Equal(dc.t, dc.chat, e.Channel, "a turn ends on the channel of its turns")
		_, end, _ = strings.Cut(e.Type(), "/")
		return true
	})
	return end
}

// toolView and turnView are what the tests assert about a turn, read
// from any dialect's state.
type toolView struct {
	Status  string
	Success bool   // completed
	Reason  string // cancelled
}

type turnView struct {
	ID    string
	State string
	Text  string // the markdown parts, concatenated
	Tools map[string]toolView
	// Error is the error a failed turn ended with, as "errorType: message":
	// the turn's error up to 0.7.0, its last (error) part since 0.9.0.
	Error string
}

// turn returns the view of ended turn turnID: from the reduced state in
// the typed dialects, from a fresh snapshot in the others.
func (dc *dclient) turn(turnID string) turnView {
	dc.t.Helper()
	dc.apply()
	switch {
	case dc.d.is030():
		for _, tr := range dc.s3.Turns {
			if tr.ID == turnID {
				return view030(tr)
			}
		}
	case dc.d.is070():
		for _, tr := range dc.c7.Turns {
			if tr.ID == turnID {
				return view070(tr)
			}
		}
	case dc.d.is1x():
		for _, tr := range dc.c1.Turns {
			if tr.ID == turnID {
				return view1x(tr)
			}
		}
	default:
		fresh := dc.fresh()
		for _, tr := range array(fresh.cj["turns"]) {
			if tr := object(tr); tr["id"] == turnID {
				return viewJSON(tr)
			}
		}
	}
	require.Failf(dc.t, "no such turn", "turn %s is not among the %s client's turns", turnID, dc.d)
	return turnView{}
}

func errorView(errorType, message string) string { return errorType + ": " + message }

func view030(tr w3wire.Turn) turnView {
	v := turnView{ID: tr.ID, State: string(tr.State), Tools: map[string]toolView{}}
	if tr.Error != nil {
		v.Error = errorView(tr.Error.ErrorType, tr.Error.Message)
	}
	for _, p := range tr.ResponseParts {
		switch p := p.Value.(type) {
		case *w3wire.MarkdownResponsePart:
			v.Text += p.Content
		case *w3wire.ToolCallResponsePart:
			id, _ := w3.ToolCallID(p.ToolCall)
			tv := toolView{Status: p.ToolCall.Status()}
			switch s := p.ToolCall.Value.(type) {
			case *w3wire.ToolCallCompletedState:
				tv.Success = s.Success
			case *w3wire.ToolCallCancelledState:
				tv.Reason = string(s.Reason)
			}
			v.Tools[id] = tv
		}
	}
	return v
}

func view070(tr w7wire.Turn) turnView {
	v := turnView{ID: tr.ID, State: string(tr.State), Tools: map[string]toolView{}}
	if tr.Error != nil {
		v.Error = errorView(tr.Error.ErrorType, tr.Error.Message)
	}
	for _, p := range tr.ResponseParts {
		switch p := p.Value.(type) {
		case *w7wire.MarkdownResponsePart:
			v.Text += p.Content
		case *w7wire.ToolCallResponsePart:
			tv := toolView{Status: p.ToolCall.Status()}
			switch s := p.ToolCall.Value.(type) {
			case *w7wire.ToolCallCompletedState:
				tv.Success = s.Success
			case *w7wire.ToolCallCancelledState:
				tv.Reason = string(s.Reason)
			}
			v.Tools[p.ToolCall.ToolCallID()] = tv
		}
	}
	return v
}

func view1x(tr wire.Turn) turnView {
	v := turnView{ID: tr.ID, State: string(tr.State), Tools: map[string]toolView{}}
	if e := client.TurnError(&tr); e != nil {
		v.Error = errorView(e.ErrorType, e.Message)
	}
	for _, p := range tr.ResponseParts {
		switch p := p.Value.(type) {
		case *wire.MarkdownResponsePart:
			v.Text += p.Content
		case *wire.ToolCallResponsePart:
			tv := toolView{Status: p.ToolCall.Status()}
			switch s := p.ToolCall.Value.(type) {
			case *wire.ToolCallCompletedState:
				tv.Success = s.Success
			case *wire.ToolCallCancelledState:
				tv.Reason = string(s.Reason)
			}
			v.Tools[p.ToolCall.ToolCallID()] = tv
		}
	}
	return v
}

func viewJSON(tr map[string]any) turnView {
	v := turnView{Tools: map[string]toolView{}}
	v.ID, _ = tr["id"].(string)
	v.State, _ = tr["state"].(string)
	if e := object(tr["error"]); e != nil { // the chat dialects before 0.7.0
		typ, _ := e["errorType"].(string)
		msg, _ := e["message"].(string)
		v.Error = errorView(typ, msg)
	}
	for _, p := range array(tr["responseParts"]) {
		p := object(p)
		switch p["kind"] {
		case "markdown":
			s, _ := p["content"].(string)
			v.Text += s
		case "toolCall":
			tc := object(p["toolCall"])
			id, _ := tc["toolCallId"].(string)
			tv := toolView{}
			tv.Status, _ = tc["status"].(string)
			tv.Success, _ = tc["success"].(bool)
			tv.Reason, _ = tc["reason"].(string)
			v.Tools[id] = tv
		}
	}
	return v
}

func array(v any) []any { a, _ := v.([]any); return a }

func object(v any) map[string]any { m, _ := v.(map[string]any); return m }

// fresh returns a new client of the same version that subscribed to the
// followed session just now: its state is a fresh snapshot.
func (dc *dclient) fresh() *dclient {
	dc.t.Helper()
	f := newDClient(dc.t, dc.env, dc.d)
	f.subscribe(dc.session)
	return f
}

// assertEqualsFresh checks that the client's reduced state equals a fresh
// snapshot (0.3.0: the session; the chat-channel dialects: the session and
// its default chat).
// The reducers stamp modifiedAt by the client's clock, so that member is
// taken from the snapshot. A difference only fails the test when nothing
// was sequenced after the snapshot; otherwise it is taken again.
func (dc *dclient) assertEqualsFresh() {
	dc.t.Helper()
	require.True(dc.t, dc.d.typed(), "only the typed dialects' clients reduce their state")
	for attempt := 0; ; attempt++ {
		f := dc.fresh()
		snapSeq := f.fromSeq[dc.session]
		dc.rc.Ping() // everything sequenced before the snapshot has arrived
		dc.apply()
		mine, theirs := dc.stateJSON(f)
		if mine == theirs {
			return
		}
		if dc.maxSeq <= snapSeq || attempt == 10 {
			require.Equal(dc.t, theirs, mine, "the %s client's state differs from a fresh snapshot", dc.d)
		}
	}
}

// stateJSON encodes the client's state and a fresh client's, comparably.
func (dc *dclient) stateJSON(f *dclient) (mine, theirs string) {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(dc.t, err)
		return string(b)
	}
	if dc.d.is030() {
		s := *dc.s3
		// Like modifiedAt, a 0.3.0 summary's changes reach its clients
		// only as a sessionSummaryChanged notification, not through the
		// session's actions.
		s.Summary.ModifiedAt = f.s3.Summary.ModifiedAt
		s.Summary.Changes = f.s3.Summary.Changes
		mine, theirs = enc(&s), enc(f.s3)
		if dc.ignoreToolMeta {
			mine, theirs = withoutToolMeta(dc.t, mine), withoutToolMeta(dc.t, theirs)
		}
		return mine, theirs
	}
	if dc.d.is070() {
		c := *dc.c7
		c.ModifiedAt = f.c7.ModifiedAt
		return enc(dc.s7) + "\n" + enc(&c), enc(f.s7) + "\n" + enc(f.c7)
	}
	c := *dc.c1
	c.ModifiedAt = f.c1.ModifiedAt
	return enc(dc.s1) + "\n" + enc(&c), enc(f.s1) + "\n" + enc(f.c1)
}

// withoutToolMeta drops the _meta of every tool call in an encoded state.
func withoutToolMeta(t *testing.T, s string) string {
	var tree any
	require.NoError(t, json.Unmarshal([]byte(s), &tree))
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if tc := object(v["toolCall"]); v["kind"] == "toolCall" && tc != nil {
				delete(tc, "_meta")
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(tree)
	b, err := json.Marshal(tree)
	require.NoError(t, err)
	return string(b)
}

// lastSeen is the highest serverSeq the client has received.
func (dc *dclient) lastSeen() int64 {
	dc.apply()
	return dc.maxSeq
}

// subscriptions are the channels the client follows, as its version names
// them.
func (dc *dclient) subscriptions() []string {
	if dc.d.is030() {
		return []string{"ahp-root://", dc.session}
	}
	return []string{"ahp-root://", dc.session, dc.chat}
}

// reconnectResult is a reconnect answer of any dialect.
type reconnectResult struct {
	Type      string                `json:"type"`
	Actions   []bridgetest.Envelope `json:"actions"`
	Missing   []string              `json:"missing"`
	Snapshots []snapshot            `json:"snapshots"`
}

// reconnect opens a new connection whose first message is reconnect, as
// the official clients resume, and brings the client's state up to date
// from the answer: replayed envelopes or fresh snapshots.
func (dc *dclient) reconnect() reconnectResult {
	dc.t.Helper()
	last := dc.lastSeen()
	dc.rc.Close()
	dc.rc = bridgetest.DialRaw(dc.t, dc.env.URL, dc.id)
	dc.all = append(dc.all, dc.rc)
	dc.next = 0
	var r reconnectResult
	res := dc.rc.MustCall("reconnect", map[string]any{
		"channel": "ahp-root://", "clientId": dc.id, "lastSeenServerSeq": last, "subscriptions": dc.subscriptions(),
	})
	require.NoError(dc.t, json.Unmarshal(res, &r), "reconnect result %s", res)
	switch r.Type {
	case "replay":
		assert.Empty(dc.t, r.Missing)
		dc.replayed = append(dc.replayed, r.Actions...)
		for _, e := range r.Actions {
			require.Greater(dc.t, e.ServerSeq, last, "replayed envelopes are the ones after lastSeenServerSeq")
			dc.applyOne(e)
		}
	case "snapshot":
		for _, s := range r.Snapshots {
			if s.Resource != "ahp-root://" {
				dc.setSnapshot(s)
			}
		}
	default:
		require.Failf(dc.t, "bad reconnect result", "%s", res)
	}
	return r
}
