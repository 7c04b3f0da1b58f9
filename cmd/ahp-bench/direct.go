package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	cmd, stdin, stdout, stop, err := startFloodAgent(ctx, bin)
	if err != nil {
		return nil, zero, 0, err
	}
	defer stop()
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
	usage, err := startDirectUsage(cmd.Process.Pid)
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
	after, agentCPU, err := usage.end()
	if err != nil {
		return nil, zero, 0, err
	}
	return &dc.counter, after, agentCPU, nil
}

// runDirectLines reads an unpaced flood with no bridge, line by line.
// acp-go-sdk's ClientSideConnection cannot read one: its receive loop
// queues notifications in a bounded queue (1024) drained by one handler
// goroutine, and when the handler falls behind it closes the connection
// ("notification queue overflow"). So both unpaced floors read the agent's
// stdout themselves, with a line scanner, and handle every update inline:
//
//   - raw (the `direct` floor): each line is decoded once, with
//     encoding/json, into plain structs that have just the members a
//     reader of the flood needs — the cheapest honest ACP client;
//   - SDK-typed (`direct-sdk`): each line is decoded as a JSON-RPC message
//     and each session/update into acp-go-sdk's SessionNotification, as the
//     SDK's receive loop does.
func runDirectLines(ctx context.Context, bin, prompt string, want int, sdkTyped bool) (*counter, procUsage, time.Duration, error) {
	var zero procUsage
	cmd, stdin, stdout, stop, err := startFloodAgent(ctx, bin)
	if err != nil {
		return nil, zero, 0, err
	}
	defer stop()
	cwd, err := os.Getwd()
	if err != nil {
		return nil, zero, 0, err
	}
	send := func(id int, method string, params any) error {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err != nil {
			return err
		}
		_, err = stdin.Write(append(b, '\n'))
		return err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	type message struct {
		ID     *json.RawMessage `json:"id"`
		Method string           `json:"method"`
		Params json.RawMessage  `json:"params"`
		Result json.RawMessage  `json:"result"`
		Error  json.RawMessage  `json:"error"`
	}
	// rawMessage is a JSON-RPC message as the raw floor reads it: a
	// session/update's params decoded in the same pass, into plain structs.
	type rawMessage struct {
		ID     *json.RawMessage `json:"id"`
		Method string           `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		} `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	dc := &directClient{counter: newCounter(want)}
	// await reads until the response to id, handling updates on the way.
	await := func(id string) (json.RawMessage, error) {
		for sc.Scan() {
			if !sdkTyped {
				var m rawMessage
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					continue
				}
				switch {
				case m.Method == "session/update" && m.ID == nil:
					if u := &m.Params.Update; u.SessionUpdate == "agent_message_chunk" && u.Content.Type == "text" {
						dc.observe([]byte(u.Content.Text), time.Now())
					}
				case m.Method == "" && m.ID != nil && string(*m.ID) == id:
					if len(m.Error) > 0 {
						return nil, fmt.Errorf("the agent answered request %s with %s", id, m.Error)
					}
					return m.Result, nil
				}
				continue
			}
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				continue
			}
			switch {
			case m.Method == "session/update" && m.ID == nil:
				var n sdk.SessionNotification
				if err := json.Unmarshal(m.Params, &n); err != nil {
					return nil, fmt.Errorf("decoding a session/update: %w", err)
				}
				_ = dc.SessionUpdate(ctx, n)
			case m.Method == "" && m.ID != nil && string(*m.ID) == id:
				if len(m.Error) > 0 {
					return nil, fmt.Errorf("the agent answered request %s with %s", id, m.Error)
				}
				return m.Result, nil
			}
		}
		return nil, fmt.Errorf("the agent's output ended before the response to request %s: %v", id, sc.Err())
	}
	if err := send(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}); err != nil {
		return nil, zero, 0, err
	}
	if _, err := await("1"); err != nil {
		return nil, zero, 0, err
	}
	if err := send(2, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}); err != nil {
		return nil, zero, 0, err
	}
	res, err := await("2")
	if err != nil {
		return nil, zero, 0, err
	}
	var sess sdk.NewSessionResponse
	if err := json.Unmarshal(res, &sess); err != nil {
		return nil, zero, 0, fmt.Errorf("decoding the session/new result: %w", err)
	}
	usage, err := startDirectUsage(cmd.Process.Pid)
	if err != nil {
		return nil, zero, 0, err
	}
	if err := send(3, "session/prompt", sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(prompt)}}); err != nil {
		return nil, zero, 0, err
	}
	if _, err := await("3"); err != nil {
		return nil, zero, 0, err
	}
	if dc.chunks != want {
		return nil, zero, 0, fmt.Errorf("the ACP client saw %d of %d chunks", dc.chunks, want)
	}
	after, agentCPU, err := usage.end()
	if err != nil {
		return nil, zero, 0, err
	}
	return &dc.counter, after, agentCPU, nil
}

