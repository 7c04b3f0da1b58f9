package reducer

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// fixtureCount is how many reducer fixtures the AHP 0.7.0 release has; a
// shorter folder means the data vectors are incomplete.
const fixtureCount = 247

// fixtureClock is the time the fixtures were generated with (the reference
// test pins Date.now to 9999 ms).
const fixtureClock = 9999

// newState returns a pointer to a zero state of the kind a fixture names.
func newState(kind string) (any, bool) {
	switch kind {
	case "root":
		return new(wire.RootState), true
	case "session":
		return new(wire.SessionState), true
	case "chat":
		return new(wire.ChatState), true
	case "terminal":
		return new(wire.TerminalState), true
	case "changeset":
		return new(wire.ChangesetState), true
	case "annotations":
		return new(wire.AnnotationsState), true
	case "resourceWatch":
		return new(wire.ResourceWatchState), true
	case "automation":
		return new(wire.AutomationState), true
	case "automationRun":
		return new(wire.AutomationRunState), true
	case "canvas":
		return new(wire.CanvasState), true
	}
	return nil, false
}

// reduceJSON decodes the initial state, applies every action with the
// fixture clock and returns the encoded result.
func reduceJSON(t *testing.T, kind string, initial json.RawMessage, actions []json.RawMessage) []byte {
	t.Helper()
	st, ok := newState(kind)
	require.True(t, ok, "unknown reducer %q", kind)
	require.NoError(t, json.Unmarshal(initial, st))
	clock := Clock(func() int64 { return fixtureClock })
	for i, raw := range actions {
		var a wire.StateAction
		require.NoError(t, json.Unmarshal(raw, &a), "action %d", i)
		Apply(st, a, clock)
	}
	out, err := wire.Marshal(st)
	require.NoError(t, err)
	return out
}

// Converting a 0.7.0 fixture to 1.0.0.
//
// The fixtures' states and actions are 0.7.0 JSON. Where 1.0.0 writes the
// same thing differently, the initial state, every action and the expected
// state are all rewritten by the same rules, so that the fixture asks of the
// 1.0.0 reducer what it asked of the 0.7.0 one:
//
//   - Turn.error → a trailing {"kind":"error","error":…} response part (in
//     chat states and in chat/turnsLoaded), and chat/error {error} →
//     chat/error {part: {"kind":"error","error":…}};
//   - SessionLifecycle "creationFailed" → "failed";
//   - terminals (TerminalState, TerminalInfo): exitCode → lifecycle
//     {"status":"exited","exitCode":…}, no exitCode → {"status":"running"};
//   - TerminalSessionClaim gains chat, the session's default chat, named as
//     the host names it (ahp-chat:/<the session URI's path>);
//   - Annotation.turnId → origin {session: fixtureSession, turnId} ("" is no
//     turn), and annotations/updated {turnId} → {origin: …} alike;
//   - plugin and MCP server customizations (top-level, children, clients'):
//     enabled → enablement [{"kind":"global","enabled":…}], and
//     session/customizationToggled {enabled} → {enablement: […]} alike, the
//     upgrade docs/protocol-versions.md §11.2 gives for a 0.7 client;
//   - modifiedAt of a chat: 0.7.0 stamped the reducer's clock (9999 ms) on
//     turn starts and ends, truncations and input requests; 1.0.0 derives it
//     from the turn actions (startedAt, startedAt + duration) and leaves it
//     alone otherwise. modifiedAt10 gives, per fixture, the value that rule
//     yields, worked out from the fixture's actions.
//
// convertFixtureExclusions lists the fixtures that cannot be converted, with
// the reason; they are run anyway, and must still fail, so that the list
// cannot go stale.

// fixtureSession is the session that converted annotations belong to.
const fixtureSession = "ahp-session:/fixture"

type jsonObject = map[string]any

