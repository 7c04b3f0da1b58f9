// Package mapping holds the pure translation rules between the bridge's
// neutral backend vocabulary (package backend) and AHP 0.3.0 (package
// ahp/v030/wire).
//
// Backend → AHP: a Turn is a small state machine per prompt turn that turns
// each backend.Event into the session actions AHP clients expect (response
// parts, deltas, the tool-call lifecycle, input requests, usage, the end of
// the turn). Functions such as SessionConfig, SessionEvent and
// CompletionItems cover what is not tied to a turn.
//
// AHP → backend: PermissionOutcome, InputAnswers and PromptFromTurn turn the
// actions AHP clients dispatch back into what a backend session accepts, and
// Policy and AutoApprove implement the `--approve` policy.
//
// Nothing here does I/O, reads a clock or generates randomness: identifiers
// come from the generator handed to NewTurn, so the same events always give
// the same actions. docs/mapping.md has the full tables.
package mapping
