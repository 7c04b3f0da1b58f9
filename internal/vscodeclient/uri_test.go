package vscodeclient

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDefaultChatURIIsVSCodesDerivedName(t *testing.T) {
	for _, tc := range []struct{ session, want string }{
		{"demo:/123", "ahp-chat://default/ZGVtbzovMTIz"},
		{"copilotcli:/2f1e7c3a-0b0a-4c1e-9d35-6f7f1b5a2c11",
			"ahp-chat://default/Y29waWxvdGNsaTovMmYxZTdjM2EtMGIwYS00YzFlLTlkMzUtNmY3ZjFiNWEyYzEx"},
		// base64url, not base64: '_' where base64 has '/', and no padding.
		{"ahp-session:/a?b>c", "ahp-chat://default/YWhwLXNlc3Npb246L2E_Yj5j"},
	} {
		got := DefaultChatURI(tc.session)
		assert.Equal(t, tc.want, got, tc.session)
		session, id, ok := ParseChatURI(got)
		assert.True(t, ok, got)
		assert.Equal(t, tc.session, session)
		assert.Equal(t, "default", id)
	}
}

func TestParseChatURI(t *testing.T) {
	for _, tc := range []struct {
		uri, session, id string
		ok               bool
	}{
		{"ahp-chat://side-1/ZGVtbzovMTIz", "demo:/123", "side-1", true},
		{"ahp-chat://subagent/ZGVtbzovMTIz/tool%2F1", "demo:/123", "subagent", true},
		{"ahp-chat://default/ZGVtbzovMTIz==", "demo:/123", "default", true},
		{"ahp-chat:/0b6c5a4e-uuid", "", "", false},
		{"ahp-chat://default/", "", "", false},
		{"ahp-chat://default/!!!", "", "", false},
		{"demo:/123", "", "", false},
	} {
		session, id, ok := ParseChatURI(tc.uri)
		assert.Equal(t, tc.ok, ok, tc.uri)
		assert.Equal(t, tc.session, session, tc.uri)
		assert.Equal(t, tc.id, id, tc.uri)
	}
}

func TestConnectURLTakesTheTokenFromThePastedAddress(t *testing.T) {
	for _, tc := range []struct{ address, token, want string }{
		{"ws://127.0.0.1:8080?tkn=secret", "", "ws://127.0.0.1:8080?tkn=secret"},
		{"127.0.0.1:8080", "a b", "ws://127.0.0.1:8080?tkn=a+b"},
		{"ws://h:1/path?x=1&tkn=t", "", "ws://h:1/path?tkn=t&x=1"},
		{"wss://h/", "", "wss://h/"},
	} {
		got, err := connectURL(tc.address, tc.token)
		assert.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.address)
	}
}

// TestNewSessionURIFollowsVSCodesRule: the newest VS Code names a
// session ahp-session:/<uuid> on a host that does not say it is an older
// VS Code host, and <provider>:/<uuid> on one that does (a _meta flag, or
// a hostBuild in the root's _meta) unless it also says it takes AHP
// session URIs.
func TestNewSessionURIFollowsVSCodesRule(t *testing.T) {
	root := func(meta string) []Snapshot {
		return []Snapshot{{Resource: RootChannel, State: json.RawMessage(`{"agents":[],"_meta":` + meta + `}`)}}
	}
	for _, tc := range []struct {
		name string
		rule SessionURIs
		init *InitializeResult
		want string
	}{
		{"before the handshake", SessionURIsNewest, nil, "demo:/id"},
		{"a conforming host", SessionURIsNewest, &InitializeResult{}, "ahp-session:/id"},
		{"a native host", SessionURIsNewest, &InitializeResult{Meta: map[string]any{"vscode.agentHost": true}}, "demo:/id"},
		{"a native host taking session URIs", SessionURIsNewest,
			&InitializeResult{Meta: map[string]any{"vscode.agentHost": true, "vscode.ahpSessionUris": true}}, "ahp-session:/id"},
		{"the flag as a string does not count", SessionURIsNewest,
			&InitializeResult{Meta: map[string]any{"vscode.agentHost": true, "vscode.ahpSessionUris": "true"}}, "demo:/id"},
		{"an older native host by its hostBuild", SessionURIsNewest,
			&InitializeResult{Snapshots: root(`{"hostBuild":{"version":"1"}}`)}, "demo:/id"},
		{"a root _meta without hostBuild", SessionURIsNewest, &InitializeResult{Snapshots: root(`{"x":1}`)}, "ahp-session:/id"},
		{"provider names asked for", SessionURIsProvider, &InitializeResult{}, "demo:/id"},
	} {
		assert.Equal(t, tc.want, newSessionURI(tc.rule, "demo", "id", tc.init), tc.name)
	}
}
