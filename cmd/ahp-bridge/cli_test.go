package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/host"
)

// runCLI runs the command line in process, without a terminal.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestEveryCommandHasUsage is finding 8 of issue 11: --help of every
// command prints its usage on stdout, with its flags spelt with two dashes.
func TestEveryCommandHasUsage(t *testing.T) {
	for _, cmd := range []string{"serve", "sessions", "client", "demo", "demo-agent", "version"} {
		t.Run(cmd, func(t *testing.T) {
			code, out, errOut := runCLI(t, cmd, "--help")
			assert.Equal(t, exitOK, code)
			assert.Empty(t, errOut)
			assert.True(t, strings.HasPrefix(out, "usage: ahp-bridge "+cmd), "usage of %s:\n%s", cmd, out)
			for _, line := range strings.Split(out, "\n") {
				assert.False(t, regexp.MustCompile(`^\s+-[a-z]`).MatchString(line), "a flag with one dash: %q", line)
			}
			_, viaHelp, _ := runCLI(t, "help", cmd)
			assert.Equal(t, out, viaHelp, "`help %s` prints the same", cmd)
		})
	}
	code, out, _ := runCLI(t, "serve", "-h")
	assert.Equal(t, exitOK, code)
	for _, flag := range []string{"--listen HOST:PORT", "--acp ID=COMMAND", "--approve POLICY", "--max-sessions N", "--stdio\n"} {
		assert.Contains(t, out, "  "+flag)
	}
}

