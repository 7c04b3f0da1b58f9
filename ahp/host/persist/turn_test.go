package persist

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// tricky texts: escapes, HTML-unsafe bytes, multi-byte runes, U+2028,
// invalid UTF-8, control characters.
var trickyTexts = []string{"", "plain", "quote \" back\\slash", "<b>&amp;</b>", "tab\tnl\nCR\r\x01\x1f",
	"é日本語🙂", "line\u2028para\u2029", "bad \xff\xfe bytes", strings.Repeat("x", 5000)}

// TestTurnEncodingIsJSONMarshal: the direct encodings of completed and
// active turns are byte for byte what json.Marshal gives.
func TestTurnEncodingIsJSONMarshal(t *testing.T) {
	for _, text := range trickyTexts {
		turn := wire.Turn{ID: "t" + text, StartedAt: wire.Ptr("2026-01-01T00:00:00.000Z"), Duration: wire.Ptr[int64](42),
			Message: userMsg(text), State: wire.TurnStateCancelled, Usage: &wire.UsageInfo{InputTokens: wire.Ptr[int64](3)},
			ResponseParts: []wire.ResponsePart{
				wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m" + text, Content: text}),
				wire.NewResponsePart(&wire.ReasoningResponsePart{Kind: wire.ResponsePartKindReasoning, ID: "r", Content: text + text}),
				wire.NewResponsePart(&wire.SystemNotificationResponsePart{Kind: wire.ResponsePartKindSystemNotification, Content: wire.PlainText(text)}),
			}}
		want, err := json.Marshal(&turn)
		require.NoError(t, err)
		got, err := EncodeTurn(&turn)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got.Bytes()), "completed turn with %q", text)

		bare := wire.Turn{ID: "x", Message: userMsg(""), ResponseParts: []wire.ResponsePart{}, State: wire.TurnStateComplete}
		want, _ = json.Marshal(&bare)
		got, err = EncodeTurn(&bare)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got.Bytes()))

		active := wire.ActiveTurn{ID: "a", StartedAt: "2026-01-01T00:00:00.000Z", Message: userMsg(text), ResponseParts: turn.ResponseParts}
		want, _ = json.Marshal(&active)
		snap, err := TurnSnapshot(&active)
		require.NoError(t, err)
		// Equal as JSON: invalid UTF-8 decodes as U+FFFD, which encodes
		// literally where the original's bytes were escaped.
		assert.JSONEq(t, string(want), string(placedSnapshot(t, snap)), "active turn with %q", text)
	}
}

// placedSnapshot is a snapshot decoded as restore decodes a checkpoint, its
// texts put back, encoded again.
func placedSnapshot(t *testing.T, snap store.TurnSnapshot) []byte {
	t.Helper()
	var at wire.ActiveTurn
	require.NoError(t, json.Unmarshal(snap.Data, &at))
	require.Zero(t, PlaceTexts(&at, snap.Texts))
	b, err := json.Marshal(&at)
	require.NoError(t, err)
	return b
}

