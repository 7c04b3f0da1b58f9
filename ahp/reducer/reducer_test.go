package reducer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/fixtures"
)

// decisionCases are behaviours the official fixtures leave out and that
// this package had to decide, in the fixtures' format.
var decisionCases = []struct {
	name, kind, initial string
	actions             []string
	expected            string
}{
	// Container kinds this package does not know are containers when they
	// have a "children" array: a newer host may add one, and clients must
	// still toggle, remove and stop what it holds.
	{
		name: "toggle a child of an unknown container kind", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","x":"<&>","children":[{"type":"skill","id":"sk","uri":"u","name":"n"}]}]}`,
		actions:  []string{`{"type":"session/customizationToggled","id":"sk","enablement":[{"kind":"session","enabled":false},{"kind":"global","enabled":true}]}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","x":"<&>","children":[{"type":"skill","id":"sk","uri":"u","name":"n","enabled":false}]}]}`,
	},
	{
		name: "remove a child of an unknown container kind", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","children":[{"type":"skill","id":"sk","uri":"u","name":"n"},{"type":"gizmo","id":"gz"}]}]}`,
		actions:  []string{`{"type":"session/customizationRemoved","id":"sk"}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","children":[{"type":"gizmo","id":"gz"}]}]}`,
	},
	{
		name: "stop an MCP server inside an unknown container kind", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","enablement":[{"kind":"global","enabled":true}],"state":{"kind":"ready"},"channel":"mcp:/m"}]}]}`,
		actions:  []string{`{"type":"session/mcpServerStopRequested","id":"m"}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","enablement":[{"kind":"global","enabled":true}],"state":{"kind":"stopped"}}]}]}`,
	},
	{
		name: "background a blocking MCP server inside an unknown container kind", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","state":{"kind":"starting","blocking":true}}]}]}`,
		actions:  []string{`{"type":"session/mcpServerBackgroundRequested","id":"m"}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","state":{"kind":"starting","blocking":false}}]}]}`,
	},
	{
		name: "an unknown kind without children is not searched", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","items":[{"id":"sk"}]}]}`,
		actions:  []string{`{"type":"session/customizationRemoved","id":"sk"}`, `{"type":"session/customizationToggled","id":"sk","enablement":[{"kind":"global","enabled":true}]}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","items":[{"id":"sk"}]}]}`,
	},
	// An entry of a kind this package does not know gets the toggle's
	// decisions as its "enablement", the form the action carries, so that
	// nothing of them is lost (an empty list: the member goes); whether
	// the kind has an enabled flag too is not ours to guess.
	{
		name: "toggle an unknown top-level kind and an unknown child kind", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th","enablement":[{"kind":"global","enabled":false}]},{"type":"plugin","id":"pl","uri":"u","name":"n","children":[{"type":"gizmo","id":"gz"}]}]}`,
		actions:  []string{`{"type":"session/customizationToggled","id":"th","enablement":[]}`, `{"type":"session/customizationToggled","id":"gz","enablement":[{"kind":"workspace","uri":"file:///w","enabled":false}]}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"theme","id":"th"},{"type":"plugin","id":"pl","uri":"u","name":"n","children":[{"type":"gizmo","id":"gz","enablement":[{"kind":"workspace","uri":"file:///w","enabled":false}]}]}]}`,
	},
	// A decision of a scope kind this package does not know still decides
	// by its enabled member, as enablement?.[0]?.enabled reads it.
	{
		name: "an unknown enablement scope decides by its enabled member", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"directory","id":"d","uri":"u","name":"n","contents":"skill","writable":false,"enabled":true}]}`,
		actions:  []string{`{"type":"session/customizationToggled","id":"d","enablement":[{"kind":"organization","org":"o","enabled":false},{"kind":"global","enabled":true}]}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"directory","id":"d","uri":"u","name":"n","contents":"skill","writable":false,"enabled":false}]}`,
	},
	// Ids are meant to be unique, but when they are not the reference
	// reducer's order applies: the top level first; toggling stops at the
	// first container, removal and MCP updates reach every container.
	{
		name: "a top-level id hides a child with the same id", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"pl","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n"}]},{"type":"directory","id":"x","uri":"u","name":"n","contents":"","writable":false,"enabled":true}]}`,
		actions:  []string{`{"type":"session/customizationToggled","id":"x","enablement":[{"kind":"global","enabled":false}]}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"pl","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n"}]},{"type":"directory","id":"x","uri":"u","name":"n","contents":"","writable":false,"enabled":false}]}`,
	},
	{
		name: "toggle reaches the first container, removal all of them", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"a","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n"}]},{"type":"plugin","id":"b","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n"},{"type":"skill","id":"y","uri":"u","name":"n"}]}]}`,
		actions:  []string{`{"type":"session/customizationToggled","id":"x","enablement":[{"kind":"global","enabled":false}]}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"a","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n","enabled":false}]},{"type":"plugin","id":"b","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n"},{"type":"skill","id":"y","uri":"u","name":"n"}]}]}`,
	},
	{
		name: "removal reaches every container", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"a","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n"}]},{"type":"plugin","id":"b","uri":"u","name":"n","children":[{"type":"skill","id":"x","uri":"u","name":"n"},{"type":"skill","id":"y","uri":"u","name":"n"}]}]}`,
		actions:  []string{`{"type":"session/customizationRemoved","id":"x"}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"a","uri":"u","name":"n","children":[]},{"type":"plugin","id":"b","uri":"u","name":"n","children":[{"type":"skill","id":"y","uri":"u","name":"n"}]}]}`,
	},
	{
		name: "an MCP update reaches every container", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"a","uri":"u","name":"n","children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","state":{"kind":"stopped"}}]},{"type":"directory","id":"b","uri":"u","name":"n","contents":"","writable":false,"enabled":true,"children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","state":{"kind":"stopped"}}]}]}`,
		actions:  []string{`{"type":"session/mcpServerStateChanged","id":"m","state":{"kind":"ready"},"channel":"mcp:/m"}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"customizations":[{"type":"plugin","id":"a","uri":"u","name":"n","children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","state":{"kind":"ready"},"channel":"mcp:/m"}]},{"type":"directory","id":"b","uri":"u","name":"n","contents":"","writable":false,"enabled":true,"children":[{"type":"mcpServer","id":"m","uri":"u","name":"n","state":{"kind":"ready"},"channel":"mcp:/m"}]}]}`,
	},
	{
		name: "chatUpdated never moves a chat to another resource", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[{"resource":"ahp-chat:/1","title":"a","status":1,"modifiedAt":"1970-01-01T00:00:01.000Z"}]}`,
		actions:  []string{`{"type":"session/chatUpdated","chat":"ahp-chat:/1","changes":{"resource":"ahp-chat:/2","title":"b","activity":"x","workingDirectories":["file:///a"]}}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[{"resource":"ahp-chat:/1","title":"b","status":1,"activity":"x","modifiedAt":"1970-01-01T00:00:01.000Z","workingDirectories":["file:///a"]}]}`,
	},
	{
		name: "removing another chat keeps the default chat", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"defaultChat":"ahp-chat:/1","chats":[{"resource":"ahp-chat:/1","title":"a","status":1,"modifiedAt":""},{"resource":"ahp-chat:/2","title":"b","status":1,"modifiedAt":""}]}`,
		actions:  []string{`{"type":"session/chatRemoved","chat":"ahp-chat:/2"}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"defaultChat":"ahp-chat:/1","chats":[{"resource":"ahp-chat:/1","title":"a","status":1,"modifiedAt":""}]}`,
	},
	// A catalogue that repeats a chat (a host's bug) has no exact set for
	// an order to match, so no order applies.
	{
		name: "chatsReordered leaves a catalogue that repeats a chat alone", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[{"resource":"ahp-chat:/1","title":"a","status":1,"modifiedAt":""},{"resource":"ahp-chat:/1","title":"b","status":1,"modifiedAt":""}]}`,
		actions:  []string{`{"type":"session/chatsReordered","chats":["ahp-chat:/1","ahp-chat:/1"]}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[{"resource":"ahp-chat:/1","title":"a","status":1,"modifiedAt":""},{"resource":"ahp-chat:/1","title":"b","status":1,"modifiedAt":""}]}`,
	},
	// Entries of a kind this package does not know are likelier questions
	// than client work, so they count as waiting for the user.
	{
		name: "inputNeeded entries of unknown kinds are keyed by id too", kind: "session",
		initial:  `{"provider":"p","title":"","status":8,"lifecycle":"ready","activeClients":[],"chats":[],"inputNeeded":[{"kind":"hologram","id":"i1","chat":"c"}]}`,
		actions:  []string{`{"type":"session/inputNeededSet","request":{"kind":"chatInput","id":"i1","chat":"c","request":{"id":"r"}}}`, `{"type":"session/inputNeededSet","request":{"kind":"hologram","id":"i2","chat":"c"}}`, `{"type":"session/inputNeededRemoved","id":"i1"}`},
		expected: `{"provider":"p","title":"","status":24,"lifecycle":"ready","activeClients":[],"chats":[],"inputNeeded":[{"kind":"hologram","id":"i2","chat":"c"}]}`,
	},
	{
		name: "removing the last input request of an idle session keeps it idle", kind: "session",
		initial:  `{"provider":"p","title":"","status":33,"lifecycle":"ready","activeClients":[],"chats":[],"inputNeeded":[{"kind":"chatInput","id":"i1","chat":"c","request":{"id":"r"}}]}`,
		actions:  []string{`{"type":"session/inputNeededRemoved","id":"i1"}`},
		expected: `{"provider":"p","title":"","status":33,"lifecycle":"ready","activeClients":[],"chats":[]}`,
	},
	{
		name: "removing the last working directory leaves an empty set", kind: "session",
		initial:  `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"workingDirectories":["file:///a"]}`,
		actions:  []string{`{"type":"session/workingDirectoryRemoved","directory":"file:///a"}`},
		expected: `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],"workingDirectories":[]}`,
	},
	// Terminal.
	{
		name: "data after a part of an unknown kind starts an unclassified part", kind: "terminal",
		initial:  `{"title":"","content":[{"type":"sixel","data":"…"}],"lifecycle":{"status":"running"},"claim":{"kind":"client","clientId":"c"}}`,
		actions:  []string{`{"type":"terminal/data","data":"a"}`, `{"type":"terminal/data","data":"b"}`},
		expected: `{"title":"","content":[{"type":"sixel","data":"…"},{"type":"unclassified","value":"ab"}],"lifecycle":{"status":"running"},"claim":{"kind":"client","clientId":"c"}}`,
	},
	{
		name: "commandFinished for an unknown command is a no-op", kind: "terminal",
		initial:  `{"title":"","content":[{"type":"command","commandId":"1","commandLine":"ls","output":"","timestamp":1,"isComplete":false}],"lifecycle":{"status":"running"},"claim":{"kind":"client","clientId":"c"}}`,
		actions:  []string{`{"type":"terminal/commandFinished","commandId":"2","exitCode":0}`, `{"type":"terminal/data","data":"x"}`},
		expected: `{"title":"","content":[{"type":"command","commandId":"1","commandLine":"ls","output":"x","timestamp":1,"isComplete":false}],"lifecycle":{"status":"running"},"claim":{"kind":"client","clientId":"c"}}`,
	},
	// A lifecycle of a status this package does not know is replaced like
	// any other by an exit: whatever the process was doing, it has ended.
	{
		name: "exited replaces an unknown lifecycle", kind: "terminal",
		initial:  `{"title":"","content":[],"lifecycle":{"status":"suspended","since":3},"claim":{"kind":"client","clientId":"c"}}`,
		actions:  []string{`{"type":"terminal/exited","exitCode":130}`},
		expected: `{"title":"","content":[],"lifecycle":{"status":"exited","exitCode":130},"claim":{"kind":"client","clientId":"c"}}`,
	},
	// Changeset.
	{
		name: "reviewed=false is written on a file that had no flag", kind: "changeset",
		initial:  `{"status":"ready","files":[{"id":"f1","edit":{}}]}`,
		actions:  []string{`{"type":"changeset/filesReviewChanged","files":["f1"],"reviewed":false}`},
		expected: `{"status":"ready","files":[{"id":"f1","edit":{},"reviewed":false}]}`,
	},
	{
		name: "contentChanged without operations keeps them and the error", kind: "changeset",
		initial:  `{"status":"error","error":{"errorType":"x","message":"m"},"files":[{"id":"f1","edit":{}}],"operations":[{"id":"o","label":"l","scopes":["changeset"],"status":"idle"}]}`,
		actions:  []string{`{"type":"changeset/contentChanged","files":[]}`},
		expected: `{"status":"error","error":{"errorType":"x","message":"m"},"files":[],"operations":[{"id":"o","label":"l","scopes":["changeset"],"status":"idle"}]}`,
	},
	{
		name: "contentChanged with empty operations clears them", kind: "changeset",
		initial:  `{"status":"ready","files":[],"operations":[{"id":"o","label":"l","scopes":["changeset"],"status":"idle"}]}`,
		actions:  []string{`{"type":"changeset/contentChanged","files":[],"operations":[]}`},
		expected: `{"status":"ready","files":[],"operations":[]}`,
	},
	// Annotations.
	{
		name: "removing an annotation's last entry leaves it empty", kind: "annotations",
		initial:  `{"annotations":[{"id":"a","origin":{"session":"ahp-session:/s"},"resource":"r","resolved":false,"entries":[{"id":"e","text":"x"}]}]}`,
		actions:  []string{`{"type":"annotations/entryRemoved","annotationId":"a","entryId":"e"}`},
		expected: `{"annotations":[{"id":"a","origin":{"session":"ahp-session:/s"},"resource":"r","resolved":false,"entries":[]}]}`,
	},
}

