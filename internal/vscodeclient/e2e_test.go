package vscodeclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	vsc "github.com/ahp-bridge/ahp-bridge/internal/vscodeclient"
)

// The end-to-end test of issue 23: VS Code's dialect, message by message,
// against the real bridge — the built binary's `serve` on a state file,
// with the scripted ACP agent as provider "demo" — through a restart of
// the bridge. Each assertion names the requirement it checks: "§n" is
// the item of issue 23's "What to build", "brief §n" the section of
// ../shared/clients/vscode.md.

// bridgeProc is one `ahp-bridge serve` process.
type bridgeProc struct {
	cmd    *exec.Cmd
	url    string // the READY URL, token included
	listen string // host:port
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const e2eToken = "vscode-e2e-token"

// startBridge runs serve on state at listen ("127.0.0.1:0" picks a port)
// in dir, and waits for its READY line.
func startBridge(t *testing.T, state, listen, dir string) *bridgeProc {
	t.Helper()
	bin := bridgetest.Binary(t)
	cmd := exec.Command(bin, "serve", "--listen", listen, "--state", state, "--token", e2eToken,
		"--acp", "demo="+bin+" demo-agent")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(filepath.Dir(state), "xdg"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &bridgeProc{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		require.True(t, strings.HasPrefix(line, "READY ws://"), "first stdout line: %q\nstderr:\n%s", line, p.stderr)
		p.url = strings.TrimPrefix(line, "READY ")
		p.listen = strings.TrimPrefix(strings.SplitN(p.url, "?", 2)[0], "ws://")
		p.listen = strings.TrimSuffix(p.listen, "/")
	case <-time.After(60 * time.Second):
		t.Fatalf("the bridge printed no READY line; stderr:\n%s", p.stderr)
	}
	return p
}

// stop ends the bridge as Ctrl-C would and waits for it.
func (p *bridgeProc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	_ = p.cmd.Wait()
}

// toolCall is what VS Code reads of a tool call part (stateToProgressAdapter).
type toolCall struct {
	TurnID            string
	ToolCallID        string `json:"toolCallId"`
	Status            string `json:"status"`
	ToolName          string `json:"toolName"`
	DisplayName       string `json:"displayName"`
	InvocationMessage any    `json:"invocationMessage"`
	PastTenseMessage  any    `json:"pastTenseMessage"`
	ConfirmationTitle any    `json:"confirmationTitle"`
	ToolInput         any    `json:"toolInput"`
	Options           []struct {
		ID    string `json:"id"`
		Label string `json:"label"`
		Kind  string `json:"kind"`
	} `json:"options"`
	Meta map[string]any `json:"_meta"`
}

// toolCalls returns the tool calls of a chat's active turn and turns, by id.
func toolCalls(c *vsc.Client, chat string) map[string]toolCall {
	out := map[string]toolCall{}
	st, ok := c.ChatJSON(chat)
	if !ok {
		return out
	}
	var doc struct {
		ActiveTurn *struct {
			ID            string            `json:"id"`
			ResponseParts []json.RawMessage `json:"responseParts"`
		} `json:"activeTurn"`
		Turns []struct {
			ID            string            `json:"id"`
			ResponseParts []json.RawMessage `json:"responseParts"`
		} `json:"turns"`
	}
	b, _ := json.Marshal(st)
	_ = json.Unmarshal(b, &doc)
	add := func(turn string, parts []json.RawMessage) {
		for _, p := range parts {
			var part struct {
				Kind     string   `json:"kind"`
				ToolCall toolCall `json:"toolCall"`
			}
			if json.Unmarshal(p, &part) == nil && part.Kind == "toolCall" {
				part.ToolCall.TurnID = turn
				out[part.ToolCall.ToolCallID] = part.ToolCall
			}
		}
	}
	for _, t := range doc.Turns {
		add(t.ID, t.ResponseParts)
	}
	if doc.ActiveTurn != nil {
		add(doc.ActiveTurn.ID, doc.ActiveTurn.ResponseParts)
	}
	return out
}

// waitPendingTool waits until the chat has a tool call waiting for the
// user's confirmation and returns it.
func waitPendingTool(ctx context.Context, t *testing.T, c *vsc.Client, chat, what string) (toolCall, bool) {
	t.Helper()
	var found toolCall
	err := c.WaitFor(ctx, what, func() bool {
		for _, tc := range toolCalls(c, chat) {
			if tc.Status == string(wire.ToolCallStatusPendingConfirmation) {
				found = tc
				return true
			}
		}
		return false
	})
	return found, assert.NoError(t, err, "%s: no tool call became pending-confirmation", what)
}

// turnText is a turn's markdown, concatenated as VS Code renders it.
func turnText(t wire.Turn) string {
	var sb strings.Builder
	for _, p := range t.ResponseParts {
		b, _ := json.Marshal(p)
		var part struct {
			Kind    string `json:"kind"`
			Content any    `json:"content"`
		}
		if json.Unmarshal(b, &part) == nil && part.Kind == "markdown" {
			if s, ok := part.Content.(string); ok {
				sb.WriteString(s)
			}
		}
	}
	return sb.String()
}

func optionOfKind(tc toolCall, kind string) string {
	for _, o := range tc.Options {
		if o.Kind == kind {
			return o.ID
		}
	}
	return ""
}

// checkToolCallFields asserts what VS Code's stateToProgressAdapter needs
// of a tool call waiting for confirmation (brief §4.3, issue §2).
func checkToolCallFields(t *testing.T, tc toolCall, what string) {
	t.Helper()
	req := "§2 tool-call fields (" + what + "): "
	assert.NotEmpty(t, tc.ToolName, req+"toolName is VS Code's tool id")
	assert.NotEmpty(t, tc.DisplayName, req+"displayName is the tool's label")
	assert.NotEmpty(t, tc.InvocationMessage, req+"invocationMessage is the running and confirmation message")
	assert.NotEmpty(t, tc.ConfirmationTitle, req+"confirmationTitle titles the confirmation")
	if s, ok := tc.ToolInput.(string); assert.True(t, ok, req+"toolInput is a string (got %T %v)", tc.ToolInput, tc.ToolInput) {
		assert.True(t, json.Valid([]byte(s)), req+"toolInput is JSON VS Code can parse: %q", s)
	}
	assert.NotEmpty(t, optionOfKind(tc, string(wire.ConfirmationOptionKindApprove)), req+"options offer an approve button: %+v", tc.Options)
	assert.NotEmpty(t, optionOfKind(tc, string(wire.ConfirmationOptionKindDeny)), req+"options offer a deny button: %+v", tc.Options)
}

func projectDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# A project\nThe answer is 42.\n"), 0o644))
	return dir
}

func TestVSCodeEndToEnd(t *testing.T) {
	ctx := bridgetest.Context(t, 4*time.Minute)
	short := func() context.Context { return bridgetest.Context(t, 60*time.Second) }
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	project := projectDir(t)
	bridge := startBridge(t, state, "127.0.0.1:0", project)

	// Connect as the user's pasted address: ws://…?tkn=….
	c, err := vsc.Dial(ctx, vsc.Options{Address: bridge.url, SessionURIs: vsc.SessionURIsProvider})
	require.NoError(t, err, "brief §1.1: the bridge accepts the token as the tkn query parameter")
	t.Cleanup(func() { _ = c.Close() })
	init, err := c.Connect(short())
	require.NoError(t, err, "top-10 #1: initialize with VS Code's offer %v", vsc.OfferedVersions)
	t.Logf("VS Code offers %v; the bridge picked %s", vsc.OfferedVersions, init.ProtocolVersion)
	assert.Contains(t, vsc.OfferedVersions, init.ProtocolVersion, "top-10 #1: the bridge picks a version VS Code offered")
	assert.Equal(t, "0.9.0", init.ProtocolVersion, "top-10 #1: VS Code's most preferred version, which the bridge speaks")
	var defaultDir string
	if assert.NotEmpty(t, init.DefaultDirectory, "§2: the initialize result carries defaultDirectory (the folder picker starts there)") {
		_ = json.Unmarshal(init.DefaultDirectory, &defaultDir)
		// A URI string: VS Code keeps its path.
		if u, err := url.Parse(defaultDir); err == nil && u.Scheme == "file" {
			defaultDir = u.Path
		}
	}
	root, ok := c.Root()
	require.True(t, ok, "brief §1.3: initialSubscriptions [ahp-root://] gives the root snapshot in the initialize result")

	// After the config pushes and the unknown notification: answered
	// ping, no error frames, no rejections.
	require.NoError(t, c.Ping(short()), "§2: ping is answered")
	assert.Empty(t, c.StrayFrames(), "§2: root/configChanged with unknown keys and setClientManagedSettingsPermissions get no error frames")
	assert.Empty(t, c.Rejected(), "§2: root/configChanged with keys the bridge does not know is not rejected")
	_, err = c.Call(short(), "getManagedSettingsDiagnostics", map[string]any{})
	assert.Equal(t, vsc.CodeMethodNotFound, vsc.ErrorCode(err), "§2: -32601 for a request the bridge does not serve (got %v)", err)

	// The agent catalogue before any session. VS Code's model picker
	// follows the root state, so models the bridge learns just after the
	// handshake (it asks a provider it never ran at start) still count.
	_ = c.WaitFor(short(), "the demo provider's models in the root state", func() bool {
		r, _ := c.Root()
		for _, a := range r.Agents {
			if a.Provider == "demo" && len(a.Models) > 0 {
				return true
			}
		}
		return false
	})
	root, _ = c.Root()
	var agent *wire.AgentInfo
	for i := range root.Agents {
		if root.Agents[i].Provider == "demo" {
			agent = &root.Agents[i]
		}
	}
	require.NotNil(t, agent, "top-10 #2: RootState.agents lists the provider the session scheme names")
	model := "script-fast" // the scripted agent's first model, if the catalogue has none
	if assert.NotEmpty(t, agent.Models, "§2: AgentInfo.models is non-empty before the first session (VS Code shows \"No models available\" otherwise)") {
		model = agent.Models[0].ID
	}
	assert.Empty(t, agent.ProtectedResources, "top-10 #2: no required protectedResources")

	// The folder picker: list defaultDirectory (by default the directory
	// the bridge runs in) before any session exists.
	if defaultDir == "" {
		defaultDir = project
	}
	_, err = c.Call(short(), "resourceList", map[string]any{"channel": vsc.RootChannel, "uri": fileURL(defaultDir)})
	assert.NoError(t, err, "§3: resourceList under defaultDirectory is allowed before any session (the folder picker)")
	_, err = c.Call(short(), "resourceResolve", map[string]any{"channel": vsc.RootChannel, "uri": fileURL(filepath.Join(defaultDir, "README.md"))})
	assert.NoError(t, err, "§3: resourceResolve under defaultDirectory is allowed before any session (the folder picker)")

	// Create, as VS Code does: a client-minted <provider>:/<uuid>, then
	// subscribe at once, in that order.
	session, err := c.CreateSession(short(), "demo", []string{project})
	require.NoError(t, err, "§1/top-10 #3: createSession on a client-minted demo:/<uuid>")
	require.True(t, strings.HasPrefix(session, "demo:/"), session)
	_, err = c.Subscribe(short(), session)
	require.NoError(t, err, "top-10 #3: subscribe right after createSession, in arrival order")
	chat := vsc.DefaultChatURI(session)
	s, _ := c.Session(session)
	if assert.NotNil(t, s.DefaultChat, "brief §3.2: the first session snapshot carries defaultChat") {
		assert.Equal(t, chat, *s.DefaultChat, "§1/top-10 #4: defaultChat is VS Code's derived name ahp-chat://default/<b64url(session)>")
	}
	entry := false
	for _, ch := range s.Chats {
		if ch.Resource == chat {
			entry = true
			assert.True(t, ch.Interactivity == nil || *ch.Interactivity == wire.ChatInteractivityFull,
				"brief §3.2: the default chat's interactivity is full or absent")
		}
	}
	assert.True(t, entry, "§1/top-10 #3: chats[] has an entry under the derived default chat name; chats: %+v", s.Chats)
	assert.Equal(t, session, sessionFromChat(t, chat), "VS Code's parseChatUri recovers the session")

	items, err := c.ListSessions(short())
	require.NoError(t, err)
	assert.True(t, listed(items, session), "§2/top-10 #6: a brand-new session is in listSessions at once")
	assert.NoError(t, c.WaitFor(bridgetest.Context(t, 10*time.Second), "root/sessionAdded", func() bool {
		return notified(c, "root/sessionAdded", session)
	}), "§2/top-10 #6: root/sessionAdded announces a brand-new session at once")

	// The derived default chat, as VS Code subscribes it.
	if _, err := c.Subscribe(short(), chat); !assert.NoError(t, err, "§1/top-10 #4: subscribe to the derived default chat succeeds") {
		// Go on with the bridge's own name, to check the rest.
		require.NotNil(t, s.DefaultChat, "no default chat to go on with")
		chat = *s.DefaultChat
		_, err = c.Subscribe(short(), chat)
		require.NoError(t, err, "subscribe to the session's defaultChat")
	}
	if cs, ok := c.Chat(chat); assert.True(t, ok) {
		assert.Equal(t, vsc.DefaultChatURI(session), cs.Resource, "§1: ChatState.resource is VS Code's derived name")
	}

	// Turn 1: the client's turnId and model, a tool call approved.
	turn1, err := c.StartTurn(chat, "Tell me about this project", model)
	require.NoError(t, err)
	tc, ok := waitPendingTool(ctx, t, c, chat, "turn 1's tool call")
	if cs, _ := c.Chat(chat); cs.ActiveTurn != nil {
		assert.Equal(t, turn1, cs.ActiveTurn.ID, "§2/top-10 #5: activeTurn.id is the client's turnId")
		if assert.NotNil(t, cs.ActiveTurn.Message.Model, "top-10 #5: the turn keeps message.model") {
			assert.Equal(t, model, cs.ActiveTurn.Message.Model.ID, "top-10 #5: the model from message.model.id")
		}
	}
	if ok {
		checkToolCallFields(t, tc, "a read")
		assert.Equal(t, turn1, tc.TurnID, "§2: the tool call is in the client's turn")
		require.NoError(t, c.Approve(chat, tc.TurnID, tc.ToolCallID, optionOfKind(tc, "approve")))
	}
	done1, inTurns, err := c.WaitTurnEnd(ctx, chat, turn1)
	require.NoError(t, err, "top-10 #5: turn 1 ends by VS Code's rule (activeTurn changes or the turn is in turns[])")
	if assert.True(t, inTurns, "top-10 #5: the ended turn moves into turns[] under the client's turnId") {
		assert.Equal(t, wire.TurnStateComplete, done1.State)
		assert.Contains(t, turnText(done1), "I read README.md", "approve: the agent was allowed to read")
	}
	if tc, ok := toolCalls(c, chat)[tc.ToolCallID]; assert.True(t, ok, "the approved tool call is in the turn") &&
		assert.Equal(t, string(wire.ToolCallStatusCompleted), tc.Status, "approve: the approved tool call completed") {
		assert.NotEmpty(t, tc.PastTenseMessage, "§2 tool-call fields: pastTenseMessage on a completed tool call")
	}

	// Turn 2: a shell command, denied.
	turn2, err := c.StartTurn(chat, "permission", model)
	require.NoError(t, err)
	tc2, ok := waitPendingTool(ctx, t, c, chat, "turn 2's tool call")
	if ok {
		checkToolCallFields(t, tc2, "a shell command")
		assert.Equal(t, "terminal", tc2.Meta["toolKind"], "§2 tool-call fields: _meta.toolKind is terminal for a shell command")
		require.NoError(t, c.Deny(chat, tc2.TurnID, tc2.ToolCallID, optionOfKind(tc2, "deny")))
	}
	done2, inTurns, err := c.WaitTurnEnd(ctx, chat, turn2)
	require.NoError(t, err, "top-10 #5: turn 2 ends")
	if assert.True(t, inTurns, "top-10 #5: turn 2 in turns[] under the client's turnId") {
		assert.Contains(t, turnText(done2), "selected: reject", "deny: the agent got the rejection")
	}

	// Turn 3: cancelled while it streams.
	started3 := time.Now()
	turn3, err := c.StartTurn(chat, "wait", model)
	require.NoError(t, err)
	require.NoError(t, c.WaitFor(ctx, "turn 3 streaming", func() bool {
		cs, _ := c.Chat(chat)
		return (cs.ActiveTurn != nil && len(cs.ActiveTurn.ResponseParts) > 0) || c.TurnEnded(chat, turn3)
	}))
	require.NoError(t, c.Cancel(chat, turn3, time.Since(started3)))
	done3, inTurns, err := c.WaitTurnEnd(ctx, chat, turn3)
	require.NoError(t, err, "top-10 #9: chat/turnCancelled ends the turn")
	if assert.True(t, inTurns, "top-10 #5: a cancelled turn moves into turns[]") {
		assert.Equal(t, wire.TurnStateCancelled, done3.State, "top-10 #9: the turn shows as cancelled")
	}
	assert.Empty(t, c.TextRegressions(), "§2/top-10 #5: markdown only grows")

	// Rename from the editor window: session/titleChanged on the chat channel.
	const title = "Renamed from VS Code"
	require.NoError(t, c.Rename(chat, title))
	assert.NoError(t, c.WaitFor(bridgetest.Context(t, 15*time.Second), "the session's new title", func() bool {
		s, _ := c.Session(session)
		return s.Title == title
	}), "§2/top-10 #10: a rename dispatched on the chat channel is applied to the session")
	assert.Empty(t, c.Rejected(), "no action of VS Code's was rejected")

	// A dropped connection: VS Code reconnects on a new socket, without a
	// channel, and gets what it missed.
	out, err := c.Reconnect(short())
	if assert.NoError(t, err, "top-10 #7: reconnect without channel after a dropped connection") {
		assert.Contains(t, []string{"replay", "snapshot"}, out.Kind, "top-10 #7: a bridge that knows the client answers the reconnect itself")
		assert.Empty(t, out.Missing, "top-10 #7: every subscription resumes")
	}

	// The newest client's own names, against the same bridge: a second
	// window that follows VS Code's rule for a host that is not VS Code's.
	newest, err := vsc.Dial(ctx, vsc.Options{Address: bridge.url})
	require.NoError(t, err)
	_, err = newest.Connect(short())
	require.NoError(t, err)
	other, err := newest.CreateSession(short(), "demo", []string{project})
	require.NoError(t, err, "§1: createSession on the newest client's name")
	t.Logf("the newest VS Code names a session on this bridge %s", other)
	if _, err := newest.Subscribe(short(), other); assert.NoError(t, err) {
		s, _ := newest.Session(other)
		if assert.NotNil(t, s.DefaultChat, "brief §3.2: defaultChat in the first snapshot") {
			assert.Equal(t, vsc.DefaultChatURI(other), *s.DefaultChat, "§1: the derived default chat name for the newest client's session name too")
		}
		_, err := newest.Subscribe(short(), vsc.DefaultChatURI(other))
		assert.NoError(t, err, "§1: the derived default chat of the newest client's session answers subscribe")
	}
	_ = newest.Close()

	// Restart the bridge on the same state file and address.
	bridge.stop(t)
	bridge = startBridge(t, state, bridge.listen, project)
	out, err = c.Reconnect(short())
	t.Logf("reconnect after the restart: kind %q, reconnect error %v, missing %v, re-subscribed %v; err %v",
		out.Kind, out.ReconnectErr, out.Missing, out.Restored, err)
	if assert.NoError(t, err, "§4: after a restart VS Code's reconnect gets snapshots, or -32008 and a fresh initialize with the same clientId works") {
		assert.Empty(t, out.Missing, "§4: every subscription is resumed after the restart")
		if out.Kind == "initialize" && len(out.Restored) == 2 {
			assert.Equal(t, []string{session, chat}, out.Restored, "brief §1.5: what the fresh initialize did not snapshot is re-subscribed, sessions before chats")
		}
	} else {
		// VS Code would retry reconnect forever. Reopen the window to check
		// the history anyway: a fresh connection with the same clientId.
		_ = c.Close()
		c, err = vsc.Dial(ctx, vsc.Options{Address: bridge.url, ClientID: c.ClientID(), SessionURIs: vsc.SessionURIsProvider})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = c.Connect(short())
		require.NoError(t, err)
		_, err = c.Subscribe(short(), session)
		require.NoError(t, err, "the session is still there after the restart")
		_, err = c.Subscribe(short(), chat)
		require.NoError(t, err, "its chat is still there after the restart")
	}
	before := map[string]string{turn1: turnText(done1), turn2: turnText(done2), turn3: turnText(done3)}
	checkHistory(t, c, session, chat, title, before, []string{turn1, turn2, turn3}, "after the restart")

	// Dispose: VS Code cannot tell the bridge why; the history stays.
	require.NoError(t, c.DisposeSession(short(), session), "disposeSession is answered")
	items, err = c.ListSessions(short())
	require.NoError(t, err)
	if item := listItem(items, session); assert.NotNil(t, item, "§5: a disposed session with turns is still listed") {
		status, _ := item["status"].(float64)
		assert.NotZero(t, wire.SessionStatus(status)&wire.SessionStatusIsArchived, "§5: the disposed session is listed as archived (status %v)", item["status"])
	}
	_ = c.Unsubscribe(chat)
	_ = c.Unsubscribe(session)
	_, err = c.Subscribe(short(), session)
	if assert.NoError(t, err, "§5: a disposed session with turns can be opened again") {
		_, err = c.Subscribe(short(), chat)
		if assert.NoError(t, err, "§5: its chat can be opened again") {
			checkHistory(t, c, session, chat, title, before, []string{turn1, turn2, turn3}, "after disposeSession")
		}
	}
	assert.Empty(t, c.StrayFrames(), "no error frames for VS Code's notifications")
}

// checkHistory asserts the chat holds the turns, in order, under the
// client's ids and with the text they ended with, and the session its
// title.
func checkHistory(t *testing.T, c *vsc.Client, session, chat, title string, texts map[string]string, turns []string, when string) {
	t.Helper()
	s, _ := c.Session(session)
	assert.Equal(t, title, s.Title, "history intact %s: the session's title", when)
	cs, ok := c.Chat(chat)
	if !assert.True(t, ok, "history intact %s: the chat's state", when) {
		return
	}
	var ids []string
	for _, tr := range cs.Turns {
		ids = append(ids, tr.ID)
		if want, ok := texts[tr.ID]; ok {
			assert.Equal(t, want, turnText(tr), "history intact %s: turn %s's text", when, tr.ID)
		}
	}
	assert.Equal(t, turns, ids, "history intact %s: every turn under the client's turnId, in order", when)
	assert.Nil(t, cs.ActiveTurn, "history intact %s: no turn left active", when)
}

func sessionFromChat(t *testing.T, chat string) string {
	s, _, ok := vsc.ParseChatURI(chat)
	assert.True(t, ok, chat)
	return s
}

func fileURL(path string) string { return "file://" + filepath.ToSlash(path) }

func listItem(items []map[string]any, session string) map[string]any {
	for _, it := range items {
		if it["resource"] == session {
			return it
		}
	}
	return nil
}

func listed(items []map[string]any, session string) bool { return listItem(items, session) != nil }

// notified reports whether the host sent method naming session.
func notified(c *vsc.Client, method, session string) bool {
	for _, n := range c.Notifications() {
		if n.Method == method && strings.Contains(string(n.Params), fmt.Sprintf("%q", session)) {
			return true
		}
	}
	return false
}
