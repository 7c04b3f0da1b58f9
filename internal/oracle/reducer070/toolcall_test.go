package reducer070

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// toolCallJSON decodes a tool call state.
func toolCallJSON(t *testing.T, s string) wire.ToolCallState {
	t.Helper()
	var tc wire.ToolCallState
	require.NoError(t, json.Unmarshal([]byte(s), &tc))
	return tc
}

func TestToolCallAccessors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		state       wire.ToolCallState
		id          string
		idOK        bool
		displayName string
		client      string
		clientOK    bool
	}{
		{name: "streaming, client tool",
			state: toolCallJSON(t, `{"status": "streaming", "toolCallId": "c1", "toolName": "x", "displayName": "X", "contributor": {"kind": "client", "clientId": "k"}}`),
			id:    "c1", idOK: true, displayName: "X", client: "k", clientOK: true},
		{name: "running, MCP tool",
			state: toolCallJSON(t, `{"status": "running", "toolCallId": "c2", "toolName": "x", "displayName": "Y", "invocationMessage": "", "confirmed": "setting", "contributor": {"kind": "mcp", "customizationId": "m"}}`),
			id:    "c2", idOK: true, displayName: "Y"},
		{name: "auth-required",
			state: toolCallJSON(t, `{"status": "auth-required", "toolCallId": "c3", "toolName": "x", "displayName": "Z", "invocationMessage": "", "confirmed": "setting",
				"contributor": {"kind": "mcp", "customizationId": "m"}, "auth": {"reason": "required", "resource": {"resource": "https://x"}}}`),
			id: "c3", idOK: true, displayName: "Z"},
		{name: "cancelled, server tool",
			state: toolCallJSON(t, `{"status": "cancelled", "toolCallId": "c4", "toolName": "x", "displayName": "W", "invocationMessage": "", "reason": "denied"}`),
			id:    "c4", idOK: true, displayName: "W"},
		{name: "held by value",
			state: wire.ToolCallState{Value: wire.ToolCallCompletedState{ToolCallID: "c5", DisplayName: "V",
				Contributor: wire.Ptr(wire.NewToolCallContributor(wire.ToolCallClientContributor{ClientID: "k2"}))}},
			id: "c5", idOK: true, displayName: "V", client: "k2", clientOK: true},
		{name: "unknown status, read from its JSON",
			state: toolCallJSON(t, `{"status": "paused", "toolCallId": "c6", "displayName": "U", "contributor": {"kind": "client", "clientId": "k3"}}`),
			id:    "c6", idOK: true, displayName: "U", client: "k3", clientOK: true},
		{name: "unknown status without an id",
			state: toolCallJSON(t, `{"status": "paused", "toolCallId": null}`)},
		{name: "null", state: toolCallJSON(t, `null`)},
		{name: "nil variant pointer", state: wire.ToolCallState{Value: (*wire.ToolCallRunningState)(nil)}},
		{name: "not a variant", state: wire.ToolCallState{Value: 42}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, ok := ToolCallID(tc.state)
			assert.Equal(t, tc.id, id)
			assert.Equal(t, tc.idOK, ok, "ToolCallID ok")
			assert.Equal(t, tc.displayName, ToolCallDisplayName(tc.state))
			client, ok := ToolCallClientID(tc.state)
			assert.Equal(t, tc.client, client)
			assert.Equal(t, tc.clientOK, ok, "ToolCallClientID ok")
		})
	}
}

