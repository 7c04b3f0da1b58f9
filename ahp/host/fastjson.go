package host

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// encodeAction returns exactly the bytes json.Marshal(a) returns. The
// streamed-text actions (chat/delta, chat/reasoning, without _meta) — nearly every
// action of a busy session — are written directly: through encoding/json
// they cost a reflective encode, a MarshalJSON call per level and a
// re-compaction of its output (over half the sequencer's time per chunk,
// docs/performance.md). Everything else goes through json.Marshal.
func encodeAction(a wire.StateAction) ([]byte, error) {
	switch v := a.Value.(type) {
	case *wire.ChatDeltaAction:
		if v != nil && len(v.Meta) == 0 {
			return appendTextAction(textActionBuf(v.TurnID, v.PartID, v.Content), wire.ActionTypeChatDelta, v.TurnID, v.PartID, v.Content), nil
		}
	case *wire.ChatReasoningAction:
		if v != nil && len(v.Meta) == 0 {
			return appendTextAction(textActionBuf(v.TurnID, v.PartID, v.Content), wire.ActionTypeChatReasoning, v.TurnID, v.PartID, v.Content), nil
		}
	}
	return json.Marshal(a)
}

// textActionBuf allocates room for a text action without escapes.
func textActionBuf(turnID, partID, content string) []byte {
	return make([]byte, 0, 80+len(turnID)+len(partID)+len(content))
}

// appendTextAction appends {"type":…,"turnId":…,"partId":…,"content":…},
// the field order of both action structs.
func appendTextAction(b []byte, typ wire.ActionType, turnID, partID, content string) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, string(typ))
	b = append(b, `,"turnId":`...)
	b = appendJSONString(b, turnID)
	b = append(b, `,"partId":`...)
	b = appendJSONString(b, partID)
	b = append(b, `,"content":`...)
	b = appendJSONString(b, content)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json does
// (HTML-safe): '"' and '\\' are backslash-escaped; \b \f \n \r \t use their
// short forms; other control characters and '<', '>', '&' become \u00XX;
// U+2028 and U+2029 become \u2028 and \u2029; each byte of invalid UTF-8
// becomes \ufffd. A test checks it against json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	b = appendJSONStringBody(append(b, '"'), s)
	return append(b, '"')
}

// appendJSONStringBody is appendJSONString without the quotes. A string cut
// before a byte that starts a rune (utf8.RuneStart) encodes, piece by
// piece, to the same bytes as whole.
func appendJSONStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
