// Package jsonstr writes JSON strings byte for byte as encoding/json does,
// without its reflection: for the host's hand-written envelope encodings
// and the state store's turn encodings (package persist), where strings are
// most of the bytes.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// Append appends s as a JSON string the way encoding/json does
// (HTML-safe): '"' and '\\' are backslash-escaped; \b \f \n \r \t use their
// short forms; other control characters and '<', '>', '&' become \u00XX;
// U+2028 and U+2029 become \u2028 and \u2029; each byte of invalid UTF-8
// becomes \ufffd. A test checks it against json.Marshal.
func Append(b []byte, s string) []byte {
	b = AppendBody(append(b, '"'), s)
	return append(b, '"')
}

// AppendBody is Append without the quotes. A string cut
// before a byte that starts a rune (utf8.RuneStart) encodes, piece by
// piece, to the same bytes as whole.
func AppendBody(b []byte, s string) []byte {
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
