package codec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	w3 "github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// echoExceptions lists the 0.3.0 client actions whose echo comes back as
// another action type, with the type it comes back as. 0.7.0 has no
// action for a tool change alone: session/activeClientSet carries the
// whole entry, which 0.3.0 receives as session/activeClientChanged (both
// reduce to the same 0.3.0 state when the entry is the sender's).
var echoExceptions = map[string]string{
	string(w3.ActionTypeSessionActiveClientToolsChanged): string(w3.ActionTypeSessionActiveClientChanged),
}

// TestV030EchoFidelity sends every client action of the golden files that
// the codec accepts up, completes it as the host does, and back down: the
// sender must receive, first and with its origin, an action of the type it
// dispatched on the channel it dispatched on, so that its pending queue
// reconciles.
func TestV030EchoFidelity(t *testing.T) {
	c := testCodec()
	// The sender is an active client, and the draft selects both a model and
	// an agent, so the host's completions have something to complete.
	sc := scenario{
		session: &wire.SessionState{ActiveClients: []wire.SessionActiveClient{{ClientID: scenarioClient, DisplayName: wire.Ptr("Old client"), Tools: []wire.ToolDefinition{}}}},
		chat: &wire.ChatState{Resource: testChat, Draft: &wire.Message{
			Origin: wire.MessageOrigin{Kind: wire.MessageKindUser},
			Model:  &wire.ModelSelection{ID: "current-model"},
			Agent:  &wire.AgentSelection{URI: "file:///current.agent.md"},
		}},
	}
	origin := hostOrigin(scenarioClient, 42)
	checked := 0
	files := goldenFiles(t, "action")
	for _, name := range sortedKeys(files) {
		g := files[name]
		var in struct {
			Channel string          `json:"channel"`
			Action  json.RawMessage `json:"action"`
		}
		require.NoError(t, json.Unmarshal(g.Input, &in), name)
		hostChannel, hostAction, err := c.Action(in.Channel, in.Action)
		if err != nil {
			continue // a rejection is echoed untranslated by the host
		}
		t.Run(name, func(t *testing.T) {
			hostAction = completeAsHost(t, sc, hostAction)
			envs := c.Envelope(Envelope{Channel: hostChannel, Action: hostAction, ServerSeq: 7, Origin: origin})
			require.NotEmpty(t, envs, "no echo of %s", in.Action)
			sent := typeOf030(in.Action)
			want := sent
			if e, ok := echoExceptions[sent]; ok {
				want = e
			}
			require.Equal(t, want, typeOf030(envs[0].Action), "echo of %s", in.Action)
			require.Equal(t, in.Channel, envs[0].Channel)
			require.Equal(t, origin, envs[0].Origin)
			for _, e := range envs[1:] {
				require.Nil(t, e.Origin, "only the echo carries the origin")
			}
		})
		checked++
	}
	require.GreaterOrEqual(t, checked, len(sameUp)+len(sessionToChat)+4, "every client-dispatchable 0.3.0 action has an accepted golden dispatch")
}