func TestDecisions(t *testing.T) {
	for _, c := range decisionCases {
		t.Run(c.name, func(t *testing.T) {
			actions := make([]json.RawMessage, len(c.actions))
			for i, a := range c.actions {
				actions[i] = json.RawMessage(a)
			}
			got := reduceJSON(t, c.kind, json.RawMessage(c.initial), actions)
			require.Equal(t, fixtures.Normalized(t, []byte(c.expected)), fixtures.Normalized(t, got))
		})
	}
}

func TestApplyKinds(t *testing.T) {
	for _, st := range fuzzStates(t) {
		require.True(t, Apply(st, wire.Action(&wire.SessionReadyAction{}), fuzzClock), "%T", st)
	}
	for _, st := range []any{nil, wire.RootState{}, new(wire.SessionSummary), new(int)} {
		require.False(t, Apply(st, wire.Action(&wire.SessionReadyAction{}), fuzzClock), "%T", st)
	}
}

// TestNoOps: actions a channel does not handle leave its state as it was,
// whether unknown, empty, or another channel's.
func TestNoOps(t *testing.T) {
	var unknown wire.StateAction
	require.NoError(t, json.Unmarshal([]byte(`{"type":"session/hologram","id":"m","enabled":true}`), &unknown))
	actions := map[string]wire.StateAction{
		"unknown":               unknown,
		"empty":                 {},
		"nil pointer":           {Value: (*wire.SessionTitleChangedAction)(nil)},
		"not an action":         {Value: 42},
		"another channel's":     wire.Action(&wire.AnnotationsRemovedAction{AnnotationID: "a1"}),
		"another channel's too": wire.Action(&wire.TerminalClearedAction{}),
	}
	for name, a := range actions {
		t.Run(name, func(t *testing.T) {
			for _, st := range fuzzStates(t) {
				if _, ok := st.(*wire.AnnotationsState); ok && name == "another channel's" {
					continue // its own action
				}
				if _, ok := st.(*wire.TerminalState); ok && name == "another channel's too" {
					continue
				}
				before := encodeState(t, st)
				Apply(st, a, fuzzClock)
				require.Equal(t, before, encodeState(t, st), "%T", st)
			}
		})
	}
}

