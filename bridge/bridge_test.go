package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

const (
	sess1 = "ahp-session:/s1"
	chat1 = "ahp-chat:/s1"
	chat2 = "ahp-chat:/c2"
)

func TestAgentsAdvertiseMultipleChats(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	require.Len(t, r.host.root.Agents, 1)
	caps := r.host.root.Agents[0].Capabilities
	require.NotNil(t, caps)
	require.NotNil(t, caps.MultipleChats, "every chat is a backend session of its own")
	assert.Nil(t, caps.MultipleChats.Fork, "no fork: a backend session cannot start from another's history")
	assert.Nil(t, caps.MultipleChats.SideChat)
}

// TestCreateSessionOpensTheDefaultChat: the default chat's backend session
// works in workingDirectories[0], starts on the model of the chat's first
// draft (an AHP 0.3.0 client's createSession model) and gets the settings
// the client asked for before the session is ready; progress is reported
// once the agent runs; the agent's title is the session's.
func TestCreateSessionOpensTheDefaultChat(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	draft := &wire.Message{Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}, Model: &wire.ModelSelection{ID: "m2"}}
	lc := r.createSession(sess1, chat1, wire.CreateSessionParams{
		WorkingDirectories: []string{"file:///work/p", "file:///work/q"},
		Config:             map[string]any{"model": "m3"},
	}, draft)
	require.Equal(t, wire.SessionLifecycleReady, lc)

	be := r.prov.session(chat1)
	require.NotNil(t, be, "the default chat's backend session is named after the chat")
	assert.Equal(t, "/work/p", be.opts.Cwd)
	assert.Equal(t, "m2", be.opts.Model)
	assert.Equal(t, []string{"set model=m3"}, be.callLog(), "createSession's config is applied before the session is ready")

	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	assert.Equal(t, []string{"the fake agent is running"}, r.host.progress[sess1])
	st := r.host.sessions[sess1]
	assert.Equal(t, "title of "+chat1, st.Title)
	assert.Equal(t, "m3", st.Config.Values["model"], "the session's settings are its default chat's")
	assert.Equal(t, []string{"session/titleChanged", "session/configChanged", "session/metaChanged", "session/configChanged", "session/ready"}, r.host.logOf(sess1),
		"the settings' schema goes to _meta once; a change of value does not change it")
}

func TestCreateSessionFailsWithTheAgentsWords(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.prov.openErr = errors.New("the agent said: Authentication required")
	lc := r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	require.Equal(t, wire.SessionLifecycleFailed, lc)
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	require.NotNil(t, r.host.sessions[sess1].CreationError)
	assert.Equal(t, "the agent said: Authentication required", r.host.sessions[sess1].CreationError.Message)
	assert.Empty(t, r.host.progress[sess1], "the agent never ran")
}

func TestCreateSessionRefusesAWorkingDirectoryElsewhere(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	lc := r.createSession(sess1, chat1, wire.CreateSessionParams{WorkingDirectories: []string{"file://other-host/p"}}, nil)
	require.Equal(t, wire.SessionLifecycleFailed, lc)
	assert.Zero(t, r.prov.opened())
}

// TestTurnGoesToTheChat: a turn's actions land on its chat, with the
// turn's duration on its end; the plan goes to the session's _meta while
// the turn runs, and its entry in progress to the chat's activity.
func TestTurnGoesToTheChat(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{WorkingDirectories: []string{"file:///work/p"}}, nil)
	r.host.startTurn(r.b, chat1, "t1", "hello", "")
	turn := r.host.turn(chat1, "t1")
	assert.Equal(t, wire.TurnStateComplete, turn.State)
	assert.Equal(t, "model=m1 cwd=/work/p: hello", text(turn))
	require.NotNil(t, turn.Duration)
	assert.Positive(t, *turn.Duration, "the bridge measures the turn from its startedAt")

	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	assert.NotContains(t, r.host.sessions[sess1].Meta, mapping.MetaPlan, "the live plan ends with its turn")
	assert.Contains(t, r.host.logOf(sess1), "session/metaChanged", "the plan was in _meta while the turn ran")
	assert.Nil(t, r.host.chats[chat1].Activity, "the plan's activity is cleared at the end of the turn")
	assert.Contains(t, r.host.logOf(chat1), "chat/activityChanged")
	assert.NotContains(t, r.host.logOf(sess1), "session/activityChanged")
}

