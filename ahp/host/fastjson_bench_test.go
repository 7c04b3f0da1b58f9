package host

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// appendJSONString must agree with encoding/json on every byte, every
// rune and random mixtures, including invalid UTF-8.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	check := func(s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendJSONString(nil, s)), "for %q", s)
	}
	for c := 0; c < 256; c++ {
		check(string([]byte{byte(c)}))
		check("a" + string([]byte{byte(c)}) + "b")
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r < 0x3000 || r%97 == 0 || (r >= 0x2000 && r < 0x2100) {
			check(string(r))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "😀",
		"\u2028", "\u2029", "\xff", "\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80"}
	for range 20000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		check(sb.String())
	}
}

func TestEncodeActionMatchesMarshal(t *testing.T) {
	for _, a := range []any{
		&wire.ChatDeltaAction{TurnID: "t<1>", PartID: "p&1", Content: "hello \"world\"\n\u2028\xff"},
		&wire.ChatReasoningAction{TurnID: "t1", PartID: "p1", Content: ""},
		&wire.ChatDeltaAction{Type: "ignored: encoding sets it", TurnID: "t", PartID: "p", Content: "x"},
		wire.ChatDeltaAction{TurnID: "value, not pointer", PartID: "p", Content: "x"},
		(*wire.ChatDeltaAction)(nil),
		(*wire.ChatReasoningAction)(nil),
		&wire.ChatDeltaAction{TurnID: "t", PartID: "p", Content: "with _meta: json.Marshal", Meta: map[string]any{"k": "<v>"}},
		&wire.ChatTurnCompleteAction{TurnID: "other actions take json.Marshal"},
	} {
		sa := wire.StateAction{Value: a}
		want, wantErr := json.Marshal(sa)
		got, err := encodeAction(sa)
		require.Equal(t, wantErr == nil, err == nil)
		require.Equal(t, string(want), string(got))
	}
}

func BenchmarkEncodeDelta(b *testing.B) {
	a := wire.Action(&wire.ChatDeltaAction{TurnID: "t1", PartID: "p1", Content: strings.Repeat("x", 64)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeAction(a); err != nil {
			b.Fatal(err)
		}
	}
}