// TestStateDoesNotAliasAction: changing an action after it was applied
// leaves the state alone, so actions can be kept (a replay buffer) safely.
func TestStateDoesNotAliasAction(t *testing.T) {
	cases := []struct {
		name   string
		state  func(t *testing.T) any
		action any
		mutate func(a any)
	}{
		{"root/configChanged", richRoot, &wire.RootConfigChangedAction{Config: map[string]any{"n": map[string]any{"k": "v"}}},
			func(a any) { a.(*wire.RootConfigChangedAction).Config["n"].(map[string]any)["k"] = "changed" }},
		{"root/terminalsChanged", richRoot, &wire.RootTerminalsChangedAction{Terminals: []wire.TerminalInfo{{Resource: "t"}}},
			func(a any) { a.(*wire.RootTerminalsChangedAction).Terminals[0].Resource = "changed" }},
		{"session/chatAdded", richSession, &wire.SessionChatAddedAction{Summary: wire.ChatSummary{Resource: "ahp-chat:/9", WorkingDirectories: []string{"file:///a"}}},
			func(a any) { a.(*wire.SessionChatAddedAction).Summary.WorkingDirectories[0] = "changed" }},
		{"session/chatUpdated", richSession, &wire.SessionChatUpdatedAction{Chat: "ahp-chat:/1", Changes: wire.PartialChatSummary{Activity: wire.Ptr("a")}},
			func(a any) { *a.(*wire.SessionChatUpdatedAction).Changes.Activity = "changed" }},
		{"session/defaultChatChanged", richSession, &wire.SessionDefaultChatChangedAction{DefaultChat: wire.Ptr("ahp-chat:/2")},
			func(a any) { *a.(*wire.SessionDefaultChatChangedAction).DefaultChat = "changed" }},
		{"session/activityChanged", richSession, &wire.SessionActivityChangedAction{Activity: wire.Ptr("a")},
			func(a any) { *a.(*wire.SessionActivityChangedAction).Activity = "changed" }},
		{"session/metaChanged", richSession, &wire.SessionMetaChangedAction{Meta: map[string]any{"k": []any{"v"}}},
			func(a any) { a.(*wire.SessionMetaChangedAction).Meta["k"].([]any)[0] = "changed" }},
		{"session/activeClientSet", richSession, &wire.SessionActiveClientSetAction{ActiveClient: wire.SessionActiveClient{ClientID: "c9", Tools: []wire.ToolDefinition{{Name: "t"}}}},
			func(a any) { a.(*wire.SessionActiveClientSetAction).ActiveClient.Tools[0].Name = "changed" }},
		{"session/customizationUpdated", richSession, &wire.SessionCustomizationUpdatedAction{Customization: wire.NewCustomization(&wire.PluginCustomization{ID: "new", Children: []wire.ChildCustomization{wire.NewChildCustomization(&wire.SkillCustomization{ID: "s"})}})},
			func(a any) {
				a.(*wire.SessionCustomizationUpdatedAction).Customization.Value.(*wire.PluginCustomization).Children[0].Value.(*wire.SkillCustomization).Name = "changed"
			}},
		{"session/mcpServerStateChanged", richSession, &wire.SessionMcpServerStateChangedAction{ID: "m", State: wire.NewMcpServerState(&wire.McpServerReadyState{}), Channel: wire.Ptr("mcp:/x")},
			func(a any) { *a.(*wire.SessionMcpServerStateChangedAction).Channel = "changed" }},
		{"session/creationFailed", richSession, &wire.SessionCreationFailedAction{Error: wire.ErrorInfo{Message: "m"}},
			func(a any) { a.(*wire.SessionCreationFailedAction).Error.Message = "changed" }},
		{"terminal/claimed", richTerminal, &wire.TerminalClaimedAction{Claim: wire.NewTerminalClaim(&wire.TerminalClientClaim{ClientID: "c"})},
			func(a any) {
				a.(*wire.TerminalClaimedAction).Claim.Value.(*wire.TerminalClientClaim).ClientID = "changed"
			}},
		{"terminal/exited", richTerminal, &wire.TerminalExitedAction{ExitCode: wire.Ptr(int64(1))},
			func(a any) { *a.(*wire.TerminalExitedAction).ExitCode = 2 }},
		{"terminal/claimed session", richTerminal, &wire.TerminalClaimedAction{Claim: wire.NewTerminalClaim(&wire.TerminalSessionClaim{Session: "s", Chat: "c", TurnID: wire.Ptr("t")})},
			func(a any) {
				*a.(*wire.TerminalClaimedAction).Claim.Value.(*wire.TerminalSessionClaim).TurnID = "changed"
			}},
		{"session/customizationToggled", richSession, &wire.SessionCustomizationToggledAction{ID: "pl", Enablement: []wire.CustomizationEnablement{
			wire.NewCustomizationEnablement(&wire.CustomizationEnablementGlobal{Enabled: true})}},
			func(a any) {
				a.(*wire.SessionCustomizationToggledAction).Enablement[0].Value.(*wire.CustomizationEnablementGlobal).Enabled = false
			}},
		{"session/customizationToggled child", richSession, &wire.SessionCustomizationToggledAction{ID: "m", Enablement: []wire.CustomizationEnablement{
			wire.NewCustomizationEnablement(&wire.CustomizationEnablementWorkspace{URI: "file:///w", Enabled: true})}},
			func(a any) {
				a.(*wire.SessionCustomizationToggledAction).Enablement[0].Value.(*wire.CustomizationEnablementWorkspace).URI = "changed"
			}},
		{"session/chatsReordered", richSession, &wire.SessionChatsReorderedAction{Chats: []string{"ahp-chat:/2", "ahp-chat:/1"}},
			func(a any) { a.(*wire.SessionChatsReorderedAction).Chats[0] = "changed" }},
		{"changeset/fileSet", richChangeset, &wire.ChangesetFileSetAction{File: wire.ChangesetFile{ID: "f9", Meta: map[string]any{"k": "v"}}},
			func(a any) { a.(*wire.ChangesetFileSetAction).File.Meta["k"] = "changed" }},
		{"changeset/statusChanged", richChangeset, &wire.ChangesetStatusChangedAction{Status: wire.ChangesetStatusError, Error: &wire.ErrorInfo{Message: "m"}},
			func(a any) { a.(*wire.ChangesetStatusChangedAction).Error.Message = "changed" }},
		{"changeset/operationsChanged", richChangeset, &wire.ChangesetOperationsChangedAction{Operations: []wire.ChangesetOperation{{ID: "o"}}},
			func(a any) { a.(*wire.ChangesetOperationsChangedAction).Operations[0].ID = "changed" }},
		{"annotations/set", richAnnotations, &wire.AnnotationsSetAction{Annotation: wire.Annotation{ID: "a9", Entries: []wire.AnnotationEntry{{ID: "e"}}}},
			func(a any) { a.(*wire.AnnotationsSetAction).Annotation.Entries[0].ID = "changed" }},
		{"annotations/updated", richAnnotations, &wire.AnnotationsUpdatedAction{AnnotationID: "a1", Range: &wire.TextRange{}},
			func(a any) { a.(*wire.AnnotationsUpdatedAction).Range.End.Line = 7 }},
		{"annotations/updated origin", richAnnotations, &wire.AnnotationsUpdatedAction{AnnotationID: "a1", Origin: &wire.AnnotationOrigin{Session: "s", Chat: wire.Ptr("c")}},
			func(a any) { *a.(*wire.AnnotationsUpdatedAction).Origin.Chat = "changed" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := c.state(t)
			Apply(st, wire.Action(c.action), fuzzClock)
			after := encodeState(t, st)
			c.mutate(c.action)
			require.Equal(t, after, encodeState(t, st))
		})
	}
}

