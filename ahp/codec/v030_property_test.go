package codec

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/reducer030"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/reducer070"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// propertyClock is the time both reducers run at. The initial chat's
// modifiedAt is pinned to it too: 0.3.0 stamps summary.modifiedAt on
// session actions (title, model, config) that touch no 0.7.0 chat, and a
// 0.7.0 session has no modifiedAt of its own, so which actions move the
// timestamp differs by design; pinning keeps the timestamp's conversion
// under test without asserting that difference.
const propertyClock = 9999

// propertySession is the session URI of every property scenario.
const propertySession = "ahp-session:/prop"

// propertySkips lists the 0.7.0 reducer fixtures whose effect the 0.3.0
// projection cannot reproduce, each with the reason. Every other chat and
// session fixture must commute.
var propertySkips = map[string]string{
	// Tool-call _meta: 0.7.0 tool-call actions replace the call's _meta
	// with their own; 0.3.0 reducers keep the _meta of toolCallStart, and
	// no 0.3.0 action can change it.
	"026-toolcallready-transitions-running-tool-back-to-pending-confirmation":  "toolCallReady replaces the tool call's _meta in 0.7.0 only",
	"070-full-turn-flow-with-tool-calls-and-re-confirmation":                   "toolCallReady replaces the tool call's _meta in 0.7.0 only",
	"220-toolcall-actions-update-meta":                                         "every 0.7.0 tool-call action replaces the call's _meta; 0.3.0 keeps the start's (and a delta without content leaves partialInput \"\" in 0.3.0)",
	"248-toolcallauthrequired-sets-input-needed-status-and-preserves-metadata": "auth-required (0.6.0) is invisible to 0.3.0, and the action's _meta replaces the call's in 0.7.0 only",
	"249-toolcallauthresolved-preserves-fields-and-clears-input-needed":        "auth-required (0.6.0) is invisible to 0.3.0, and the action's _meta replaces the call's in 0.7.0 only",

	// Reducer rules added after 0.3.0.
	"029-toolcallready-updates-pending-confirmation-tool-calls":                             "0.6.0 lets toolCallReady re-target a pending-confirmation call; the 0.3.0 reducer ignores it",
	"242-toolcallready-completes-risk-assessment":                                           "0.6.0 lets toolCallReady re-target a pending-confirmation call; the 0.3.0 reducer ignores it",
	"257-toolcallready-refines-metadata-without-changing-client-ownership":                  "0.5.1 lets toolCallReady refine the contributor and _meta; 0.3.0 toolCallReady has neither",
	"253-toolcallcomplete-cancels-auth-required-tool-call":                                  "0.3.0 sees the auth-required call running: completing it keeps neither the pre-auth content nor the action's _meta",
	"254-toolcallcomplete-ignores-successful-result-from-auth-required":                     "0.7.0 ignores a successful completion of an auth-required call; 0.3.0 sees a running call and completes it",
	"255-toolcallcomplete-ignores-requiresresultconfirmation-when-cancelling-auth-required": "0.7.0 ignores requiresResultConfirmation from auth-required; 0.3.0 sees a running call and honours it",

	// State 0.3.0 has one slot, or no action, for.
	"221-session-activeclientremoved-removes-client":         "0.3.0 has one active-client slot; stateless, a removal empties it even when another client remains",
	"222-session-activeclientremoved-no-op-unknown-client":   "stateless, a removal empties the 0.3.0 slot even for a client that was not there",
	"241-session-workingdirectoryset-adds-to-empty-set":      "no 0.3.0 session action carries workingDirectory (only the root catalog's sessionSummaryChanged)",
	"244-session-workingdirectoryremoved-removes-existing":   "no 0.3.0 session action carries workingDirectory (only the root catalog's sessionSummaryChanged)",
	"232-chat-turnsloaded-prepends-older-turns":              "0.3.0 pages turns with fetchTurns; chat/turnsLoaded (0.5.1) is not sent",
	"233-chat-turnsloaded-dedupes-overlap-and-clears-cursor": "0.3.0 pages turns with fetchTurns; chat/turnsLoaded (0.5.1) is not sent",
}

