package host

import (
	"context"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// Backend is what the host needs from the layer behind it (package bridge in
// the real program, a fake in tests). The host owns all AHP state and
// sequencing; the backend owns agents. Every method is called outside the
// host's locks, so a Backend may call back into the Host (Dispatch, …).
type Backend interface {
	// CreateSession is called after the host has added the session in the
	// `creating` lifecycle and announced it. The backend must eventually
	// dispatch `session/ready` or `session/creationFailed` for it through
	// Host.Dispatch; it must not block on starting the agent.
	CreateSession(ctx context.Context, channel string, params wire.CreateSessionParams)

	// DisposeSession is called after the host has removed the session.
	DisposeSession(ctx context.Context, channel string)

	// ClientAction is called, in serverSeq order per session, for every
	// accepted client action that has a side effect on the agent
	// (turnStarted, turnCancelled, toolCallConfirmed,
	// toolCallResultConfirmed, inputCompleted, modelChanged,
	// pendingMessageSet, …). The action has already been applied to the
	// state and broadcast.
	ClientAction(ctx context.Context, channel string, action wire.StateAction, origin wire.ActionOrigin)

	// Completions answers the `completions` command; an empty result when
	// the backend has none.
	Completions(ctx context.Context, params wire.CompletionsParams) (wire.CompletionsResult, error)

	// ResourceRead answers `resourceRead` for URIs the backend serves (for
	// example the old and new text of a file edit).
	ResourceRead(ctx context.Context, params wire.ResourceReadParams) (wire.ResourceReadResult, error)
}

// ConfigResolver is implemented by a Backend that can describe a provider's
// session settings before a session exists (from what its agent reported
// earlier). The host uses it for `resolveSessionConfig` and for the initial
// config of every new session. It must not block on starting an agent.
type ConfigResolver interface {
	ResolveSessionConfig(ctx context.Context, provider string) wire.SessionConfigState
}
