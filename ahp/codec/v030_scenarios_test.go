package codec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/oracle/reducer070"
)

// scenarioClient is the clientId of the 0.3.0 client of the scenarios.
const scenarioClient = "client-030"

// scenarioFile is a hand-written scenario in testdata/v030/scenario: full
// turns as the host would run them. Each action is dispatched "on" the
// session channel, the default chat, a side chat (which 0.3.0 must never
// see), or by a 0.3.0 client on the session ("client030": translated with
// Action and completed as the host does).
type scenarioFile struct {
	Description string          `json:"description"`
	Session     json.RawMessage `json:"session"`
	Chat        json.RawMessage `json:"chat"`
	Actions     []struct {
		On     string          `json:"on"`
		Action json.RawMessage `json:"action"`
	} `json:"actions"`
}

// v030Scenarios reads the hand-written scenarios.
func v030Scenarios(t *testing.T) map[string]scenario {
	t.Helper()
	dir := filepath.Join("testdata", "v030", "scenario")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]scenario{}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		if e.IsDir() || name == e.Name() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		var f scenarioFile
		require.NoError(t, json.Unmarshal(b, &f), e.Name())
		require.NotEmpty(t, f.Description, e.Name())
		sc := scenario{chat: &wire.ChatState{Resource: "ahp-chat:/prop-main", Status: wire.SessionStatusIdle, Turns: []wire.Turn{}}}
		if f.Chat != nil {
			require.NoError(t, json.Unmarshal(f.Chat, sc.chat), e.Name())
		}
		sc.session = wrapperSession(sc.chat)
		if f.Session != nil {
			require.NoError(t, json.Unmarshal(f.Session, sc.session), e.Name())
		}
		sc.chat.ModifiedAt = reducer070.FormatTime(propertyClock)
		for _, a := range f.Actions {
			ha := hostAction{action: a.Action}
			switch a.On {
			case "chat":
				ha.onChat = true
			case "session":
			case "side":
				ha.onSide = true
			case "client030":
				ha.from030 = true
			default:
				t.Fatalf("%s: unknown channel %q", e.Name(), a.On)
			}
			sc.actions = append(sc.actions, ha)
		}
		out[name] = sc
	}
	require.NotEmpty(t, out, "no scenarios in %s", dir)
	return out
}

// completeAsHost does for a translated 0.3.0 action what the host does
// before dispatching it (see SelectionMeta, SenderClientID and the Action
// doc): it completes a 0.3.0 model or agent change with the other
// selection of the current draft, stamps
// startedAt and duration from its clock, fills a new turn's model and agent
// with selection070 (the host: V030Selection), and puts the sender's clientId, and its
// current entry, where the codec left SenderClientID.
func completeAsHost(t *testing.T, sc scenario, action json.RawMessage) json.RawMessage {
	t.Helper()
	var a wire.StateAction
	require.NoError(t, json.Unmarshal(action, &a))
	switch v := a.Value.(type) {
	case *wire.ChatDraftChangedAction:
		if d, cur := v.Draft, sc.chat.Draft; d != nil && cur != nil {
			switch changedSelection(d) {
			case "model":
				d.Agent = cur.Agent
			case "agent":
				d.Model = cur.Model
			}
		}
	case *wire.ChatTurnStartedAction:
		v.StartedAt = reducer070.FormatTime(propertyClock)
		model, agent := selection070(sc.chat)
		if v.Message.Model == nil {
			v.Message.Model = model
		}
		if v.Message.Agent == nil {
			v.Message.Agent = agent
		}
	case *wire.ChatTurnCancelledAction:
		if t0 := sc.chat.ActiveTurn; t0 != nil {
			if started, ok := reducer070.ParseTime(t0.StartedAt); ok {
				v.Duration = max(0, propertyClock-started)
			}
		}
	case *wire.SessionActiveClientRemovedAction:
		if v.ClientID == SenderClientID {
			v.ClientID = scenarioClient
		}
	case *wire.SessionActiveClientSetAction:
		if v.ActiveClient.ClientID == SenderClientID {
			var current *wire.SessionActiveClient
			for i := range sc.session.ActiveClients {
				if sc.session.ActiveClients[i].ClientID == scenarioClient {
					current = &sc.session.ActiveClients[i]
				}
			}
			require.NotNil(t, current, "the host rejects activeClientToolsChanged from a client without an entry")
			v.ActiveClient.ClientID = scenarioClient
			v.ActiveClient.DisplayName = current.DisplayName
			v.ActiveClient.Customizations = current.Customizations
		}
	}
	b, err := wire.Marshal(a)
	require.NoError(t, err)
	return b
}