// scenario is a session, its default chat and the host actions applied to
// them, each on the session's channel or the chat's.
type scenario struct {
	session *wire.SessionState
	chat    *wire.ChatState
	actions []hostAction
}

type hostAction struct {
	onChat  bool // on the default chat, else on the session
	onSide  bool // on a second chat of the session
	from030 bool // a 0.3.0 client's action on the session
	action  json.RawMessage
}

// sideChat is the second chat of every scenario session.
const sideChat = "ahp-chat:/prop-side"

// TestV030Commutes checks the projection against both reducers: for every
// scenario, projecting the 0.7.0 state reached by the host's actions must
// give what a 0.3.0 client reaches by applying the projected actions to the
// projected initial state:
//
//	project(reduce070(s, as)) == reduce030(project(s), projectActions(as))
//
// compared as JSON without null members. The scenarios are the official
// 0.7.0 chat and session reducer fixtures, each completed with a session or
// a default chat, and the full turns of v030Scenarios.
func TestV030Commutes(t *testing.T) {
	scenarios := fixtureScenarios(t)
	for name, sc := range v030Scenarios(t) {
		scenarios["turn/"+name] = sc
	}
	for _, name := range sortedKeys(scenarios) {
		t.Run(name, func(t *testing.T) { checkCommutes(t, scenarios[name]) })
	}
}

func checkCommutes(t *testing.T, sc scenario) {
	t.Helper()
	clock := func() int64 { return propertyClock }
	chatURI := sc.chat.Resource
	c := newV030(mapDir{propertySession: chatURI})
	summary := &wire.SessionSummary{
		Resource:   propertySession,
		Provider:   sc.session.Provider,
		Title:      sc.session.Title,
		CreatedAt:  "1970-01-01T00:00:01.000Z",
		ModifiedAt: "1970-01-01T00:00:00.000Z",
	}
	project := func() json.RawMessage {
		b, err := c.Snapshot(propertySession, []any{sc.session, sc.chat, summary})
		require.NoError(t, err)
		return b
	}

	side := &wire.ChatState{Resource: sideChat, Status: wire.SessionStatusIdle, Turns: []wire.Turn{}}
	var old w3.SessionState
	require.NoError(t, json.Unmarshal(project(), &old))
	for i, ha := range sc.actions {
		channel, raw := propertySession, ha.action
		if ha.from030 {
			var err error
			channel, raw, err = c.Action(propertySession, ha.action)
			require.NoError(t, err, "action %d", i)
			raw = completeAsHost(t, sc, raw)
		}
		var a wire.StateAction
		require.NoError(t, json.Unmarshal(raw, &a), "action %d", i)
		before, err := json.Marshal(sc.chat)
		require.NoError(t, err)
		switch {
		case ha.onSide:
			channel = sideChat
			reducer070.Chat(side, a, clock)
		case ha.onChat || channel == chatURI:
			channel = chatURI
			reducer070.Chat(sc.chat, a, clock)
		default:
			reducer070.Session(sc.session, a, clock)
		}
		envs := c.Envelope(Envelope{Channel: channel, Action: raw, ServerSeq: int64(i + 1)})
		if ha.onSide {
			require.Empty(t, envs, "a side chat's action reaches 0.3.0")
		}
		envs = append(envs, hostRules(t, c, sc, a, before)...)
		for _, e := range envs {
			require.Equal(t, propertySession, e.Channel, "every projected action is on the session channel")
			var a3 w3.StateAction
			require.NoError(t, json.Unmarshal(e.Action, &a3))
			reducer030.Session(&old, a3, clock)
		}
	}
	got, err := json.Marshal(&old)
	require.NoError(t, err)
	require.Equal(t, fixtures.Normalized(t, project()), fixtures.Normalized(t, got))
}

