package wire

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Channel names. AHP leaves most URIs to whoever creates the channel;
// these are the forms VS Code's Agents window computes itself and expects a
// host to use (docs/protocol-versions.md §17):
//
//   - a session: `<provider>:/<uuid>`, minted by the client;
//   - its default chat: `ahp-chat://default/<base64url(session URI)>`;
//   - a further (side, fork) chat: `ahp-chat://<chatId>/<base64url(session URI)>`,
//     minted by the client and echoed verbatim;
//   - a subagent's chat: `ahp-chat://subagent/<base64url(session URI)>/<toolCallId>`;
//   - a terminal a client creates: `agenthost-terminal:/<uuid>`;
//   - the root: `ahp-root://`, or `ahp-root:` once a URI class has
//     normalised the empty authority away.
//
// base64url is RFC 4648 §5 without padding, of the URI's UTF-8 bytes.
// Sessions made before these names have default chats `ahp-chat:/<id>`,
// which stay valid chat names: ParseChatURI just finds no session in them.
const (
	// ChatScheme is the scheme of every chat channel URI, with its colon.
	ChatScheme = "ahp-chat:"
	// DefaultChatID is the chat id (the authority) of a session's default
	// chat in the derived form.
	DefaultChatID = "default"
	// SubagentChatID is the chat id of subagent chats, whose path carries
	// the tool call id after the session.
	SubagentChatID = "subagent"
)

// ChatName is what a derived chat URI says: the session that owns the chat
// and the chat's id within it ("default" for the default chat,
// "subagent/<toolCallId>" for a subagent's chat).
type ChatName struct {
	Session string
	ChatID  string
}

// ChatURI returns the derived URI of chat chatID of session:
// `ahp-chat://<chatID>/<base64url(session)>`.
func ChatURI(session, chatID string) string {
	return ChatScheme + "//" + chatID + "/" + base64.RawURLEncoding.EncodeToString([]byte(session))
}

// DefaultChatURI returns the derived URI of session's default chat, the
// name VS Code computes for it: `ahp-chat://default/<base64url(session)>`.
func DefaultChatURI(session string) string { return ChatURI(session, DefaultChatID) }

// ParseChatURI recovers the session and chat id from a derived chat URI
// (the inverse of ChatURI, and of the subagent form). It reports false for
// anything else, including the older `ahp-chat:/<id>` names and URIs
// whose encoded session is not a URI.
func ParseChatURI(uri string) (ChatName, bool) {
	rest, ok := strings.CutPrefix(uri, ChatScheme+"//")
	if !ok {
		return ChatName{}, false
	}
	id, path, ok := strings.Cut(rest, "/")
	if !ok || id == "" || path == "" || strings.ContainsAny(rest, "?#") || !printable(rest) {
		return ChatName{}, false
	}
	enc, tool := path, ""
	if id == SubagentChatID {
		if enc, tool, ok = strings.Cut(path, "/"); !ok || tool == "" {
			return ChatName{}, false
		}
		if tool, ok = unescapeComponent(tool); !ok {
			return ChatName{}, false
		}
		id += "/" + tool
	} else if strings.Contains(path, "/") {
		return ChatName{}, false
	}
	session, ok := decodeSession(enc)
	if !ok {
		return ChatName{}, false
	}
	return ChatName{Session: session, ChatID: id}, true
}

// decodeSession decodes the base64url of a session URI. Like VS Code's
// decoder it takes padding and the standard alphabet's '+' too; what it
// decodes must be a URI (a scheme, then ':'), or it is not a session.
func decodeSession(enc string) (string, bool) {
	enc = strings.TrimRight(strings.ReplaceAll(enc, "+", "-"), "=")
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	s := string(b)
	if i := strings.IndexByte(s, ':'); i <= 0 || strings.ContainsAny(s[:i], "/?# \t\r\n") {
		return "", false
	}
	return s, true
}

// unescapeComponent undoes encodeURIComponent (percent-encoded UTF-8).
func unescapeComponent(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", false
		}
		b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
		i += 2
	}
	out := b.String()
	return out, utf8.ValidString(out)
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// IsChatURI reports whether uri names a chat channel (its scheme is
// ahp-chat), whatever its form.
func IsChatURI(uri string) bool { return strings.HasPrefix(uri, ChatScheme) }

// ValidChatURI reports whether uri is a well-formed chat name a client may
// give a chat it creates: the older `ahp-chat:/<id>`, a derived
// `ahp-chat://<chatId>/<base64url(session)>`, or another `ahp-chat:` URI
// with something after the scheme and no whitespace or control characters.
// A derived name that is well formed may still name another session: the
// caller compares ParseChatURI's session with its own.
func ValidChatURI(uri string) bool {
	rest, ok := strings.CutPrefix(uri, ChatScheme)
	return ok && strings.Trim(rest, "/") != "" && printable(rest)
}

// printable reports whether s is UTF-8 without spaces or control
// characters, as a URI must be.
func printable(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// IsTerminalURI reports whether uri names a terminal channel: AHP's
// `ahp-terminal:` or VS Code's `agenthost-terminal:` (the terminals its
// clients create, `agenthost-terminal:/<uuid>`).
func IsTerminalURI(uri string) bool {
	return strings.HasPrefix(uri, "ahp-terminal:") || strings.HasPrefix(uri, "agenthost-terminal:")
}

// IsRootChannel reports whether uri names the root channel: `ahp-root://`
// as AHP writes it, or `ahp-root:` (or `ahp-root:/`), the same URI after a
// URI class dropped its empty authority, as VS Code may send it.
func IsRootChannel(uri string) bool {
	switch uri {
	case RootChannel, "ahp-root:", "ahp-root:/":
		return true
	}
	return false
}
