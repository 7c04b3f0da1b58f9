// Package reducer070 is a test oracle: it applies AHP 0.7.0 state actions
// to AHP channel states (root, session, chat, terminal, changeset,
// annotations and resource watch) as a 0.7.0 client does. It follows the
// reference reducers of the AHP 0.7.0 specification
// (types/channels-*/reducer.ts at the release commit) and is checked against
// the official reducer fixtures (../shared/ahp/0.7.0/test-cases/reducers).
// The host speaks 1.0.0 and reduces with ahp/reducer; only tests import this
// package: they reduce what the 0.7.0 codec sends with it and compare the
// result with the codec's snapshot (bridge's dialect client test), and it is
// the 0.7.0 side of the 0.3.0 projection's property test in ahp/codec.
//
// The reducers are deterministic: the only outside input is the Clock, used
// for modifiedAt timestamps. They mutate the state they are given, do no
// I/O, treat action types they do not handle (including unknown ones) as
// no-ops, and do not panic on any input: nil states, nil actions, missing
// turns or tool calls are all no-ops. Values taken from an action are
// copied, so the state never shares memory with the action that changed it
// (an action may be kept, e.g. in a replay buffer, and encoded later).
package reducer070

import (
	"encoding/json"
	"reflect"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// Clock returns the current time in milliseconds since the Unix epoch: the
// 1.0.0 reducer's clock, as are the timestamp helpers below (timestamps are
// written the same way in both versions).
type Clock = reducer.Clock

// SystemClock is the wall clock.
func SystemClock() int64 { return reducer.SystemClock() }

// now is the clock's time; a nil clock is the wall clock.
func now(c Clock) int64 {
	if c == nil {
		return SystemClock()
	}
	return c()
}

// iso formats the clock's time as an AHP timestamp (milliseconds, UTC,
// e.g. "1970-01-01T00:00:09.999Z").
func iso(c Clock) string { return FormatTime(now(c)) }

// FormatTime formats Unix milliseconds as an AHP timestamp.
func FormatTime(ms int64) string { return reducer.FormatTime(ms) }

// ParseTime parses an AHP timestamp into Unix milliseconds.
func ParseTime(s string) (int64, bool) { return reducer.ParseTime(s) }

// actionValue returns the action held by a, as a pointer to a variant
// struct, or nil when a holds nothing usable (nil, a nil pointer, or an
// unknown variant kept as raw JSON).
func actionValue(a wire.StateAction) any {
	a = wire.NewStateAction(a.Value) // variant values become pointers
	v := reflect.ValueOf(a.Value)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	return a.Value
}

// clone deep-copies v through its JSON encoding. The wire types are plain
// data, so a value that cannot be encoded cannot have come from the wire;
// clone then returns v itself rather than losing it.
func clone[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// Apply applies a to state, which must be a pointer to one of the channel
// states (*wire.RootState, *wire.SessionState, *wire.ChatState,
// *wire.TerminalState, *wire.ChangesetState, *wire.AnnotationsState,
// *wire.ResourceWatchState). It reports whether state was of a known kind.
func Apply(state any, a wire.StateAction, clock Clock) bool {
	switch s := state.(type) {
	case *wire.RootState:
		Root(s, a, clock)
	case *wire.SessionState:
		Session(s, a, clock)
	case *wire.ChatState:
		Chat(s, a, clock)
	case *wire.TerminalState:
		Terminal(s, a, clock)
	case *wire.ChangesetState:
		Changeset(s, a, clock)
	case *wire.AnnotationsState:
		Annotations(s, a, clock)
	case *wire.ResourceWatchState:
		ResourceWatch(s, a, clock)
	default:
		return false
	}
	return true
}
