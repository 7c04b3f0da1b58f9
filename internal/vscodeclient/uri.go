package vscodeclient

import (
	"encoding/base64"
	"strings"
)

// RootChannel is the root channel as VS Code names it.
const RootChannel = "ahp-root://"

// The chat id VS Code gives every session's default chat, in the URI's
// authority.
const defaultChatID = "default"

// DefaultChatURI is the name VS Code derives for a session's default chat
// without asking the host: ahp-chat://default/<the session URI in
// unpadded base64url> (buildDefaultChatUri in VS Code's sessionState.ts).
// Several places of VS Code subscribe this name rather than the session
// state's defaultChat, so a host must publish its default chat under it.
func DefaultChatURI(session string) string { return ChatURI(session, defaultChatID) }

// ChatURI is VS Code's name for the chat chatID of a session:
// ahp-chat://<chatId>/<base64url(session), no padding> (buildChatUri).
func ChatURI(session, chatID string) string {
	return "ahp-chat://" + chatID + "/" + base64.RawURLEncoding.EncodeToString([]byte(session))
}

// ParseChatURI is VS Code's parseChatUri: it recovers the session and the
// chat id from a chat URI of VS Code's form, and reports false for any
// other URI (such as the older ahp-chat:/<uuid>). A subagent chat's
// trailing /<toolCallId> is ignored, as VS Code does.
func ParseChatURI(uri string) (session, chatID string, ok bool) {
	rest, found := strings.CutPrefix(uri, "ahp-chat://")
	if !found {
		return "", "", false
	}
	chatID, path, found := strings.Cut(rest, "/")
	if !found || chatID == "" || path == "" {
		return "", "", false
	}
	encoded, _, _ := strings.Cut(path, "/")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(encoded, "="))
	if err != nil || len(raw) == 0 {
		return "", "", false
	}
	return string(raw), chatID, true
}

// IsRootChannel reports whether uri names the root channel; VS Code
// accepts ahp-root: with or without the slashes.
func IsRootChannel(uri string) bool {
	return uri == RootChannel || uri == "ahp-root:" || uri == "ahp-root:/"
}

// SessionURIs says how the client names the sessions it creates.
type SessionURIs int

const (
	// SessionURIsNewest follows VS Code's newest client
	// (newAgentHostSessionUri): ahp-session:/<uuid> for a host that does not
	// identify itself as an older VS Code host, <provider>:/<uuid> for one
	// that does.
	SessionURIsNewest SessionURIs = iota
	// SessionURIsProvider always names sessions <provider>:/<uuid>, the
	// provider as the scheme: what VS Code builds before the newest client,
	// the Agents window's eager sessions and ahpx.
	SessionURIsProvider
)

// The initialize result's _meta keys VS Code's newest client reads to
// choose how to name sessions (meta/agentHostSessionUrisMeta.ts).
const (
	metaNativeHost  = "vscode.agentHost"
	metaSessionURIs = "vscode.ahpSessionUris"
)

// newSessionURI names a new session the way rule says, given what the host
// answered to initialize (nil before the handshake).
func newSessionURI(rule SessionURIs, provider, id string, init *InitializeResult) string {
	if rule == SessionURIsProvider || init == nil || (init.isNativeHost() && init.Meta[metaSessionURIs] != true) {
		return provider + ":/" + id
	}
	return "ahp-session:/" + id
}

// isNativeHost is VS Code's isNativeAgentHost: the host says it is VS
// Code's own in _meta, or its root state carries a hostBuild in _meta.
func (r *InitializeResult) isNativeHost() bool {
	if r.Meta[metaNativeHost] == true {
		return true
	}
	for _, s := range r.Snapshots {
		if !IsRootChannel(s.Resource) {
			continue
		}
		var root struct {
			Meta map[string]any `json:"_meta"`
		}
		if jsonUnmarshal(s.State, &root) == nil {
			if _, ok := root.Meta["hostBuild"].(map[string]any); ok {
				return true
			}
		}
	}
	return false
}