// TestSecondChatRunsOnItsOwnBackendSession: createChat opens another
// backend session of the session's provider, in the chat's working
// directory and with the session's settings; its turns run there, and its
// title and settings do not overwrite the session's.
func TestSecondChatRunsOnItsOwnBackendSession(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{WorkingDirectories: []string{"file:///work/p", "file:///work/q"}}, nil)
	r.host.client(r.b, sess1, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"model": "m2"}}))
	r.host.waitFor("the default chat to run m2", func() bool { return r.host.sessions[sess1].Config.Values["model"] == "m2" })

	r.createChat(sess1, chat2, wire.CreateChatParams{WorkingDirectories: []string{"file:///work/q"}})
	r.host.startTurn(r.b, chat2, "t2", "second", "m3")
	turn := r.host.turn(chat2, "t2")
	assert.Equal(t, "model=m3 cwd=/work/q: second", text(turn))

	be2 := r.prov.session(chat2)
	require.NotNil(t, be2)
	assert.Equal(t, 2, r.prov.opened())
	assert.Equal(t, "/work/q", be2.opts.Cwd)
	assert.Equal(t, []string{"set model=m2", "set model=m3", "prompt second"}, be2.callLog(),
		"the session's settings first, then the turn's model")
	assert.Equal(t, []string{"set model=m2"}, r.prov.session(chat1).callLog(), "the default chat ran nothing")

	r.host.mu.Lock()
	assert.Equal(t, "title of "+chat1, r.host.sessions[sess1].Title, "another chat's agent title is not the session's")
	assert.Equal(t, "m2", r.host.sessions[sess1].Config.Values["model"], "another chat's settings are not the session's")
	assert.Empty(t, r.host.chats[chat1].Turns)
	r.host.mu.Unlock()

	// Disposing of the chat closes its backend session only.
	r.b.DisposeChat(t.Context(), sess1, chat2)
	assert.True(t, be2.isClosed())
	assert.False(t, r.prov.session(chat1).isClosed())
	r.b.DisposeSession(t.Context(), sess1)
	assert.True(t, r.prov.session(chat1).isClosed())
}

// TestTurnModel: a turn's message.model switches the backend session's
// model before the prompt when it runs another; the draft's model stands
// in for a message without one; a model the agent refused is not asked for
// again.
func TestTurnModel(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	be := r.prov.session(chat1)

	r.host.startTurn(r.b, chat1, "t1", "one", "m2")
	assert.Equal(t, "model=m2 cwd=", text(r.host.turn(chat1, "t1"))[:len("model=m2 cwd=")])
	r.host.startTurn(r.b, chat1, "t2", "two", "m2")
	r.host.turn(chat1, "t2")

	// An AHP 0.3.0 client's session/modelChanged reaches the host as the
	// chat's draft.
	r.host.client(r.b, chat1, wire.Action(&wire.ChatDraftChangedAction{Draft: &wire.Message{
		Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}, Model: &wire.ModelSelection{ID: "m3"},
	}}))
	r.host.startTurn(r.b, chat1, "t3", "three", "")
	r.host.turn(chat1, "t3")

	r.host.startTurn(r.b, chat1, "t4", "four", "no-such-model")
	assert.Equal(t, wire.TurnStateComplete, r.host.turn(chat1, "t4").State, "a refused model does not fail the turn")
	r.host.startTurn(r.b, chat1, "t5", "five", "no-such-model")
	r.host.turn(chat1, "t5")

	assert.Equal(t, []string{
		"set model=m2", "prompt one", "prompt two",
		"set model=m3", "prompt three",
		"set model=no-such-model", "prompt four", "prompt five",
	}, be.callLog())
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	assert.Equal(t, "m3", r.host.sessions[sess1].Config.Values["model"], "the agent's report of its model reaches the session")
}

