package persist

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

func TestDue(t *testing.T) {
	for _, tc := range []struct {
		action any
		chat   bool
		want   Due
		whole  bool
	}{
		{&wire.ChatTurnCompleteAction{}, true, DueTurnEnd, false},
		{&wire.ChatTurnCancelledAction{}, true, DueTurnEnd, false},
		{&wire.ChatErrorAction{}, true, DueTurnEnd, false},
		{&wire.ChatTurnStartedAction{}, true, DueTurnStart, false},
		{&wire.ChatIsArchivedChangedAction{}, true, DueCatalogue, false},
		{&wire.ChatWorkingDirectorySetAction{}, true, DueCatalogue, false},
		{&wire.ChatDraftChangedAction{}, true, DueNothing, false},
		{&wire.ChatActivityChangedAction{}, true, DueNothing, false},
		{&wire.ChatDeltaAction{}, true, DueTurnContent, true},
		{&wire.ChatReasoningAction{}, true, DueTurnContent, true},
		{&wire.ChatToolCallStartAction{}, true, DueTurnContent, false},
		{&wire.SessionTitleChangedAction{}, false, DueCatalogue, false},
		{&wire.SessionChatAddedAction{}, false, DueCatalogue, false},
		{&wire.SessionIsArchivedChangedAction{}, false, DueCatalogue, false},
		{&wire.SessionActiveClientSetAction{}, false, DueNothing, false},
	} {
		a := wire.StateAction{Value: tc.action}
		if tc.chat {
			assert.Equal(t, tc.want, ChatDue(a), "%T", tc.action)
		} else {
			assert.Equal(t, tc.want, SessionDue(a), "%T", tc.action)
		}
		assert.Equal(t, tc.whole, AppendedWhole(a), "%T", tc.action)
	}
}