// TestTurnSnapshotLeavesTextsOut: a snapshot's data holds the text parts
// empty, and every other part whole; its texts name the text parts' content
// by pointer, and both the host's PlaceTexts and the store's generic
// Checkpoint.Merged put them back where they were.
func TestTurnSnapshotLeavesTextsOut(t *testing.T) {
	text := strings.Join(trickyTexts[:len(trickyTexts)-1], "|")
	active := wire.ActiveTurn{ID: "a", StartedAt: "2026-01-01T00:00:00.000Z", Message: userMsg("q"), ResponseParts: []wire.ResponsePart{
		wire.NewResponsePart(&wire.ReasoningResponsePart{Kind: wire.ResponsePartKindReasoning, ID: "r", Content: "think " + text}),
		wire.NewResponsePart(&wire.ToolCallResponsePart{Kind: wire.ResponsePartKindToolCall, ToolCall: wire.ToolCallState{Value: &wire.ToolCallRunningState{
			Status: wire.ToolCallStatusRunning, ToolCallID: "tc1", ToolName: "read", DisplayName: "Read " + text}}}),
		wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: text}),
	}}
	snap, err := TurnSnapshot(&active)
	require.NoError(t, err)
	require.Len(t, snap.Texts, 2)
	assert.Equal(t, "/responseParts/0/content", snap.Texts[0].Pointer)
	assert.Equal(t, "/responseParts/2/content", snap.Texts[1].Pointer)
	assert.NotContains(t, string(snap.Data), "think", "the texts are not in the data")
	assert.Contains(t, string(snap.Data), `"toolCallId":"tc1"`, "the other parts are")

	want, err := json.Marshal(&active)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(placedSnapshot(t, snap)))
	merged, err := store.Checkpoint{Data: snap.Data, Texts: snap.Texts}.Merged()
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(merged))

	// A text that names no text part is reported, not placed.
	var at wire.ActiveTurn
	require.NoError(t, json.Unmarshal(snap.Data, &at))
	assert.Equal(t, 3, PlaceTexts(&at, []store.CheckpointText{{Pointer: "/responseParts/1/content", Text: "x"},
		{Pointer: "/responseParts/9/content", Text: "x"}, {Pointer: "/responseParts/2/content", Offset: 5, Text: "x"}}))
}

// TestCheckpointGrowth: the byte trigger counts every byte up to 128 KiB of
// a turn's non-text remainder, then half its size in new content counts as
// 64 KiB.
func TestCheckpointGrowth(t *testing.T) {
	assert.Equal(t, 100, CheckpointGrowth(100, 1000))
	assert.Equal(t, 100, CheckpointGrowth(100, checkpointScaleFrom))
	assert.Equal(t, 50, CheckpointGrowth(100, 2*checkpointScaleFrom))
	assert.Equal(t, 1, CheckpointGrowth(1, 100*checkpointScaleFrom), "never nothing")
	// Half of a 1 MiB turn is what reaches 64 KiB.
	sum, turn := 0, 1<<20
	for sum < 64<<10 {
		sum += CheckpointGrowth(64, turn)
		turn += 64
	}
	assert.InDelta(t, float64(1<<20)/2, float64(turn-(1<<20)), float64(1<<20)/8)
}

// joinPieces joins a snapshot's consecutive pieces of each string, failing
// unless each follows the previous one and none is longer than
// checkpointPiece.
func joinPieces(t *testing.T, pieces []store.CheckpointText) []store.CheckpointText {
	t.Helper()
	var out []store.CheckpointText
	for _, p := range pieces {
		require.LessOrEqual(t, len(p.Text), checkpointPiece)
		if n := len(out); n > 0 && out[n-1].Pointer == p.Pointer {
			require.Equal(t, out[n-1].Offset+len(out[n-1].Text), p.Offset, "a piece of %s does not follow the previous one", p.Pointer)
			out[n-1].Text += p.Text
			continue
		}
		out = append(out, p)
	}
	return out
}

