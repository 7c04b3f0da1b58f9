package bridge_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// What clients send reaches the agent (issue 19): attachments, MCP
// servers, sign-in, and the session's changes. The scripted agent logs
// every message it receives (SCRIPTAGENT_LOG), which the tests read back.

// agentLog reads the messages the scripted agent received, of one method.
func agentLog(t *testing.T, file, method string) []json.RawMessage {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var out []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Method == method {
			out = append(out, m.Params)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// attachmentTurn runs "echo" with attachments and returns the turn.
func attachmentTurn(r *acpRig, ch string, atts ...wire.MessageAttachment) wire.Turn {
	r.t.Helper()
	turnID := client.NewUUID()
	_, err := r.c.StartTurn(r.ctx(), ch, turnID, wire.Message{Text: "echo", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser},
		Attachments: atts})
	require.NoError(r.t, err)
	return bridgetest.WaitTurnEnd(r.t, r.c, ch, turnID, acpTimeout)
}

func turnError(turn wire.Turn) string {
	for _, p := range acpPartsOf[wire.ErrorResponsePart](turn.ResponseParts) {
		return p.Error.ErrorType + ": " + p.Error.Message
	}
	return ""
}

func TestACPAttachmentKindsWithAndWithoutCapabilities(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n fake"))
	wav := base64.StdEncoding.EncodeToString([]byte("RIFF\x00\x00WAVE fake"))
	notes := base64.StdEncoding.EncodeToString([]byte("line one\nline two\n"))
	for _, tc := range []struct {
		caps string
		want string
	}{
		{"image,audio,embeddedContext",
			"text:echo|link:main.go=FILE|resource:FILE=line two+meta|image:image/png|audio:audio/wav|resource:file:///notes.txt=line one\nline two\n+meta|text:the model's view+meta"},
		{"none",
			"text:echo|link:main.go=FILE|link:main.go=FILE+meta|text:Attached notes.txt (file:///notes.txt):\nline one\nline two\n+meta|text:the model's view+meta"},
	} {
		t.Run(tc.caps, func(t *testing.T) {
			r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) { c.Env = []string{"SCRIPTAGENT_CAPS=" + tc.caps} }})
			cwd := acpProjectDir(t)
			main := filepath.Join(cwd, "main.go")
			require.NoError(t, os.WriteFile(main, []byte("line one\nline two\n"), 0o644))
			ch := r.session("script", cwd)

			sel := &wire.TextSelection{Range: wire.TextRange{Start: wire.TextPosition{Line: 1}, End: wire.TextPosition{Line: 1, Character: 8}}}
			atts := []wire.MessageAttachment{
				wire.NewMessageAttachment(&wire.MessageResourceAttachment{Label: "main.go", URI: fileURI(main)}),
				wire.NewMessageAttachment(&wire.MessageResourceAttachment{Label: "main.go", URI: fileURI(main), Selection: sel}),
			}
			if tc.caps != "none" {
				atts = append(atts,
					wire.NewMessageAttachment(&wire.MessageEmbeddedResourceAttachment{Label: "shot.png", Data: png, ContentType: "image/png"}),
					wire.NewMessageAttachment(&wire.MessageEmbeddedResourceAttachment{Label: "voice.wav", Data: wav, ContentType: "audio/wav"}))
			}
			atts = append(atts,
				wire.NewMessageAttachment(&wire.MessageEmbeddedResourceAttachment{Label: "notes.txt", Data: notes, ContentType: "text/plain",
					Meta: map[string]any{"uri": "file:///notes.txt"}}),
				wire.NewMessageAttachment(&wire.SimpleMessageAttachment{Label: "ctx", ModelRepresentation: wire.Ptr("the model's view"),
					Meta: map[string]any{"k": "v"}}))
			turn := attachmentTurn(r, ch, atts...)
			assert.Equal(t, wire.TurnStateComplete, turn.State, turnError(turn))
			assert.Equal(t, strings.ReplaceAll(tc.want, "FILE", fileURI(main)), acpTurnText(turn.ResponseParts))

			if tc.caps == "none" {
				// Media the agent takes in no form: the turn fails, saying
				// which attachment and why; nothing is sent.
				turn = attachmentTurn(r, ch,
					wire.NewMessageAttachment(&wire.MessageEmbeddedResourceAttachment{Label: "shot.png", Data: png, ContentType: "image/png"}))
				assert.Equal(t, wire.TurnStateError, turn.State)
				assert.Contains(t, turnError(turn), "attachmentRefused")
				assert.Contains(t, turnError(turn), `"shot.png"`)
				assert.Contains(t, turnError(turn), "promptCapabilities.image")
				assert.Empty(t, acpTurnText(turn.ResponseParts), "the agent was not prompted")
			}
		})
	}
}

