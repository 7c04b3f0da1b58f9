package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// decodeTree decodes one JSON value into maps, slices and json.Number, so
// that re-encoding it keeps every member and every digit.
func decodeTree(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// object returns v as a JSON object, or nil; reading a nil map is safe, so
// callers chain it through absent members.
func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// array returns v as a JSON array, or nil.
func array(v any) []any {
	a, _ := v.([]any)
	return a
}

// numberText writes a decoded JSON number (or anything else) as text.
func numberText(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprint(v)
}

// hasKey reports whether encoded JSON has a member named key at any depth:
// the quoted name followed by a colon, which a string value never is.
func hasKey(b []byte, key string) bool {
	q := []byte(`"` + key + `"`)
	for {
		i := bytes.Index(b, q)
		if i < 0 {
			return false
		}
		b = b[i+len(q):]
		if j := skipSpace(b, 0); j < len(b) && b[j] == ':' {
			return true
		}
	}
}

// actionType reads the "type" member of an encoded action without decoding
// the rest. Anything that is not an object with a string "type" yields "".
func actionType(b []byte) string { return string(actionTypeBytes(b)) }

// actionTypeBytes is actionType without the string: the host asks once per
// envelope and codec, and most envelopes then go out untouched, so this is
// the whole cost of the common case. Callers that convert the result to a
// string that does not escape pay no allocation for it. The host's encoder
// writes "type" first or after a few short members, so the scan is short.
func actionTypeBytes(b []byte) []byte {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return nil
		}
		end, escaped := scanString(b, i)
		if end < 0 {
			return nil
		}
		isType := string(b[i+1:end-1]) == "type" || escaped && unquote(b[i:end]) == "type"
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil
		}
		i = skipSpace(b, i+1)
		if isType {
			if i >= len(b) || b[i] != '"' {
				return nil
			}
			end, escaped := scanString(b, i)
			switch {
			case end < 0:
				return nil
			case escaped || !utf8.Valid(b[i+1:end-1]):
				// encoding/json replaces invalid UTF-8 with U+FFFD; so
				// must we, or a bad type would read differently here.
				return []byte(unquote(b[i:end]))
			}
			return b[i+1 : end-1]
		}
		if i = skipValue(b, i); i < 0 {
			return nil
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ',' {
			return nil
		}
		i++
	}
}

func unquote(s []byte) string {
	var out string
	if json.Unmarshal(s, &out) != nil {
		return ""
	}
	return out
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index just past the string that starts at b[i]
// (a quote), or -1 when it does not end, and whether it holds escapes.
func scanString(b []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// skipValue returns the index just past the value that starts at b[i], or
// -1. It balances brackets and skips strings; it does not validate.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
