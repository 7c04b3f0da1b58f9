package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// Config is everything `serve` can be told, by flags or by a --config file.
// The JSON keys are the file format. A flag given on the command line wins
// over the file; a repeatable flag (--acp, --agentchan, --allow-origin,
// --browse-root) replaces the file's whole list.
type Config struct {
	Listen string `json:"listen,omitempty"`
	// OpsListen moves the ops endpoints (health, metrics, the status page)
	// to a listener of their own; "" serves health and metrics on the AHP
	// listener (none under --stdio).
	OpsListen string `json:"opsListen,omitempty"`
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the ops listener; it needs OpsListen, since those
	// endpoints have no token. Off by default.
	Pprof         bool              `json:"pprof,omitempty"`
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
	// (completions, the resource* commands) of one connection.
	MaxPendingRequests int `json:"maxPendingRequests,omitempty"`
	// State is the SQLite file that keeps sessions and turns across
	// restarts; "" means store.DefaultPath(), "none" keeps everything in
	// memory.
	State string `json:"state,omitempty"`
	// ReadOnlyFiles refuses every change to the workspace's files, by
	// clients (resourceWrite, resourceMkdir, …) and by agents
	// (fs/write_text_file).
	ReadOnlyFiles bool `json:"readOnlyFiles,omitempty"`
	// DefaultDirectory is where clients' folder pickers start (the
	// initialize result's defaultDirectory), and a directory they may
	// browse; "" means the directory serve starts in. parseServe makes it
	// absolute.
	DefaultDirectory string `json:"defaultDirectory,omitempty"`
	// BrowseRoots are more directories clients may browse without a
	// session: list and resolve (names, types, sizes, times), never read
	// or change. parseServe makes them absolute.
	BrowseRoots []string `json:"browseRoots,omitempty"`
	// ArchiveRetention deletes archived sessions older than this duration
	// ("90d", "720h"); "" or "0" keeps them (retention.go).
	ArchiveRetention string `json:"archiveRetention,omitempty"`

	// src says where each setting came from, so that a problem is named
	// the way the user wrote it: a flag, or a key of the file.
	src *configSource
}

// AgentConfig is one ACP agent provider.
type AgentConfig struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName,omitempty"`
	// Command is split into words like a POSIX shell would.
	Command string `json:"command"`
	// Args are appended to Command's words as they are, unsplit.
	Args []string          `json:"args,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	// Cwd is the directory the agent process starts in (default: the
	// bridge's). Sessions do not use it: each one works in the directory
	// its createSession names.
	Cwd string `json:"cwd,omitempty"`
	// McpServers are MCP servers every session of the agent gets (ACP
	// session/new mcpServers), by name, written as in a `.mcp.json`: a
	// "command" (stdio) or a "url" (http, or "type": "sse"). Their env and
	// headers go to the agent only, never to clients.
	McpServers map[string]McpServerConfig `json:"mcpServers,omitempty"`
	// ProbeModels (default true) starts the agent once at start, with a
	// throwaway session in an empty directory, to learn its models when no
	// earlier run stored them: clients such as VS Code cannot start a
	// session of a provider whose catalogue lists no models. false waits
	// for the provider's first session instead.
	ProbeModels *bool `json:"probeModels,omitempty"`
	// ListAgentSessions says how the agent's own sessions (those it keeps
	// itself, e.g. made in a terminal) are listed to clients, when the
	// agent can list them: unset lists them while the agent runs, true
	// also starts the agent to list them, false never lists them.
	ListAgentSessions *bool `json:"listAgentSessions,omitempty"`

	flag string // the --acp value it came from, if any
}

// McpServerConfig is one MCP server of an agent's mcpServers.
type McpServerConfig struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// mcpServers reads an agent's mcpServers as backends take them.
func (a AgentConfig) mcpServers() ([]backend.McpServer, error) {
	if len(a.McpServers) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(a.McpServers)
	if err != nil {
		return nil, fmt.Errorf("encoding the MCP servers: %w", err)
	}
	return backend.ParseMcpServers(b)
}

// AgentChanConfig is one agent-channel WebSocket backend.
type AgentChanConfig struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName,omitempty"`
	URL         string `json:"url"`
	Token       string `json:"token,omitempty"`

	flag string // the --agentchan value it came from, if any
}

