package reducer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
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
func loadRules(t *testing.T) ([]string, map[string]fixtures.Fixture) {
	t.Helper()
	names, rules := fixtures.Load(t, rulesDir, 1)
	for _, name := range names {
		require.NotEmpty(t, rules[name].Actions, "%s has no actions", name)
		require.NotEmpty(t, rules[name].Description, "%s says nothing about what it checks", name)
	}
	return names, rules
}

// TestRules runs every golden case of the 1.0.0 rules.
func TestRules(t *testing.T) {
	names, rules := loadRules(t)
	require.GreaterOrEqual(t, len(names), 40, "golden cases missing from %s", rulesDir)
	for _, name := range names {
		f := rules[name]
		t.Run(name, func(t *testing.T) {
			got := reduceJSON(t, f.Reducer, f.Initial, f.Actions)
			require.Equal(t, fixtures.Normalized(t, f.Expected), fixtures.Normalized(t, got), f.Description)
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
