package persist

import "github.com/ahp-bridge/ahp-bridge/ahp/wire"

// Due is what an action just reduced into a chat or a session makes
// durable: the rule of when the host writes (its persist.go), written
// once, apart from the writing.
type Due uint8

const (
	// DueTurnContent: nothing before the action's broadcast; in a chat
	// with a streaming turn it changed that turn, whose checkpoint is
	// due.
	DueTurnContent Due = iota
	// DueNothing: nothing; the action changes neither the turn nor the
	// catalogue (a draft, pending or queued messages, activity).
	DueNothing
	// DueCatalogue: the session's row and its chats' are rewritten
	// before the action's broadcast.
	DueCatalogue
	// DueTurnStart: a catalogue write, and a new streaming turn to
	// checkpoint.
	DueTurnStart
	// DueTurnEnd: the completed turn is written before the action's
	// broadcast, and supersedes its checkpoint.
	DueTurnEnd
)

// ChatDue is what a chat action makes durable.
func ChatDue(a wire.StateAction) Due {
	switch a.Value.(type) {
	case *wire.ChatTurnCompleteAction, *wire.ChatTurnCancelledAction, *wire.ChatErrorAction:
		return DueTurnEnd
	case *wire.ChatTurnStartedAction:
		return DueTurnStart
	case *wire.ChatIsReadChangedAction, *wire.ChatIsArchivedChangedAction,
		*wire.ChatWorkingDirectorySetAction, *wire.ChatWorkingDirectoryRemovedAction:
		return DueCatalogue
	case *wire.ChatDraftChangedAction, *wire.ChatPendingMessageSetAction, *wire.ChatPendingMessageRemovedAction,
		*wire.ChatQueuedMessagesReorderedAction, *wire.ChatActivityChangedAction:
		return DueNothing
	}
	return DueTurnContent
}

// SessionDue is what a session action makes durable: DueCatalogue or
// DueNothing.
func SessionDue(a wire.StateAction) Due {
	switch a.Value.(type) {
	case *wire.SessionReadyAction, *wire.SessionCreationFailedAction, *wire.SessionTitleChangedAction,
		*wire.SessionConfigChangedAction, *wire.SessionWorkingDirectorySetAction,
		*wire.SessionWorkingDirectoryRemovedAction, *wire.SessionWorkingDirectoryReplacedAction,
		*wire.SessionChatAddedAction, *wire.SessionChatRemovedAction, *wire.SessionIsReadChangedAction,
		*wire.SessionIsArchivedChangedAction, *wire.SessionDefaultChatChangedAction, *wire.SessionChatsReorderedAction:
		return DueCatalogue
	}
	return DueNothing
}

// AppendedWhole reports whether a streaming turn's action is a text that
// the checkpointer appends to the store, never rewrites, so that it counts
// whole towards the checkpoint's byte trigger (the rest of the turn counts
// as CheckpointGrowth says).
func AppendedWhole(a wire.StateAction) bool {
	switch a.Value.(type) {
	case *wire.ChatDeltaAction, *wire.ChatReasoningAction:
		return true
	}
	return false
}
