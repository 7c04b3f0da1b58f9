// Package reducer030 is a test oracle: it applies AHP 0.3.0 state actions
// to AHP channel states (root, session, terminal, changeset, resource
// watch) as a 0.3.0 client does, following the reference reducers of the
// AHP 0.3.0 specification. Only tests import it: the 0.3.0 projection in
// ahp/codec is checked against it (its property test), and bridge's dialect
// client test reduces what a 0.3.0 client receives with it.
//
// The reducers are deterministic: the only outside input is the Clock, used
// for summary.modifiedAt. They mutate the state they are given, do no I/O,
// treat action types they do not handle (including unknown ones) as no-ops,
// and do not panic on any input: nil states, nil actions, missing turns or
// tool calls are all no-ops. Values taken from an action are copied, so the
// state never shares memory with the action that changed it (an action may be
// kept, e.g. in a replay buffer, and encoded later).
package reducer030

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
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

// Root applies a to the root state s.
func Root(s *wire.RootState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.RootAgentsChangedAction:
		s.Agents = clone(a.Agents)
	case *wire.RootActiveSessionsChangedAction:
		s.ActiveSessions = wire.Ptr(a.ActiveSessions)
	case *wire.RootTerminalsChangedAction:
		s.Terminals = clone(a.Terminals)
	case *wire.RootConfigChangedAction:
		if s.Config == nil {
			return
		}
		s.Config.Values = mergeValues(s.Config.Values, a.Config, a.Replace != nil && *a.Replace)
	}
}

// mergeValues returns cur with upd merged in, or a copy of upd alone when
// replace is set. The result is a new map: clients may hold the old one.
func mergeValues(cur, upd map[string]any, replace bool) map[string]any {
	out := map[string]any{}
	if !replace {
		for k, v := range cur {
			out[k] = v
		}
	}
	for k, v := range clone(upd) {
		out[k] = v
	}
	return out
}

// ResourceWatch applies a to the resource-watch state s. resourceWatch/changed
// reports changes without changing the watch itself, so every action is a
// no-op; the function exists so every channel has a reducer.
func ResourceWatch(s *wire.ResourceWatchState, a wire.StateAction, clock Clock) {}

// Changeset applies a to the changeset state s.
func Changeset(s *wire.ChangesetState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.ChangesetStatusChangedAction:
		s.Status = a.Status
		s.Error = nil
		if a.Status == wire.ChangesetStatusError {
			s.Error = clone(a.Error)
		}
	case *wire.ChangesetFileSetAction:
		file := clone(a.File)
		for i := range s.Files {
			if s.Files[i].ID == file.ID {
				s.Files[i] = file
				return
			}
		}
		s.Files = append(s.Files, file)
	case *wire.ChangesetFileRemovedAction:
		for i := range s.Files {
			if s.Files[i].ID == a.FileID {
				s.Files = append(s.Files[:i:i], s.Files[i+1:]...)
				return
			}
		}
	case *wire.ChangesetOperationsChangedAction:
		s.Operations = clone(a.Operations)
	case *wire.ChangesetOperationStatusChangedAction:
		for i := range s.Operations {
			op := &s.Operations[i]
			if op.ID != a.OperationID {
				continue
			}
			op.Status = a.Status
			op.Error = nil
			if a.Status == wire.ChangesetOperationStatusError {
				op.Error = clone(a.Error)
			}
			return
		}
	case *wire.ChangesetClearedAction:
		if len(s.Files) > 0 {
			s.Files = []wire.ChangesetFile{}
		}
	}
}

// Terminal applies a to the terminal state s.
func Terminal(s *wire.TerminalState, a wire.StateAction, clock Clock) {
	if s == nil {
		return
	}
	switch a := actionValue(a).(type) {
	case *wire.TerminalDataAction:
		if n := len(s.Content); n > 0 {
			switch tail := s.Content[n-1].Value.(type) {
			case *wire.TerminalCommandPart:
				if tail != nil && !tail.IsComplete {
					tail.Output += a.Data
					return
				}
			case *wire.TerminalUnclassifiedPart:
				if tail != nil {
					tail.Value += a.Data
					return
				}
			}
		}
		s.Content = append(s.Content, wire.NewTerminalContentPart(&wire.TerminalUnclassifiedPart{Type: "unclassified", Value: a.Data}))
	case *wire.TerminalResizedAction:
		s.Cols, s.Rows = wire.Ptr(a.Cols), wire.Ptr(a.Rows)
	case *wire.TerminalClaimedAction:
		s.Claim = clone(a.Claim)
	case *wire.TerminalTitleChangedAction:
		s.Title = a.Title
	case *wire.TerminalCwdChangedAction:
		s.Cwd = wire.Ptr(a.Cwd)
	case *wire.TerminalExitedAction:
		s.ExitCode = clone(a.ExitCode)
	case *wire.TerminalClearedAction:
		s.Content = []wire.TerminalContentPart{}
	case *wire.TerminalCommandDetectionAvailableAction:
		s.SupportsCommandDetection = wire.Ptr(true)
	case *wire.TerminalCommandExecutedAction:
		s.Content = append(s.Content, wire.NewTerminalContentPart(&wire.TerminalCommandPart{
			Type:        "command",
			CommandID:   a.CommandID,
			CommandLine: a.CommandLine,
			Output:      "",
			Timestamp:   a.Timestamp,
		}))
		s.SupportsCommandDetection = wire.Ptr(true)
	case *wire.TerminalCommandFinishedAction:
		for _, p := range s.Content {
			if c, ok := p.Value.(*wire.TerminalCommandPart); ok && c != nil && c.CommandID == a.CommandID {
				c.IsComplete = true
				c.ExitCode = clone(a.ExitCode)
				c.DurationMs = clone(a.DurationMs)
			}
		}
	}
}

// Apply applies a to state, which must be a *wire.RootState,
// *wire.SessionState, *wire.TerminalState, *wire.ChangesetState or
// *wire.ResourceWatchState. It reports false, changing nothing, for any
// other state type.
func Apply(state any, a wire.StateAction, clock Clock) bool {
	switch s := state.(type) {
	case *wire.RootState:
		Root(s, a, clock)
	case *wire.SessionState:
		Session(s, a, clock)
	case *wire.TerminalState:
		Terminal(s, a, clock)
	case *wire.ChangesetState:
		Changeset(s, a, clock)
	case *wire.ResourceWatchState:
		ResourceWatch(s, a, clock)
	default:
		return false
	}
	return true
}
