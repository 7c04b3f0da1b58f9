package reducer

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// TestAnsweredInputLeavesNoInProgressBehind: the InProgress the session
// falls back to when its last input is answered (the AHP fixtures' rule)
// lasts only while a chat of its catalogue is in progress (issue 26,
// finding 1).
func TestAnsweredInputLeavesNoInProgressBehind(t *testing.T) {
	const chat = "ahp-chat:/c"
	input := wire.NewSessionInputRequest(&wire.SessionChatInputRequest{ID: chat + "#input/i", Chat: chat,
		Kind: wire.SessionInputRequestKindChatInput, Request: wire.ChatInputRequest{ID: "i"}})
	session := func(chatStatus wire.SessionStatus) *wire.SessionState {
		return &wire.SessionState{Status: wire.SessionStatusIdle | wire.SessionStatusIsRead, DefaultChat: wire.Ptr(chat),
			Chats: []wire.ChatSummary{{Resource: chat, Status: chatStatus}}}
	}
	apply := func(s *wire.SessionState, actions ...any) {
		for _, a := range actions {
			Session(s, wire.Action(a), nil)
		}
	}
	busy := wire.SessionStatusInputNeeded

	// The input answered, the turn goes on: InProgress, as specified.
	s := session(busy)
	apply(s, &wire.SessionInputNeededSetAction{Request: input}, &wire.SessionInputNeededRemovedAction{ID: input.ID()},
		&wire.SessionChatUpdatedAction{Chat: chat, Changes: wire.PartialChatSummary{Status: wire.Ptr(wire.SessionStatusInProgress)}})
	assert.Equal(t, wire.SessionStatusInProgress|wire.SessionStatusIsRead, s.Status)
	// The turn ends: idle again, the flags kept.
	apply(s, &wire.SessionChatUpdatedAction{Chat: chat, Changes: wire.PartialChatSummary{Status: wire.Ptr(wire.SessionStatusIdle)}})
	assert.Equal(t, wire.SessionStatusIdle|wire.SessionStatusIsRead, s.Status)

	// The turn ended before the input was withdrawn (a cancel): idle at once.
	s = session(busy)
	apply(s, &wire.SessionInputNeededSetAction{Request: input},
		&wire.SessionChatUpdatedAction{Chat: chat, Changes: wire.PartialChatSummary{Status: wire.Ptr(wire.SessionStatusIdle)}})
	assert.Equal(t, busy|wire.SessionStatusIsRead, s.Status, "still waiting while the entry is there")
	apply(s, &wire.SessionInputNeededRemovedAction{ID: input.ID()})
	assert.Equal(t, wire.SessionStatusIdle|wire.SessionStatusIsRead, s.Status)

	// A session that never asked is not touched by its chats' statuses.
	s = session(wire.SessionStatusIdle)
	apply(s, &wire.SessionChatUpdatedAction{Chat: chat, Changes: wire.PartialChatSummary{Status: wire.Ptr(busy)}})
	assert.Equal(t, wire.SessionStatusIdle|wire.SessionStatusIsRead, s.Status)
}
