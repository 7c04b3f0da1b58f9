package codec

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	hostwire "github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/reducer030"
)

var update = flag.Bool("update", false, "rewrite the expected values of the golden files under testdata/v030")

// The sessions of the golden files: s1 with its default chat, and a side
// chat that 0.3.0 never sees.
const (
	testSession  = "ahp-session:/s1"
	testChat     = "ahp-chat:/s1-main"
	testSideChat = "ahp-chat:/s1-side"
)

// The same sessions named as VS Code names them (hostwire.DefaultChatURI,
// hostwire.ChatURI): runGolden runs every golden file again with these
// names in place of the ones above, and must get the same output renamed.
var (
	vscodeSession  = "claude:/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	vscodeChat     = hostwire.DefaultChatURI(vscodeSession)
	vscodeSideChat = hostwire.ChatURI(vscodeSession, "5d3c")
)

// vscodeNames renames the golden files' session and chats to VS Code's
// names, in any JSON (the URIs need no escaping).
var vscodeNames = strings.NewReplacer(testChat, vscodeChat, testSideChat, vscodeSideChat, testSession, vscodeSession)

// mapDir is a Directory over a fixed session → default chat map.
type mapDir map[string]string

func (d mapDir) DefaultChat(session string) (string, bool) {
	c, ok := d[session]
	return c, ok
}

func (d mapDir) SessionOfDefaultChat(chat string) (string, bool) {
	for s, c := range d {
		if c == chat {
			return s, true
		}
	}
	return "", false
}

func testCodec() *v030 {
	return newV030(mapDir{testSession: testChat, vscodeSession: vscodeChat})
}

// golden is one golden file: what goes in, what must come out.
type golden struct {
	Description string          `json:"description"`
	Input       json.RawMessage `json:"input"`
	Expected    json.RawMessage `json:"expected"`
}

// goldenFiles returns the golden files of one kind, by name.
func goldenFiles(t testing.TB, kind string) map[string]golden {
	t.Helper()
	dir := filepath.Join("testdata", "v030", kind)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]golden{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		var g golden
		require.NoError(t, json.Unmarshal(b, &g), e.Name())
		require.NotEmpty(t, g.Description, e.Name())
		out[e.Name()] = g
	}
	require.NotEmpty(t, out, "no golden files in %s", dir)
	return out
}

// runGolden checks f(input) against every golden file of a kind, or
// rewrites the expected values under -update.
func runGolden(t *testing.T, kind string, f func(t *testing.T, input json.RawMessage) any) {
	files := goldenFiles(t, kind)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		g := files[name]
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			got, err := json.Marshal(f(t, g.Input))
			require.NoError(t, err)
			if *update {
				g.Expected = got
				writeGolden(t, filepath.Join("testdata", "v030", kind, name), g)
				return
			}
			require.JSONEq(t, string(g.Expected), string(got), g.Description)
		})
		if *update {
			continue
		}
		t.Run(strings.TrimSuffix(name, ".json")+"/vscode-names", func(t *testing.T) {
			got, err := json.Marshal(f(t, json.RawMessage(vscodeNames.Replace(string(g.Input)))))
			require.NoError(t, err)
			require.JSONEq(t, vscodeNames.Replace(string(g.Expected)), string(got), "%s, with VS Code's names", g.Description)
		})
	}
}

func writeGolden(t *testing.T, path string, g golden) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	var v struct {
		Description string `json:"description"`
		Input       any    `json:"input"`
		Expected    any    `json:"expected"`
	}
	v.Description = g.Description
	require.NoError(t, json.Unmarshal(g.Input, &v.Input))
	require.NoError(t, json.Unmarshal(g.Expected, &v.Expected))
	require.NoError(t, enc.Encode(v))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// envelopeJSON is an envelope as the golden files write it.
type envelopeJSON struct {
	Channel   string            `json:"channel"`
	ServerSeq int64             `json:"serverSeq"`
	Origin    *hostActionOrigin `json:"origin,omitempty"`
	Action    json.RawMessage   `json:"action"`
}

func TestV030EnvelopeGolden(t *testing.T) {
	c := testCodec()
	runGolden(t, "envelope", func(t *testing.T, input json.RawMessage) any {
		var in envelopeJSON
		require.NoError(t, json.Unmarshal(input, &in))
		out := []envelopeJSON{}
		for _, e := range c.Envelope(Envelope{Channel: in.Channel, Action: in.Action, ServerSeq: in.ServerSeq, Origin: in.Origin}) {
			require.Equal(t, in.ServerSeq, e.ServerSeq, "a translated envelope keeps its serverSeq")
			var a w3.StateAction
			require.NoError(t, json.Unmarshal(e.Action, &a), "0.3.0 decodes %s", e.Action)
			_, raw := a.Value.(json.RawMessage)
			require.False(t, raw, "0.3.0 knows the action type %s", a.Type())
			out = append(out, envelopeJSON{Channel: e.Channel, ServerSeq: e.ServerSeq, Origin: e.Origin, Action: e.Action})
		}
		return out
	})
}

func TestV030ActionGolden(t *testing.T) {
	c := testCodec()
	runGolden(t, "action", func(t *testing.T, input json.RawMessage) any {
		var in struct {
			Channel string          `json:"channel"`
			Action  json.RawMessage `json:"action"`
		}
		require.NoError(t, json.Unmarshal(input, &in))
		ch, a, err := c.Action(in.Channel, in.Action)
		if err != nil {
			return map[string]string{"error": err.Error()}
		}
		var decoded wire.StateAction
		require.NoError(t, json.Unmarshal(a, &decoded), "0.7.0 decodes %s", a)
		require.True(t, wire.ClientDispatchable(decoded.Type()), "%s is client-dispatchable in 0.7.0", decoded.Type())
		return map[string]any{"channel": ch, "action": a}
	})
}

