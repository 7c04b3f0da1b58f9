package reducer070

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// fixtureCount is how many reducer fixtures the AHP 0.7.0 release has; a
// shorter folder means the data vectors are incomplete.
const fixtureCount = 247

// fixtureClock is the time the fixtures were generated with (the reference
// test pins Date.now to 9999 ms).
const fixtureClock = 9999

// newState returns a pointer to a zero state of the kind a fixture names.
func newState(kind string) (any, bool) {
	switch kind {
	case "root":
		return new(wire.RootState), true
	case "session":
		return new(wire.SessionState), true
	case "chat":
		return new(wire.ChatState), true
	case "terminal":
		return new(wire.TerminalState), true
	case "changeset":
		return new(wire.ChangesetState), true
	case "annotations":
		return new(wire.AnnotationsState), true
	case "resourceWatch":
		return new(wire.ResourceWatchState), true
	}
	return nil, false
}

// reduceJSON decodes the initial state, applies every action with the
// fixture clock and returns the encoded result.
func reduceJSON(t *testing.T, kind string, initial json.RawMessage, actions []json.RawMessage) []byte {
	t.Helper()
	st, ok := newState(kind)
	require.True(t, ok, "unknown reducer %q", kind)
	require.NoError(t, json.Unmarshal(initial, st))
	clock := Clock(func() int64 { return fixtureClock })
	for i, raw := range actions {
		var a wire.StateAction
		require.NoError(t, json.Unmarshal(raw, &a), "action %d", i)
		Apply(st, a, clock)
	}
	out, err := json.Marshal(st)
	require.NoError(t, err)
	return out
}

// TestReducerFixtures replays every official AHP 0.7.0 reducer fixture,
// keyed by file name. REDUCER_FIXTURES=chat (a comma list of reducer kinds)
// narrows the run while a reducer is being written.
func TestReducerFixtures(t *testing.T) {
	names, fixes := fixtures.Load(t, testenv.SpecDir(t, "0.7.0", "test-cases", "reducers"), fixtureCount)
	only := map[string]bool{}
	for _, k := range strings.Split(os.Getenv("REDUCER_FIXTURES"), ",") {
		if k == "" {
			continue
		}
		// A misspelt kind would otherwise select nothing and pass.
		if _, ok := newState(k); !ok {
			t.Fatalf("REDUCER_FIXTURES names %q, which is not a reducer kind", k)
		}
		only[k] = true
	}
	for _, name := range names {
		f := fixes[name]
		if len(only) > 0 && !only[f.Reducer] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			got := reduceJSON(t, f.Reducer, f.Initial, f.Actions)
			require.Equal(t, fixtures.Normalized(t, f.Expected), fixtures.Normalized(t, got), f.Description)
		})
	}
}
