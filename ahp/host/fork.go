package host

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// This file serves createChat with a fork source (AHP 1.0: the new chat
// starts with the source chat's turns through turnId) for an agent that
// advertises multipleChats.fork: the bridge forks the agent's session
// (ACP session/fork), which copies the whole conversation, so a fork is
// taken at the source chat's latest turn, while it runs none.

// forkFrom is what a forked chat starts with; nil for a chat that is not
// a fork.
type forkFrom struct {
	origin wire.ChatOrigin
	turns  []wire.Turn
}

// forkSourceLocked checks createChat's source against the session and its
// agent's capabilities. Called with the group's mutex held.
func (h *Host) forkSourceLocked(sess *channel, agent wire.AgentInfo, p wire.CreateChatParams) (*forkFrom, *Error) {
	if p.Source == nil {
		return nil, nil
	}
	caps := agent.Capabilities
	src, ok := p.Source.Value.(*wire.ForkChatSource)
	if !ok || caps == nil || caps.MultipleChats == nil || caps.MultipleChats.Fork == nil || !*caps.MultipleChats.Fork {
		return nil, Errorf(CodeInvalidParams, "invalid params for createChat: the %s agent cannot fork chats or start side chats (its multipleChats capability offers neither)", sess.session.Provider)
	}
	var from *channel
	for _, c := range sess.group.chats {
		if c.uri == src.Chat {
			from = c
		}
	}
	if from == nil || from.removed {
		return nil, Errorf(CodeInvalidParams, "invalid params for createChat: the fork source %s is not a chat of session %s", src.Chat, sess.uri)
	}
	st := from.chat.synced()
	if st.ActiveTurn != nil || len(st.Turns) == 0 || st.Turns[len(st.Turns)-1].ID != src.TurnID {
		return nil, Errorf(CodeInvalidParams, "invalid params for createChat: the %s agent forks a chat at its latest completed turn only, and %s is not the latest turn of %s", sess.session.Provider, src.TurnID, src.Chat)
	}
	// A deep copy: the new chat's turns are its own.
	b, err := json.Marshal(st.Turns)
	var turns []wire.Turn
	if err == nil {
		err = json.Unmarshal(b, &turns)
	}
	if err != nil {
		return nil, Errorf(CodeInternalError, "copying the turns of %s: %v", src.Chat, err)
	}
	return &forkFrom{
		origin: wire.ChatOrigin{Value: &wire.ChatOriginFork{Kind: wire.ChatOriginKindFork, Chat: src.Chat, TurnID: src.TurnID}},
		turns:  turns,
	}, nil
}

// chatOrigin is a new chat's origin: the fork, else the user.
func (f *forkFrom) chatOrigin() *wire.ChatOrigin {
	if f == nil {
		return &wire.ChatOrigin{Value: &wire.ChatOriginUser{Kind: wire.ChatOriginKindUser}}
	}
	o := f.origin
	return &o
}

// chatTurns are a new chat's turns: the fork's copy, else none.
func (f *forkFrom) chatTurns() []wire.Turn {
	if f == nil {
		return []wire.Turn{}
	}
	return f.turns
}
