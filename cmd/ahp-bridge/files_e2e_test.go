//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// filesClient connects to a running bridge and opens a session of the
// scripted agent working in a fresh directory, which it returns with
// every link of its path resolved.
func filesClient(t *testing.T, url string) (*client.Client, string, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	c, err := client.Dial(bridgetest.Context(t, 10*time.Second), url, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(bridgetest.Context(t, 10*time.Second), client.RootChannel)
	require.NoError(t, err)
	return c, bridgetest.CreateSession(t, c, "demo", dir), dir
}

// turn runs a prompt to its end and returns what the agent answered.
func turn(t *testing.T, c *client.Client, session, text string) string {
	t.Helper()
	id := bridgetest.StartTurn(t, c, session, text)
	tr := bridgetest.WaitTurnEnd(t, c, session, id, 60*time.Second)
	var b strings.Builder
	for _, p := range tr.ResponseParts {
		if m, ok := p.Value.(*wire.MarkdownResponsePart); ok {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// waitChange waits for a resourceWatch/changed on watch reporting uri as
// typ.
func waitChange(t *testing.T, c *client.Client, watch, uri string, typ wire.ResourceChangeType) {
	t.Helper()
	ctx := bridgetest.Context(t, 30*time.Second)
	for {
		ev, err := c.Next(ctx)
		require.NoError(t, err, "waiting for %s %s", typ, uri)
		if ev.Envelope == nil || ev.Channel != watch {
			continue
		}
		a, ok := ev.Envelope.Action.Value.(*wire.ResourceWatchChangedAction)
		require.True(t, ok, "%T on a watch channel", ev.Envelope.Action.Value)
		for _, ch := range a.Changes.Items {
			if ch.URI == uri && ch.Type == typ {
				return
			}
		}
	}
}

// TestServeAgentEditsShowUpInAWatch: what the agent writes, through
// fs/write_text_file or a command in a terminal, reaches a client's
// resource watch like any other change, and the client reads it back.
func TestServeAgentEditsShowUpInAWatch(t *testing.T) {
	url, _, _ := startServe(t)
	c, session, dir := filesClient(t, url)
	var w wire.CreateResourceWatchResult
	require.NoError(t, c.Call(bridgetest.Context(t, 10*time.Second), wire.MethodCreateResourceWatch,
		wire.CreateResourceWatchParams{Channel: client.RootChannel, URI: mapping.FileURI(dir), Recursive: wire.Ptr(true)}, &w))
	_, err := c.Subscribe(bridgetest.Context(t, 10*time.Second), w.Channel)
	require.NoError(t, err)

	assert.Equal(t, "wrote notes/agent.txt", turn(t, c, session, "write notes/agent.txt written by the agent"))
	waitChange(t, c, w.Channel, mapping.FileURI(filepath.Join(dir, "notes", "agent.txt")), wire.ResourceChangeTypeAdded)

	answer := turn(t, c, session, "terminal echo from a terminal > terminal.txt")
	assert.Contains(t, answer, "exit=0")
	waitChange(t, c, w.Channel, mapping.FileURI(filepath.Join(dir, "terminal.txt")), wire.ResourceChangeTypeAdded)

	var rr wire.ResourceReadResult
	require.NoError(t, c.Call(bridgetest.Context(t, 10*time.Second), wire.MethodResourceRead,
		wire.ResourceReadParams{Channel: client.RootChannel, URI: mapping.FileURI(filepath.Join(dir, "notes", "agent.txt"))}, &rr))
	assert.Equal(t, "written by the agent", rr.Data)
	require.NoError(t, c.Call(bridgetest.Context(t, 10*time.Second), wire.MethodResourceRead,
		wire.ResourceReadParams{Channel: client.RootChannel, URI: mapping.FileURI(filepath.Join(dir, "terminal.txt"))}, &rr))
	assert.Equal(t, "from a terminal\n", rr.Data)
}

// TestServeReadOnlyFiles: with --read-only-files neither a client nor the
// agent can change a file through the bridge; both can still read.
func TestServeReadOnlyFiles(t *testing.T) {
	url, _, _ := startServe(t, "--read-only-files")
	c, session, dir := filesClient(t, url)
	keep := filepath.Join(dir, "keep.txt")
	require.NoError(t, os.WriteFile(keep, []byte("as it was"), 0o644))

	err := c.Call(bridgetest.Context(t, 10*time.Second), wire.MethodResourceWrite, wire.ResourceWriteParams{
		Channel: client.RootChannel, URI: mapping.FileURI(keep), Data: "changed", Encoding: wire.ContentEncodingUtf8}, nil)
	var re *client.RPCError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, wire.CodePermissionDenied, re.Code)
	assert.Contains(t, re.Message, "read-only")

	answer := turn(t, c, session, "write keep.txt changed by the agent")
	assert.Contains(t, answer, "write error: -32602")
	assert.Contains(t, answer, "read-only")
	answer = turn(t, c, session, "write new.txt created by the agent")
	assert.Contains(t, answer, "write error: -32602")

	b, err := os.ReadFile(keep)
	require.NoError(t, err)
	assert.Equal(t, "as it was", string(b))
	_, err = os.Lstat(filepath.Join(dir, "new.txt"))
	assert.True(t, os.IsNotExist(err), "the agent created a file")
	assert.Equal(t, "content:as it was", turn(t, c, session, "read keep.txt"))
	var rr wire.ResourceReadResult
	require.NoError(t, c.Call(bridgetest.Context(t, 10*time.Second), wire.MethodResourceRead,
		wire.ResourceReadParams{Channel: client.RootChannel, URI: mapping.FileURI(keep)}, &rr))
	assert.Equal(t, "as it was", rr.Data)
}

func TestReadOnlyFilesSetting(t *testing.T) {
	cfg, err := parseServeConfig(nil)
	require.NoError(t, err)
	assert.False(t, cfg.ReadOnlyFiles)
	cfg, err = parseServeConfig([]string{"--read-only-files"})
	require.NoError(t, err)
	assert.True(t, cfg.ReadOnlyFiles)
	file := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"readOnlyFiles": true}`), 0o600))
	cfg, err = parseServeConfig([]string{"--config", file})
	require.NoError(t, err)
	assert.True(t, cfg.ReadOnlyFiles)
	cfg, err = parseServeConfig([]string{"--config", file, "--read-only-files=false"})
	require.NoError(t, err)
	assert.False(t, cfg.ReadOnlyFiles, "the flag wins over the file")
	require.NoError(t, os.WriteFile(file, []byte(`{"readOnlyFiles": "yes"}`), 0o600))
	_, err = parseServeConfig([]string{"--config", file})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "readOnlyFiles")
}
