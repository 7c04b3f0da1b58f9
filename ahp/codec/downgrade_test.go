package codec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	w7 "github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// olderDialects are the dialects below Current, newest first: every one
// has a codec (For), and the golden cases of testdata/v1x give each one's
// output, so that the 0.9.0 and 0.7.0 codecs and the composed 0.6.0, 0.5.x
// and 0.3.0 ones are tested end to end on the same 1.0.0 input.
func olderDialects() []Version {
	var out []Version
	for _, s := range Supported() {
		if v := MustParseVersion(s); v != Current {
			out = append(out, v)
		}
	}
	return out
}

// v1Case is one file of testdata/v1x/<kind>/: an input in the host's
// dialect (1.0.0), or a client's for actions and requests, and what each
// older dialect makes of it.
type v1Case struct {
	Comment string `json:"comment,omitempty"`
	// Snapshots: the URI subscribed to, the host's state of every channel
	// a dialect may ask for (by URI: Channels decides which it gets), and
	// the session's catalogue entry, passed after a session's states.
	URI     string                `json:"uri,omitempty"`
	States  map[string]stateInput `json:"states,omitempty"`
	Summary json.RawMessage       `json:"summary,omitempty"`
	// Channel is the envelope's or dispatched action's channel.
	Channel string `json:"channel,omitempty"`
	// Method is the notification's, request's or result's method.
	Method string `json:"method,omitempty"`
	// Dialects are, for a client's input (actions and requests), the
	// dialects whose clients can send In; none means every older dialect.
	Dialects []string                   `json:"dialects,omitempty"`
	In       json.RawMessage            `json:"in,omitempty"`
	Want     map[string]json.RawMessage `json:"want"`
}

func (gc v1Case) dialects(t *testing.T) []Version {
	if len(gc.Dialects) == 0 {
		return olderDialects()
	}
	out := make([]Version, len(gc.Dialects))
	for i, s := range gc.Dialects {
		out[i] = MustParseVersion(s)
		require.NotEqual(t, Current, out[i], "a case for the host's own dialect tests nothing")
	}
	return out
}

// TestV1Golden runs every golden case of testdata/v1x through the codec of
// every older dialect. AHP_UPDATE_GOLDEN=1 rewrites the "want" members
// instead, for review in the diff.
func TestV1Golden(t *testing.T) {
	update := os.Getenv("AHP_UPDATE_GOLDEN") == "1"
	kinds := map[string]func(t *testing.T, c Codec, gc v1Case) any{
		"snapshots":     v1Snapshot,
		"envelopes":     v1Envelope,
		"notifications": v1Notification,
		"actions":       v1Action,
		"requests":      v1Request,
		"results":       v1Result,
	}
	for kind, run := range kinds {
		files, err := filepath.Glob(filepath.Join("testdata", "v1x", kind, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "no %s cases", kind)
		for _, file := range files {
			t.Run(kind+"/"+strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
				var gc v1Case
				require.NoError(t, json.Unmarshal(readFile(t, file), &gc))
				require.NotEmpty(t, gc.Comment, "say what the case is for")
				checkInputIs100(t, kind, gc)
				got := map[string]json.RawMessage{}
				for _, v := range gc.dialects(t) {
					out, err := wire.Marshal(run(t, For(v, testDirectory()), gc))
					require.NoError(t, err)
					got[v.String()] = out
					if v == V070 {
						checkOutputIs070(t, kind, gc, out)
					}
				}
				if update {
					gc.Want = got
					var buf bytes.Buffer
					enc := json.NewEncoder(&buf)
					enc.SetEscapeHTML(false)
					enc.SetIndent("", "  ")
					require.NoError(t, enc.Encode(gc))
					require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
					return
				}
				require.Len(t, gc.Want, len(got), "want has a member per dialect the case runs for")
				for _, v := range gc.dialects(t) {
					want, ok := gc.Want[v.String()]
					require.True(t, ok, "no want for %s", v)
					if canonical(t, want) != canonical(t, got[v.String()]) {
						t.Errorf("%s:\n got  %s\n want %s", v, indent(got[v.String()]), indent(want))
					}
				}
			})
			if update {
				continue
			}
			t.Run(kind+"/"+strings.TrimSuffix(filepath.Base(file), ".json")+"/vscode-names", func(t *testing.T) {
				var gc v1Case
				require.NoError(t, json.Unmarshal([]byte(vscodeGoldenNames.Replace(string(readFile(t, file)))), &gc))
				for _, v := range gc.dialects(t) {
					out, err := wire.Marshal(run(t, For(v, vscodeDirectory()), gc))
					require.NoError(t, err)
					if want := gc.Want[v.String()]; canonical(t, want) != canonical(t, out) {
						t.Errorf("%s, with VS Code's names:\n got  %s\n want %s", v, indent(out), indent(want))
					}
				}
			})
		}
	}
}

