//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/mapping"
)

// TestServeBrowseRoots: the binary with --default-directory and
// --browse-root names the default directory in the initialize result and
// lets a client with no session list both, but not read a file there.
func TestServeBrowseRoots(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	home, extra := filepath.Join(base, "home"), filepath.Join(base, "extra")
	require.NoError(t, os.MkdirAll(filepath.Join(home, "proj"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(extra, "repo"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "notes.txt"), []byte("private"), 0o644))

	url, _, _ := startServe(t, "--default-directory", home, "--browse-root", extra)
	ctx := bridgetest.Context(t, 10*time.Second)
	c, err := client.Dial(ctx, url, client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	res, err := c.Initialize(ctx, client.RootChannel)
	require.NoError(t, err)
	require.NotNil(t, res.DefaultDirectory)
	assert.Equal(t, mapping.FileURI(home), *res.DefaultDirectory)

	for dir, want := range map[string][]wire.DirectoryEntry{
		home:  {{Name: "notes.txt", Type: "file"}, {Name: "proj", Type: "directory"}},
		extra: {{Name: "repo", Type: "directory"}},
	} {
		var lr wire.ResourceListResult
		require.NoError(t, c.Call(ctx, wire.MethodResourceList, wire.ResourceListParams{Channel: client.RootChannel, URI: mapping.FileURI(dir)}, &lr))
		assert.Equal(t, want, lr.Entries, dir)
	}
	err = c.Call(ctx, wire.MethodResourceRead, wire.ResourceReadParams{Channel: client.RootChannel, URI: mapping.FileURI(filepath.Join(home, "notes.txt"))}, nil)
	var re *client.RPCError
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, wire.CodePermissionDenied, re.Code)
	err = c.Call(ctx, wire.MethodResourceList, wire.ResourceListParams{Channel: client.RootChannel, URI: mapping.FileURI(base)}, nil)
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, wire.CodePermissionDenied, re.Code, "the roots' parent is not browsable")
}
