package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// fakeDirectory knows the sessions of the golden cases: a host session and
// an ahpx one (which names sessions <provider>:/<uuid>).
type fakeDirectory map[string]string

func (d fakeDirectory) DefaultChat(session string) (string, bool) {
	chat, ok := d[session]
	return chat, ok
}

func (d fakeDirectory) SessionOfDefaultChat(chat string) (string, bool) {
	for s, c := range d {
		if c == chat {
			return s, true
		}
	}
	return "", false
}

func testDirectory() Directory {
	return fakeDirectory{
		"ahp-session:/s1": "ahp-chat:/s1/main",
		"copilot:/0e4c7d52-5b1a-4cbb-9f5e-0d6a1c1f4a10": "ahp-chat:/0e4c7d52/main",
	}
}

// actionSamples returns, for every action type of ahp/v070/wire, the examples of
// ahp/v070/wire's testdata/actions.json plus a bare {"type": …}, which has none
// of the members a rewrite looks for, and a truncated one that cannot be
// decoded.
func actionSamples(t *testing.T) map[string][]json.RawMessage {
	t.Helper()
	var examples []json.RawMessage
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join("..", "v070", "wire", "testdata", "actions.json")), &examples))
	samples := map[string][]json.RawMessage{}
	for _, e := range examples {
		typ := actionType(e)
		samples[typ] = append(samples[typ], e)
	}
	for _, typ := range wireActionTypes(t) {
		require.NotEmpty(t, samples[typ], "ahp/v070/wire has no example of %s", typ)
		samples[typ] = append(samples[typ], json.RawMessage(`{"type":"`+typ+`"}`), json.RawMessage(`{"type":"`+typ+`","truncated`))
	}
	return samples
}

// TestEnvelopeSendsOnlyKnownActions checks that, for every action type of
// ahp/v070/wire, no chat-family codec sends an action its version does not know,
// and that what it sends is JSON (when it got JSON) on the same channel and
// serverSeq.
func TestEnvelopeSendsOnlyKnownActions(t *testing.T) {
	reg := readRegistry(t)
	samples := actionSamples(t)
	for _, v := range chatFamilyVersions() {
		c := newChatFamily(v, testDirectory())
		known := reg.Versions[v.String()].Actions
		for typ, list := range samples {
			for i, a := range list {
				in := Envelope{Channel: "ahp-chat:/c1", Action: a, ServerSeq: 42, Origin: hostOrigin("c", 7)}
				for _, out := range c.Envelope(in) {
					require.Equal(t, json.Valid(a), json.Valid(out.Action), "%s: %s #%d gave %s", v, typ, i, out.Action)
					got := actionType(out.Action)
					if !slices.Contains(known, got) {
						t.Errorf("%s: %s #%d became %q, which %s does not know", v, typ, i, got, v)
					}
					if out.Channel != in.Channel || out.ServerSeq != in.ServerSeq || out.Origin != in.Origin {
						t.Errorf("%s: %s #%d changed the envelope: %+v", v, typ, i, out)
					}
				}
			}
		}
	}
}

// TestEnvelopePassesThroughUntouched checks the cheap path: an action the
// version knows and that needs no rewrite is the very same bytes.
func TestEnvelopePassesThroughUntouched(t *testing.T) {
	delta := json.RawMessage(`{"type":"chat/delta","turnId":"t1","partId":"p1","content":"a \"terminal\" \u003c chat"}`)
	for _, v := range chatFamilyVersions() {
		out := For(v, testDirectory()).Envelope(Envelope{Channel: "ahp-chat:/c1", Action: delta, ServerSeq: 1})
		require.Len(t, out, 1)
		require.Same(t, &delta[0], &out[0].Action[0], "%s re-encoded chat/delta", v)
	}
}

