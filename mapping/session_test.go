package mapping

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// TestWorkingDirectory pins which directory a chat's agent session works in
// for the working directories of its session and chat
// (testdata/working_directory.golden.json).
func TestWorkingDirectory(t *testing.T) {
	cases := []struct {
		Name    string   `json:"name"`
		Session []string `json:"session"`
		Chat    []string `json:"chat,omitempty"`
		Dir     string   `json:"dir"`
		Error   string   `json:"error,omitempty"`
	}{
		{Name: "none", Dir: ""},
		{Name: "session file URI", Session: []string{"file:///home/u/p", "file:///home/u/q"}},
		{Name: "escaped file URI", Session: []string{"file:///home/u/my%20project"}},
		{Name: "localhost file URI", Session: []string{"file://localhost/srv/p"}},
		{Name: "plain absolute path", Session: []string{"/srv/p"}},
		{Name: "chat subset wins", Session: []string{"file:///a", "file:///b"}, Chat: []string{"file:///b"}},
		{Name: "empty chat subset falls back", Session: []string{"file:///a"}, Chat: []string{}},
		{Name: "relative path", Session: []string{"p/q"}},
		{Name: "other host", Session: []string{"file://build-box/srv/p"}},
		{Name: "other scheme", Session: []string{"https://example.com/p"}},
		{Name: "bad URI", Session: []string{"file://%zz/p"}},
	}
	for i, tc := range cases {
		dir, err := WorkingDirectory(tc.Session, tc.Chat)
		cases[i].Dir = dir
		if err != nil {
			cases[i].Error = err.Error()
			require.Empty(t, dir, tc.Name)
		}
	}
	checkGolden(t, filepath.Join("testdata", "working_directory.golden.json"), cases)
}

// TestTurnModel pins the model a turn asks its agent session for
// (testdata/turn_model.golden.json).
func TestTurnModel(t *testing.T) {
	msg := func(model string) wire.Message {
		m := wire.Message{Text: "hi", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}}
		if model != "" {
			m.Model = &wire.ModelSelection{ID: model}
		}
		return m
	}
	draft := func(model string) *wire.Message { m := msg(model); return &m }
	cases := []struct {
		Name    string        `json:"name"`
		Message wire.Message  `json:"message"`
		Draft   *wire.Message `json:"draft,omitempty"`
		Model   string        `json:"model"`
	}{
		{Name: "message model", Message: msg("m-msg"), Draft: draft("m-draft")},
		{Name: "draft model (0.3.0 modelChanged)", Message: msg(""), Draft: draft("m-draft")},
		{Name: "draft without model", Message: msg(""), Draft: draft("")},
		{Name: "neither", Message: msg("")},
		{Name: "empty message model id", Message: wire.Message{Model: &wire.ModelSelection{}}, Draft: draft("m-draft")},
	}
	for i, tc := range cases {
		cases[i].Model = TurnModel(tc.Message, tc.Draft)
	}
	checkGolden(t, filepath.Join("testdata", "turn_model.golden.json"), cases)
}

func TestCurrentModel(t *testing.T) {
	byID := []backend.ConfigOption{{ID: "mode", Category: "mode", Current: "ask"}, {ID: "model", Current: "m1"}}
	byCategory := []backend.ConfigOption{{ID: "llm", Category: "model", Current: "m2"}}
	both := []backend.ConfigOption{{ID: "llm", Category: "model", Current: "m2"}, {ID: "model", Current: "m1"}}
	require.Equal(t, "m1", CurrentModel(byID))
	require.Equal(t, "m2", CurrentModel(byCategory))
	require.Equal(t, "m1", CurrentModel(both), "the option with id model is what SetConfig(\"model\") changes")
	require.Equal(t, "", CurrentModel([]backend.ConfigOption{{ID: "mode", Current: "ask"}}))
	require.Equal(t, "", CurrentModel(nil))
}

func TestOnSession(t *testing.T) {
	for _, a := range []wire.StateAction{
		titleChangedAction("t"), configChangedAction(nil), metaChangedAction(nil),
	} {
		require.True(t, OnSession(a), a.Type())
	}
	for _, a := range []wire.StateAction{
		deltaAction("t1", "p", "x"), activityAction("a"), turnCompleteAction("t1", 0),
		usageActions("t1", backend.Usage{})[0], inputRequestedAction(wire.ChatInputRequest{ID: "r"}),
	} {
		require.False(t, OnSession(a), a.Type())
	}
}

func TestOriginNote(t *testing.T) {
	require.Empty(t, OriginNote(wire.MessageKindUser))
	require.Empty(t, OriginNote(""), "a message without origin is taken as the user's")
	for _, k := range []wire.MessageKind{wire.MessageKindAgent, wire.MessageKindTool, wire.MessageKindSystemNotification, "futureKind"} {
		require.Contains(t, OriginNote(k), "not", k)
	}
}

// TestTurnModelConfig pins which of a turn's model configuration values
// are asked of the agent session (testdata/turn_model_config.golden.json).
func TestTurnModelConfig(t *testing.T) {
	opts := []backend.ConfigOption{
		{ID: "model", Category: "model", Current: "m1"},
		{ID: "reasoningEffort", Category: "thought_level", Current: "medium"},
		{ID: "maxTurns", Current: "10"},
		{ID: "fast", Current: "false"},
	}
	msg := func(cfg map[string]wire.JsonPrimitive) wire.Message {
		return wire.Message{Text: "hi", Origin: wire.MessageOrigin{Kind: wire.MessageKindUser}, Model: &wire.ModelSelection{ID: "m2", Config: cfg}}
	}
	cases := []struct {
		Name    string         `json:"name"`
		Message wire.Message   `json:"message"`
		Changes []ConfigChange `json:"changes"`
	}{
		{Name: "no config", Message: msg(nil)},
		{Name: "no model", Message: wire.Message{Text: "hi"}},
		{Name: "a new effort", Message: msg(map[string]wire.JsonPrimitive{"reasoningEffort": "high"})},
		{Name: "the current effort", Message: msg(map[string]wire.JsonPrimitive{"reasoningEffort": "medium"})},
		{Name: "numbers and booleans as JSON, in key order", Message: msg(map[string]wire.JsonPrimitive{"maxTurns": float64(20), "fast": true})},
		{Name: "keys the agent does not have, the model, null", Message: msg(map[string]wire.JsonPrimitive{"contextTier": "1m", "model": "m3", "maxTurns": nil})},
	}
	for i, tc := range cases {
		cases[i].Changes = TurnModelConfig(tc.Message, opts)
	}
	checkGolden(t, filepath.Join("testdata", "turn_model_config.golden.json"), cases)
}