// Defaults of the settings that have one; README.md's configuration table
// shows the same values (TestReadmeShowsTheDefaults).
const (
	defaultListen             = "127.0.0.1:8081"
	defaultApprove            = "ask"
	defaultReplayBuffer       = 4096
	defaultLogLevel           = "info"
	defaultLogFormat          = "console"
	defaultMaxFrameBytes      = 4 << 20
	defaultMaxSessions        = host.DefaultMaxSessions
	defaultMaxSubscriptions   = host.DefaultMaxSubscriptionsPerConn
	defaultMaxPendingRequests = 64
)

// flagOfKey names the flag of each config key.
var flagOfKey = map[string]string{
	"listen": "listen", "opsListen": "ops-listen", "pprof": "pprof", "stdio": "stdio", "token": "token", "tokenFile": "token-file", "noToken": "no-token",
	"allowOrigins": "allow-origin", "agents": "acp", "agentChannels": "agentchan", "approve": "approve",
	"replayBuffer": "replay-buffer", "logLevel": "log-level", "logFormat": "log-format", "wireLog": "wire-log",
	"maxFrameBytes": "max-frame-bytes", "maxSessions": "max-sessions", "maxSubscriptions": "max-subscriptions",
	"maxPendingRequests": "max-pending-requests", "state": "state", "readOnlyFiles": "read-only-files",
	"defaultDirectory": "default-directory", "browseRoots": "browse-root",
	"archiveRetention": "archive-retention",
}

// usageError is a flag or configuration problem; it makes the command exit
// 2. withUsage asks for the command's synopsis after the message (a
// mistake on the command line rather than in a file).
type usageError struct {
	msg       string
	withUsage bool
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// argErrorf is a mistake in a command's arguments.
func argErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), withUsage: true}
}

// repeated collects a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

const serveUsage = `usage: ahp-bridge serve [--listen HOST:PORT | --stdio] [--ops-listen HOST:PORT [--pprof]]
                        [--token TOKEN | --token-file FILE | --no-token] [--allow-origin ORIGIN]... [--acp ID=COMMAND]... [--agentchan ID=URL]...
                        [--config FILE] [--approve ask|all|reads|none] [--replay-buffer N]
                        [--log-level LEVEL] [--log-format console|json] [--wire-log FILE]
                        [--max-frame-bytes N] [--max-sessions N] [--max-subscriptions N]
                        [--max-pending-requests N] [--state FILE|none] [--read-only-files]
                        [--default-directory DIR] [--browse-root DIR]...
                        [--archive-retention DURATION]

Runs the bridge. AHP clients connect over WebSocket (or, with --stdio, over
stdin/stdout) and drive the ACP agents (--acp) and agent-channel backends
(--agentchan) it offers as providers. When it listens, it prints one line on
stdout, READY ws://HOST:PORT/?tkn=TOKEN; logs go to stderr.

Health probes (/healthz, /readyz) are served on the AHP listener without a
token, and Prometheus metrics (/metrics) with it. --ops-listen moves them,
with a status page at /, to a listener of their own without a token (the
only way to have them under --stdio); --pprof adds Go's runtime profiles
there under /debug/pprof/. SIGHUP reloads the --config file's
providers; running sessions keep their agent until they end.

Sessions and their turns are kept in a SQLite state file, so that they are
still there after a restart or a crash: --state FILE picks the file (default
ahp-bridge/state.db under the user's state directory, e.g.
~/.local/state/ahp-bridge/state.db) and --state none keeps everything in
memory. One bridge per file: a second one on the same file refuses to start.
'ahp-bridge sessions' lists, shows, exports and deletes what it holds.
disposeSession never deletes a session with turns: it archives it (and
releases its agent); --archive-retention DURATION (e.g. 90d) deletes archived
sessions older than that, at start and hourly (default: never).

A client may touch only the files of its sessions' working directories.
Before it has a session it may browse (list directories and resolve paths,
never read or change files) under --default-directory DIR, where its folder
picker starts (default: the directory serve starts in), and under each
--browse-root DIR.

Settings come from --config FILE (JSON; README.md lists the keys) and from the
flags. A flag wins over the file; a repeatable flag replaces the file's whole
list (--acp the file's agents, --agentchan its agentChannels, --allow-origin
its allowOrigins, --browse-root its browseRoots).

Exit codes: 0 clean shutdown (SIGINT/SIGTERM), 1 a failure while running,
2 bad flags or configuration.
`