// decodeState100 decodes a host state of a golden case.
func decodeState100(t *testing.T, s stateInput) any {
	t.Helper()
	var v any
	switch s.Kind {
	case "root":
		v = new(wire.RootState)
	case "session":
		v = new(wire.SessionState)
	case "chat":
		v = new(wire.ChatState)
	case "summary":
		v = new(wire.SessionSummary)
	case "terminal":
		v = new(wire.TerminalState)
	case "changeset":
		v = new(wire.ChangesetState)
	case "resourceWatch":
		v = new(wire.ResourceWatchState)
	case "annotations":
		v = new(wire.AnnotationsState)
	default:
		t.Fatalf("unknown state kind %q", s.Kind)
	}
	require.NoError(t, json.Unmarshal(s.State, v))
	return v
}

// v1Snapshot does what the host does: it asks the codec which channels the
// URI means, passes their states in that order, and the session's
// catalogue entry after a session's.
func v1Snapshot(t *testing.T, c Codec, gc v1Case) any {
	channels := c.Channels(gc.URI)
	if channels == nil {
		return map[string]any{"error": "the dialect cannot name " + gc.URI}
	}
	var states []any
	for _, ch := range channels {
		s, ok := gc.States[ch]
		require.True(t, ok, "%s asks for the state of %s", c.Version(), ch)
		states = append(states, decodeState100(t, s))
	}
	if _, ok := states[0].(*wire.SessionState); ok && gc.Summary != nil {
		var sum wire.SessionSummary
		require.NoError(t, json.Unmarshal(gc.Summary, &sum))
		states = append(states, &sum)
	}
	before, err := json.Marshal(states)
	require.NoError(t, err)
	out, err := c.Snapshot(gc.URI, states)
	after, merr := json.Marshal(states)
	require.NoError(t, merr)
	require.JSONEq(t, string(before), string(after), "Snapshot must not change the host's states")
	if err != nil {
		var e *Error
		require.ErrorAs(t, err, &e)
		return map[string]any{"error": map[string]any{"code": e.Code}}
	}
	return json.RawMessage(out)
}

// v1Envelope sends the case's action with an origin and serverSeq 9, and
// returns every envelope the dialect receives.
func v1Envelope(t *testing.T, c Codec, gc v1Case) any {
	in := bytes.Clone(gc.In)
	defer func() { require.Equal(t, string(in), string(gc.In), "Envelope changed the host's bytes") }()
	origin := hostOrigin("c1", 3)
	type out struct {
		Channel string          `json:"channel"`
		Origin  bool            `json:"origin,omitempty"`
		Action  json.RawMessage `json:"action"`
	}
	list := []out{}
	for _, e := range c.Envelope(Envelope{Channel: gc.Channel, Action: gc.In, ServerSeq: 9, Origin: origin}) {
		require.EqualValues(t, 9, e.ServerSeq, "a translated envelope keeps its serverSeq")
		require.True(t, e.Origin == nil || e.Origin == origin, "the origin is passed on or left out, never made up")
		list = append(list, out{Channel: e.Channel, Origin: e.Origin != nil, Action: e.Action})
	}
	return list
}

func v1Notification(t *testing.T, c Codec, gc v1Case) any {
	out, ok := c.Notification(gc.Method, gc.In)
	if !ok {
		return nil
	}
	return out
}

func v1Action(t *testing.T, c Codec, gc v1Case) any {
	channel, action, err := c.Action(gc.Channel, gc.In)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var a wire.StateAction
	require.NoError(t, json.Unmarshal(action, &a), "the host decodes %s", action)
	again, err := wire.Marshal(a)
	require.NoError(t, err)
	require.Equal(t, canonical(t, action), canonical(t, again), "the action is 1.0.0 as ahp/wire knows it")
	require.True(t, wire.ClientDispatchable(a.Type()), "%s is client-dispatchable in 1.0.0", a.Type())
	return map[string]any{"channel": channel, "action": action}
}