// TestReadTurnTexts: a checkpoint reads each text part of the active turn
// from where the checkpointer asks, from the lazy reducer's pieces; whole
// when it does not ask, or asks beyond the text (a text replaced by a
// shorter one).
func TestReadTurnTexts(t *testing.T) {
	s := &wire.ChatState{Resource: "ahp-chat:/s/c", Turns: []wire.Turn{}}
	stream := reducer.Streaming{Lazy: true}
	apply := func(a any) { stream.Chat(s, wire.Action(a), func() int64 { return 1 }) }
	apply(&wire.ChatTurnStartedAction{TurnID: "t", Message: userMsg("q")})
	apply(&wire.ChatResponsePartAction{TurnID: "t", Part: wire.NewResponsePart(&wire.ReasoningResponsePart{ID: "r", Content: "think:"})})
	apply(&wire.ChatResponsePartAction{TurnID: "t", Part: wire.NewResponsePart(&wire.ToolCallResponsePart{ToolCall: wire.ToolCallState{Value: &wire.ToolCallRunningState{
		Status: wire.ToolCallStatusRunning, ToolCallID: "tc1", ToolName: "read", DisplayName: "Read"}}})})
	apply(&wire.ChatResponsePartAction{TurnID: "t", Part: wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"})})
	answer, thought := "", "think:"
	for i := range 40 {
		d := strings.Repeat(string(rune('a'+i%26)), 5000) + "é🙂"
		apply(&wire.ChatDeltaAction{TurnID: "t", PartID: "m", Content: d})
		apply(&wire.ChatReasoningAction{TurnID: "t", PartID: "r", Content: "x"})
		answer, thought = answer+d, thought+"x"
	}
	stream.Sync() // as a subscriber's snapshot would: the text so far in one string, then pieces
	for i := range 20 {
		d := strings.Repeat("s", 7000) + strconv.Itoa(i)
		apply(&wire.ChatDeltaAction{TurnID: "t", PartID: "m", Content: d})
		answer += d
	}
	const r, m = "/responseParts/0/content", "/responseParts/2/content"
	cases := []struct {
		name      string
		from      map[string]int
		wantFromR int
		wantFromM int
	}{
		{name: "nothing written", from: nil},
		{name: "from offsets", from: map[string]int{r: 3, m: 150000}, wantFromR: 3, wantFromM: 150000},
		{name: "at the ends", from: map[string]int{r: len(thought), m: len(answer)}, wantFromR: len(thought), wantFromM: len(answer)},
		{name: "beyond a text", from: map[string]int{r: 2, m: len(answer) + 1}, wantFromR: 2},
		{name: "one text asked", from: map[string]int{m: 70000}, wantFromM: 70000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pieces := CheckpointTexts(ReadTurnTexts(&stream, s.ActiveTurn, tc.from))
			assert.Equal(t, []store.CheckpointText{
				{Pointer: r, Offset: tc.wantFromR, Text: thought[tc.wantFromR:]},
				{Pointer: m, Offset: tc.wantFromM, Text: answer[tc.wantFromM:]},
			}, joinPieces(t, pieces))
			assert.Less(t, len(s.ActiveTurn.ResponseParts[2].Value.(*wire.MarkdownResponsePart).Content), len(answer), "the text was synced")
		})
	}
}

// A completed turn's long texts are escaped as the turn is written, a slice
// at a time, to the same bytes as json.Marshal gives, whatever falls on the
// slices' edges (multi-byte runes, escapes, invalid UTF-8).
func TestTurnEncodingOfLongTexts(t *testing.T) {
	var all strings.Builder
	for _, x := range trickyTexts {
		all.WriteString(x)
	}
	unit := all.String()
	cases := []struct {
		name string
		text string
	}{
		{"just short", strings.Repeat("x", longText-1)},
		{"just long", strings.Repeat("x", longText)},
		{"tricky, repeated", strings.Repeat(unit, 2*longText/len(unit)+3)},
		{"tricky, shifted by one", "a" + strings.Repeat(unit, 3*longText/len(unit))},
		{"runes on the slice edge", strings.Repeat("x", textSlice-1) + strings.Repeat("🙂", longText)},
		{"continuation bytes only", strings.Repeat("\x80", 3*textSlice)},
		{"escapes only", strings.Repeat("<\n\"", longText)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			turn := wire.Turn{ID: "t", Message: userMsg("q"), State: wire.TurnStateComplete, ResponseParts: []wire.ResponsePart{
				wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: tc.text}),
				wire.NewResponsePart(&wire.ToolCallResponsePart{Kind: wire.ResponsePartKindToolCall, ToolCall: wire.ToolCallState{Value: &wire.ToolCallRunningState{
					Status: wire.ToolCallStatusRunning, ToolCallID: "tc1", ToolName: "read", DisplayName: "Read"}}}),
				wire.NewResponsePart(&wire.ReasoningResponsePart{Kind: wire.ResponsePartKindReasoning, ID: "r", Content: "b" + tc.text}),
			}}
			want, err := json.Marshal(&turn)
			require.NoError(t, err)
			got, err := EncodeTurn(&turn)
			require.NoError(t, err)
			assert.True(t, string(want) == string(got.Bytes()), "the encoding differs from json.Marshal's")
			assert.Equal(t, len(tc.text) >= longText, len(got.texts) == 2, "long texts left to be escaped as written")
		})
	}
}