// TestSessionConfigAppliesToEveryChat: a client's session/configChanged
// goes to every chat's backend session, after a running turn.
func TestSessionConfigAppliesToEveryChat(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	r.createChat(sess1, chat2, wire.CreateChatParams{})
	r.host.startTurn(r.b, chat2, "warm", "warm up", "")
	r.host.turn(chat2, "warm") // chat2's backend session is open

	be1 := r.prov.session(chat1)
	be1.mu.Lock()
	be1.release = make(chan struct{})
	release := be1.release
	be1.mu.Unlock()
	r.host.startTurn(r.b, chat1, "t1", "busy", "")
	r.host.waitFor("chat1's turn to stream", func() bool {
		at := r.host.chats[chat1].ActiveTurn
		return at != nil && len(at.ResponseParts) > 0
	})

	r.host.client(r.b, sess1, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"model": "m3"}}))
	be2 := r.prov.session(chat2)
	assert.Equal(t, []string{"set model=m1", "prompt warm up", "set model=m3"}, be2.callLog(),
		"a new chat takes the session's settings; an idle chat takes a change at once")
	assert.Equal(t, []string{"prompt busy"}, be1.callLog(), "a busy chat takes it after its turn")
	close(release)
	r.host.turn(chat1, "t1")
	// The deferred change is applied once the turn has ended, after its
	// last action: wait for it rather than race it.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for len(be1.callLog()) < 2 && ctx.Err() == nil {
		time.Sleep(time.Millisecond) // nothing signals a fake agent session's calls
	}
	assert.Equal(t, []string{"prompt busy", "set model=m3"}, be1.callLog())
}

// logOf returns the types of the actions dispatched on channel. Called
// with the host locked.
func (h *fakeHost) logOf(channel string) []string {
	var out []string
	for _, l := range h.log {
		if ch, typ, _ := strings.Cut(l, " "); ch == channel {
			out = append(out, typ)
		}
	}
	return out
}

// The bridge is the real host's handler and config resolver, and the real
// host is what the bridge needs.
var (
	_ host.Handler        = (*Bridge)(nil)
	_ host.ConfigResolver = (*Bridge)(nil)
	_ Host                = (*host.Host)(nil)
)

// pendingTool waits until a tool call of chat's active turn waits for a
// confirmation and returns the turn and tool call ids.
func (r *rig) pendingTool(chat string) (turnID, toolCallID string) {
	r.t.Helper()
	r.host.waitFor("a pending confirmation in "+chat, func() bool {
		at := r.host.chats[chat].ActiveTurn
		if at == nil {
			return false
		}
		for _, p := range at.ResponseParts {
			if tp, ok := p.Value.(*wire.ToolCallResponsePart); ok && tp.ToolCall.Status() == string(wire.ToolCallStatusPendingConfirmation) {
				turnID, toolCallID = at.ID, tp.ToolCall.ToolCallID()
				return true
			}
		}
		return false
	})
	return turnID, toolCallID
}

// TestPermissionOfAnotherChat: a permission request of a further chat's
// agent is asked on that chat, and the client's confirmation there answers
// it; the default chat is not involved.
func TestPermissionOfAnotherChat(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	r.createChat(sess1, chat2, wire.CreateChatParams{})
	r.host.startTurn(r.b, chat2, "t1", "ask", "")
	turnID, toolID := r.pendingTool(chat2)
	require.Equal(t, "t1", turnID)
	r.host.client(r.b, chat2, wire.Action(&wire.ChatToolCallApprovedAction{
		TurnID: turnID, ToolCallID: toolID, Approved: true, Confirmed: wire.ToolCallConfirmationReasonUserAction, SelectedOptionID: wire.Ptr("allow"),
	}))
	turn := r.host.turn(chat2, "t1")
	assert.Contains(t, text(turn), " outcome=allow")
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	assert.Empty(t, r.host.chats[chat1].Turns)
}

// TestApprovePolicyAnswersWithoutAsking: with --approve all, the tool call
// runs as confirmed by the setting and the agent gets allow_once.
func TestApprovePolicyAnswersWithoutAsking(t *testing.T) {
	r := newRig(t, mapping.PolicyAll)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	r.host.startTurn(r.b, chat1, "t1", "ask", "")
	turn := r.host.turn(chat1, "t1")
	assert.Contains(t, text(turn), " outcome=allow")
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	assert.NotContains(t, r.host.logOf(chat1), "chat/toolCallConfirmed", "approved by the setting when it ran, not by a confirmation")
}