func v1Request(t *testing.T, c Codec, gc v1Case) any {
	method, params, err := c.Request(gc.Method, gc.In)
	if err != nil {
		return map[string]any{"error": map[string]any{"code": err.Code, "message": err.Message}}
	}
	return map[string]any{"method": method, "params": params}
}

func v1Result(t *testing.T, c Codec, gc v1Case) any {
	out, err := c.Result(gc.Method, gc.In)
	if err != nil {
		return map[string]any{"error": map[string]any{"code": err.Code, "message": err.Message}}
	}
	return map[string]any{"result": out}
}

// roundTrips checks that b decodes into v and encodes back the same: the
// type knows every member of b, so nothing in it is foreign to the
// type's version, and a case's members are not misspelt.
func roundTrips(t *testing.T, b []byte, v any, msg string) {
	t.Helper()
	require.NoError(t, json.Unmarshal(b, v), "%s: %s", msg, b)
	again, err := wire.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, canonical(t, b), canonical(t, again), msg)
}

// checkInputIs100 checks that a case's host-side input is 1.0.0 as
// ahp/wire knows it.
func checkInputIs100(t *testing.T, kind string, gc v1Case) {
	t.Helper()
	const msg = "the input is not 1.0.0 as ahp/wire knows it"
	switch kind {
	case "snapshots":
		for _, s := range gc.States {
			roundTrips(t, s.State, decodeState100(t, stateInput{Kind: s.Kind, State: json.RawMessage("{}")}), msg)
		}
		if gc.Summary != nil {
			roundTrips(t, gc.Summary, &wire.SessionSummary{}, msg)
		}
	case "envelopes":
		roundTrips(t, gc.In, &wire.StateAction{}, msg)
	case "notifications":
		if v := notificationParams100(gc.Method); v != nil {
			roundTrips(t, gc.In, v, msg)
		}
	case "results":
		if v := result100(gc.Method); v != nil {
			roundTrips(t, gc.In, v, msg)
		}
	}
}

func notificationParams100(method string) any {
	switch method {
	case wire.MethodRootSessionAdded:
		return &wire.SessionAddedParams{}
	case wire.MethodRootSessionSummaryChanged:
		return &wire.SessionSummaryChangedParams{}
	case wire.MethodRootProgress:
		return &wire.ProgressParams{}
	case wire.MethodAuthRequired:
		return &wire.AuthRequiredParams{}
	}
	return nil
}

func result100(method string) any {
	switch method {
	case wire.MethodInitialize:
		return &wire.InitializeResult{}
	case wire.MethodListSessions:
		return &wire.ListSessionsResult{}
	case wire.MethodResolveSessionConfig:
		return &wire.ResolveSessionConfigResult{}
	case InternalFetchTurnsPage:
		return &struct {
			Turns   []wire.Turn `json:"turns"`
			HasMore bool        `json:"hasMore"`
		}{}
	}
	return nil
}

