package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// Config is everything `serve` can be told, by flags or by a --config file.
// The JSON keys are the file format; flags given on the command line
// override the file.
type Config struct {
	Listen        string            `json:"listen,omitempty"`
	Stdio         bool              `json:"stdio,omitempty"`
	Token         string            `json:"token,omitempty"`
	TokenFile     string            `json:"tokenFile,omitempty"`
	NoToken       bool              `json:"noToken,omitempty"`
	AllowOrigins  []string          `json:"allowOrigins,omitempty"`
	Agents        []AgentConfig     `json:"agents,omitempty"`
	AgentChannels []AgentChanConfig `json:"agentChannels,omitempty"`
	Approve       string            `json:"approve,omitempty"`
	ReplayBuffer  int               `json:"replayBuffer,omitempty"`
	LogLevel      string            `json:"logLevel,omitempty"`
	LogFormat     string            `json:"logFormat,omitempty"`
	WireLog       string            `json:"wireLog,omitempty"`
	MaxFrameBytes int64             `json:"maxFrameBytes,omitempty"`
	MaxSessions   int               `json:"maxSessions,omitempty"`
	// MaxSubscriptions bounds the subscriptions of one connection.
	MaxSubscriptions int `json:"maxSubscriptions,omitempty"`
	// MaxPendingRequests bounds the unanswered asynchronous requests
	// (completions, resourceRead) of one connection.
	MaxPendingRequests int `json:"maxPendingRequests,omitempty"`
}

// AgentConfig is one ACP agent provider.
type AgentConfig struct {
	ID          string            `json:"id"`
	DisplayName string            `json:"displayName,omitempty"`
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
}

// AgentChanConfig is one agent-channel WebSocket backend.
type AgentChanConfig struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName,omitempty"`
	URL         string `json:"url"`
	Token       string `json:"token,omitempty"`
}

