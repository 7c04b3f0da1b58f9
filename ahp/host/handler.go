package host

import (
	"context"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Handler is the layer behind the host (package bridge in
// the real program, a fake in tests). The host owns all AHP state and
// sequencing; the handler owns agents. Every method is called outside the
// host's locks, so a Handler may call back into the Host (Dispatch, …).
type Handler interface {
	// CreateSession is called after the host has added the session in the
	// `creating` lifecycle, with its default chat, and announced it. The
	// backend must eventually dispatch `session/ready` or
	// `session/creationFailed` on the session through Host.Dispatch; it
	// must not block on starting the agent.
	CreateSession(ctx context.Context, session, defaultChat string, params wire.CreateSessionParams)

	// DisposeSession is called when a client disposed a session: after
	// the host has removed the session and its chats (a session without
	// turns), or, for a session with turns, after it archived it and before
	// it lets it go from memory (archive.go): the session is still live
	// then, so a running turn the handler cancels can still be ended
	// through Dispatch. Either way the handler lets go of the session's
	// agent sessions. An archived session may come back later through
	// SessionRestorer.
	DisposeSession(ctx context.Context, session string)

	// CreateChat is called after the host has added a further chat to a
	// session and announced it (session/chatAdded). The chat takes turns at
	// once; a handler that needs time to open it must hold the first
	// prompt until it can run it.
	CreateChat(ctx context.Context, session, chat string, params wire.CreateChatParams)

	// DisposeChat is called after the host has removed a chat that was not
	// the session's default one.
	DisposeChat(ctx context.Context, session, chat string)

	// ClientAction is called, in serverSeq order per channel, for every
	// accepted client action on a session or chat channel (turnStarted,
	// turnCancelled, toolCallConfirmed, inputCompleted, configChanged,
	// draftChanged, pendingMessageSet, …) and for turns the host starts
	// itself from queued messages (with a zero origin). The action has
	// already been applied to the state and broadcast.
	ClientAction(ctx context.Context, channel string, action wire.StateAction, origin wire.ActionOrigin)

	// Completions answers the `completions` command (its channel is a
	// chat); an empty result when the handler has none.
	Completions(ctx context.Context, params wire.CompletionsParams) (wire.CompletionsResult, error)

	// ResourceRead answers `resourceRead` for URIs the handler serves (for
	// example the old and new text of a file edit).
	ResourceRead(ctx context.Context, params wire.ResourceReadParams) (wire.ResourceReadResult, error)
}

// ConfigResolver is implemented by a Handler that can describe a provider's
// session settings before a session exists (from what its agent reported
// earlier). The host uses it for `resolveSessionConfig` and for the initial
// config of every new session. It must not block on starting an agent.
type ConfigResolver interface {
	ResolveSessionConfig(ctx context.Context, provider string) wire.SessionConfigState
}
