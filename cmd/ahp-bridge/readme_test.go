package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// readmeSection returns the README's text from the heading to the next
// heading of the same level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	require.NoError(t, err)
	text := string(data)
	i := strings.Index(text, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "README.md has no %q", heading)
	rest := text[i+len(heading)+2:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestReadmeShowsTheDefaults is finding 9 of issue 11: the README's
// configuration table states the defaults the command applies.
func TestReadmeShowsTheDefaults(t *testing.T) {
	var cfg Config
	cfg.applyDefaults()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	var defaults map[string]any
	require.NoError(t, json.Unmarshal(b, &defaults))

	// | `--flag …` | `key` | default | meaning |, where the flag cell may hold escaped bars.
	row := regexp.MustCompile(`^\| ` + "`" + `--(?:\\\||[^|])*\| ` + "`" + `([a-zA-Z]+)` + "`" + ` \| ([^|]*) \|`)
	checked := 0
	for _, line := range strings.Split(readmeSection(t, "## Configuration"), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key, doc := m[1], strings.Trim(strings.TrimSpace(m[2]), "`")
		want, ok := defaults[key]
		if !ok {
			continue // no default: off, none, random
		}
		got := doc
		if n, ok := strings.CutSuffix(doc, " MiB"); ok {
			v, err := strconv.Atoi(n)
			require.NoError(t, err, "%s: %q", key, doc)
			got = strconv.Itoa(v << 20)
		}
		assert.Equal(t, fmtDefault(want), got, "README default of %s", key)
		checked++
	}
	assert.Equal(t, len(defaults), checked, "every default is in the table: %v", defaults)
}

func fmtDefault(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return v.(string)
}

// TestReadmeConfigExampleLoads: the README's example file uses only keys
// the command knows, agents[].args included.
func TestReadmeConfigExampleLoads(t *testing.T) {
	section := readmeSection(t, "## Configuration")
	start := strings.Index(section, "```json\n")
	require.GreaterOrEqual(t, start, 0)
	example := section[start+len("```json\n"):]
	example = example[:strings.Index(example, "```")]
	cfg, err := loadConfigFile(writeConfig(t, example))
	require.NoError(t, err)
	var args, cwd bool
	for _, a := range cfg.Agents {
		args = args || len(a.Args) > 0
		cwd = cwd || a.Cwd != ""
	}
	assert.True(t, args, "the example shows agents[].args")
	assert.True(t, cwd, "the example shows agents[].cwd")
	for _, key := range []string{"`agents[].args`", "`agents[].cwd`"} {
		assert.Contains(t, section, key, "the README explains %s", key)
	}
}

// TestReadmeTryItCommandsWork is finding 7 of issue 11, end to end: the
// README's `serve --acp demo="$(pwd)/ahp-bridge demo-agent"` and `client`
// lines, run through a shell from the folder holding the binary, complete
// a turn. Two changes keep it a test: port 0 instead of 8081, and
// --approve-all since there is no one to ask.
func TestReadmeTryItCommandsWork(t *testing.T) {
	var serveLine, clientLine string
	for _, l := range strings.Split(readmeSection(t, "## Try it"), "\n") {
		switch {
		case strings.HasPrefix(l, "./ahp-bridge serve "):
			serveLine = l
		case strings.HasPrefix(l, "./ahp-bridge client "):
			clientLine = l
		}
	}
	require.Contains(t, serveLine, `--acp demo="$(pwd)/ahp-bridge demo-agent"`)
	require.NotEmpty(t, clientLine)

	dir := t.TempDir()
	require.NoError(t, os.Symlink(bridgetest.Binary(t), filepath.Join(dir, "ahp-bridge")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# A project\n"), 0o644))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	serve := exec.CommandContext(ctx, "/bin/sh", "-c", "exec "+strings.Replace(serveLine, ":8081", ":0", 1))
	serve.Dir = dir
	stdout, err := serve.StdoutPipe()
	require.NoError(t, err)
	serveErr := &lockedWriter{w: &bytes.Buffer{}}
	serve.Stderr = serveErr
	require.NoError(t, serve.Start())
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan(), "no READY line; stderr:\n%s", readLocked(serveErr))
	url, ok := strings.CutPrefix(sc.Text(), "READY ")
	require.True(t, ok, "first line %q", sc.Text())

	quotedURL := regexp.MustCompile(`'ws://[^']*'`)
	line := quotedURL.ReplaceAllString(clientLine, "'"+url+"'")
	line = strings.Replace(line, "./ahp-bridge client ", "./ahp-bridge client --approve-all ", 1)
	client := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	client.Dir = dir
	out, err := client.CombinedOutput()
	require.NoError(t, err, "%s\n%s\nserve stderr:\n%s", line, out, readLocked(serveErr))
	assert.Contains(t, string(out), "# A project", "the agent read the README of the client's directory")
	assert.Contains(t, string(out), "Done.")
}