// serveFlags are the raw values of the serve flags.
type serveFlags struct {
	cfgFile                   string
	acps, chans, origins      repeated
	browseRoots               repeated
	defaultDir                string
	listen, token, tokenFile  string
	opsListen                 string
	approve, logLevel, logFmt string
	wireLog                   string
	stdio, noToken, readOnly  bool
	pprof                     bool
	replay, maxSessions       int
	maxSubs, maxPending       int
	maxFrame                  int64
	state                     string
	archiveRetention          string
}

func newServeFlagSet(f *serveFlags) *flag.FlagSet {
	fs := newFlagSet("serve")
	fs.StringVar(&f.cfgFile, "config", "", "read settings from this JSON `FILE`; flags win over it")
	fs.StringVar(&f.listen, "listen", "", "WebSocket listen address `HOST:PORT` (default "+defaultListen+"; port 0 picks a free one)")
	fs.StringVar(&f.opsListen, "ops-listen", "", "serve health, metrics and the status page on `HOST:PORT`, without a token")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's runtime profiles under /debug/pprof/ on the --ops-listen listener")
	fs.BoolVar(&f.stdio, "stdio", false, "speak AHP over stdin/stdout instead of listening")
	fs.StringVar(&f.token, "token", "", "connection `TOKEN` clients must present (default: a random one per start)")
	fs.StringVar(&f.tokenFile, "token-file", "", "read the connection token from `FILE`")
	fs.BoolVar(&f.noToken, "no-token", false, "accept connections without a token (loopback addresses only)")
	fs.Var(&f.origins, "allow-origin", "allow browser connections from `ORIGIN` (repeatable)")
	fs.Var(&f.acps, "acp", "ACP agent provider `ID=COMMAND`; COMMAND is split like a shell would (repeatable)")
	fs.Var(&f.chans, "agentchan", "agent-channel backend `ID=URL` (repeatable)")
	fs.StringVar(&f.approve, "approve", "", "permission `POLICY`: ask, all, reads or none (default "+defaultApprove+")")
	fs.IntVar(&f.replay, "replay-buffer", 0, fmt.Sprintf("envelopes kept for reconnect replay (default %d)", defaultReplayBuffer))
	fs.StringVar(&f.logLevel, "log-level", "", "log `LEVEL`: trace, debug, info, warn or error (default "+defaultLogLevel+")")
	fs.StringVar(&f.logFmt, "log-format", "", "log `FORMAT`: console or json (default "+defaultLogFormat+")")
	fs.StringVar(&f.wireLog, "wire-log", "", "append every AHP frame to `FILE` as a JSON line")
	fs.Int64Var(&f.maxFrame, "max-frame-bytes", 0, "largest accepted AHP frame in bytes (default 4 MiB)")
	fs.IntVar(&f.maxSessions, "max-sessions", 0, fmt.Sprintf("most sessions at once (default %d)", defaultMaxSessions))
	fs.IntVar(&f.maxSubs, "max-subscriptions", 0, fmt.Sprintf("most subscriptions per connection (default %d)", defaultMaxSubscriptions))
	fs.IntVar(&f.maxPending, "max-pending-requests", 0, fmt.Sprintf("most unanswered completions and resource* requests per connection (default %d)", defaultMaxPendingRequests))
	fs.StringVar(&f.state, "state", "", "keep sessions in the SQLite state `FILE`, or none to keep them in memory (default ahp-bridge/state.db in the user's state directory)")
	fs.StringVar(&f.archiveRetention, "archive-retention", "", "delete archived sessions older than `DURATION` (e.g. 90d or 720h), at start and hourly (default: keep them)")
	fs.BoolVar(&f.readOnly, "read-only-files", false, "refuse every change to the workspace's files, by clients (resourceWrite, …) and by agents (fs/write_text_file)")
	fs.StringVar(&f.defaultDir, "default-directory", "", "where clients' folder pickers start, a `DIR` they may browse without a session (default: the directory serve starts in)")
	fs.Var(&f.browseRoots, "browse-root", "let clients browse `DIR` without a session: list and resolve, never read or change (repeatable)")
	return fs
}

