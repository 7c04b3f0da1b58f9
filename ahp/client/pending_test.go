package client

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

func TestPendingConfirmations(t *testing.T) {
	part := func(st any) wire.ResponsePart {
		return wire.NewResponsePart(&wire.ToolCallResponsePart{ToolCall: wire.NewToolCallState(st)})
	}
	st := &wire.SessionState{ActiveTurn: &wire.ActiveTurn{ID: "t", ResponseParts: []wire.ResponsePart{
		part(&wire.ToolCallPendingConfirmationState{ToolCallID: "a"}),
		part(&wire.ToolCallRunningState{ToolCallID: "b"}),
		wire.NewResponsePart(&wire.MarkdownResponsePart{ID: "m"}),
		part(&wire.ToolCallPendingConfirmationState{ToolCallID: "c"}),
	}}}
	assert.Equal(t, []string{"a", "c"}, PendingConfirmations(st))
	assert.Nil(t, PendingConfirmations(&wire.SessionState{}))
	assert.Nil(t, PendingConfirmations(nil))
}
