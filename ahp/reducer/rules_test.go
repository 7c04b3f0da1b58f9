package reducer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rulesDir holds the golden cases of the rules AHP 0.8.0–1.0.0 added, one
// JSON file each, in the format of the official reducer fixtures
// ({description, reducer, initial, actions, expected}). The expected states
// are written by hand from docs/protocol-versions.md §11–§12, not produced
// by this package.
const rulesDir = "testdata/rules"

// rulesActionTypes are the action types 1.0.0 added or changed. Every one of
// them must be exercised by at least one golden case: the 0.7.0 fixtures
// cannot ask for them.
var rulesActionTypes = []string{
	"chat/error", "chat/responsePart", "chat/turnResume", "chat/turnStarted",
	"chat/isReadChanged", "chat/isArchivedChanged", "chat/movableChanged",
	"chat/changesetsChanged", "chat/canvasesChanged",
	"chat/backgroundWorkSet", "chat/backgroundWorkRemoved",
	"session/chatsReordered", "session/workingDirectoryReplaced",
	"session/mcpServerBackgroundRequested", "session/creationFailed",
	"session/inputNeededSet", "session/customizationToggled", "session/chatUpdated",
	"terminal/exited", "terminal/claimed", "annotations/updated",
	"changeset/statusChanged", "changeset/contentChanged",
	// The automation catalogue, automation runs (0.9.0) and canvases
	// (1.0.0): channels with their own state.
	"automation/set", "automation/removed", "automation/createRequested", "automation/updateRequested",
	"automationRun/lifecycleChanged", "automationRun/sessionSet", "automationRun/sessionRemoved",
	"automationRun/primarySessionChanged", "automationRun/cancelRequested",
	"canvas/stateChanged",
}

// loadRules returns the golden cases by file name without .json, in name
// order.
func loadRules(t *testing.T) ([]string, map[string]fixture) {
	t.Helper()
	entries, err := os.ReadDir(rulesDir)
	require.NoError(t, err)
	var names []string
	out := map[string]fixture{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(rulesDir, e.Name()))
		require.NoError(t, err)
		var f fixture
		require.NoError(t, json.Unmarshal(b, &f), e.Name())
		require.NotEmpty(t, f.Actions, "%s has no actions", e.Name())
		require.NotEmpty(t, f.Description, "%s says nothing about what it checks", e.Name())
		name := strings.TrimSuffix(e.Name(), ".json")
		names = append(names, name)
		out[name] = f
	}
	sort.Strings(names)
	return names, out
}

// TestRules runs every golden case of the 1.0.0 rules.
func TestRules(t *testing.T) {
	names, rules := loadRules(t)
	require.GreaterOrEqual(t, len(names), 40, "golden cases missing from %s", rulesDir)
	for _, name := range names {
		f := rules[name]
		t.Run(name, func(t *testing.T) {
			got := reduceJSON(t, f.Reducer, f.Initial, f.Actions)
			require.Equal(t, normalized(t, f.Expected), normalized(t, got), f.Description)
		})
	}
}

// TestRulesCoverEveryNewAction: each action type 1.0.0 added or changed has
// a golden case.
func TestRulesCoverEveryNewAction(t *testing.T) {
	_, rules := loadRules(t)
	seen := map[string]bool{}
	for _, f := range rules {
		for _, raw := range f.Actions {
			var a struct {
				Type string `json:"type"`
			}
			require.NoError(t, json.Unmarshal(raw, &a))
			seen[a.Type] = true
		}
	}
	for _, typ := range rulesActionTypes {
		require.True(t, seen[typ], "no golden case in %s uses %s", rulesDir, typ)
	}
}
