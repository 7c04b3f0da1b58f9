package bridge_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// The tests in this file run the example agents of the two official ACP
// SDKs behind the bridge: agents we did not write, speaking ACP as the SDKs
// do.

// acpTsSDKVersion is the TypeScript ACP SDK whose example agent is run;
// .ci/run installs this version (keep the two in step).
const acpTsSDKVersion = "@agentclientprotocol/sdk@1.9.0"

// The SDKs' example agents pause about a second between steps, as if a
// model were thinking: their tests mostly wait, so they run in parallel.

func TestACPGoSDKExampleAgent(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "agent")
	build := exec.Command("go", "build", "-o", bin, "github.com/coder/acp-go-sdk/example/agent")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the acp-go-sdk example agent: %s", out)

	p := acp.NewProvider(acp.Config{ID: "go-example", Command: []string{bin}}, testLogger(t))
	r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
	ch := r.session("go-example", t.TempDir())

	turnID := bridgetest.StartTurn(t, r.c, ch, "Please update the configuration.")
	pc := r.pendingTool(r.c, ch)
	require.NoError(t, r.confirm(r.c, ch, acpApprove(turnID, pc.ToolCallID, "")))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)

	assert.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	text := acpTurnText(turn.ResponseParts)
	assert.True(t, strings.HasPrefix(text, "ACP Go Example Agent"), text)
	assert.Contains(t, text, "successfully updated the configuration")
	done, ok := acpToolCall(t, turn.ResponseParts, pc.ToolCallID).(*wire.ToolCallCompletedState)
	require.True(t, ok, "the approved tool call completes")
	assert.True(t, done.Success)
	assert.Equal(t, wire.ToolCallConfirmationReasonUserAction, done.Confirmed)
	assert.GreaterOrEqual(t, len(acpPartsOf[wire.ToolCallResponsePart](turn.ResponseParts)), 2, "the read and the edit")
}

func TestACPTypeScriptSDKExampleAgent(t *testing.T) {
	t.Parallel()
	node, script := acpTsExampleAgent(t)
	p := acp.NewProvider(acp.Config{ID: "ts-example", Command: []string{node, script}}, testLogger(t))
	r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
	ch := r.session("ts-example", t.TempDir())

	turnID := bridgetest.StartTurn(t, r.c, ch, "Please update the configuration.")
	pc := r.pendingTool(r.c, ch)
	assert.Equal(t, "call_2", pc.ToolCallID)
	require.NoError(t, r.confirm(r.c, ch, acpApprove(turnID, pc.ToolCallID, "allow")))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)

	assert.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", client.TurnError(&turn))
	assert.Contains(t, acpTurnText(turn.ResponseParts), "successfully updated the configuration")
	for _, id := range []string{"call_1", "call_2"} {
		done, ok := acpToolCall(t, turn.ResponseParts, id).(*wire.ToolCallCompletedState)
		require.True(t, ok, "%s completes", id)
		assert.True(t, done.Success)
	}
}

// acpTsExampleAgent returns the path of the TypeScript SDK's example agent,
// which .ci/run installs into the repository's .cache/npm. Tests never run
// npm themselves: an install inside a test is slow, needs the network and
// fails in ways that have nothing to do with the bridge. On a fresh clone
// the test skips with the install command; under CI a missing agent or
// node fails it.
func acpTsExampleAgent(t *testing.T) (node, script string) {
	t.Helper()
	script = testenv.NPMFile(t, acpTsSDKVersion, "@agentclientprotocol/sdk/dist/examples/agent.js")
	return testenv.Command(t, "node"), script
}