// modifiedAt10 is the chat modifiedAt 1.0.0 reaches in the fixtures whose
// 0.7.0 expectation is the fixture clock, worked out by hand from each
// fixture's actions.
var modifiedAt10 = map[string]string{
	// chat/turnStarted: the turn's startedAt (1 s in every fixture).
	"005-session-turnstarted": "1970-01-01T00:00:01.000Z",
	"006-turnstarted-with-queuedmessageid-removes-from-queuedmessages":        "1970-01-01T00:00:01.000Z",
	"007-turnstarted-with-queuedmessageid-removes-last-queued-message":        "1970-01-01T00:00:01.000Z",
	"008-turnstarted-with-queuedmessageid-removes-matching-steering-message":  "1970-01-01T00:00:01.000Z",
	"009-turnstarted-without-queuedmessageid-does-not-touch-pending-messages": "1970-01-01T00:00:01.000Z",
	"075-turnstarted-clears-isread":                                           "1970-01-01T00:00:01.000Z",
	// A turn start, then input actions, which leave modifiedAt alone.
	"105-session-input-full-draft-and-complete-flow": "1970-01-01T00:00:01.000Z",
	// The end of a turn: its startedAt plus its duration. Most fixtures
	// end a turn started at 1 s after 8999 ms, i.e. at the clock's 9999 ms.
	"014-session-turncomplete-finalizes-turn":                "1970-01-01T00:00:09.999Z",
	"015-session-turncancelled-finalizes-turn":               "1970-01-01T00:00:09.999Z",
	"016-session-error-finalizes-turn-with-error":            "1970-01-01T00:00:09.999Z",
	"017-turncomplete-force-cancels-in-progress-tool-calls":  "1970-01-01T00:00:09.999Z",
	"070-full-turn-flow-with-tool-calls-and-re-confirmation": "1970-01-01T00:00:09.999Z",
	"099-endturn-force-cancels-running-tool-call":            "1970-01-01T00:00:09.999Z",
	"107-session-input-turn-end-cleans-turn-scoped-only":     "1970-01-01T00:00:09.999Z",
	"161-chat-turn-lifecycle-on-chat":                        "1970-01-01T00:00:09.999Z",
	// Started at 10 s, duration -1000 clamped to 0.
	"240-turn-duration-is-clamped-to-zero": "1970-01-01T00:00:10.000Z",
	// Started at 1 s, duration 500.
	"250-turncomplete-force-cancels-auth-required-tool-call": "1970-01-01T00:00:01.500Z",
	// Truncations and input actions carry no time: the initial modifiedAt
	// stays.
	"063-session-truncated-keeps-turns-up-to-turnid":                 "1970-01-01T00:00:01.000Z",
	"064-session-truncated-keeps-all-when-turnid-is-last":            "1970-01-01T00:00:01.000Z",
	"065-session-truncated-keeps-only-first-when-turnid-is-first":    "1970-01-01T00:00:01.000Z",
	"066-session-truncated-clears-all-when-turnid-omitted":           "1970-01-01T00:00:01.000Z",
	"067-session-truncated-drops-active-turn":                        "1970-01-01T00:00:02.000Z",
	"068-session-truncated-drops-active-turn-even-when-clearing-all": "1970-01-01T00:00:02.000Z",
	"106-session-input-requested-with-drafts-status":                 "1970-01-01T00:00:02.000Z",
	"108-session-input-upsert-and-clear-answer":                      "1970-01-01T00:00:02.000Z",
	"110-session-input-completion-and-truncation-filtering":          "1970-01-01T00:00:02.000Z",
	"234-chat-truncated-clears-turns-next-cursor-when-clearing-all":  "1970-01-01T00:00:01.000Z",
	"235-session-input-completion-records-declined-request-in-turn":  "1970-01-01T00:00:01.000Z",
}

// convertFixtureExclusions are the 0.7.0 fixtures that ask something 1.0.0
// answers differently, so that no rewriting of their JSON can make them
// apply; each reason names what 1.0.0 does instead and where it is tested.
var convertFixtureExclusions = map[string]string{
	"159-changeset-contentchanged-updates-error": "0.9.0 removed changeset/contentChanged.error: a changeset's failure " +
		"is only its status (changeset/statusChanged), and new content leaves the state's error as it is " +
		"(testdata/rules/changeset-contentchanged-keeps-the-error.json)",
	"225-session-inputneededset-replaces-existing": "the entry is a toolClientExecution, which since 0.8.0 is work " +
		"delegated to a client rather than a question, so it no longer raises InputNeeded (the fixture expects status " +
		"24, 1.0.0 keeps 8; testdata/rules/session-inputneeded-toolclientexecution-*.json)",
}