// TestCancelTurn: a client's chat/turnCancelled cancels the backend's turn,
// answers its open permission as cancelled and clears the plan's activity.
func TestCancelTurn(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	r.host.startTurn(r.b, chat1, "t1", "ask", "")
	r.pendingTool(chat1)
	r.host.waitFor("the plan's activity", func() bool { return r.host.chats[chat1].Activity != nil })
	r.host.client(r.b, chat1, wire.Action(&wire.ChatTurnCancelledAction{TurnID: "t1", Duration: 5}))
	turn := r.host.turn(chat1, "t1")
	assert.Equal(t, wire.TurnStateCancelled, turn.State)
	r.host.waitFor("the activity to clear", func() bool { return r.host.chats[chat1].Activity == nil })
	be := r.prov.session(chat1)
	assert.Contains(t, be.callLog(), "cancel")

	// The agent's late report of the cancelled permission changes nothing;
	// the next turn runs normally.
	r.host.startTurn(r.b, chat1, "t2", "two", "")
	assert.Equal(t, wire.TurnStateComplete, r.host.turn(chat1, "t2").State)
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	assert.Len(t, r.host.chats[chat1].Turns, 2)
}

// TestWaitTurnCancelledByShutdown: closing the bridge ends a running turn
// as cancelled.
func TestWaitTurnCancelledByShutdown(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	r.host.startTurn(r.b, chat1, "t1", "wait", "")
	r.host.waitFor("the turn to stream", func() bool {
		at := r.host.chats[chat1].ActiveTurn
		return at != nil && len(at.ResponseParts) > 0
	})
	r.b.Close(t.Context())
	turn := r.host.turn(chat1, "t1")
	assert.Equal(t, wire.TurnStateCancelled, turn.State)
	assert.True(t, r.prov.session(chat1).isClosed())
}

// TestResourceReadOfAnUnknownURIIsNotFound: a URI the bridge does not serve
// is answered with AHP's NotFound (-32008), not as an internal error
// (-32603), which is what `ahpx content file:///…` got.
func TestResourceReadOfAnUnknownURIIsNotFound(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{WorkingDirectories: []string{"file:///work/p"}}, nil)
	for _, uri := range []string{"file:///work/p/README.md", "ahp-bridge:/nope/content/0"} {
		_, err := r.b.ResourceRead(t.Context(), wire.ResourceReadParams{Channel: wire.RootChannel, URI: uri})
		require.ErrorIs(t, err, ErrNotFound, uri)
		var rpc *host.Error
		require.ErrorAs(t, err, &rpc, "%s: the host sends a *host.Error's code; any other error becomes -32603", uri)
		assert.Equal(t, host.CodeNotFound, rpc.Code, uri)
		assert.Contains(t, rpc.Message, uri)
	}
}

// TestNewSessionsStartFromTheAgentsDefaults: the settings offered for a new
// session (resolveSessionConfig, and a new session's first config) are what
// the agent reported when it opened a session, not what a client later chose
// in another one. ahpx creates every session with the resolved values, so a
// model picked in one session used to become every later session's model.
func TestNewSessionsStartFromTheAgentsDefaults(t *testing.T) {
	r := newRig(t, mapping.PolicyAsk)
	r.createSession(sess1, chat1, wire.CreateSessionParams{}, nil)
	cfg := r.b.ResolveSessionConfig(t.Context(), "fake")
	require.Equal(t, "m1", cfg.Values["model"], "the agent opened its session on m1")

	r.host.client(r.b, sess1, wire.Action(&wire.SessionConfigChangedAction{Config: map[string]any{"model": "m3"}}))
	be := r.prov.session(chat1)
	require.Equal(t, []string{"set model=m3"}, be.callLog())
	r.host.waitFor("the session's config to follow the agent", func() bool {
		return r.host.sessions[sess1].Config != nil && r.host.sessions[sess1].Config.Values["model"] == "m3"
	})

	cfg = r.b.ResolveSessionConfig(t.Context(), "fake")
	assert.Equal(t, "m1", cfg.Values["model"], "a new session still starts on the agent's default")
	assert.Equal(t, "m1", cfg.Schema.Properties["model"].Default)
	assert.Len(t, cfg.Schema.Properties["model"].Enum, 3, "the choices are still learned")
}