func TestACPAttachmentOutsideWorkingDirectoryRefused(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	cwd := acpProjectDir(t)
	other := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(other, []byte("secret"), 0o644))
	ch := r.session("script", cwd)
	turn := attachmentTurn(r, ch, wire.NewMessageAttachment(&wire.MessageResourceAttachment{Label: "secret.txt", URI: fileURI(other)}))
	assert.Equal(t, wire.TurnStateError, turn.State)
	assert.Contains(t, turnError(turn), other+" is outside the session's working directories")
	assert.Empty(t, acpTurnText(turn.ResponseParts))

	// The chat goes on.
	assert.Equal(t, "text:echo again", acpTurnText(r.turn(ch, "echo again").ResponseParts))
}

func TestACPMcpServersInSessionNew(t *testing.T) {
	servers := []backend.McpServer{
		{Name: "files", Transport: backend.McpStdio, Command: "/bin/mcp-files", Args: []string{"--root", "/x"},
			Env: []backend.NameValue{{Name: "API_KEY", Value: "secret-env"}}},
		{Name: "web", Transport: backend.McpHTTP, URL: "https://mcp.example/http",
			Headers: []backend.NameValue{{Name: "Authorization", Value: "Bearer secret-header"}}},
		{Name: "events", Transport: backend.McpSSE, URL: "https://mcp.example/sse"},
	}
	for _, tc := range []struct {
		caps     string
		want     string
		leftOut  []string
		sentJSON string
	}{
		{"http,sse", "mcp:files=stdio|mcp:web=http|mcp:events=sse", nil,
			`[{"args":["--root","/x"],"command":"/bin/mcp-files","env":[{"name":"API_KEY","value":"secret-env"}],"name":"files"},` +
				`{"headers":[{"name":"Authorization","value":"Bearer secret-header"}],"name":"web","type":"http","url":"https://mcp.example/http"},` +
				`{"headers":[],"name":"events","type":"sse","url":"https://mcp.example/sse"}]`},
		{"none", "mcp:files=stdio", []string{"web", "events"},
			`[{"args":["--root","/x"],"command":"/bin/mcp-files","env":[{"name":"API_KEY","value":"secret-env"}],"name":"files"}]`},
	} {
		t.Run(tc.caps, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "agent.log")
			r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) {
				c.Env = []string{"SCRIPTAGENT_CAPS=" + tc.caps, "SCRIPTAGENT_LOG=" + log}
				c.McpServers = servers
			}})
			ch := r.session("script", acpProjectDir(t))
			assert.Equal(t, tc.want, acpTurnText(r.turn(ch, "mcp").ResponseParts))

			news := agentLog(t, log, "session/new")
			require.Len(t, news, 1)
			var p struct {
				McpServers json.RawMessage `json:"mcpServers"`
			}
			require.NoError(t, json.Unmarshal(news[0], &p))
			assert.JSONEq(t, tc.sentJSON, string(p.McpServers), "exactly what the agent received")

			st, err := r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool {
				n := 0
				for _, c := range s.Customizations {
					if m, ok := c.Value.(*wire.McpServerCustomization); ok && m.State.Value != nil {
						if _, starting := m.State.Value.(*wire.McpServerStartingState); !starting {
							n++
						}
					}
				}
				return n == len(servers)
			})
			require.NoError(t, err, "every server's state is reported")
			raw, err := json.Marshal(st.Customizations)
			require.NoError(t, err)
			assert.NotContains(t, string(raw), "secret", "env and headers are never echoed into AHP state")
			for _, c := range st.Customizations {
				m := c.Value.(*wire.McpServerCustomization)
				_, failed := m.State.Value.(*wire.McpServerErrorState)
				assert.Equal(t, contains(tc.leftOut, m.Name), failed, "server %s", m.Name)
				if failed {
					assert.Contains(t, m.State.Value.(*wire.McpServerErrorState).Error.Message, "left out")
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestACPMcpToggleAppliesFromNextSession(t *testing.T) {
	r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) {
		c.McpServers = []backend.McpServer{{Name: "files", Transport: backend.McpStdio, Command: "/bin/mcp-files"}}
	}})
	ch := r.session("script", acpProjectDir(t))
	st, err := r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool { return len(s.Customizations) == 1 })
	require.NoError(t, err)
	id := st.Customizations[0].Value.(*wire.McpServerCustomization).ID
	_, err = r.c.DispatchAction(r.ctx(), ch, wire.Action(&wire.SessionCustomizationToggledAction{ID: id,
		Enablement: []wire.CustomizationEnablement{wire.NewCustomizationEnablement(&wire.CustomizationEnablementGlobal{Enabled: false})}}))
	require.NoError(t, err)
	st, err = r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool {
		m := s.Customizations[0].Value.(*wire.McpServerCustomization)
		_, ok := m.Meta["ahp-bridge/mcp"]
		return ok
	})
	require.NoError(t, err)
	assert.Contains(t, st.Customizations[0].Value.(*wire.McpServerCustomization).Meta["ahp-bridge/mcp"], "from the next session")
	assert.Equal(t, "mcp:files=stdio", acpTurnText(r.turn(ch, "mcp").ResponseParts), "the running agent session keeps it")

	next := r.session("script", acpProjectDir(t))
	assert.Equal(t, "", acpTurnText(r.turn(next, "mcp").ResponseParts), "the next session goes without")
}