// convertState rewrites a 0.7.0 state of the given kind into 1.0.0 JSON.
func convertState(kind string, v any) {
	s, ok := v.(jsonObject)
	if !ok {
		return
	}
	switch kind {
	case "chat":
		for _, t := range arr(s["turns"]) {
			convertTurn(t)
		}
	case "session":
		if s["lifecycle"] == "creationFailed" {
			s["lifecycle"] = "failed"
		}
		for _, c := range arr(s["customizations"]) {
			convertCustomization(c)
		}
		for _, c := range arr(s["activeClients"]) {
			convertActiveClient(c)
		}
	case "terminal":
		convertTerminal(s)
	case "root":
		for _, t := range arr(s["terminals"]) {
			if o, ok := t.(jsonObject); ok {
				convertTerminal(o)
			}
		}
	case "annotations":
		for _, a := range arr(s["annotations"]) {
			if o, ok := a.(jsonObject); ok {
				convertAnnotationTurn(o, "turnId")
			}
		}
	}
}

// convertAction rewrites a 0.7.0 action into 1.0.0 JSON.
func convertAction(v any) {
	a, ok := v.(jsonObject)
	if !ok {
		return
	}
	switch a["type"] {
	case "chat/error":
		a["part"] = jsonObject{"kind": "error", "error": a["error"]}
		delete(a, "error")
	case "chat/turnsLoaded":
		for _, t := range arr(a["turns"]) {
			convertTurn(t)
		}
	case "session/customizationToggled":
		if e, ok := a["enabled"]; ok {
			a["enablement"] = []any{jsonObject{"kind": "global", "enabled": e}}
			delete(a, "enabled")
		}
	case "session/customizationsChanged":
		for _, c := range arr(a["customizations"]) {
			convertCustomization(c)
		}
	case "session/customizationUpdated":
		convertCustomization(a["customization"])
	case "session/activeClientSet":
		convertActiveClient(a["activeClient"])
	case "terminal/claimed":
		convertClaim(a["claim"])
	case "root/terminalsChanged":
		for _, t := range arr(a["terminals"]) {
			if o, ok := t.(jsonObject); ok {
				convertTerminal(o)
			}
		}
	case "annotations/set":
		if o, ok := a["annotation"].(jsonObject); ok {
			convertAnnotationTurn(o, "turnId")
		}
	case "annotations/updated":
		if _, ok := a["turnId"]; ok {
			convertAnnotationTurn(a, "turnId")
		}
	}
}

func arr(v any) []any {
	a, _ := v.([]any)
	return a
}

// convertTurn moves a completed turn's error into a trailing error part.
func convertTurn(v any) {
	t, ok := v.(jsonObject)
	if !ok {
		return
	}
	e, ok := t["error"]
	if !ok {
		return
	}
	delete(t, "error")
	if e == nil {
		return
	}
	t["responseParts"] = append(arr(t["responseParts"]), jsonObject{"kind": "error", "error": e})
}

// convertCustomization turns a plugin's or MCP server's enabled flag into
// the global enablement decision, in the entry and its children.
func convertCustomization(v any) {
	c, ok := v.(jsonObject)
	if !ok {
		return
	}
	switch c["type"] {
	case "plugin", "mcpServer":
		if e, ok := c["enabled"]; ok {
			c["enablement"] = []any{jsonObject{"kind": "global", "enabled": e}}
			delete(c, "enabled")
		}
	}
	for _, k := range arr(c["children"]) {
		convertCustomization(k)
	}
}

func convertActiveClient(v any) {
	c, ok := v.(jsonObject)
	if !ok {
		return
	}
	for _, p := range arr(c["customizations"]) {
		convertCustomization(p)
	}
}

// convertTerminal gives a terminal (state or info) its lifecycle.
func convertTerminal(s jsonObject) {
	if code, ok := s["exitCode"]; ok {
		delete(s, "exitCode")
		life := jsonObject{"status": "exited"}
		if code != nil {
			life["exitCode"] = code
		}
		s["lifecycle"] = life
	} else {
		s["lifecycle"] = jsonObject{"status": "running"}
	}
	convertClaim(s["claim"])
}

// convertClaim names the chat of a session claim: the session's default
// chat, whose URI the host derives from the session's (ahp/host).
func convertClaim(v any) {
	c, ok := v.(jsonObject)
	if !ok || c["kind"] != "session" {
		return
	}
	if _, ok := c["chat"]; ok {
		return
	}
	session, _ := c["session"].(string)
	path := session
	if i := strings.Index(session, ":/"); i >= 0 {
		path = session[i+2:]
	}
	c["chat"] = "ahp-chat:/" + path
}

