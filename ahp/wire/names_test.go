package wire

import (
	"encoding/base64"
	"strings"
	"testing"
)

// The golden URIs were computed outside Go (coreutils base64, '+/' → '-_',
// padding removed), the way VS Code's buildDefaultChatUri encodes.
func TestDefaultChatURIGolden(t *testing.T) {
	cases := []struct{ session, want string }{
		{"claude:/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "ahp-chat://default/Y2xhdWRlOi8wYTFiMmMzZC00ZTVmLTRhNmItOGM3ZC05ZTBmMWEyYjNjNGQ"},
		{"copilotcli:/6f1c0e2a-3b4d-4c5e-9f60-718293a4b5c6", "ahp-chat://default/Y29waWxvdGNsaTovNmYxYzBlMmEtM2I0ZC00YzVlLTlmNjAtNzE4MjkzYTRiNWM2"},
		{"demo:/s1", "ahp-chat://default/ZGVtbzovczE"},                    // no padding
		{"ahp-session:/x?y", "ahp-chat://default/YWhwLXNlc3Npb246L3g_eQ"}, // '_', not '/'
		{"a:/>>>?", "ahp-chat://default/YTovPj4-Pw"},                      // '-', not '+'
		{"demo:/ü", "ahp-chat://default/ZGVtbzovw7w"},                     // UTF-8 bytes
	}
	for _, c := range cases {
		if got := DefaultChatURI(c.session); got != c.want {
			t.Errorf("DefaultChatURI(%q) = %q, want %q", c.session, got, c.want)
		}
		name, ok := ParseChatURI(c.want)
		if !ok || name != (ChatName{Session: c.session, ChatID: DefaultChatID}) {
			t.Errorf("ParseChatURI(%q) = %+v, %v; want {%s default}", c.want, name, ok, c.session)
		}
	}
	if got, want := ChatURI("claude:/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "5d3c"), "ahp-chat://5d3c/Y2xhdWRlOi8wYTFiMmMzZC00ZTVmLTRhNmItOGM3ZC05ZTBmMWEyYjNjNGQ"; got != want {
		t.Errorf("ChatURI = %q, want %q", got, want)
	}
}

func TestParseChatURI(t *testing.T) {
	cases := []struct {
		uri  string
		want ChatName
		ok   bool
	}{
		{"ahp-chat://5d3c/ZGVtbzovczE", ChatName{"demo:/s1", "5d3c"}, true},
		{"ahp-chat://default/ZGVtbzovczE=", ChatName{"demo:/s1", "default"}, true}, // padded, as a lenient decoder takes it
		{"ahp-chat://default/YTovPj4+Pw", ChatName{"a:/>>>?", "default"}, true},    // standard alphabet's '+'
		{"ahp-chat://subagent/ZGVtbzovczE/call%2F1", ChatName{"demo:/s1", "subagent/call/1"}, true},
		{"ahp-chat://subagent/ZGVtbzovczE/tc-7", ChatName{"demo:/s1", "subagent/tc-7"}, true},

		{"ahp-chat:/s1", ChatName{}, false},                        // the older form names no session
		{"ahp-chat://default/", ChatName{}, false},                 // nothing encoded
		{"ahp-chat://default", ChatName{}, false},                  // no path
		{"ahp-chat:///ZGVtbzovczE", ChatName{}, false},             // no chat id
		{"ahp-chat://default/ZGVtbzovczE/x", ChatName{}, false},    // more path than a session
		{"ahp-chat://subagent/ZGVtbzovczE", ChatName{}, false},     // subagent without a tool call
		{"ahp-chat://subagent/ZGVtbzovczE/%zz", ChatName{}, false}, // bad escape
		{"ahp-chat://default/!!!", ChatName{}, false},              // not base64
		{"ahp-chat://default/c2Vzc2lvbg", ChatName{}, false},       // "session": not a URI
		{"ahp-chat://default/ZGVtbzovczE?x=1", ChatName{}, false},  // query
		{"ahp-session://default/ZGVtbzovczE", ChatName{}, false},   // not a chat
		{"AHP-CHAT://default/ZGVtbzovczE", ChatName{}, false},      // schemes are written lower case
		{"ahp-chat://de fault/ZGVtbzovczE", ChatName{}, false},     // whitespace
		{"ahp-chat://default/" + "gA", ChatName{}, false},          // 0x80: not UTF-8
		{"ahp-chat://subagent/ZGVtbzovczE/%C3", ChatName{}, false}, // escape that is not UTF-8
		{"ahp-chat://default/" + "Lzov", ChatName{}, false},        // "/:/": no scheme
		{"ahp-chat://default/" + "YS9iOmM", ChatName{}, false},     // "a/b:c": '/' before the colon
		{"", ChatName{}, false},
	}
	for _, c := range cases {
		got, ok := ParseChatURI(c.uri)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseChatURI(%q) = %+v, %v; want %+v, %v", c.uri, got, ok, c.want, c.ok)
		}
	}
}

func TestValidChatURI(t *testing.T) {
	for uri, want := range map[string]bool{
		"ahp-chat:/0a1b":                 true,
		"ahp-chat://default/ZGVtbzovczE": true,
		"ahp-chat://5d3c/ZGVtbzovczE":    true,
		"ahp-chat://side/1":              true, // opaque, but well formed
		"ahp-chat:":                      false,
		"ahp-chat:/":                     false,
		"ahp-chat://":                    false,
		"ahp-chat:/a b":                  false,
		"ahp-chat:/a\x00":                false,
		"ahp-session:/x":                 false,
		"chat:/x":                        false,
	} {
		if got := ValidChatURI(uri); got != want {
			t.Errorf("ValidChatURI(%q) = %v, want %v", uri, got, want)
		}
	}
}

func TestIsRootChannel(t *testing.T) {
	for uri, want := range map[string]bool{
		"ahp-root://": true,
		"ahp-root:":   true,
		"ahp-root:/":  true,
		"ahp-root:x":  false,
		"ahp-root":    false,
		"ahp-chat:/":  false,
		"":            false,
	} {
		if got := IsRootChannel(uri); got != want {
			t.Errorf("IsRootChannel(%q) = %v, want %v", uri, got, want)
		}
	}
}

// FuzzChatURI: ParseChatURI takes any string without panicking, and
// recovers the session and chat id of every name ChatURI builds from a
// session URI and a plain chat id.
func FuzzChatURI(f *testing.F) {
	f.Add("claude:/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "default")
	f.Add("ahp-session:/x?y#z", "5d3c")
	f.Add("demo:/ü", "side")
	f.Fuzz(func(t *testing.T, session, id string) {
		ParseChatURI(session) // arbitrary input
		uri := ChatURI(session, id)
		name, ok := ParseChatURI(uri)
		plainID := id != "" && id != SubagentChatID && !strings.ContainsAny(id, "/?#") && printable(id)
		if _, isURI := decodeSession(base64.RawURLEncoding.EncodeToString([]byte(session))); !plainID || !isURI {
			return
		}
		if !ok || name != (ChatName{Session: session, ChatID: id}) {
			t.Fatalf("ParseChatURI(ChatURI(%q, %q) = %q) = %+v, %v", session, id, uri, name, ok)
		}
		if !ValidChatURI(uri) {
			t.Fatalf("ChatURI(%q, %q) = %q is not a valid chat URI", session, id, uri)
		}
	})
}
