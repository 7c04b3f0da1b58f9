// Package mapping holds the pure translation rules between the bridge's
// neutral backend vocabulary (package backend) and AHP 1.0.0 (package
// ahp/wire), the dialect the host keeps its state in.
//
// Backend → AHP: a Turn is a small state machine per prompt turn that turns
// each backend.Event into the actions AHP clients expect: chat/* actions
// for everything in the turn (response parts, deltas, the tool-call
// lifecycle, input requests, usage, activity, the end of the turn with its
// duration) and session/* actions for what belongs to the session (title,
// settings, `_meta`). OnSession tells the two apart, so the bridge can send
// each to its channel. Functions such as SessionConfig, SessionEvent,
// CompletionItems, WorkingDirectory and TurnModel cover what is not tied to
// a turn.
//
// AHP → backend: PermissionOutcome, InputAnswers and PromptFromTurn turn the
// actions AHP clients dispatch back into what a backend session accepts, and
// Policy and AutoApprove implement the `--approve` policy.
//
// Nothing here does I/O, reads a clock or generates randomness: identifiers
// and the time come from the generator and clock handed to NewTurn, so the
// same events always give the same actions. docs/mapping.md has the full
// tables.
package mapping