// convertAnnotationTurn replaces the member turnKey (a turn id, "" for
// none) with the annotation origin 1.0.0 has.
func convertAnnotationTurn(o jsonObject, turnKey string) {
	turn, ok := o[turnKey]
	if !ok {
		return
	}
	delete(o, turnKey)
	origin := jsonObject{"session": fixtureSession}
	if s, _ := turn.(string); s != "" {
		origin["turnId"] = s
	}
	o["origin"] = origin
}

// convertedFixture is a fixture in 1.0.0 JSON.
type convertedFixture struct {
	name     string
	f        fixtures.Fixture
	initial  json.RawMessage
	actions  []json.RawMessage
	expected json.RawMessage
}

// convertFixture converts f to 1.0.0 JSON by the rules above.
func convertFixture(t *testing.T, name string, f fixtures.Fixture) convertedFixture {
	t.Helper()
	decode := func(b json.RawMessage) any {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // exact integers, as the fixture wrote them
		var v any
		require.NoError(t, dec.Decode(&v), name)
		return v
	}
	encode := func(v any) json.RawMessage {
		b, err := wire.Marshal(v)
		require.NoError(t, err, name)
		return b
	}
	initial, expected := decode(f.Initial), decode(f.Expected)
	convertState(f.Reducer, initial)
	convertState(f.Reducer, expected)
	if m, ok := modifiedAt10[name]; ok {
		exp, ok := expected.(jsonObject)
		require.True(t, ok, name)
		require.Equal(t, FormatTime(fixtureClock), exp["modifiedAt"], "%s: modifiedAt10 lists a fixture whose 0.7.0 expectation is not the clock", name)
		exp["modifiedAt"] = m
	}
	c := convertedFixture{name: name, f: f, initial: encode(initial), expected: encode(expected)}
	for _, raw := range f.Actions {
		a := decode(raw)
		convertAction(a)
		c.actions = append(c.actions, encode(a))
	}
	return c
}

// loadFixtures returns every official 0.7.0 reducer fixture, by file name
// without .json, in name order.
func loadFixtures(t *testing.T) ([]string, map[string]fixtures.Fixture) {
	t.Helper()
	return fixtures.Load(t, testenv.SpecDir(t, "0.7.0", "test-cases", "reducers"), fixtureCount)
}

// TestConvertedFixtures replays every official AHP 0.7.0 reducer fixture,
// converted to 1.0.0, through the 1.0.0 reducers. REDUCER_FIXTURES=chat (a
// comma list of reducer kinds) narrows the run while a reducer is being
// written.
func TestConvertedFixtures(t *testing.T) {
	names, fixes := loadFixtures(t)
	only := map[string]bool{}
	for _, k := range strings.Split(os.Getenv("REDUCER_FIXTURES"), ",") {
		if k == "" {
			continue
		}
		// A misspelt kind would otherwise select nothing and pass.
		if _, ok := newState(k); !ok {
			t.Fatalf("REDUCER_FIXTURES names %q, which is not a reducer kind", k)
		}
		only[k] = true
	}
	for name := range convertFixtureExclusions {
		require.Contains(t, fixes, name, "convertFixtureExclusions names a fixture that does not exist")
	}
	for name := range modifiedAt10 {
		require.Contains(t, fixes, name, "modifiedAt10 names a fixture that does not exist")
	}
	passed := 0
	for _, name := range names {
		f := fixes[name]
		if len(only) > 0 && !only[f.Reducer] {
			continue
		}
		c := convertFixture(t, name, f)
		t.Run(name, func(t *testing.T) {
			got := fixtures.Normalized(t, reduceJSON(t, f.Reducer, c.initial, c.actions))
			want := fixtures.Normalized(t, c.expected)
			if reason, excluded := convertFixtureExclusions[name]; excluded {
				require.NotEqual(t, want, got, "%s is excluded (%s) but now passes: take it off the list", name, reason)
				return
			}
			require.Equal(t, want, got, f.Description)
			passed++
		})
	}
	t.Logf("%d converted fixtures pass, %d are excluded", passed, len(convertFixtureExclusions))
}