// parseServeConfig reads the serve flags and the optional config file into
// one validated Config. It returns flag.ErrHelp for --help.
func parseServeConfig(args []string) (Config, error) {
	cfg, _, err := parseServe(args)
	return cfg, err
}

func parseServe(args []string) (Config, *flag.FlagSet, error) {
	var f serveFlags
	fs := newServeFlagSet(&f)
	if err := parseFlags(fs, args); err != nil {
		return Config{}, fs, err
	}
	if fs.NArg() > 0 {
		return Config{}, fs, argErrorf("unexpected argument %q (serve takes only flags)", fs.Arg(0))
	}
	var cfg Config
	if f.cfgFile != "" {
		var err error
		if cfg, err = loadConfigFile(f.cfgFile); err != nil {
			return Config{}, fs, err
		}
	}
	if cfg.src == nil {
		cfg.src = &configSource{}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for key, name := range flagOfKey {
		if set[name] {
			cfg.src.fromFlag(key)
		}
	}
	override := func(name string, apply func()) {
		if set[name] {
			apply()
		}
	}
	override("listen", func() { cfg.Listen = f.listen })
	override("ops-listen", func() { cfg.OpsListen = f.opsListen })
	override("pprof", func() { cfg.Pprof = f.pprof })
	override("stdio", func() { cfg.Stdio = f.stdio })
	override("token", func() { cfg.Token = f.token })
	override("token-file", func() { cfg.TokenFile = f.tokenFile })
	override("no-token", func() { cfg.NoToken = f.noToken })
	override("allow-origin", func() { cfg.AllowOrigins = f.origins })
	override("approve", func() { cfg.Approve = f.approve })
	override("replay-buffer", func() { cfg.ReplayBuffer = f.replay })
	override("log-level", func() { cfg.LogLevel = f.logLevel })
	override("log-format", func() { cfg.LogFormat = f.logFmt })
	override("wire-log", func() { cfg.WireLog = f.wireLog })
	override("max-frame-bytes", func() { cfg.MaxFrameBytes = f.maxFrame })
	override("max-sessions", func() { cfg.MaxSessions = f.maxSessions })
	override("max-subscriptions", func() { cfg.MaxSubscriptions = f.maxSubs })
	override("max-pending-requests", func() { cfg.MaxPendingRequests = f.maxPending })
	override("state", func() { cfg.State = f.state })
	override("read-only-files", func() { cfg.ReadOnlyFiles = f.readOnly })
	override("default-directory", func() { cfg.DefaultDirectory = f.defaultDir })
	override("browse-root", func() { cfg.BrowseRoots = f.browseRoots })
	override("archive-retention", func() { cfg.ArchiveRetention = f.archiveRetention })
	if set["acp"] {
		cfg.Agents = nil
		for _, a := range f.acps {
			id, command, ok := strings.Cut(a, "=")
			if !ok || id == "" || strings.TrimSpace(command) == "" {
				return Config{}, fs, argErrorf("--acp %q: want ID=COMMAND, e.g. --acp claude='npx @zed-industries/claude-code-acp'", a)
			}
			cfg.Agents = append(cfg.Agents, AgentConfig{ID: id, Command: command, flag: a})
		}
	}
	if set["agentchan"] {
		cfg.AgentChannels = nil
		for _, c := range f.chans {
			id, url, ok := strings.Cut(c, "=")
			if !ok || id == "" || url == "" {
				return Config{}, fs, argErrorf("--agentchan %q: want ID=URL, e.g. --agentchan ws1=wss://host/workspaces/ID/ws", c)
			}
			cfg.AgentChannels = append(cfg.AgentChannels, AgentChanConfig{ID: id, URL: url, flag: c})
		}
	}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return Config{}, fs, err
	}
	if err := cfg.resolveDirectories(); err != nil {
		return Config{}, fs, err
	}
	return cfg, fs, nil
}

