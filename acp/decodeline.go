package acp

import (
	"unicode/utf16"
	"unicode/utf8"
)

// lineUpdate is what scanTextUpdate reads from a line of the agent's
// stdout: a session/update notification carrying a text chunk.
type lineUpdate struct {
	// sessionID is only looked up, so it is not copied out of the line
	// when it holds no escapes: it is valid only as long as the line is.
	sessionID []byte
	kind      string // kindAgentMessageChunk or kindAgentThoughtChunk
	text      string
}

// scanTextUpdate is the streaming hot path of the agent's stdout: it reads
// a whole JSON-RPC line in one pass, validating it as it goes, and reports
// true only for a session/update notification whose update is an
// agent_message_chunk or agent_thought_chunk with a text block. For a line
// it accepts, the result is exactly what the general path reads from it
// (json.Unmarshal of the envelope, then of its params, then of the update:
// three validations and three decodes); FuzzScanTextUpdate compares the
// two. Anything it is not sure of — another kind or method, an id, a
// duplicate or case-folded member name, a name with escapes or non-ASCII
// bytes, deep nesting, invalid JSON — it declines (false), and the line
// takes the general path, which then decides as it always has.
func scanTextUpdate(line []byte) (lineUpdate, bool) {
	s := lineScanner{b: line}
	var u lineUpdate
	var method, params bool
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "method":
			if method {
				return false
			}
			method = true
			m, ok := s.strBytes()
			return ok && string(m) == "session/update"
		case "params":
			if params {
				return false
			}
			params = true
			return s.params(&u)
		case "id":
			return false // a request (or a malformed notification)
		}
		return !foldsToAny(key, "method", "params", "id") && s.skip(0)
	})
	s.ws()
	return u, ok && method && params && s.i == len(s.b)
}

// params reads a session/update's params: sessionId and a text-chunk
// update.
func (s *lineScanner) params(u *lineUpdate) bool {
	var sid, upd bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "sessionId":
			if sid {
				return false
			}
			sid = true
			var ok bool
			u.sessionID, ok = s.strBytes()
			return ok
		case "update":
			if upd {
				return false
			}
			upd = true
			return s.update(u)
		}
		return !foldsToAny(key, "sessionId", "update") && s.skip(0)
	}) && sid && upd
}

// update reads an update that must be an agent_message_chunk or
// agent_thought_chunk whose content is a text block.
func (s *lineScanner) update(u *lineUpdate) bool {
	var kind, content, isText bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "sessionUpdate":
			if kind {
				return false
			}
			kind = true
			k, ok := s.strBytes()
			switch string(k) { // the constants, not a copy of the line's bytes
			case kindAgentMessageChunk:
				u.kind = kindAgentMessageChunk
			case kindAgentThoughtChunk:
				u.kind = kindAgentThoughtChunk
			default:
				return false
			}
			return ok
		case "content":
			if content {
				return false
			}
			content = true
			return s.textBlock(u, &isText)
		}
		return !foldsToAny(key, "sessionUpdate", "content") && s.skip(0)
	}) && kind && isText
}

// textBlock reads a content block, which must be of type "text"; its text
// may be absent or null (the empty text, as encoding/json leaves a string
// it is given null for).
func (s *lineScanner) textBlock(u *lineUpdate, isText *bool) bool {
	var typ, text bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			if typ {
				return false
			}
			typ = true
			t, ok := s.strBytes()
			*isText = string(t) == "text"
			return ok
		case "text":
			if text {
				return false
			}
			text = true
			if s.peek() == 'n' {
				return s.literal("null")
			}
			var ok bool
			u.text, ok = s.str()
			return ok
		}
		return !foldsToAny(key, "type", "text") && s.skip(0)
	})
}

// lineScanner reads JSON from b at i. Every method reports false on input
// it does not accept, and the scan is then abandoned.
type lineScanner struct {
	b []byte
	i int
}

// maxSkipDepth bounds the nesting of skipped values; deeper input is
// declined (encoding/json has its own limit, which the general path then
// applies).
const maxSkipDepth = 64