// stateInput is a host state in a snapshot golden file.
type stateInput struct {
	Kind  string          `json:"kind"`
	State json.RawMessage `json:"state"`
}

func decodeState(t *testing.T, s stateInput) any {
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

func TestV030SnapshotGolden(t *testing.T) {
	c := testCodec()
	runGolden(t, "snapshot", func(t *testing.T, input json.RawMessage) any {
		var in struct {
			URI    string       `json:"uri"`
			States []stateInput `json:"states"`
		}
		require.NoError(t, json.Unmarshal(input, &in))
		states := make([]any, len(in.States))
		for i, s := range in.States {
			states[i] = decodeState(t, s)
		}
		before, err := json.Marshal(states)
		require.NoError(t, err)
		out, err := c.Snapshot(in.URI, states)
		after, merr := json.Marshal(states)
		require.NoError(t, merr)
		require.JSONEq(t, string(before), string(after), "Snapshot must not change the host's states")
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e)
			return map[string]any{"error": map[string]any{"code": e.Code}}
		}
		return json.RawMessage(out)
	})
}

func TestV030NotificationGolden(t *testing.T) {
	c := testCodec()
	runGolden(t, "notification", func(t *testing.T, input json.RawMessage) any {
		var in struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		require.NoError(t, json.Unmarshal(input, &in))
		out, ok := c.Notification(in.Method, in.Params)
		if !ok {
			return nil
		}
		return map[string]any{"params": out}
	})
}

func TestV030RequestGolden(t *testing.T) {
	c := testCodec()
	runGolden(t, "request", func(t *testing.T, input json.RawMessage) any {
		var in struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		require.NoError(t, json.Unmarshal(input, &in))
		m, p, err := c.Request(in.Method, in.Params)
		if err != nil {
			return map[string]any{"error": map[string]any{"code": err.Code, "message": err.Message}}
		}
		return map[string]any{"method": m, "params": p}
	})
}

func TestV030ResultGolden(t *testing.T) {
	c := testCodec()
	runGolden(t, "result", func(t *testing.T, input json.RawMessage) any {
		var in struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(input, &in))
		r, err := c.Result(in.Method, in.Result)
		if err != nil {
			return map[string]any{"error": map[string]any{"code": err.Code, "message": err.Message}}
		}
		return map[string]any{"result": r}
	})
}

// goldenActionTypes returns the action types of the golden inputs of a
// kind, with whether the codec accepted them (produced output).
func goldenActionTypes(t *testing.T, kind string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for name, g := range goldenFiles(t, kind) {
		var in struct {
			Action json.RawMessage `json:"action"`
		}
		require.NoError(t, json.Unmarshal(g.Input, &in), name)
		typ := typeOf030(in.Action)
		var expected any
		require.NoError(t, json.Unmarshal(g.Expected, &expected), name)
		accepted := false
		switch e := expected.(type) {
		case []any:
			accepted = len(e) > 0
		case map[string]any:
			_, failed := e["error"]
			accepted = !failed
		}
		out[typ] = out[typ] || accepted
	}
	return out
}

// TestV030GoldenCoverage makes sure every 0.7.0 action type has a golden
// envelope (the table of introduced actions lists them all), and that every
// 0.3.0 action type has a golden client dispatch: accepted exactly when
// 0.3.0 lets clients dispatch it.
func TestV030GoldenCoverage(t *testing.T) {
	down := goldenActionTypes(t, "envelope")
	for typ := range actionIntroducedIn {
		if !ActionKnownTo(typ, V070) {
			continue // the 0.7.0 codec withholds it before this stage
		}
		_, ok := down[typ]
		require.True(t, ok, "no golden envelope for %s", typ)
	}
	up := goldenActionTypes(t, "action")
	dispatchable030 := []w3.ActionType{
		w3.ActionTypeRootConfigChanged, w3.ActionTypeSessionTurnStarted, w3.ActionTypeSessionToolCallConfirmed,
		w3.ActionTypeSessionToolCallComplete, w3.ActionTypeSessionToolCallResultConfirmed,
		w3.ActionTypeSessionToolCallContentChanged, w3.ActionTypeSessionTurnCancelled, w3.ActionTypeSessionTitleChanged,
		w3.ActionTypeSessionModelChanged, w3.ActionTypeSessionAgentChanged, w3.ActionTypeSessionActiveClientChanged,
		w3.ActionTypeSessionActiveClientToolsChanged, w3.ActionTypeSessionPendingMessageSet,
		w3.ActionTypeSessionPendingMessageRemoved, w3.ActionTypeSessionQueuedMessagesReordered,
		w3.ActionTypeSessionInputAnswerChanged, w3.ActionTypeSessionInputCompleted,
		w3.ActionTypeSessionCustomizationToggled, w3.ActionTypeSessionTruncated, w3.ActionTypeSessionIsReadChanged,
		w3.ActionTypeSessionIsArchivedChanged, w3.ActionTypeSessionConfigChanged, w3.ActionTypeTerminalInput,
		w3.ActionTypeTerminalResized, w3.ActionTypeTerminalClaimed, w3.ActionTypeTerminalTitleChanged,
		w3.ActionTypeTerminalCleared,
	}
	for _, typ := range dispatchable030 {
		require.True(t, up[string(typ)], "no accepted golden dispatch of %s", typ)
		require.True(t, reducer030.ClientDispatchable(string(typ)), "%s is client-dispatchable in 0.3.0", typ)
	}
	for typ, accepted := range up {
		require.Equal(t, reducer030.ClientDispatchable(typ), accepted, "%s accepted", typ)
	}
}