// resolveDirectories makes the default directory (the working directory
// when none is given) and the browse roots absolute, relative to the
// working directory, and checks that each is an existing directory.
func (c *Config) resolveDirectories() error {
	if c.src != nil && c.src.flags["defaultDirectory"] && c.DefaultDirectory == "" {
		return usagef("%s: want a directory", c.name("defaultDirectory"))
	}
	if c.DefaultDirectory == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("finding the working directory, the default of %s: %w", c.name("defaultDirectory"), err)
		}
		c.DefaultDirectory = wd
	}
	dir := func(name, d string) (string, error) {
		if d == "" {
			return "", usagef("%s: want a directory, not an empty name", name)
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", usagef("%s %q: %v", name, d, err)
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil:
			return "", usagef("%s %q: %v", name, d, err)
		case !fi.IsDir():
			return "", usagef("%s %q: not a directory", name, d)
		}
		return abs, nil
	}
	var err error
	if c.DefaultDirectory, err = dir(c.name("defaultDirectory"), c.DefaultDirectory); err != nil {
		return err
	}
	roots := make([]string, len(c.BrowseRoots))
	for i, d := range c.BrowseRoots {
		if roots[i], err = dir(c.name("browseRoots"), d); err != nil {
			return err
		}
	}
	if len(roots) > 0 {
		c.BrowseRoots = roots
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.Listen == "" {
		c.Listen = defaultListen
	}
	if c.Approve == "" {
		c.Approve = defaultApprove
	}
	if c.ReplayBuffer == 0 {
		c.ReplayBuffer = defaultReplayBuffer
	}
	if c.LogLevel == "" {
		c.LogLevel = defaultLogLevel
	}
	if c.LogFormat == "" {
		c.LogFormat = defaultLogFormat
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = defaultMaxFrameBytes
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = defaultMaxSessions
	}
	if c.MaxSubscriptions == 0 {
		c.MaxSubscriptions = defaultMaxSubscriptions
	}
	if c.MaxPendingRequests == 0 {
		c.MaxPendingRequests = defaultMaxPendingRequests
	}
}

// name is how a problem with a top-level setting names it: the flag that
// set it, or the file's key.
func (c *Config) name(key string) string {
	return c.src.name(key, "--"+flagOfKey[key])
}