// checkOutputIs070 checks that what the 0.7.0 codec sends is 0.7.0 as
// ahp/v070/wire knows it: every member, enum value and action type of its
// output is one 0.7.0 has. This is also what the older dialects' codecs
// are fed.
func checkOutputIs070(t *testing.T, kind string, gc v1Case, out json.RawMessage) {
	t.Helper()
	const msg = "the 0.7.0 output is not 0.7.0 as ahp/v070/wire knows it"
	switch kind {
	case "snapshots":
		if _, failed := object(mustTree(t, out))["error"]; failed {
			return
		}
		var v any
		switch gc.States[gc.URI].Kind {
		case "root":
			v = &w7.RootState{}
		case "session":
			v = &w7.SessionState{}
		case "chat":
			v = &w7.ChatState{}
		case "terminal":
			v = &w7.TerminalState{}
		case "changeset":
			v = &w7.ChangesetState{}
		case "annotations":
			v = &w7.AnnotationsState{}
		case "resourceWatch":
			v = &w7.ResourceWatchState{}
		}
		roundTrips(t, out, v, msg)
		checkEnums070(t, out)
	case "envelopes":
		var list []struct {
			Action json.RawMessage `json:"action"`
		}
		require.NoError(t, json.Unmarshal(out, &list))
		for _, e := range list {
			var a w7.StateAction
			roundTrips(t, e.Action, &a, msg)
			_, raw := a.Value.(json.RawMessage)
			require.False(t, raw, "0.7.0 knows the action type %s", a.Type())
			checkEnums070(t, e.Action)
		}
	case "notifications":
		if string(out) == "null" {
			return
		}
		var v any
		switch gc.Method {
		case wire.MethodRootSessionAdded:
			v = &w7.SessionAddedParams{}
		case wire.MethodRootSessionSummaryChanged:
			v = &w7.SessionSummaryChangedParams{}
		case wire.MethodAuthRequired:
			v = &w7.AuthRequiredParams{}
		default:
			return
		}
		roundTrips(t, out, v, msg)
	case "results":
		var r struct {
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(out, &r))
		var v any
		switch gc.Method {
		case wire.MethodInitialize:
			v = &w7.InitializeResult{}
		case wire.MethodListSessions:
			v = &w7.ListSessionsResult{}
		case wire.MethodResolveSessionConfig:
			v = &w7.ResolveSessionConfigResult{}
		case InternalFetchTurnsPage:
			v = &struct {
				Turns   []w7.Turn `json:"turns"`
				HasMore bool      `json:"hasMore"`
			}{}
		default:
			return
		}
		if r.Result != nil {
			roundTrips(t, r.Result, v, msg)
			checkEnums070(t, r.Result)
		}
	}
}

// checkEnums070 looks for the enum values 1.0.0 added that 0.7.0's types
// would decode and encode unharmed (every enum keeps unknown values), but
// a 0.7.0 client cannot read.
func checkEnums070(t *testing.T, b []byte) {
	t.Helper()
	for _, v := range []string{`"failed"`, `"recomputing"`, `"kind":"error"`} {
		require.NotContains(t, string(b), v, "0.7.0 has no %s", v)
	}
}

func mustTree(t *testing.T, b []byte) any {
	t.Helper()
	v, err := decodeTree(b)
	require.NoError(t, err)
	return v
}

// actionSamples100 returns, for every action type of ahp/wire (1.0.0), the
// example of ahp/wire's testdata/actions.json, a bare {"type": …} that has
// none of the members a rewrite looks for, and a truncated one that cannot
// be decoded.
func actionSamples100(t *testing.T) map[string][]json.RawMessage {
	t.Helper()
	var examples []json.RawMessage
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join("..", "wire", "testdata", "actions.json")), &examples))
	samples := map[string][]json.RawMessage{}
	for _, e := range examples {
		typ := actionType(e)
		samples[typ] = append(samples[typ], e)
	}
	types := actionTypes100(t)
	for _, typ := range types {
		require.NotEmpty(t, samples[typ], "ahp/wire has no example of %s", typ)
		samples[typ] = append(samples[typ], json.RawMessage(`{"type":"`+typ+`"}`), json.RawMessage(`{"type":"`+typ+`","truncated`))
	}
	samples["chat/fromTheFuture"] = []json.RawMessage{json.RawMessage(`{"type":"chat/fromTheFuture","x":1}`)}
	return samples
}

// actionTypes100 lists the ActionType constants of ahp/wire.
func actionTypes100(t *testing.T) []string {
	t.Helper()
	types := enumValues(t, filepath.Join("..", "wire", "enums.gen.go"), "ActionType")
	require.Greater(t, len(types), 100, "ActionType constants of ahp/wire")
	return types
}

// TestIntroducedCoversEveryAction checks that every 1.0.0 action type has
// a version in introduced.go, that the dialects know what their releases
// shipped (§9), and that the table names no type 1.0.0 lacks.
func TestIntroducedCoversEveryAction(t *testing.T) {
	types := actionTypes100(t)
	for _, typ := range types {
		_, ok := actionIntroducedIn[typ]
		require.True(t, ok, "introduced.go has no version for %s", typ)
		require.True(t, ActionKnownTo(typ, Current), "%s is 1.0.0", typ)
	}
	for typ := range actionIntroducedIn {
		require.Contains(t, types, typ, "introduced.go lists %s, which 1.0.0 does not have", typ)
	}
	reg := readRegistry(t)
	for _, typ := range types {
		// 0.7.0 knows exactly its registry's list; 0.9.0 that plus what
		// 0.8.0 and 0.9.0 released.
		in070 := slices.Contains(reg.Versions[V070.String()].Actions, typ)
		require.Equal(t, in070, ActionKnownTo(typ, V070), "%s in 0.7.0", typ)
		released09 := in070 || typ == "session/workingDirectoryReplaced" || typ == "chat/turnResume" ||
			strings.HasPrefix(typ, "automation/") || strings.HasPrefix(typ, "automationRun/")
		require.Equal(t, released09, ActionKnownTo(typ, V090), "%s in 0.9.0", typ)
	}
}

