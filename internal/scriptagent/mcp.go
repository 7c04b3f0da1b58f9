package scriptagent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MCPEnv names the environment variable that makes the scriptagent command
// a tiny MCP server on stdio instead of an ACP agent: the local MCP server
// of the tests that configure one through the bridge. Its value is the
// server's name.
const MCPEnv = "SCRIPTAGENT_MCP"

// MCPToolName is the one tool the MCP server offers; calling it answers
// MCPToolAnswer.
const (
	MCPToolName   = "ahp_bridge_probe"
	MCPToolAnswer = "probe answered by the local MCP server"
)

// MCPServer serves the Model Context Protocol (newline-delimited JSON-RPC)
// on in and out until in ends: initialize, ping, tools/list with one tool,
// and tools/call of it. Other requests are answered "method not found";
// notifications are ignored.
func MCPServer(name string, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	enc := json.NewEncoder(out)
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var m message
			if json.Unmarshal(line, &m) == nil && m.Method != "" && len(m.ID) > 0 {
				res, rerr := mcpHandle(name, m.Method, m.Params)
				reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
				if rerr != nil {
					reply["error"] = rerr
				} else {
					reply["result"] = res
				}
				if werr := enc.Encode(reply); werr != nil {
					return fmt.Errorf("writing an MCP answer: %w", werr)
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading MCP input: %w", err)
		}
	}
}

func mcpHandle(name, method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		return map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": name, "version": "1.0.0"}}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": []any{map[string]any{
			"name": MCPToolName, "description": "Answers a fixed text, to show that the MCP server is reached",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}, nil
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(params, &p)
		if p.Name != MCPToolName {
			return nil, &rpcError{Code: -32602, Message: "unknown tool " + p.Name}
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": MCPToolAnswer}}}, nil
	}
	return nil, &rpcError{Code: -32601, Message: "Method not found: " + method}
}