// hostRules applies what the host does besides dispatching the scenario's
// actions, as the host should: when a turn starts or an input request
// opens on the default chat of a session marked read, 0.3.0 marks the
// session unread (its reducer clears IsRead there) while 0.7.0 only
// clears the flag on the chat; the host keeps the two in step with
// session/isReadChanged.
func hostRules(t *testing.T, c *v030, sc scenario, a wire.StateAction, chatBefore []byte) []Envelope {
	t.Helper()
	switch a.Type() {
	case string(wire.ActionTypeChatTurnStarted), string(wire.ActionTypeChatInputRequested):
	default:
		return nil
	}
	after, err := json.Marshal(sc.chat)
	require.NoError(t, err)
	if string(after) == string(chatBefore) || !sc.session.Status.Has(wire.SessionStatusIsRead) {
		return nil
	}
	unread := wire.Action(&wire.SessionIsReadChangedAction{IsRead: false})
	reducer070.Session(sc.session, unread, nil)
	b, err := wire.Marshal(unread)
	require.NoError(t, err)
	return c.Envelope(Envelope{Channel: propertySession, Action: b})
}

// fixtureScenarios wraps every 0.7.0 chat and session reducer fixture not
// in propertySkips into a scenario.
func fixtureScenarios(t *testing.T) map[string]scenario {
	t.Helper()
	dir := testenv.SpecDir(t, "0.7.0", "test-cases", "reducers")
	names, fixes := fixtures.Load(t, dir, 0)
	out := map[string]scenario{}
	seen := map[string]bool{}
	for _, name := range names {
		f := fixes[name]
		if f.Reducer != "chat" && f.Reducer != "session" {
			continue
		}
		seen[name] = true
		if _, skip := propertySkips[name]; skip {
			continue
		}
		var sc scenario
		switch f.Reducer {
		case "chat":
			sc.chat = new(wire.ChatState)
			require.NoError(t, json.Unmarshal(f.Initial, sc.chat), name)
			sc.session = wrapperSession(sc.chat)
		case "session":
			sc.session = new(wire.SessionState)
			require.NoError(t, json.Unmarshal(f.Initial, sc.session), name)
			sc.chat = wrapperChat(sc.session)
		}
		sc.chat.ModifiedAt = reducer070.FormatTime(propertyClock)
		for _, a := range f.Actions {
			sc.actions = append(sc.actions, hostAction{onChat: f.Reducer == "chat", action: a})
		}
		out["fixture/"+name] = sc
	}
	for name := range propertySkips {
		require.True(t, seen[name], "skip table names %s, which is no chat or session fixture", name)
	}
	require.GreaterOrEqual(t, len(seen), 190, "expected the chat and session fixtures of AHP 0.7.0 in %s", dir)
	return out
}

// wrapperSession is the session a chat fixture's chat is the default chat
// of. It is marked read and archived as the chat is, so that the flags the
// 0.3.0 summary takes from the session match the chat's story.
func wrapperSession(chat *wire.ChatState) *wire.SessionState {
	flags := chat.Status &^ chat.Status.Activity()
	return &wire.SessionState{
		Provider:      "copilot",
		Title:         "Property session",
		Status:        wire.SessionStatusIdle | flags,
		Lifecycle:     wire.SessionLifecycleReady,
		ActiveClients: []wire.SessionActiveClient{},
		Chats:         []wire.ChatSummary{{Resource: chat.Resource, Title: chat.Title, Status: chat.Status, ModifiedAt: chat.ModifiedAt}},
		DefaultChat:   wire.Ptr(chat.Resource),
	}
}

// wrapperChat is the default chat of a session fixture's session: the one
// it names, else a new one, idle and empty.
func wrapperChat(s *wire.SessionState) *wire.ChatState {
	uri := "ahp-chat:/prop-main"
	if s.DefaultChat != nil {
		uri = *s.DefaultChat
	}
	return &wire.ChatState{Resource: uri, Title: s.Title, Status: wire.SessionStatusIdle, Turns: []wire.Turn{}}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
