package client

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

func TestPendingConfirmations(t *testing.T) {
	confirm := func(id string, st any) wire.SessionInputRequest {
		return wire.NewSessionInputRequest(&wire.SessionToolConfirmationRequest{ID: "x#" + id, Chat: "ahp-chat:/c", TurnID: "t",
			ToolCall: wire.NewToolCallConfirmationState(st)})
	}
	input := wire.NewSessionInputRequest(&wire.SessionChatInputRequest{ID: "x#in", Chat: "ahp-chat:/d", Request: wire.ChatInputRequest{ID: "in"}})
	st := &wire.SessionState{InputNeeded: []wire.SessionInputRequest{
		confirm("a", &wire.ToolCallPendingConfirmationState{ToolCallID: "a", DisplayName: "A"}),
		input,
		confirm("b", &wire.ToolCallPendingResultConfirmationState{ToolCallID: "b"}),
		confirm("c", &wire.ToolCallPendingConfirmationState{ToolCallID: "c"}),
	}}
	got := PendingConfirmations(st)
	if assert.Len(t, got, 2) {
		assert.Equal(t, "a", got[0].ToolCallID)
		assert.Equal(t, "A", got[0].ToolCall.DisplayName())
		assert.Equal(t, "ahp-chat:/c", got[0].Chat)
		assert.Equal(t, "t", got[0].TurnID)
		assert.Equal(t, "c", got[1].ToolCallID)
	}
	assert.Nil(t, PendingConfirmations(&wire.SessionState{}))
	assert.Nil(t, PendingConfirmations(nil))

	inputs := PendingInputs(st)
	if assert.Len(t, inputs, 1) {
		assert.Equal(t, "ahp-chat:/d", inputs[0].Chat)
		assert.Equal(t, "in", inputs[0].Request.ID)
	}
	assert.Nil(t, PendingInputs(nil))
}

func TestKindOf(t *testing.T) {
	for uri, want := range map[string]channelKind{
		"ahp-root://":                    kindRoot,
		"ahp-root:":                      kindRoot, // the root as VS Code may spell it
		"ahp-chat://default/ZGVtbzovczE": kindChat,
		"agenthost-terminal:/u":          kindOther, // VS Code's client terminals are not sessions
		"ahp-session:/a":                 kindSession,
		"copilot:/b":                     kindSession, // ahpx names sessions <provider>:/<uuid>
		"ahp-chat:/c":                    kindChat,
		"ahp-terminal:/t":                kindOther,
		"ahp-changeset:/x":               kindOther,
		"ahp-annotations:/x":             kindOther,
		"ahp-resource-watch:/rw":         kindOther,
		"nonsense":                       kindOther,
	} {
		assert.Equal(t, want, kindOf(uri), uri)
	}
}