func richRoot(t *testing.T) any    { return decodeRich(t, fuzzRootState, new(wire.RootState)) }
func richSession(t *testing.T) any { return decodeRich(t, fuzzSessionState, new(wire.SessionState)) }
func richTerminal(t *testing.T) any {
	return decodeRich(t, fuzzTerminalState, new(wire.TerminalState))
}
func richChangeset(t *testing.T) any {
	return decodeRich(t, fuzzChangesetState, new(wire.ChangesetState))
}
func richAnnotations(t *testing.T) any {
	return decodeRich(t, fuzzAnnotationsState, new(wire.AnnotationsState))
}

func decodeRich(t *testing.T, doc string, st any) any {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(doc), st))
	return st
}

func encodeState(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestRawCustomizationKeepsBytes: an unknown container edited through its
// children keeps its other members as they were, HTML characters included,
// so that it is still what the host sent when it is passed on.
func TestRawCustomizationKeepsBytes(t *testing.T) {
	s := decodeRich(t, `{"provider":"p","title":"","status":1,"lifecycle":"ready","activeClients":[],"chats":[],
		"customizations":[{"type":"theme","id":"th","x":"<&>","children":[{"type":"skill","id":"sk","uri":"u","name":"n"}]}]}`, new(wire.SessionState)).(*wire.SessionState)
	Session(s, wire.Action(&wire.SessionCustomizationToggledAction{ID: "sk", Enablement: []wire.CustomizationEnablement{
		wire.NewCustomizationEnablement(&wire.CustomizationEnablementGlobal{Enabled: false})}}), fuzzClock)
	raw, ok := s.Customizations[0].Value.(json.RawMessage)
	require.True(t, ok, "%T", s.Customizations[0].Value)
	require.Contains(t, string(raw), `"x":"<&>"`)
	require.Contains(t, string(raw), `"enabled":false`)
}