// Writing a completed turn with a long text allocates a buffer of about
// textSlice, never a copy of the text.
func TestTurnEncodingWritesInSlices(t *testing.T) {
	text := strings.Repeat(strings.Repeat("a", 63)+"\n", 1<<16) // 4 MiB, a newline every line
	turn := wire.Turn{ID: "t", Message: userMsg("q"), State: wire.TurnStateComplete, ResponseParts: []wire.ResponsePart{
		wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: text}),
	}}
	e, err := EncodeTurn(&turn)
	require.NoError(t, err)
	var w countingWriter
	var m1, m2 runtime.MemStats
	runtime.ReadMemStats(&m1)
	require.NoError(t, e.Encode(&w))
	runtime.ReadMemStats(&m2)
	assert.Greater(t, w.n, len(text)+1<<16, "the newlines are escaped")
	assert.Less(t, m2.TotalAlloc-m1.TotalAlloc, uint64(2*textSlice), "writing the turn allocated %d bytes", m2.TotalAlloc-m1.TotalAlloc)
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}

// TestTurnSnapshotCachedIsTurnSnapshot: a snapshot that takes its tool
// calls' encodings from the turn's cache is byte for byte the uncached
// one, as the turn goes on: tool calls added, a tool call's state replaced
// (as the reducer does: a new state, never the old one changed), text
// grown, parts of other kinds.
func TestTurnSnapshotCachedIsTurnSnapshot(t *testing.T) {
	tool := func(id, status string) wire.ResponsePart {
		var st any = &wire.ToolCallRunningState{Status: wire.ToolCallStatusRunning, ToolCallID: id, ToolName: "read", DisplayName: "Read " + id}
		if status == "done" {
			st = &wire.ToolCallCompletedState{Status: wire.ToolCallStatusCompleted, ToolCallID: id, ToolName: "read", DisplayName: "Read " + id,
				Success: true, PastTenseMessage: wire.PlainText("read " + id)}
		}
		return wire.NewResponsePart(&wire.ToolCallResponsePart{Kind: wire.ResponsePartKindToolCall, ToolCall: wire.ToolCallState{Value: st}})
	}
	md := func(text string) wire.ResponsePart {
		return wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: text})
	}
	active := wire.ActiveTurn{ID: "a", StartedAt: "2026-01-01T00:00:00.000Z", Message: userMsg("q")}
	cache := new(PartCache)
	check := func(step string) {
		t.Helper()
		want, err := TurnSnapshot(CopyActiveTurn(&active))
		require.NoError(t, err)
		got, err := TurnSnapshotCached(CopyActiveTurn(&active), cache)
		require.NoError(t, err)
		assert.Equal(t, string(want.Data), string(got.Data), step)
		assert.Equal(t, want.Texts, got.Texts, step)
		plain, err := json.Marshal(&active)
		require.NoError(t, err)
		assert.JSONEq(t, string(plain), string(placedSnapshot(t, got)), step)
	}
	check("no parts")
	active.ResponseParts = []wire.ResponsePart{md("hello"), tool("tc1", "running")}
	check("a running tool call")
	check("the same again, from the cache")
	active.ResponseParts[1] = tool("tc1", "done")
	check("its state replaced")
	active.ResponseParts = append(active.ResponseParts, md("more"), tool("tc2", "running"),
		wire.NewResponsePart(&wire.SystemNotificationResponsePart{Kind: wire.ResponsePartKindSystemNotification, Content: wire.PlainText("note")}))
	check("more parts")
	active.ResponseParts[0] = md("hello, world")
	check("text grown")
	assert.Len(t, cache.prev, 2, "the cache holds the turn's tool calls, no more")
}

// userMsg is a user message with the given text.
func userMsg(text string) wire.Message {
	return wire.Message{Text: text, Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
}
