package jsonstr

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// Append must agree with encoding/json on every byte, every
// rune and random mixtures, including invalid UTF-8.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	check := func(s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(Append(nil, s)), "for %q", s)
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
