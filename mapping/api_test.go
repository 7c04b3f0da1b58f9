package mapping

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

func TestURIs(t *testing.T) {
	require.Equal(t, "ahp-terminal:/term-1", TerminalChannel("term-1"))
	require.Equal(t, "ahp-terminal:/a%2Fb", TerminalChannel("a/b"))
	require.Equal(t, "ahp-bridge:/t%201/c%2F1/2/old", DiffURI("t 1", "c/1", 2, "old"))
	require.Equal(t, "file:///home/u/a%20b.txt", FileURI("/home/u/a b.txt"))
	require.Equal(t, "file:///rel/x", FileURI("rel/x"))
	require.Equal(t, "file:///already", FileURI("file:///already"))
}

func TestLineDiff(t *testing.T) {
	cases := []struct {
		old, new       string
		added, removed int64
	}{
		{"", "", 0, 0},
		{"", "a\nb\n", 2, 0},
		{"a\nb\n", "", 0, 2},
		{"a\nb\nc\n", "a\nB\nc\n", 1, 1},
		{"a\nb", "a\nb\nc", 1, 0},
		{"x\nx\n", "x\n", 0, 1},
	}
	for _, tc := range cases {
		a, r := lineDiff(tc.old, tc.new)
		require.Equal(t, tc.added, a, "%q → %q added", tc.old, tc.new)
		require.Equal(t, tc.removed, r, "%q → %q removed", tc.old, tc.new)
	}
}

func TestOptionKind(t *testing.T) {
	cases := map[backend.PermissionOptionKind]wire.ConfirmationOptionKind{
		backend.AllowOnce:       wire.ConfirmationOptionKindApprove,
		backend.AllowAlways:     wire.ConfirmationOptionKindApprove,
		backend.RejectOnce:      wire.ConfirmationOptionKindDeny,
		backend.RejectAlways:    wire.ConfirmationOptionKindDeny,
		"_acme_allow_sandboxed": wire.ConfirmationOptionKindApprove,
		"_acme_approve":         wire.ConfirmationOptionKindApprove,
		"_acme_maybe":           wire.ConfirmationOptionKindDeny,
		"_acme_disallow":        wire.ConfirmationOptionKindDeny,
		"_allow_or_reject":      wire.ConfirmationOptionKindDeny,
		"":                      wire.ConfirmationOptionKindDeny,
	}
	for in, want := range cases {
		require.Equal(t, want, OptionKind(in), string(in))
	}
	require.Nil(t, ConfirmationOptions(nil))
	require.Equal(t, []wire.ConfirmationOption{{ID: "x", Label: "x", Kind: wire.ConfirmationOptionKindDeny}},
		ConfirmationOptions([]backend.PermissionOption{{ID: "x"}}), "a nameless option is labelled by its id")
}

func TestTurnAccessors(t *testing.T) {
	turn := newTestTurn()
	require.Equal(t, "t1", turn.ID())
	require.False(t, turn.Ended())
	require.Equal(t, "c9", turn.ToolCallID("c9"), "unknown ids map to themselves")

	turn.SetMeta(map[string]any{"keep": true})
	acts := turn.Apply(backend.Plan{Entries: []backend.PlanEntry{{Content: "a", Status: "pending"}}})
	require.Equal(t, []string{"session/metaChanged"}, actionTypes(t, acts))
	require.Equal(t, true, turn.Meta()["keep"], "keys the Turn does not own are kept")
	require.Contains(t, turn.Meta(), MetaPlan)

	old := "a\n"
	turn.Apply(backend.ToolCall{ID: "c1", Title: "edit", Kind: "edit", Status: backend.ToolInProgress,
		ContentMode: backend.ContentReplace, Content: []backend.ToolContent{{Type: "diff", Path: "/f", OldText: &old, NewText: "b\n"}}})
	require.True(t, turn.Holding(), "a call reported running waits for the next event")
	turn.Flush()
	r, ok := turn.Resource(DiffURI("t1", "c1", 0, "old"))
	require.True(t, ok)
	require.Equal(t, Resource{Data: "a\n", ContentType: "text/plain"}, r)
	res := turn.Resources()
	require.Len(t, res, 2)
	delete(res, DiffURI("t1", "c1", 0, "old"))
	_, ok = turn.Resource(DiffURI("t1", "c1", 0, "old"))
	require.True(t, ok, "Resources returns a copy")

	// End once; events afterwards that need a turn give nothing.
	require.NotEmpty(t, turn.End(backend.TurnResult{StopReason: backend.StopEndTurn}, nil))
	require.True(t, turn.Ended())
	require.Nil(t, turn.End(backend.TurnResult{}, errors.New("again")))
	require.Nil(t, turn.Apply(backend.TextChunk{Text: "late"}))
	require.Nil(t, turn.Apply(backend.Question{Questions: []string{"late?"}}))
	require.Nil(t, turn.Permission(backend.PermissionRequest{ToolCall: backend.ToolCall{ID: "c2"}}))
	require.Nil(t, turn.AutoPermission(backend.PermissionRequest{ToolCall: backend.ToolCall{ID: "c2"}}, true))
	require.Equal(t, []string{"session/titleChanged"}, actionTypes(t, turn.Apply(backend.TitleChanged{Title: "x"})))
}