// goldenCase is one file of testdata/chatfamily/<kind>/: an input in the
// host's dialect (or a client's, for actions and requests) and what each
// chat-family version makes of it.
type goldenCase struct {
	Comment string `json:"comment,omitempty"`
	// URI and State name the snapshot's channel and state type.
	URI   string `json:"uri,omitempty"`
	State string `json:"state,omitempty"`
	// Channel is the envelope's or dispatched action's channel.
	Channel string `json:"channel,omitempty"`
	// Method is the notification's, request's or result's method.
	Method string                     `json:"method,omitempty"`
	In     json.RawMessage            `json:"in"`
	Want   map[string]json.RawMessage `json:"want"`
}

// TestChatFamilyGolden runs every golden case through every chat-family
// version. AHP_UPDATE_GOLDEN=1 rewrites the "want" members instead, for
// review in the diff.
func TestChatFamilyGolden(t *testing.T) {
	update := os.Getenv("AHP_UPDATE_GOLDEN") == "1"
	kinds := map[string]func(t *testing.T, c Codec, gc goldenCase) any{
		"snapshots":     goldenSnapshot,
		"envelopes":     goldenEnvelope,
		"notifications": goldenNotification,
		"actions":       goldenAction,
		"requests":      goldenRequest,
		"results":       goldenResult,
	}
	for kind, run := range kinds {
		files, err := filepath.Glob(filepath.Join("testdata", "chatfamily", kind, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "no %s cases", kind)
		for _, file := range files {
			t.Run(kind+"/"+strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
				var gc goldenCase
				require.NoError(t, json.Unmarshal(readFile(t, file), &gc))
				checkInputIsWire(t, kind, gc)
				got := map[string]json.RawMessage{}
				for _, v := range chatFamilyVersions() {
					out, err := wire.Marshal(run(t, newChatFamily(v, testDirectory()), gc))
					require.NoError(t, err)
					got[v.String()] = out
				}
				if update {
					gc.Want = got
					b, err := json.MarshalIndent(gc, "", "  ")
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(file, append(b, '\n'), 0o644))
					return
				}
				for _, v := range chatFamilyVersions() {
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
				var gc goldenCase
				require.NoError(t, json.Unmarshal([]byte(vscodeGoldenNames.Replace(string(readFile(t, file)))), &gc))
				for _, v := range chatFamilyVersions() {
					out, err := wire.Marshal(run(t, newChatFamily(v, vscodeDirectory()), gc))
					require.NoError(t, err)
					if want := gc.Want[v.String()]; canonical(t, want) != canonical(t, out) {
						t.Errorf("%s, with VS Code's names:\n got  %s\n want %s", v, indent(out), indent(want))
					}
				}
			})
		}
	}
}

func goldenSnapshot(t *testing.T, c Codec, gc goldenCase) any {
	state := newState(t, gc.State)
	require.NoError(t, json.Unmarshal(gc.In, state))
	out, err := c.Snapshot(gc.URI, []any{state})
	require.NoError(t, err)
	after, err := wire.Marshal(state)
	require.NoError(t, err)
	require.Equal(t, canonical(t, gc.In), canonical(t, after), "Snapshot changed the host's state")
	return out
}

func goldenEnvelope(t *testing.T, c Codec, gc goldenCase) any {
	in := bytes.Clone(gc.In)
	out := []json.RawMessage{}
	defer func() { require.Equal(t, string(in), string(gc.In), "Envelope changed the host's bytes") }()
	for _, e := range c.Envelope(Envelope{Channel: gc.Channel, Action: gc.In, ServerSeq: 9}) {
		require.Equal(t, gc.Channel, e.Channel)
		require.EqualValues(t, 9, e.ServerSeq)
		out = append(out, e.Action)
	}
	return out
}

func goldenNotification(t *testing.T, c Codec, gc goldenCase) any {
	out, ok := c.Notification(gc.Method, gc.In)
	if !ok {
		return nil
	}
	return out
}

func goldenAction(t *testing.T, c Codec, gc goldenCase) any {
	channel, action, err := c.Action(gc.Channel, gc.In)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return map[string]any{"channel": channel, "action": action}
}

