package bridge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/acp"
	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// The tests in this file run the example agents of the two official ACP
// SDKs behind the bridge: agents we did not write, speaking ACP as the SDKs
// do.

// acpTsSDKVersion is the TypeScript ACP SDK whose example agent is run; .ci/run
// installs the same version.
const acpTsSDKVersion = "@agentclientprotocol/sdk@1.9.0"

func TestACPGoSDKExampleAgent(t *testing.T) {
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

	assert.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", turn.Error)
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
	script := acpTsExampleAgent(t)
	p := acp.NewProvider(acp.Config{ID: "ts-example", Command: []string{"node", script}}, testLogger(t))
	r := newACPRig(t, acpRigOptions{providers: []backend.Provider{p}})
	ch := r.session("ts-example", t.TempDir())

	turnID := bridgetest.StartTurn(t, r.c, ch, "Please update the configuration.")
	pc := r.pendingTool(r.c, ch)
	assert.Equal(t, "call_2", pc.ToolCallID)
	require.NoError(t, r.confirm(r.c, ch, acpApprove(turnID, pc.ToolCallID, "allow")))
	turn := bridgetest.WaitTurnEnd(t, r.c, ch, turnID, acpTimeout)

	assert.Equal(t, wire.TurnStateComplete, turn.State, "error: %+v", turn.Error)
	assert.Contains(t, acpTurnText(turn.ResponseParts), "successfully updated the configuration")
	for _, id := range []string{"call_1", "call_2"} {
		done, ok := acpToolCall(t, turn.ResponseParts, id).(*wire.ToolCallCompletedState)
		require.True(t, ok, "%s completes", id)
		assert.True(t, done.Success)
	}
}

// acpTsExampleAgent returns the path of the TypeScript SDK's example agent in
// the repository's .cache/npm, installing the SDK there first when it is
// missing (as .ci/run does), so `go test ./...` works on a fresh clone.
func acpTsExampleAgent(t *testing.T) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	prefix := filepath.Join(root, ".cache", "npm")
	script := filepath.Join(prefix, "node_modules", "@agentclientprotocol", "sdk", "dist", "examples", "agent.js")
	if _, err := os.Stat(script); err != nil {
		_, err := exec.LookPath("npm")
		require.NoError(t, err, "npm is needed to install %s for this test", acpTsSDKVersion)
		require.NoError(t, os.MkdirAll(prefix, 0o755))
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, acpTsSDKVersion)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "installing %s: %s", acpTsSDKVersion, out)
	}
	_, err = os.Stat(script)
	require.NoError(t, err, "the example agent of %s", acpTsSDKVersion)
	_, err = exec.LookPath("node")
	require.NoError(t, err, "node is needed to run the TypeScript example agent")
	return script
}