func TestTurnDuration(t *testing.T) {
	now := int64(turnStart + 42)
	turn := NewTurn("t1", turnStart, seqIDs(), func() int64 { return now })
	b, err := json.Marshal(turn.End(backend.TurnResult{StopReason: backend.StopEndTurn}, nil))
	require.NoError(t, err)
	require.JSONEq(t, `[{"type":"chat/turnComplete","turnId":"t1","duration":42}]`, string(b))

	// A clock behind the turn's start (another machine's, or one that was
	// set back) gives 0, never a negative duration.
	now = turnStart - 5000
	turn = NewTurn("t2", turnStart, seqIDs(), func() int64 { return now })
	b, err = json.Marshal(turn.End(backend.TurnResult{StopReason: backend.StopCancelled}, nil))
	require.NoError(t, err)
	require.JSONEq(t, `[{"type":"chat/turnCancelled","turnId":"t2","duration":0}]`, string(b))
}

func TestDisconnectedWithoutError(t *testing.T) {
	turn := newTestTurn()
	acts := turn.Apply(backend.Disconnected{})
	require.Len(t, acts, 1)
	b, err := json.Marshal(acts[0])
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"chat/error","turnId":"t1","duration":1500,"part":{"kind":"error","error":{"errorType":"disconnected","message":"the agent disconnected"}}}`, string(b))
}

func TestSessionEvent(t *testing.T) {
	meta := map[string]any{"other": 1}
	acts, next := SessionEvent(backend.Custom{Kind: "_x", Raw: json.RawMessage(`not json`)}, meta)
	require.Equal(t, []string{"session/metaChanged"}, actionTypes(t, acts))
	require.Equal(t, map[string]any{"other": 1, MetaCustom: map[string]any{"_x": "not json"}}, next)
	require.Equal(t, map[string]any{"other": 1}, meta, "the caller's map is not modified")

	acts, next = SessionEvent(backend.TextChunk{Text: "no turn"}, meta)
	require.Nil(t, acts)
	require.Equal(t, meta, next)

	acts, _ = SessionEvent(backend.ConfigChanged{Options: []backend.ConfigOption{{ID: "mode", Current: "ask"}}}, nil)
	b, err := json.Marshal(acts)
	require.NoError(t, err)
	require.JSONEq(t, `[{"type":"session/configChanged","config":{"mode":"ask"},"replace":true}]`, string(b), "the agent's settings replace the values: a removed one goes")
}

func TestPlanMarkdown(t *testing.T) {
	got := PlanMarkdown(backend.Plan{Entries: []backend.PlanEntry{
		{Content: "one", Priority: "high", Status: "completed"},
		{Content: "two", Priority: "medium", Status: "in_progress"},
		{Content: "three", Status: "pending"},
	}})
	require.Equal(t, "**Plan**\n\n- [x] one _(high priority)_\n- [~] two\n- [ ] three", got)
}

// TestFenceJSON checks that raw JSON containing a code fence cannot break
// out of the block it is shown in.
func TestFenceJSON(t *testing.T) {
	got := fenceJSON(json.RawMessage("\"```\""))
	require.Equal(t, "````json\n\"```\"\n````", got)
	require.Equal(t, "```json\nnull\n```", fenceJSON(nil))
	require.Equal(t, "```json\n{bad\n```", fenceJSON(json.RawMessage("{bad")))
}

func TestResourceReadResult(t *testing.T) {
	text := Resource{Data: "hi", ContentType: "text/plain"}
	bin := Resource{Data: "AAE=", Base64: true, ContentType: "image/png"}
	enc := func(r wire.ResourceReadResult) string {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		return string(b)
	}
	require.JSONEq(t, `{"data":"hi","encoding":"utf-8","contentType":"text/plain"}`, enc(text.ReadResult("")))
	require.JSONEq(t, `{"data":"hi","encoding":"utf-8","contentType":"text/plain"}`, enc(text.ReadResult(wire.ContentEncodingUtf8)))
	require.JSONEq(t, `{"data":"aGk=","encoding":"base64","contentType":"text/plain"}`, enc(text.ReadResult(wire.ContentEncodingBase64)))
	require.JSONEq(t, `{"data":"AAE=","encoding":"base64","contentType":"image/png"}`, enc(bin.ReadResult(wire.ContentEncodingUtf8)))
	require.JSONEq(t, `{"data":"","encoding":"utf-8"}`, enc(Resource{}.ReadResult("")))
}