// usageError is a configuration or flag problem; it makes `serve` exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// repeated collects a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// parseServeConfig reads the serve flags and the optional config file into
// one validated Config.
func parseServeConfig(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgFile                   string
		acps, chans, origins      repeated
		listen, token, tokenFile  string
		approve, logLevel, logFmt string
		wireLog                   string
		stdio, noToken            bool
		replay, maxSessions       int
		maxSubs, maxPending       int
		maxFrame                  int64
	)
	fs.StringVar(&cfgFile, "config", "", "read settings from this JSON `FILE` (flags override it)")
	fs.StringVar(&listen, "listen", "", "WebSocket listen address `HOST:PORT` (default 127.0.0.1:8081; port 0 picks one)")
	fs.BoolVar(&stdio, "stdio", false, "speak AHP over stdin/stdout instead of listening")
	fs.StringVar(&token, "token", "", "connection `TOKEN` clients must present (default: random)")
	fs.StringVar(&tokenFile, "token-file", "", "read the connection token from `FILE`")
	fs.BoolVar(&noToken, "no-token", false, "accept connections without a token (loopback only)")
	fs.Var(&origins, "allow-origin", "allow browser connections from `ORIGIN` (repeatable)")
	fs.Var(&acps, "acp", "ACP agent provider `ID=COMMAND` (repeatable)")
	fs.Var(&chans, "agentchan", "agent-channel backend `ID=URL` (repeatable)")
	fs.StringVar(&approve, "approve", "", "permission policy: ask|all|reads|none (default ask)")
	fs.IntVar(&replay, "replay-buffer", 0, "envelopes kept for reconnect replay (default 4096)")
	fs.StringVar(&logLevel, "log-level", "", "log level: trace|debug|info|warn|error (default info)")
	fs.StringVar(&logFmt, "log-format", "", "log format: console|json (default console)")
	fs.StringVar(&wireLog, "wire-log", "", "write every AHP frame to `FILE` as JSON lines")
	fs.Int64Var(&maxFrame, "max-frame-bytes", 0, "largest accepted AHP frame (default 4 MiB)")
	fs.IntVar(&maxSessions, "max-sessions", 0, "most sessions at once (default 1000)")
	fs.IntVar(&maxSubs, "max-subscriptions", 0, "most subscriptions per connection (default 1024)")
	fs.IntVar(&maxPending, "max-pending-requests", 0, "most unanswered completions/resourceRead requests per connection (default 64)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return Config{}, usagef("serve: unexpected argument %q", fs.Arg(0))
	}

	var cfg Config
	if cfgFile != "" {
		var err error
		if cfg, err = loadConfigFile(cfgFile); err != nil {
			return Config{}, err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["listen"] {
		cfg.Listen = listen
	}
	if set["stdio"] {
		cfg.Stdio = stdio
	}
	if set["token"] {
		cfg.Token = token
	}
	if set["token-file"] {
		cfg.TokenFile = tokenFile
	}
	if set["no-token"] {
		cfg.NoToken = noToken
	}
	cfg.AllowOrigins = append(cfg.AllowOrigins, origins...)
	if set["approve"] {
		cfg.Approve = approve
	}
	if set["replay-buffer"] {
		cfg.ReplayBuffer = replay
	}
	if set["log-level"] {
		cfg.LogLevel = logLevel
	}
	if set["log-format"] {
		cfg.LogFormat = logFmt
	}
	if set["wire-log"] {
		cfg.WireLog = wireLog
	}
	if set["max-frame-bytes"] {
		cfg.MaxFrameBytes = maxFrame
	}
	if set["max-sessions"] {
		cfg.MaxSessions = maxSessions
	}
	if set["max-subscriptions"] {
		cfg.MaxSubscriptions = maxSubs
	}
	if set["max-pending-requests"] {
		cfg.MaxPendingRequests = maxPending
	}
	for _, a := range acps {
		id, command, ok := strings.Cut(a, "=")
		if !ok || id == "" || strings.TrimSpace(command) == "" {
			return Config{}, usagef("--acp %q: want ID=COMMAND, e.g. --acp claude='npx @zed-industries/claude-code-acp'", a)
		}
		cfg.Agents = append(cfg.Agents, AgentConfig{ID: id, Command: command})
	}
	for _, c := range chans {
		id, url, ok := strings.Cut(c, "=")
		if !ok || id == "" || url == "" {
			return Config{}, usagef("--agentchan %q: want ID=URL, e.g. --agentchan ws1=wss://host/workspaces/ID/ws", c)
		}
		cfg.AgentChannels = append(cfg.AgentChannels, AgentChanConfig{ID: id, URL: url})
	}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// loadConfigFile reads a JSON config file, refusing unknown keys so that a
// typo is reported instead of silently ignored.
func loadConfigFile(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, usagef("--config: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg Config
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, usagef("--config %s: %v", path, err)
	}
	return cfg, nil
}

func (c *Config) applyDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:8081"
	}
	if c.Approve == "" {
		c.Approve = "ask"
	}
	if c.ReplayBuffer == 0 {
		c.ReplayBuffer = 4096
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.LogFormat == "" {
		c.LogFormat = "console"
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = 4 << 20
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = 1000
	}
	if c.MaxSubscriptions == 0 {
		c.MaxSubscriptions = 1024
	}
	if c.MaxPendingRequests == 0 {
		c.MaxPendingRequests = 64
	}
}

func (c *Config) validate() error {
	if _, err := mapping.ParsePolicy(c.Approve); err != nil {
		return usagef("--approve: %v", err)
	}
	switch c.LogFormat {
	case "console", "json":
	default:
		return usagef("--log-format %q: want console or json", c.LogFormat)
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return usagef("--log-level %q: want trace, debug, info, warn or error", c.LogLevel)
	}
	if c.ReplayBuffer < 1 {
		return usagef("--replay-buffer %d: must be at least 1", c.ReplayBuffer)
	}
	if c.MaxFrameBytes < 1024 {
		return usagef("--max-frame-bytes %d: must be at least 1024", c.MaxFrameBytes)
	}
	if c.MaxSessions < 1 {
		return usagef("--max-sessions %d: must be at least 1", c.MaxSessions)
	}
	if c.MaxSubscriptions < 1 {
		return usagef("--max-subscriptions %d: must be at least 1", c.MaxSubscriptions)
	}
	if c.MaxPendingRequests < 1 {
		return usagef("--max-pending-requests %d: must be at least 1", c.MaxPendingRequests)
	}
	n := 0
	for _, set := range []bool{c.Token != "", c.TokenFile != "", c.NoToken} {
		if set {
			n++
		}
	}
	if n > 1 {
		return usagef("--token, --token-file and --no-token exclude each other")
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return usagef("--listen %q: want HOST:PORT (%v)", c.Listen, err)
	}
	if c.NoToken && !c.Stdio && !isLoopbackHost(host) {
		return usagef("--listen %q with --no-token: refusing to accept unauthenticated connections on a non-loopback address", c.Listen)
	}
	seen := map[string]bool{}
	for i, a := range c.Agents {
		key := fmt.Sprintf("agents[%d]", i)
		if a.ID == "" {
			return usagef("%s: id is required", key)
		}
		if strings.TrimSpace(a.Command) == "" {
			return usagef("%s (%s): command is required", key, a.ID)
		}
		if _, err := splitCommand(a.Command); err != nil {
			return usagef("%s (%s): command: %v", key, a.ID, err)
		}
		if seen[a.ID] {
			return usagef("%s: provider id %q is used twice", key, a.ID)
		}
		seen[a.ID] = true
	}
	for i, a := range c.AgentChannels {
		key := fmt.Sprintf("agentChannels[%d]", i)
		if a.ID == "" {
			return usagef("%s: id is required", key)
		}
		if !strings.HasPrefix(a.URL, "ws://") && !strings.HasPrefix(a.URL, "wss://") {
			return usagef("%s (%s): url %q must start with ws:// or wss://", key, a.ID, a.URL)
		}
		if seen[a.ID] {
			return usagef("%s: provider id %q is used twice", key, a.ID)
		}
		seen[a.ID] = true
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// splitCommand splits a command line the way a POSIX shell would split
// words: whitespace separates words, single quotes keep everything literal,
// double quotes keep whitespace and honour backslash escapes of `"`, `\`,
// `$` and “ ` “, and a backslash outside quotes escapes the next character.
// No expansion of any kind is done.
func splitCommand(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range s {
		switch {
		case escaped:
			if quote == '"' && !strings.ContainsRune("\"\\$`\n", r) {
				cur.WriteRune('\\')
			}
			if r != '\n' {
				cur.WriteRune(r)
			}
			escaped, inWord = false, true
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped = true
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if escaped && quote == 0 {
		return nil, errors.New("ends with a lone backslash")
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("is empty")
	}
	return words, nil
}
