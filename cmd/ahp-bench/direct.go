package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// directClient is an acp-go-sdk client that only counts the bench stamps
// of agent_message_chunks: the floor a bridge is compared against.
type directClient struct {
	counter
}

func (d *directClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	now := time.Now()
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		d.observe([]byte(c.Content.Text.Text), now)
	}
	return nil
}

func (d *directClient) RequestPermission(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
}

var errNotOffered = errors.New("the bench client does not offer this capability")

func (d *directClient) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errNotOffered
}
func (d *directClient) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errNotOffered
}
func (d *directClient) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNotOffered
}
func (d *directClient) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNotOffered
}
func (d *directClient) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNotOffered
}
func (d *directClient) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNotOffered
}
func (d *directClient) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNotOffered
}

// runDirect starts the flood agent itself and reads one prompt's flood
// through acp-go-sdk, with no bridge. The CPU and memory figures are the
// bench process's own (it does nothing else meanwhile) plus the agent's
// CPU, so they compare with the bridge process's figures.
func runDirect(ctx context.Context, bin, prompt string, want int) (*counter, procUsage, time.Duration, error) {
	var zero procUsage
	cmd := exec.CommandContext(ctx, bin, "demo-agent")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, zero, 0, fmt.Errorf("starting the agent: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, zero, 0, fmt.Errorf("starting the agent: %w", err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, zero, 0, fmt.Errorf("starting the agent %s demo-agent: %w", bin, err)
	}
	defer func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	dc := &directClient{counter: newCounter(want)}
	conn := sdk.NewClientSideConnection(dc, stdin, stdout)
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		return nil, zero, 0, fmt.Errorf("initializing the agent: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, zero, 0, err
	}
	sess, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		return nil, zero, 0, fmt.Errorf("creating an ACP session: %w", err)
	}
	self, err := readProc(os.Getpid())
	if err != nil {
		return nil, zero, 0, err
	}
	agentBefore, err := readProc(cmd.Process.Pid)
	if err != nil {
		return nil, zero, 0, err
	}
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(prompt)}}); err != nil {
		return nil, zero, 0, fmt.Errorf("the flood prompt failed: %w", err)
	}
	select {
	case <-dc.full:
	case <-time.After(5 * time.Second):
		return nil, zero, 0, fmt.Errorf("the ACP client saw %d of %d chunks", dc.chunks, want)
	}
	after, err := readProc(os.Getpid())
	if err != nil {
		return nil, zero, 0, err
	}
	agentAfter, err := readProc(cmd.Process.Pid)
	if err != nil {
		return nil, zero, 0, err
	}
	after.CPU -= self.CPU
	return &dc.counter, after, agentAfter.CPU - agentBefore.CPU, nil
}