// TestEnvelopeSendsOnlyKnownActionsToEveryDialect checks, for every action
// type of 1.0.0 (and one from the future) and every older dialect, that
// Envelope never sends an action type the dialect does not know: the
// issue's "never a message newer than its version". What it sends keeps
// the serverSeq, and is JSON when it got JSON.
func TestEnvelopeSendsOnlyKnownActionsToEveryDialect(t *testing.T) {
	reg := readRegistry(t)
	samples := actionSamples100(t)
	for _, v := range olderDialects() {
		c := For(v, testDirectory())
		// What the version's own registry lists where we have it (it
		// knows 0.5.2's renamed review action, which introduced.go names
		// the 0.7.0 way), its ActionType constants for 0.3.0, and
		// introduced.go for 0.9.0.
		known := func(typ string) bool { return ActionKnownTo(typ, v) }
		if r, ok := reg.Versions[v.String()]; ok {
			known = func(typ string) bool { return slices.Contains(r.Actions, typ) }
		}
		if v == V030 {
			known = known030(t)
		}
		for typ, list := range samples {
			for i, a := range list {
				for _, channel := range []string{"ahp-chat:/s1/main", "ahp-session:/s1", "ahp-terminal:/t1"} {
					in := Envelope{Channel: channel, Action: a, ServerSeq: 42, Origin: hostOrigin("c", 7)}
					for _, out := range c.Envelope(in) {
						require.Equal(t, json.Valid(a), json.Valid(out.Action), "%s: %s #%d gave %s", v, typ, i, out.Action)
						got := actionType(out.Action)
						if !known(got) {
							t.Errorf("%s: %s #%d became %q, which %s does not know", v, typ, i, got, v)
						}
						if out.ServerSeq != in.ServerSeq {
							t.Errorf("%s: %s #%d changed the serverSeq", v, typ, i)
						}
					}
				}
			}
		}
	}
}

// TestNotificationSendsOnlyKnownMethodsToEveryDialect is the same for the
// protocol notifications, 1.1.0's included.
func TestNotificationSendsOnlyKnownMethodsToEveryDialect(t *testing.T) {
	methods := []string{"root/sessionAdded", "root/sessionRemoved", "root/sessionSummaryChanged", "root/progress",
		"auth/required", "otlp/exportLogs", "otlp/exportTraces", "otlp/exportMetrics",
		"channel/frame", "channel/credit", "channel/ready", "channel/reset", "channel/snapshot", "tcp/data", "tcp/eof",
		"future/notification"}
	for _, v := range olderDialects() {
		c := For(v, testDirectory())
		for _, m := range methods {
			if _, ok := c.Notification(m, json.RawMessage(`{"channel":"ahp-root://"}`)); ok && !NotificationKnownTo(m, v) {
				t.Errorf("%s was sent %s, which it does not know", v, m)
			}
		}
	}
}

// TestDowngradePassesThroughUntouched checks the cheap path of both new
// codecs and of the composed ones: an action whose 1.0.0 shape every
// dialect shares is the very same bytes, and costs the returned slice.
func TestDowngradePassesThroughUntouched(t *testing.T) {
	delta := json.RawMessage(`{"type":"chat/delta","turnId":"t1","partId":"p1","content":"an \"error\" that \"failed\""}`)
	for _, v := range olderDialects() {
		c := For(v, testDirectory())
		e := Envelope{Channel: "ahp-chat:/c1", Action: delta, ServerSeq: 1}
		if v == V030 {
			e.Channel = "ahp-chat:/s1/main"
		}
		if v != V030 {
			out := c.Envelope(e)
			require.Len(t, out, 1)
			require.Same(t, &delta[0], &out[0].Action[0], "%s re-encoded chat/delta", v)
		}
		if n := testing.AllocsPerRun(100, func() { c.Envelope(e) }); v != V030 && n > 1 {
			t.Errorf("chat/delta through %s allocates %v times, want 1", v, n)
		}
	}
}