func (s *lineScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *lineScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *lineScanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *lineScanner) literal(lit string) bool {
	s.ws()
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// object reads an object, calling member for each member's value with the
// name; the name is declined when it has escapes, control characters or
// bytes beyond ASCII (so that plain comparisons match names exactly as
// encoding/json's case-folding would).
func (s *lineScanner) object(member func(key []byte) bool) bool {
	return s.members(member, true)
}

// members is object; with names false, any valid name is accepted and
// member is called with nil.
func (s *lineScanner) members(member func(key []byte) bool, names bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		if !names {
			if !s.skipString() || !s.consume(':') || !member(nil) {
				return false
			}
			if s.consume(',') {
				continue
			}
			return s.consume('}')
		}
		s.i++
		start := s.i
		for s.i < len(s.b) && s.b[s.i] != '"' {
			if c := s.b[s.i]; c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
				return false
			}
			s.i++
		}
		if s.i == len(s.b) {
			return false
		}
		key := s.b[start:s.i]
		s.i++
		if !s.consume(':') || !member(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// foldsToAny reports whether key equals one of names ignoring ASCII case
// (key is ASCII): encoding/json would decode such a member into the field.
func foldsToAny(key []byte, names ...string) bool {
	for _, n := range names {
		if len(key) != len(n) {
			continue
		}
		same := true
		for i := range len(n) {
			a, b := key[i], n[i]
			if 'A' <= a && a <= 'Z' {
				a += 'a' - 'A'
			}
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			if a != b {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// str reads a string and returns it decoded as encoding/json decodes it:
// escapes resolved (an unpaired surrogate becomes U+FFFD), each byte of
// invalid UTF-8 replaced by U+FFFD.
func (s *lineScanner) str() (string, bool) {
	b, ok := s.strBytes()
	if !ok {
		return "", false
	}
	return string(b), true
}

// strBytes is str without the string: a view of the line when the string
// holds only ASCII without escapes, which is what a chunk's sessionId,
// method and kinds are, so that the hot path makes no copy of them (each
// was an allocation per chunk); the decoded bytes otherwise.
func (s *lineScanner) strBytes() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			v := s.b[start:s.i]
			s.i++
			return v, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		s.i++
	}
	buf := make([]byte, s.i-start, s.i-start+64)
	copy(buf, s.b[start:s.i])
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return buf, true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, false
			}
			switch e := s.b[s.i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(s.b[s.i+2:])
				if !ok {
					return nil, false
				}
				s.i += 6
				if utf16.IsSurrogate(r) {
					if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
						if r2, ok := hex4(s.b[s.i+2:]); ok {
							if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
								s.i += 6
								buf = utf8.AppendRune(buf, d)
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				return nil, false
			}
			s.i += 2
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, s.b[s.i:s.i+size]...)
			}
			s.i += size
		}
	}
	return nil, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skip reads and validates any value.
func (s *lineScanner) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '{':
		return s.members(func([]byte) bool { return s.skip(depth + 1) }, false)
	case c == '[':
		s.i++
		if s.consume(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.consume(',') {
				continue
			}
			return s.consume(']')
		}
	case c == '"':
		return s.skipString()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	return false
}

// skipString validates a string: any byte but control characters, and
// only JSON's escapes.
func (s *lineScanner) skipString() bool {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if _, ok := hex4(s.b[s.i+2:]); !ok {
					return false
				}
				s.i += 6
			default:
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

// number validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; what
// follows it is checked by the caller.
func (s *lineScanner) number() bool {
	b := s.b
	if s.i < len(b) && b[s.i] == '-' {
		s.i++
	}
	digits := func() bool {
		start := s.i
		for s.i < len(b) && '0' <= b[s.i] && b[s.i] <= '9' {
			s.i++
		}
		return s.i > start
	}
	switch {
	case s.i < len(b) && b[s.i] == '0':
		s.i++
	case !digits():
		return false
	}
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		if !digits() {
			return false
		}
	}
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return false
		}
	}
	return true
}
