package codec

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// textAction is how the host encodes chat/delta and chat/reasoning
// (host.encodeAction writes the bytes json.Marshal writes for it).
type textAction struct {
	Type    string `json:"type"`
	TurnID  string `json:"turnId"`
	PartID  string `json:"partId"`
	Content string `json:"content"`
}

// The fast path of the 0.3.0 Envelope gives exactly the bytes of the
// general path, for every string the host may write (every rune up to
// U+3000, invalid UTF-8, HTML characters, U+2028/9, random strings, in
// both json.Marshal's and wire.Marshal's escaping) and for inputs that are
// not in the host's form at all.
func TestV030StreamedTextFastPath(t *testing.T) {
	c := newV030(testDirectory())
	check := func(chat string, raw []byte) bool {
		t.Helper()
		e := Envelope{Channel: chat, Action: raw, ServerSeq: 42, Origin: &wire.ActionOrigin{ClientID: "c", ClientSeq: 7}}
		want := c.envelope(e)
		got := c.Envelope(e)
		require.Equal(t, len(want), len(got), "%s", raw)
		for i := range want {
			assert.Equal(t, want[i].Channel, got[i].Channel, "%s", raw)
			assert.Equal(t, string(want[i].Action), string(got[i].Action), "%s", raw)
			assert.Equal(t, want[i].ServerSeq, got[i].ServerSeq)
			assert.Equal(t, want[i].Origin, got[i].Origin)
		}
		_, fast := streamedText030(raw)
		return fast
	}
	// Under -race each check costs ~20× more; a sparser sweep and fewer
	// random strings still cover every escaping class.
	step, random := rune(1), 20000
	if testenv.Race {
		step, random = 7, 2000
	}
	var strs []string
	for r := rune(0); r <= 0x3000; r += step {
		strs = append(strs, "a"+string(r)+"b")
	}
	for _, r := range []rune{0x7f, 0x80, 0x2028, 0x2029, 0xfffd} {
		strs = append(strs, "a"+string(r)+"b")
	}
	strs = append(strs, "", "\xff", "a\xc3", "\xed\xa0\x80", "<b>&amp;</b>", "\u2028\u2029", "\ufffd", `back\slash "quoted"`,
		"line\nfeed\ttab\rcr\bbs\ffeed\x00nul\x7fdel", "T1763791234567890123#00000001xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
	rng := rand.New(rand.NewPCG(1, 2))
	for range random {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = byte(rng.IntN(256))
			} else {
				b[i] = byte(0x20 + rng.IntN(0x5f))
			}
		}
		strs = append(strs, string(b))
	}
	for i, s := range strs {
		typ := []string{"chat/delta", "chat/reasoning"}[i%2]
		a := textAction{Type: typ, TurnID: "turn-1", PartID: "part-1", Content: s}
		if i%3 == 0 {
			a.TurnID, a.PartID = s, "p"+s
		}
		host, err := json.Marshal(a)
		require.NoError(t, err)
		plain, err := wire.Marshal(a) // no HTML escapes: not the host's form
		require.NoError(t, err)
		assert.Equal(t, utf8.ValidString(s), check("ahp-chat:/s1/main", host),
			"the host's encoding takes the fast path unless it replaced invalid UTF-8: %q", s)
		check("ahp-chat:/s1/main", plain)
	}

	// Not the host's form: each goes the general way, or the fast one with
	// the same result.
	for _, raw := range []string{
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"x","_meta":{"k":1}}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"x","turnId":"u"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"x"} `,
		`{"type":"chat/delta","turnId":"t", "partId":"p","content":"x"}`,
		`{"type":"chat/delta","turnId":"t","content":"x","partId":"p"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"a\/b"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"\u0041"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"\u000a"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"\u001F"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"\u001f\u003C"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"\ufffd"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"\u00"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"\u2028<"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"x"}}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"x`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":1}`,
		`{"type":"chat/delta","turnId":"t","partId":"p"}`,
		`{"type":"chat/delta","turnId":"t","partId":"p","content":"x\"}`,
		`{"type":"chat/deltas","turnId":"t","partId":"p","content":"x"}`,
		`{"type":"chat/responsePart","turnId":"t","part":{"kind":"markdown","id":"p","content":""}}`,
	} {
		check("ahp-chat:/s1/main", []byte(raw))
	}
	// A chat that is no session's default chat: nothing, either way.
	check("ahp-chat:/s1/other", []byte(`{"type":"chat/delta","turnId":"t","partId":"p","content":"x"}`))
}