// TestStates070 checks the typed snapshot the composed codecs get: every
// state type the host has becomes its ahp/v070/wire counterpart, with the
// 0.7.0 codec's JSON.
func TestStates070(t *testing.T) {
	c := newV070(testDirectory())
	states := []any{
		&wire.RootState{Agents: []wire.AgentInfo{}},
		&wire.SessionState{Lifecycle: wire.SessionLifecycleFailed, ActiveClients: []wire.SessionActiveClient{}, Chats: []wire.ChatSummary{}},
		&wire.ChatState{Resource: "ahp-chat:/s1/main", Turns: []wire.Turn{{ID: "t1", State: wire.TurnStateError,
			ResponseParts: []wire.ResponsePart{wire.NewResponsePart(&wire.ErrorResponsePart{Error: wire.ErrorInfo{ErrorType: "crash", Message: "gone"}})}}}},
		&wire.TerminalState{Lifecycle: wire.NewTerminalLifecycleState(&wire.TerminalExitedLifecycleState{ExitCode: wire.Ptr[int64](3)}),
			Claim: wire.NewTerminalClaim(&wire.TerminalSessionClaim{Session: "ahp-session:/s1", Chat: "ahp-chat:/s1/main"}), Content: []wire.TerminalContentPart{}},
		&wire.ChangesetState{Status: wire.ChangesetStatusRecomputing, Files: []wire.ChangesetFile{}},
		&wire.AnnotationsState{Annotations: []wire.Annotation{{ID: "a1", Origin: wire.AnnotationOrigin{Session: "ahp-session:/s1", TurnID: wire.Ptr("t1")}, Entries: []wire.AnnotationEntry{}}}},
		&wire.ResourceWatchState{},
		&wire.SessionSummary{Resource: "ahp-session:/s1", Chats: []wire.SessionChatSummary{{Resource: "ahp-chat:/s1/main"}}},
	}
	got, err := c.states070("ahp-session:/s1", states)
	require.NoError(t, err)
	require.Len(t, got, len(states))
	for i, s := range states {
		b, err := c.lowerState("ahp-session:/s1", s)
		require.NoError(t, err)
		again, err := w7.Marshal(got[i])
		require.NoError(t, err)
		require.Equal(t, canonical(t, b), canonical(t, again), "%T", s)
	}
	require.Equal(t, w7.SessionLifecycleCreationFailed, got[1].(*w7.SessionState).Lifecycle)
	require.Equal(t, "gone", got[2].(*w7.ChatState).Turns[0].Error.Message)
	require.EqualValues(t, 3, *got[3].(*w7.TerminalState).ExitCode)
	require.Equal(t, w7.ChangesetStatusComputing, got[4].(*w7.ChangesetState).Status)
	require.Equal(t, "t1", got[5].(*w7.AnnotationsState).Annotations[0].TurnID)

	_, err = newV090().states070("ahp-session:/s1", states)
	require.Error(t, err, "0.9.0 states are not 0.7.0")
	_, err = c.states070("ahp-canvas:/x", []any{&wire.CanvasState{}})
	require.Error(t, err, "no 0.7.0 canvas")
}

// TestDowngradeSnapshotRefusesWhatItCannotTranslate: states are pointers to
// 1.0.0 types, and only a catalogue entry may follow the first.
func TestDowngradeSnapshotRefusesWhatItCannotTranslate(t *testing.T) {
	for _, v := range olderDialects() {
		c := For(v, testDirectory())
		_, err := c.Snapshot("ahp-terminal:/t1", []any{wire.TerminalState{}})
		require.Error(t, err, "%s: a TerminalState value, not a pointer", v)
		_, err = c.Snapshot("ahp-terminal:/t1", []any{&w7.TerminalState{}})
		require.Error(t, err, "%s: a 0.7.0 state", v)
		_, err = c.Snapshot("ahp-terminal:/t1", nil)
		require.Error(t, err, "%s: no state", v)
	}
}
