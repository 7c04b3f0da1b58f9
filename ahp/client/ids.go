package client

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// NewSessionURI returns a fresh session channel URI, `ahp-session:/<uuid>`.
// AHP lets the client choose the URI of the session it creates.
func NewSessionURI() string { return "ahp-session:/" + NewUUID() }

// NewChatURI returns a fresh chat channel URI, `ahp-chat:/<uuid>`, for
// CreateChat: the client chooses the URI of a chat it adds. NewSessionChatURI
// makes the form VS Code uses, which names the session too.
func NewChatURI() string { return "ahp-chat:/" + NewUUID() }

// NewSessionChatURI returns a fresh chat URI for a chat of session in the
// form VS Code mints for side and fork chats,
// `ahp-chat://<uuid>/<base64url(session)>` (wire.ChatURI): a reader can tell
// the chat's session from its name (wire.ParseChatURI).
func NewSessionChatURI(session string) string { return wire.ChatURI(session, NewUUID()) }

// NewUUID returns a random (version 4) UUID in its canonical text form.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redactURL hides the access token in error messages, which end up in logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	q := u.Query()
	if q.Has("tkn") {
		q.Set("tkn", "REDACTED")
		u.RawQuery = q.Encode()
	}
	u.User = nil
	return u.String()
}
