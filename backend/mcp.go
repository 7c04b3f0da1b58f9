package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// McpTransport is how an agent reaches an MCP server.
type McpTransport string

// MCP transports, named as ACP and `.mcp.json` files name them.
const (
	McpStdio McpTransport = "stdio"
	McpHTTP  McpTransport = "http"
	McpSSE   McpTransport = "sse"
)

// McpServer is one MCP server to give an agent session. Env and Headers
// hold secrets (API keys, bearer tokens): they go to the agent and
// nowhere else — never into AHP state, errors or logs.
type McpServer struct {
	// ID identifies the server to whoever asked for it (the bridge: the
	// AHP customization id); backends report its state under it.
	ID        string
	Name      string
	Transport McpTransport
	// stdio
	Command string
	Args    []string
	Env     []NameValue
	// http and sse
	URL     string
	Headers []NameValue
}

// NameValue is one environment variable or HTTP header.
type NameValue struct{ Name, Value string }

// McpStatus is an MCP server's state as far as a backend knows it.
type McpStatus string

// MCP server states (AHP's McpServerStatus values the bridge uses).
const (
	McpStarting McpStatus = "starting"
	McpReady    McpStatus = "ready"
	McpError    McpStatus = "error"
)

// McpServerStatus reports the state of one of SessionOptions.McpServers
// (by McpServer.ID). Message says why for McpError, e.g. that the agent
// cannot take the server's transport and it was left out.
type McpServerStatus struct {
	ID      string
	Status  McpStatus
	Message string
}

func (McpServerStatus) isEvent() {}

// mcpEntry is one server of an `mcpServers` object as `.mcp.json` files
// (Claude Code's, Open Plugins') and the bridge's config write it.
type mcpEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// ParseMcpServers reads MCP server declarations: an object of servers by
// name, or a whole `.mcp.json` file whose "mcpServers" member is one. A
// server with a "command" is stdio; one with a "url" is http unless its
// "type" says "sse". Servers come back in name order, with ID = name.
// Errors name the server and the member, never a value (they may be
// secrets).
func ParseMcpServers(b []byte) ([]McpServer, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("MCP server declarations must be a JSON object: %w", err)
	}
	if inner, ok := top["mcpServers"]; ok {
		top = nil
		if err := json.Unmarshal(inner, &top); err != nil {
			return nil, fmt.Errorf("\"mcpServers\" must be an object of servers by name: %w", err)
		}
	}
	names := make([]string, 0, len(top))
	for n := range top {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]McpServer, 0, len(names))
	var errs []error
	for _, n := range names {
		var e mcpEntry
		if err := json.Unmarshal(top[n], &e); err != nil {
			errs = append(errs, fmt.Errorf("MCP server %q: %w", n, err))
			continue
		}
		s, err := e.server(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

func (e mcpEntry) server(name string) (McpServer, error) {
	s := McpServer{ID: name, Name: name}
	switch t := strings.ToLower(e.Type); {
	case name == "":
		return s, errors.New("an MCP server has an empty name")
	case e.Command != "" && (t == "" || t == "stdio"):
		s.Transport, s.Command, s.Args, s.Env = McpStdio, e.Command, e.Args, pairs(e.Env)
	case e.URL != "" && (t == "" || t == "http" || t == "streamable-http" || t == "streamablehttp"):
		s.Transport, s.URL, s.Headers = McpHTTP, e.URL, pairs(e.Headers)
	case e.URL != "" && t == "sse":
		s.Transport, s.URL, s.Headers = McpSSE, e.URL, pairs(e.Headers)
	case t != "" && t != "stdio" && t != "http" && t != "sse":
		return s, fmt.Errorf("MCP server %q: unknown type %q (want stdio, http or sse)", name, e.Type)
	default:
		return s, fmt.Errorf("MCP server %q: needs a \"command\" (stdio) or a \"url\" (http, sse)", name)
	}
	if s.Args == nil {
		s.Args = []string{}
	}
	return s, nil
}

// pairs turns a map into name-sorted pairs, so what an agent gets does not
// change from run to run.
func pairs(m map[string]string) []NameValue {
	out := make([]NameValue, 0, len(m))
	for k, v := range m {
		out = append(out, NameValue{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AuthInfo is how an agent lets users sign in.
type AuthInfo struct {
	Methods []AuthMethod
	// Required is set once the agent refused to work without signing in
	// (ACP: session/new answered "auth required"); an agent that only
	// lists methods works without.
	Required bool
	// Authenticated is set once a sign-in succeeded.
	Authenticated bool
}

// AuthMethodKind tells where signing in with a method happens.
type AuthMethodKind string

// Auth method kinds, after ACP's.
const (
	// AuthAgent: the agent signs in itself when asked (ACP authenticate).
	AuthAgent AuthMethodKind = "agent"
	// AuthEnvVar: the agent reads credentials from environment variables
	// that must be set where it runs.
	AuthEnvVar AuthMethodKind = "env_var"
	// AuthTerminal: a person runs a command in a terminal on the agent's
	// machine.
	AuthTerminal AuthMethodKind = "terminal"
)

// AuthMethod is one way of signing in to an agent.
type AuthMethod struct {
	ID          string
	Name        string
	Description string
	Kind        AuthMethodKind
	// OnAgentMachine says the method needs a person at the agent's
	// machine (a terminal, a browser there): the bridge can describe it,
	// not do it. Set for terminal and env_var methods, and for agent
	// methods whose description sends the user to a terminal or browser
	// (claude-code-acp's "Run `claude /login` in the terminal").
	OnAgentMachine bool
	// Args are what a terminal method runs the agent's own command with,
	// for the description.
	Args []string
	// Vars are the environment variables an env_var method reads.
	Vars []string
}

// ErrAuthRequired is what OpenSession's error is (errors.Is) when the agent
// will not open a session before the user signs in.
var ErrAuthRequired = errors.New("the agent requires signing in")

// AuthRequiredError is OpenSession's error when the agent asked for
// authentication; Methods are its sign-in methods.
type AuthRequiredError struct {
	Methods []AuthMethod
	Err     error // what the agent said
}

func (e *AuthRequiredError) Error() string {
	names := make([]string, 0, len(e.Methods))
	for _, m := range e.Methods {
		names = append(names, m.ID)
	}
	msg := "the agent requires signing in"
	if len(names) > 0 {
		msg += " (methods: " + strings.Join(names, ", ") + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrAuthRequired) true.
func (e *AuthRequiredError) Is(target error) bool { return target == ErrAuthRequired }

// Unwrap returns what the agent said.
func (e *AuthRequiredError) Unwrap() error { return e.Err }

// ErrSignInElsewhere is what Authenticator.Authenticate's error is
// (errors.Is) when the agent cannot sign in with a method itself: a person
// must do it on the agent's machine (the method's description says how).
// The caller may take the request as the user's word that it is done, and
// try a session again.
var ErrSignInElsewhere = errors.New("the agent cannot sign in with this method itself; it is done on the agent's machine")

// Authenticator is a Provider whose agent users can sign in to.
type Authenticator interface {
	// Authenticate signs in with one of the agent's methods (by id). It
	// returns an error saying why when the agent refused or cannot do it.
	Authenticate(ctx context.Context, methodID string) error
}

// FileEdited says the agent changed a file (an edit it reported as a diff,
// or a file it wrote through the client), for the session's changeset.
// Old is the content before, nil when the file did not exist.
type FileEdited struct {
	Path string // absolute
	Old  *string
	New  string
}

func (FileEdited) isEvent() {}