func goldenRequest(t *testing.T, c Codec, gc goldenCase) any {
	method, params, err := c.Request(gc.Method, gc.In)
	if err != nil {
		return map[string]any{"error": map[string]any{"code": err.Code, "message": err.Message}}
	}
	return map[string]any{"method": method, "params": params}
}

func goldenResult(t *testing.T, c Codec, gc goldenCase) any {
	out, err := c.Result(gc.Method, gc.In)
	if err != nil {
		return map[string]any{"error": map[string]any{"code": err.Code, "message": err.Message}}
	}
	return map[string]any{"result": out}
}

func newState(t *testing.T, name string) any {
	switch name {
	case "root":
		return &wire.RootState{}
	case "session":
		return &wire.SessionState{}
	case "chat":
		return &wire.ChatState{}
	case "terminal":
		return &wire.TerminalState{}
	case "changeset":
		return &wire.ChangesetState{}
	case "annotations":
		return &wire.AnnotationsState{}
	case "resourceWatch":
		return &wire.ResourceWatchState{}
	}
	t.Fatalf("unknown state %q", name)
	return nil
}

// checkInputIsWire checks that a case's host-side input is 0.7.0 as ahp/v070/wire
// knows it: decoding it into the wire type and encoding it again loses
// nothing. A misspelt member would otherwise make a case test nothing.
func checkInputIsWire(t *testing.T, kind string, gc goldenCase) {
	t.Helper()
	var v any
	switch kind {
	case "snapshots":
		v = newState(t, gc.State)
	case "envelopes":
		v = &wire.StateAction{}
	case "notifications":
		switch gc.Method {
		case "root/sessionAdded":
			v = &wire.SessionAddedParams{}
		case "root/sessionSummaryChanged":
			v = &wire.SessionSummaryChangedParams{}
		case "root/progress":
			v = &wire.ProgressParams{}
		case "auth/required":
			v = &wire.AuthRequiredParams{}
		default:
			return
		}
	case "results":
		switch gc.Method {
		case "initialize":
			v = &wire.InitializeResult{}
		case "listSessions":
			v = &wire.ListSessionsResult{}
		case "completions":
			v = &wire.CompletionsResult{}
		case InternalFetchTurnsPage:
			v = &struct {
				Turns   []wire.Turn `json:"turns"`
				HasMore bool        `json:"hasMore"`
			}{}
		default:
			return
		}
	default:
		return
	}
	require.NoError(t, json.Unmarshal(gc.In, v))
	again, err := wire.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, canonical(t, gc.In), canonical(t, again), "the input is not 0.7.0 as ahp/v070/wire knows it")
}

// canonical re-encodes JSON with sorted keys and no insignificant space.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	v, err := decodeTree(b)
	require.NoError(t, err, "%s", b)
	out, err := wire.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

func indent(b []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "      ", "  ") != nil {
		return string(b)
	}
	return buf.String()
}

func TestSnapshotRefusesWhatItCannotTranslate(t *testing.T) {
	c := newChatFamily(Version{0, 6, 0}, testDirectory())
	_, err := c.Snapshot("ahp-chat:/c1", []any{wire.ChatState{}})
	require.Error(t, err, "a ChatState value, not a pointer")
	_, err = c.Snapshot("ahp-chat:/c1", []any{&wire.ChatState{}, &wire.SessionState{}})
	require.Error(t, err)
	_, err = c.Snapshot("ahp-chat:/c1", nil)
	require.Error(t, err)
}

func Example_chatFamilyDowngrade() {
	c := For(Version{0, 5, 1}, testDirectory())
	out := c.Envelope(Envelope{Channel: "ahp-session:/s1", Action: json.RawMessage(`{"type":"session/mcpServerStartRequested","id":"mcp-1"}`)})
	fmt.Println(string(out[0].Action))
	// Output: {"id":"mcp-1","state":{"kind":"starting"},"type":"session/mcpServerStateChanged"}
}