func (c *Config) validate() error {
	if _, err := mapping.ParsePolicy(c.Approve); err != nil {
		return usagef("%s: %v", c.name("approve"), err)
	}
	switch c.LogFormat {
	case "console", "json":
	default:
		return usagef("%s %q: want console or json", c.name("logFormat"), c.LogFormat)
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		return usagef("%s %q: want trace, debug, info, warn or error", c.name("logLevel"), c.LogLevel)
	}
	if c.ReplayBuffer < 1 {
		return usagef("%s %d: must be at least 1", c.name("replayBuffer"), c.ReplayBuffer)
	}
	if c.MaxFrameBytes < 1024 {
		return usagef("%s %d: must be at least 1024", c.name("maxFrameBytes"), c.MaxFrameBytes)
	}
	if c.MaxSessions < 1 {
		return usagef("%s %d: must be at least 1", c.name("maxSessions"), c.MaxSessions)
	}
	if c.MaxSubscriptions < 1 {
		return usagef("%s %d: must be at least 1", c.name("maxSubscriptions"), c.MaxSubscriptions)
	}
	if c.MaxPendingRequests < 1 {
		return usagef("%s %d: must be at least 1", c.name("maxPendingRequests"), c.MaxPendingRequests)
	}
	if _, err := parseRetention(c.ArchiveRetention); err != nil {
		return usagef("%s %q: %v", c.name("archiveRetention"), c.ArchiveRetention, err)
	}
	if c.src != nil && c.src.flags["state"] && c.State == "" {
		return usagef("%s: want a file name, or none", c.name("state"))
	}
	var given []string
	for _, k := range []string{"token", "tokenFile", "noToken"} {
		set := map[string]bool{"token": c.Token != "", "tokenFile": c.TokenFile != "", "noToken": c.NoToken}[k]
		if set {
			given = append(given, c.name(k))
		}
	}
	if len(given) > 1 {
		return usagef("%s exclude each other: give one", strings.Join(given, " and "))
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return usagef("%s %q: want HOST:PORT (%v)", c.name("listen"), c.Listen, err)
	}
	if c.OpsListen != "" {
		if _, _, err := net.SplitHostPort(c.OpsListen); err != nil {
			return usagef("%s %q: want HOST:PORT (%v)", c.name("opsListen"), c.OpsListen, err)
		}
	}
	if c.Pprof && c.OpsListen == "" {
		return usagef("%s needs %s: the profiles are served only on the ops listener, which has no token",
			c.name("pprof"), c.name("opsListen"))
	}
	if c.NoToken && !c.Stdio && !isLoopbackHost(host) {
		return usagef("%s %q with %s: refusing to accept unauthenticated connections on a non-loopback address",
			c.name("listen"), c.Listen, c.name("noToken"))
	}
	seen := map[string]bool{}
	for i, a := range c.Agents {
		name := func(field string) string {
			if a.flag != "" {
				return fmt.Sprintf("--acp %q", a.flag)
			}
			return c.src.name(fmt.Sprintf("agents[%d].%s", i, field), "")
		}
		if a.ID == "" {
			return usagef("%s: the provider id is missing", name("id"))
		}
		if strings.TrimSpace(a.Command) == "" {
			return usagef("%s: the command of provider %s is missing", name("command"), a.ID)
		}
		if _, err := splitCommand(a.Command); err != nil {
			return usagef("%s: the command %v", name("command"), err)
		}
		if _, err := a.mcpServers(); err != nil {
			return usagef("%s: %v", name("mcpServers"), err)
		}
		if seen[a.ID] {
			return usagef("%s: provider id %q is used twice", name("id"), a.ID)
		}
		seen[a.ID] = true
	}
	for i, a := range c.AgentChannels {
		name := func(field string) string {
			if a.flag != "" {
				return fmt.Sprintf("--agentchan %q", a.flag)
			}
			return c.src.name(fmt.Sprintf("agentChannels[%d].%s", i, field), "")
		}
		if a.ID == "" {
			return usagef("%s: the provider id is missing", name("id"))
		}
		if !strings.HasPrefix(a.URL, "ws://") && !strings.HasPrefix(a.URL, "wss://") {
			return usagef("%s: url %q must start with ws:// or wss://", name("url"), a.URL)
		}
		if seen[a.ID] {
			return usagef("%s: provider id %q is used twice", name("id"), a.ID)
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
		return nil, fmt.Errorf("has an unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("is empty")
	}
	return words, nil
}