func TestACPSignInThenSessionStarts(t *testing.T) {
	r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) { c.Env = []string{"SCRIPTAGENT_REQUIRE_AUTH=1"} }})
	ch := client.NewSessionURI()
	require.NoError(t, r.c.CreateSession(r.ctx(), wire.CreateSessionParams{Channel: ch, Provider: wire.Ptr("script")}))
	_, err := r.c.Subscribe(r.ctx(), ch)
	require.NoError(t, err)

	// The agent's sign-in becomes a protected resource of its provider.
	root, err := r.c.WaitForRoot(r.ctx(), func(s *wire.RootState) bool {
		return len(s.Agents) == 1 && len(s.Agents[0].ProtectedResources) == 1 && deref(s.Agents[0].ProtectedResources[0].Required)
	})
	require.NoError(t, err)
	res := root.Agents[0].ProtectedResources[0]
	assert.Contains(t, *res.ResourceName, "Script token")
	st, err := r.c.WaitFor(r.ctx(), ch, func(*wire.SessionState) bool { return true })
	require.NoError(t, err)
	assert.Equal(t, wire.SessionLifecycleCreating, st.Lifecycle, "the session waits for a sign-in")

	// Using the agent meanwhile: AuthRequired.
	err = r.c.CreateSession(r.ctx(), wire.CreateSessionParams{Channel: client.NewSessionURI(), Provider: wire.Ptr("script")})
	var rpcErr *client.RPCError
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, host.CodeAuthRequired, rpcErr.Code)

	require.NoError(t, r.c.Call(r.ctx(), wire.MethodAuthenticate, wire.AuthenticateParams{Channel: client.RootChannel, Resource: res.Resource, Token: "-"}, nil))
	st, err = r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool { return s.Lifecycle != wire.SessionLifecycleCreating })
	require.NoError(t, err)
	assert.Equal(t, wire.SessionLifecycleReady, st.Lifecycle)
	assert.Equal(t, "text:echo signed in", acpTurnText(r.turn(ch, "echo signed in").ResponseParts))
	bridgetest.CreateSession(t, r.c, "script", "")

	// An unknown resource is refused.
	err = r.c.Call(r.ctx(), wire.MethodAuthenticate, wire.AuthenticateParams{Channel: client.RootChannel, Resource: "https://nowhere.example", Token: "x"}, nil)
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, host.CodeInvalidParams, rpcErr.Code)
}

func deref[T any](p *T) T {
	var zero T
	if p != nil {
		return *p
	}
	return zero
}