func TestUsageMistakesAreSaidOnce(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--bogus"}, "ahp-bridge serve: unknown flag --bogus\n"},
		{[]string{"serve", "extra"}, "ahp-bridge serve: unexpected argument \"extra\" (serve takes only flags)\n"},
		{[]string{"serve", "--replay-buffer", "many"}, "ahp-bridge serve: --replay-buffer \"many\": not a number\n"},
		{[]string{"serve", "--listen"}, "ahp-bridge serve: --listen needs a value\n"},
		{[]string{"demo", "now"}, "ahp-bridge demo: unexpected argument \"now\" (demo takes none)\n"},
		{[]string{"client", "--nope"}, "ahp-bridge client: unknown flag --nope\n"},
		{[]string{"version", "--short"}, "ahp-bridge version: unknown flag --short\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.True(t, strings.HasPrefix(errOut, tc.want), "stderr:\n%s", errOut)
			assert.Equal(t, 1, strings.Count(errOut, "ahp-bridge "+tc.args[0]+":"), "said once:\n%s", errOut)
			assert.NotContains(t, errOut, "flag provided but not defined")
			assert.Contains(t, errOut, "Run 'ahp-bridge "+tc.args[0]+" --help' for more.")
		})
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cfg.json")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// TestConfigProblemsNameKeys: a problem in the file names the key (not a
// flag, not a Go field) and where it is; broken JSON gets its line and
// column.
func TestConfigProblemsNameKeys(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{"wrong type", `{"replayBuffer": "x"}`, nil, `:1:18: replayBuffer: want a whole number, not the string "x"`},
		{"nested wrong type", "{\"agents\": [\n  {\"id\": \"a\", \"command\": \"x\", \"env\": {\"K\": 1}}\n]}", nil, `:2:44: agents[0].env.K: want a string, not the number 1`},
		{"unknown key", `{"agents":[{"id":"a","command":"x","typo":1}]}`, nil, `:1:36: unknown key agents[0].typo`},
		{"unknown top-level key", "{\n  \"listen\": \"127.0.0.1:0\",\n  \"approval\": \"all\"\n}", nil, `:3:3: unknown key approval`},
		{"broken JSON", "{\n  \"listen\": \"127.0.0.1:0\",,\n}", nil, `:2:27: broken JSON: invalid character ','`},
		{"cut short", `{"agents": [`, nil, `:1:13: broken JSON: the file ends in the middle of a value`},
		{"bad value", `{"approve": "maybe"}`, nil, `:1:13: approve: unknown approval policy "maybe": want ask, all, reads or none`},
		{"bad limit", `{"maxPendingRequests": -2}`, nil, `:1:24: maxPendingRequests -2: must be at least 1`},
		{"missing command", `{"agents": [{"id": "a"}]}`, nil, `:1:13: agents[0].command: the command of provider a is missing`},
		{"bad command", `{"agents": [{"id": "a", "command": "x 'y"}]}`, nil, `:1:36: agents[0].command: the command has an unterminated ' quote`},
		{"duplicate id", `{"agents": [{"id": "a", "command": "x"}], "agentChannels": [{"id": "a", "url": "ws://h/"}]}`, nil, `:1:68: agentChannels[0].id: provider id "a" is used twice`},
		{"bad ops address", `{"opsListen": "nope"}`, nil, `:1:15: opsListen "nope": want HOST:PORT`},
		{"profiles without the ops listener", `{"pprof": true}`, nil, `pprof needs --ops-listen`},
		{"the profile flag without the ops listener", `{}`, []string{"--pprof"}, `--pprof needs --ops-listen`},
		{"the flag wins and is named", `{"approve": "all"}`, []string{"--approve", "maybe"}, `--approve: unknown approval policy "maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.file)
			_, err := parseServeConfig(append([]string{"--config", path}, tc.args...))
			require.Error(t, err)
			var ue *usageError
			require.ErrorAs(t, err, &ue)
			msg := err.Error()
			if strings.HasPrefix(tc.want, ":") {
				assert.Equal(t, "config file "+path+tc.want, msg[:min(len(msg), len("config file "+path+tc.want))], "message: %s", msg)
			} else {
				assert.Contains(t, msg, tc.want)
			}
			assert.NotRegexp(t, `Go struct|Config\.|AgentConfig|json: `, msg)
		})
	}
}

// TestFlagsWinOverTheFile is finding 9 of issue 11: a flag wins over the
// file, and a repeatable flag replaces the file's whole list.
func TestFlagsWinOverTheFile(t *testing.T) {
	path := writeConfig(t, `{
		"listen": "127.0.0.1:9999", "approve": "all", "replayBuffer": 10,
		"allowOrigins": ["https://file.example"],
		"agents": [{"id": "fromfile", "command": "agent --acp", "args": ["--model", "big one"], "cwd": "/srv"}],
		"agentChannels": [{"id": "ws1", "url": "wss://h/ws"}]
	}`)
	cfg, err := parseServeConfig([]string{"--config", path})
	require.NoError(t, err)
	assert.Equal(t, "all", cfg.Approve)
	require.Len(t, cfg.Agents, 1)
	assert.Equal(t, []string{"--model", "big one"}, cfg.Agents[0].Args)

	cfg, err = parseServeConfig([]string{"--config", path, "--approve", "none", "--allow-origin", "https://flag.example",
		"--acp", "a=one", "--acp", "b=two"})
	require.NoError(t, err)
	assert.Equal(t, "none", cfg.Approve)
	assert.Equal(t, "127.0.0.1:9999", cfg.Listen, "what no flag says comes from the file")
	assert.Equal(t, 10, cfg.ReplayBuffer)
	assert.Equal(t, []string{"https://flag.example"}, cfg.AllowOrigins, "--allow-origin replaces allowOrigins")
	var ids []string
	for _, a := range cfg.Agents {
		ids = append(ids, a.ID)
	}
	assert.Equal(t, []string{"a", "b"}, ids, "--acp replaces agents")
	require.Len(t, cfg.AgentChannels, 1, "agentChannels is another list: --acp leaves it")
	assert.Equal(t, "ws1", cfg.AgentChannels[0].ID)
}

func TestDefaultLimitsAreTheHosts(t *testing.T) {
	cfg, err := parseServeConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, host.DefaultMaxSessions, cfg.MaxSessions)
	assert.Equal(t, host.DefaultMaxSubscriptionsPerConn, cfg.MaxSubscriptions)
}

func TestJoinPrefix(t *testing.T) {
	for _, tc := range []struct{ exe, arg0, want string }{
		{"/tmp/go-build123/b001/exe/ahp-bridge", "/tmp/go-build123/b001/exe/ahp-bridge", "go run ./cmd/ahp-bridge"},
		{"/home/u/.cache/go-build/ab/cd-d/ahp-bridge", "ahp-bridge", "go run ./cmd/ahp-bridge"},
		{"/usr/local/bin/ahp-bridge", "ahp-bridge", "ahp-bridge"},
		{"/src/ahp-bridge", "./ahp-bridge", "./ahp-bridge"},
		{"/my dir/ahp-bridge", "/my dir/ahp-bridge", "'/my dir/ahp-bridge'"},
	} {
		assert.Equal(t, tc.want, joinPrefix(tc.exe, tc.arg0), "%s %s", tc.exe, tc.arg0)
	}
}
