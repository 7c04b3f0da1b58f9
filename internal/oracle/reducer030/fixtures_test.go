package reducer030

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// fixtureCount is how many reducer fixtures the AHP 0.3.0 spec ships.
const fixtureCount = 163

// fixedClock is the clock the spec's fixtures assume.
func fixedClock() int64 { return 9999 }

func fixtureDir(t testing.TB) string {
	return testenv.SpecDir(t, "0.3.0", "test-cases", "reducers")
}

// newState returns a pointer to a zero state of the kind a fixture names.
func newState(kind string) (any, error) {
	switch kind {
	case "root":
		return new(wire.RootState), nil
	case "session":
		return new(wire.SessionState), nil
	case "terminal":
		return new(wire.TerminalState), nil
	case "changeset":
		return new(wire.ChangesetState), nil
	case "resourceWatch":
		return new(wire.ResourceWatchState), nil
	}
	return nil, fmt.Errorf("unknown reducer %q", kind)
}

// reduceJSON decodes initial as the state kind named by reducer, applies the
// actions and returns the encoded state.
func reduceJSON(kind string, initial json.RawMessage, actions []json.RawMessage) ([]byte, error) {
	state, err := newState(kind)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(initial, state); err != nil {
		return nil, fmt.Errorf("initial state: %w", err)
	}
	for i, raw := range actions {
		var a wire.StateAction
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("action %d: %w", i, err)
		}
		if !Apply(state, a, fixedClock) {
			return nil, fmt.Errorf("no reducer for %T", state)
		}
	}
	return json.Marshal(state)
}

func TestReducerFixtures(t *testing.T) {
	names, fixes := fixtures.Load(t, fixtureDir(t), fixtureCount)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			f := fixes[name]
			got, err := reduceJSON(f.Reducer, f.Initial, f.Actions)
			require.NoError(t, err)
			require.Equal(t, fixtures.Normalized(t, f.Expected), fixtures.Normalized(t, got), f.Description)
		})
	}
}