func TestACPThreeEditTurnChangeset(t *testing.T) {
	r := newACPRig(t, acpRigOptions{})
	cwd := acpProjectDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "b.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	ch := r.session("script", cwd)
	// a.txt: created (3 lines), then rewritten (1 line changed) through
	// fs/write_text_file; b.txt: one line changed by the agent's own edit,
	// reported as a diff.
	turn := r.turn(ch, `multi write a.txt x\ny\nz\n ;; diff b.txt one\nTWO\nthree\n ;; write a.txt x\nY\nz\n`)
	assert.Equal(t, wire.TurnStateComplete, turn.State, turnError(turn))

	// The changes are sequenced before the turn's end.
	sessions, err := r.c.ListSessions(r.ctx())
	require.NoError(t, err)
	var changes wire.ChangesSummary
	for _, ss := range sessions {
		if ss.Resource == ch && ss.Changes != nil {
			changes = *ss.Changes
		}
	}
	assert.Equal(t, int64(2), deref(changes.Files))
	assert.Equal(t, int64(4), deref(changes.Additions), "a.txt's 3 lines and b.txt's new line")
	assert.Equal(t, int64(1), deref(changes.Deletions), "b.txt's old line")

	st, err := r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool { return len(s.Changesets) == 1 })
	require.NoError(t, err)
	snap, err := r.c.Subscribe(r.ctx(), st.Changesets[0].URITemplate)
	require.NoError(t, err)
	raw, err := json.Marshal(snap.State)
	require.NoError(t, err)
	var cs wire.ChangesetState
	require.NoError(t, json.Unmarshal(raw, &cs))
	require.Len(t, cs.Files, 2)
	byID := map[string]wire.FileEdit{}
	for _, f := range cs.Files {
		byID[f.ID] = f.Edit
	}
	a := byID[fileURI(filepath.Join(cwd, "a.txt"))]
	assert.Nil(t, a.Before, "a.txt did not exist before")
	require.NotNil(t, a.After)
	assert.Equal(t, "x\nY\nz\n", readRef(t, r, a.After.Content.URI))
	b := byID[fileURI(filepath.Join(cwd, "b.txt"))]
	require.NotNil(t, b.Before)
	assert.Equal(t, "one\ntwo\nthree\n", readRef(t, r, b.Before.Content.URI))
	assert.Equal(t, "one\nTWO\nthree\n", readRef(t, r, b.After.Content.URI))
}

func readRef(t *testing.T, r *acpRig, uri string) string {
	t.Helper()
	var res wire.ResourceReadResult
	require.NoError(t, r.c.Call(r.ctx(), wire.MethodResourceRead, wire.ResourceReadParams{Channel: client.RootChannel, URI: uri}, &res))
	if res.Encoding == wire.ContentEncoding("base64") {
		b, err := base64.StdEncoding.DecodeString(res.Data)
		require.NoError(t, err)
		return string(b)
	}
	return res.Data
}

func TestACPMcpServersOfAClientPlugin(t *testing.T) {
	log := filepath.Join(t.TempDir(), "agent.log")
	r := newACPRig(t, acpRigOptions{configure: func(c *acp.Config) {
		c.Env = []string{"SCRIPTAGENT_LOG=" + log}
		c.McpServers = []backend.McpServer{{Name: "configured", Transport: backend.McpStdio, Command: "/bin/configured"}}
	}})
	plugin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(plugin, ".mcp.json"), []byte(`{"mcpServers": {
		"tools": {"command": "${PLUGIN_ROOT}/bin/tools", "args": ["--x"], "env": {"TOKEN": "plugin-secret"}}}}`), 0o644))
	ch := bridgetest.CreateSessionWith(t, r.c, wire.CreateSessionParams{Provider: wire.Ptr("script"),
		WorkingDirectories: []string{fileURI(acpProjectDir(t))},
		ActiveClient: &wire.SessionActiveClient{ClientID: r.c.ClientID(), Tools: []wire.ToolDefinition{},
			Customizations: []wire.ClientPluginCustomization{{ID: "p1", URI: fileURI(plugin), Name: "My plugin"}}}})
	assert.Equal(t, "mcp:configured=stdio|mcp:tools=stdio", acpTurnText(r.turn(ch, "mcp").ResponseParts))

	news := agentLog(t, log, "session/new")
	require.Len(t, news, 1)
	assert.Contains(t, string(news[0]), `"command":"`+plugin+`/bin/tools"`, "the plugin root is expanded")
	assert.Contains(t, string(news[0]), `plugin-secret`, "the agent gets the env")

	st, err := r.c.WaitFor(r.ctx(), ch, func(s *wire.SessionState) bool { return len(s.Customizations) == 2 })
	require.NoError(t, err)
	raw, err := json.Marshal(st.Customizations)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "plugin-secret")
	p, ok := st.Customizations[1].Value.(*wire.PluginCustomization)
	require.True(t, ok, "%s", raw)
	require.Len(t, p.Children, 1)
	assert.Equal(t, "tools", p.Children[0].Value.(*wire.McpServerCustomization).Name)
}