// startFloodAgent starts `bin demo-agent` with pipes; stop closes its stdin
// and waits for it, killing it after five seconds.
func startFloodAgent(ctx context.Context, bin string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout io.ReadCloser, stop func(), err error) {
	cmd = exec.CommandContext(ctx, bin, "demo-agent")
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("starting the agent: %w", err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("starting the agent: %w", err)
	}
	cmd.Stderr = io.Discard
	if err = cmd.Start(); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("starting the agent %s demo-agent: %w", bin, err)
	}
	stop = func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return cmd, stdin, stdout, stop, nil
}

// directUsage measures a direct run: the bench process's own usage (it does
// nothing else meanwhile) and the agent's CPU time.
type directUsage struct {
	self, agent procUsage
	agentPID    int
}

func startDirectUsage(agentPID int) (directUsage, error) {
	self, err := readProc(os.Getpid())
	if err != nil {
		return directUsage{}, err
	}
	agent, err := readProc(agentPID)
	if err != nil {
		return directUsage{}, err
	}
	return directUsage{self: self, agent: agent, agentPID: agentPID}, nil
}

// end returns the bench process's usage with its CPU time counted from the
// start, and the agent's CPU time since the start.
func (u directUsage) end() (procUsage, time.Duration, error) {
	after, err := readProc(os.Getpid())
	if err != nil {
		return procUsage{}, 0, err
	}
	agent, err := readProc(u.agentPID)
	if err != nil {
		return procUsage{}, 0, err
	}
	after.CPU -= u.self.CPU
	return after, agent.CPU - u.agent.CPU, nil
}

// pipe is the floor under every floor (issue 28): the flood agent's stdout
// read with no decoding at all, its lines counted, as fast as the pipe
// goes. The one-client flood through the bridge is compared against it.
func pipe(ctx context.Context, cfg Config) (Flow, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	n := cfg.Chunks
	cmd, stdin, stdout, stop, err := startFloodAgent(ctx, cfg.Bin)
	if err != nil {
		return Flow{}, err
	}
	defer stop()
	cwd, err := os.Getwd()
	if err != nil {
		return Flow{}, err
	}
	r := bufio.NewReaderSize(stdout, 64<<10)
	// The handshake is read line by line and decoded; the flood is not.
	call := func(id int, method string, params any) (json.RawMessage, error) {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err != nil {
			return nil, err
		}
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			return nil, fmt.Errorf("writing %s to the agent: %w", method, err)
		}
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return nil, fmt.Errorf("the agent's output ended before the response to %s: %w", method, err)
			}
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(line, &m) == nil && m.Method == "" && m.ID != nil && *m.ID == id {
				return m.Result, nil
			}
		}
	}
	if _, err := call(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}); err != nil {
		return Flow{}, err
	}
	res, err := call(2, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	if err != nil {
		return Flow{}, err
	}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &sess); err != nil {
		return Flow{}, fmt.Errorf("decoding the session/new result: %w", err)
	}
	// session/new's available_commands_update may follow its response:
	// a request the agent answers in order drains it before the flood.
	if _, err := call(3, "session/set_mode", map[string]any{"sessionId": sess.SessionID, "modeId": "default"}); err != nil {
		return Flow{}, err
	}
	usage, err := startDirectUsage(cmd.Process.Pid)
	if err != nil {
		return Flow{}, err
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": map[string]any{
		"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": benchPrompt(n, cfg.Size, 0, 0)}}}})
	if err != nil {
		return Flow{}, err
	}
	start := time.Now()
	if _, err := stdin.Write(append(b, '\n')); err != nil {
		return Flow{}, fmt.Errorf("writing the prompt to the agent: %w", err)
	}
	lines, err := countLines(r, n)
	elapsed := time.Since(start)
	if err != nil {
		return Flow{}, fmt.Errorf("%d of %d lines: %w", lines, n, err)
	}
	after, agentCPU, err := usage.end()
	if err != nil {
		return Flow{}, err
	}
	// The last block read may hold the prompt's response too.
	f := Flow{Sessions: 1, Clients: 1, Chunks: n, Size: cfg.Size, Deliveries: int64(min(lines, n)), Seconds: elapsed.Seconds()}
	f.ChunksPerSec = float64(n) / f.Seconds
	f.AggregateChunksPerSec = f.ChunksPerSec
	f.MBPerSec = float64(n) * float64(cfg.Size) / f.Seconds / 1e6
	f.CPUSeconds, f.AgentCPUSeconds = after.CPU.Seconds(), agentCPU.Seconds()
	f.PeakRSSMiB = float64(after.PeakRSS) / (1 << 20)
	return f, nil
}

// countLines reads r in large blocks and counts newlines until it has seen
// want of them.
func countLines(r io.Reader, want int) (int, error) {
	buf := make([]byte, 256<<10)
	lines := 0
	for lines < want {
		k, err := r.Read(buf)
		lines += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil && lines < want {
			return lines, err
		}
	}
	return lines, nil
}
