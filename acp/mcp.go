package acp

import (
	"fmt"

	"github.com/ahp-bridge/ahp-bridge/backend"
	sdk "github.com/coder/acp-go-sdk"
)

// mcpServers returns the session's MCP servers as session/new takes them,
// as far as the agent's mcpCapabilities allow (ACP: every agent takes
// stdio servers; http and sse only when it says so), and a status for each
// server left out, saying why.
func mcpServers(servers []backend.McpServer, caps sdk.McpCapabilities) (out []map[string]any, left []backend.McpServerStatus) {
	out = []map[string]any{}
	for _, m := range servers {
		switch {
		case m.Transport == backend.McpStdio:
			env := make([]map[string]string, 0, len(m.Env))
			for _, e := range m.Env {
				env = append(env, map[string]string{"name": e.Name, "value": e.Value})
			}
			args := m.Args
			if args == nil {
				args = []string{}
			}
			out = append(out, map[string]any{"name": m.Name, "command": m.Command, "args": args, "env": env})
		case m.Transport == backend.McpHTTP && caps.Http, m.Transport == backend.McpSSE && caps.Sse:
			headers := make([]map[string]string, 0, len(m.Headers))
			for _, h := range m.Headers {
				headers = append(headers, map[string]string{"name": h.Name, "value": h.Value})
			}
			out = append(out, map[string]any{"type": string(m.Transport), "name": m.Name, "url": m.URL, "headers": headers})
		default:
			left = append(left, backend.McpServerStatus{ID: m.ID, Status: backend.McpError,
				Message: fmt.Sprintf("left out: the agent does not take %s MCP servers (its mcpCapabilities.%s is not true)", m.Transport, m.Transport)})
		}
	}
	return out, left
}

// reportMcp queues the state of the session's MCP servers after
// session/new: those passed are ready as far as ACP tells (the agent took
// them; ACP has no report of an MCP server's own state), those left out
// failed, with why.
func (s *session) reportMcp(left []backend.McpServerStatus) {
	out := map[string]bool{}
	for _, l := range left {
		out[l.ID] = true
		s.queue.push(queueItem{event: l})
	}
	for _, m := range s.opts.McpServers {
		if !out[m.ID] {
			s.queue.push(queueItem{event: backend.McpServerStatus{ID: m.ID, Status: backend.McpReady}})
		}
	}
}
