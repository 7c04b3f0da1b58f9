package host

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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
		got, err := encodeTurn(&turn)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "completed turn with %q", text)

		bare := wire.Turn{ID: "x", Message: userMsg(""), ResponseParts: []wire.ResponsePart{}, State: wire.TurnStateComplete}
		want, _ = json.Marshal(&bare)
		got, err = encodeTurn(&bare)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))

		active := wire.ActiveTurn{ID: "a", StartedAt: "2026-01-01T00:00:00.000Z", Message: userMsg(text), ResponseParts: turn.ResponseParts}
		want, _ = json.Marshal(&active)
		var enc turnEncoder
		got, err = enc.encode(&active)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "active turn with %q", text)
	}
}

// TestTurnEncoderGrowsTextIncrementally: a text that grows between
// checkpoints, cut anywhere (inside a multi-byte rune too), encodes as
// json.Marshal does each time, and a text replaced by another is
// re-encoded.
func TestTurnEncoderGrowsTextIncrementally(t *testing.T) {
	full := strings.Join(trickyTexts, "|")
	var enc turnEncoder
	for cut := 0; cut <= len(full); cut += 7 {
		active := wire.ActiveTurn{ID: "a", Message: userMsg("q"), ResponseParts: []wire.ResponsePart{
			wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: full[:cut]}),
		}}
		want, err := json.Marshal(&active)
		require.NoError(t, err)
		got, err := enc.encode(&active)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "cut at %d", cut)
	}
	active := wire.ActiveTurn{ID: "a", Message: userMsg("q"), ResponseParts: []wire.ResponsePart{
		wire.NewResponsePart(&wire.MarkdownResponsePart{Kind: wire.ResponsePartKindMarkdown, ID: "m", Content: "something else"}),
	}}
	want, _ := json.Marshal(&active)
	got, err := enc.encode(&active)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// TestCheckpointGrowth: the byte trigger counts every byte up to 128 KiB of
// turn, then half the turn's size in new content counts as 64 KiB.
func TestCheckpointGrowth(t *testing.T) {
	assert.Equal(t, 100, checkpointGrowth(100, 1000))
	assert.Equal(t, 100, checkpointGrowth(100, checkpointScaleFrom))
	assert.Equal(t, 50, checkpointGrowth(100, 2*checkpointScaleFrom))
	assert.Equal(t, 1, checkpointGrowth(1, 100*checkpointScaleFrom), "never nothing")
	// Half of a 1 MiB turn is what reaches 64 KiB.
	sum, turn := 0, 1<<20
	for sum < 64<<10 {
		sum += checkpointGrowth(64, turn)
		turn += 64
	}
	assert.InDelta(t, float64(1<<20)/2, float64(turn-(1<<20)), float64(1<<20)/8)
}