func TestFindToolCall(t *testing.T) {
	s := reduceChatJSON(t, chatActive(8, `[
		{"kind": "markdown", "id": "c1", "content": "not a tool call"},
		{"kind": "toolCall", "toolCall": {"status": "streaming", "toolCallId": "c1", "toolName": "x", "displayName": "X"}},
		{"kind": "toolCall", "toolCall": {"status": "pending-confirmation", "toolCallId": "c2", "toolName": "y", "displayName": "Y", "invocationMessage": "Y"}},
		{"kind": "toolCall", "toolCall": {"status": "paused", "toolCallId": "c3"}}
	]`))
	before, err := wire.Marshal(s)
	require.NoError(t, err)
	for _, tc := range []struct {
		turn, id string
		status   wire.ToolCallStatus
		ok       bool
	}{
		{"t1", "c1", wire.ToolCallStatusStreaming, true},
		{"t1", "c2", wire.ToolCallStatusPendingConfirmation, true},
		{"t1", "c3", "paused", true},
		{"t1", "c4", "", false},
		{"t0", "c2", "", false},
	} {
		got, status, ok := FindToolCall(s, tc.turn, tc.id)
		assert.Equal(t, tc.ok, ok, "%s/%s", tc.turn, tc.id)
		assert.Equal(t, tc.status, status, "%s/%s", tc.turn, tc.id)
		if ok {
			id, _ := ToolCallID(got)
			assert.Equal(t, tc.id, id)
		}
	}
	after, err := wire.Marshal(s)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "finding changed the state")

	_, _, ok := FindToolCall(nil, "t1", "c1")
	assert.False(t, ok)
	_, _, ok = FindToolCall(&wire.ChatState{}, "", "")
	assert.False(t, ok, "no active turn")
}

func TestFindInputRequest(t *testing.T) {
	s := reduceChatJSON(t, chatActive(8, `[
		{"kind": "inputRequest", "request": {"id": "q1"}, "response": "accept"},
		{"kind": "inputRequest", "request": {"id": "q1", "message": "again"}},
		{"kind": "inputRequest", "request": {"id": "q2"}, "response": "cancel"}
	]`))
	r, ok := FindInputRequest(s, "q1")
	require.True(t, ok)
	assert.Equal(t, "again", *r.Request.Message, "the open request, not the answered one")
	_, ok = FindInputRequest(s, "q2")
	assert.False(t, ok, "an answered request is not open")
	_, ok = FindInputRequest(s, "q3")
	assert.False(t, ok)
	_, ok = FindInputRequest(nil, "q1")
	assert.False(t, ok)
	_, ok = FindInputRequest(&wire.ChatState{}, "q1")
	assert.False(t, ok)
}

// The contributor a tool call starts with settles who executes it:
// chat/toolCallReady may refine it but not hand a call to or from a client.
func TestToolCallRefineContributor(t *testing.T) {
	client := func(id string) *wire.ToolCallContributor {
		return wire.Ptr(wire.NewToolCallContributor(&wire.ToolCallClientContributor{ClientID: id}))
	}
	mcp := func(id string) *wire.ToolCallContributor {
		return wire.Ptr(wire.NewToolCallContributor(&wire.ToolCallMcpContributor{CustomizationID: id}))
	}
	raw := &wire.ToolCallContributor{Value: json.RawMessage(`{"kind":"plugin","id":"p"}`)}
	for _, tc := range []struct {
		name      string
		cur, next *wire.ToolCallContributor
		want      *wire.ToolCallContributor
	}{
		{"nothing offered", mcp("a"), nil, mcp("a")},
		{"null offered", mcp("a"), &wire.ToolCallContributor{}, mcp("a")},
		{"server tool gains an MCP server", nil, mcp("a"), mcp("a")},
		{"MCP server refined", mcp("a"), mcp("b"), mcp("b")},
		{"same client", client("k"), client("k"), client("k")},
		{"another client", client("k"), client("j"), client("k")},
		{"client to MCP", client("k"), mcp("a"), client("k")},
		{"server tool to client", nil, client("k"), nil},
		{"MCP to client", mcp("a"), client("k"), mcp("a")},
		{"unknown kind offered", mcp("a"), raw, raw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toolCallRefineContributor(tc.cur, tc.next)
			w, err := json.Marshal(tc.want)
			require.NoError(t, err)
			g, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, string(w), string(g))
			if tc.next != nil && got != nil && got != tc.cur {
				assert.NotSame(t, tc.next, got, "an offered contributor is copied")
			}
		})
	}
}
