// Package reducer applies AHP 1.0.0 state actions to AHP channel states:
// root, session, chat, terminal, changeset, annotations, resource watch,
// automation catalogue, automation run and canvas.
// It is the authoritative state model of the 1.x host (issue 13): the host
// reduces every accepted action with it, and our own client reduces what it
// receives the same way, so both compute the same states. The older
// dialects are projections of what it computes (docs/protocol-versions.md
// §14).
//
// It is a port of the 0.7.0 reducer (now the test oracle
// internal/oracle/reducer070), which follows the reference reducers of
// AHP 0.7.0 and its official fixtures, to the 1.0.0 wire types of ahp/wire,
// with the rules 0.8.0–1.0.0 added. No 1.x reference reducer source could be
// read, so those rules come from the schema descriptions (schema/*.schema.json
// at 0383429), the 0.9-era .NET port of the reducers and the client
// CHANGELOGs; docs/protocol-versions.md §11–§12 lists them and the doc
// comment of each reducer says where it decides something the sources
// leave open. The release's own reducer fixtures (../shared/ahp/1.0.0,
// corpus_test.go) all pass, unconverted; the 0.7.0 ones run converted
// (fixtures_test.go).
//
// The reducers are deterministic and, as in 1.0.0, take timestamps from the
// actions rather than from a wall clock: chat/turnStarted sets modifiedAt to
// the turn's startedAt, and the end of a turn to startedAt plus the turn's
// duration. The Clock is only consulted when a turn's startedAt is not a
// timestamp. The reducers mutate the state they are given, do no I/O, treat
// action types they do not handle (including unknown ones) as no-ops, and do
// not panic on any input: nil states, nil actions, missing turns or tool
// calls are all no-ops. Values taken from an action are copied, so the state
// never shares memory with the action that changed it (an action may be
// kept, e.g. in a replay buffer, and encoded later).
package reducer

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// Clock returns the current time in milliseconds since the Unix epoch.
type Clock func() int64

// SystemClock is the wall clock.
func SystemClock() int64 { return time.Now().UnixMilli() }

func (c Clock) now() int64 {
	if c == nil {
		return SystemClock()
	}
	return c()
}

// iso formats the clock's time as the ISO-8601 timestamps of AHP
// (milliseconds, UTC, e.g. "1970-01-01T00:00:09.999Z").
func (c Clock) iso() string { return FormatTime(c.now()) }

// FormatTime formats Unix milliseconds as an AHP timestamp.
func FormatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// ParseTime parses an AHP timestamp into Unix milliseconds.
func ParseTime(s string) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

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
// *wire.ResourceWatchState, *wire.AutomationState, *wire.AutomationRunState,
// *wire.CanvasState). It reports whether state was of a known kind.
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
	case *wire.AutomationState:
		Automations(s, a, clock)
	case *wire.AutomationRunState:
		AutomationRun(s, a, clock)
	case *wire.CanvasState:
		Canvas(s, a, clock)
	default:
		return false
	}
	return true
}
