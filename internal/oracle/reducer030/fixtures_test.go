package reducer030

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// fixtureCount is how many reducer fixtures the AHP 0.3.0 spec ships.
const fixtureCount = 163

// fixedClock is the clock the spec's fixtures assume.
func fixedClock() int64 { return 9999 }

type fixture struct {
	Description string            `json:"description"`
	Reducer     string            `json:"reducer"`
	Initial     json.RawMessage   `json:"initial"`
	Actions     []json.RawMessage `json:"actions"`
	Expected    json.RawMessage   `json:"expected"`
}

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

// dropNulls removes object members whose value is null, recursively, so that
// null and absent compare equal.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e != nil {
				out[k] = dropNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropNulls(e)
		}
		return out
	}
	return v
}

func normalized(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	out, err := json.MarshalIndent(dropNulls(v), "", "  ")
	require.NoError(t, err)
	return string(out)
}

func TestReducerFixtures(t *testing.T) {
	dir := fixtureDir(t)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err, "the AHP reducer fixtures must be at %s", dir)
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	require.GreaterOrEqual(t, len(names), fixtureCount, "expected all %d reducer fixtures in %s", fixtureCount, dir)

	for _, name := range names {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			var f fixture
			require.NoError(t, json.Unmarshal(b, &f))
			got, err := reduceJSON(f.Reducer, f.Initial, f.Actions)
			require.NoError(t, err)
			require.Equal(t, normalized(t, f.Expected), normalized(t, got), f.Description)
		})
	}
}
