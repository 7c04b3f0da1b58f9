//go:build unix

package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// client is a connection as a host would present it: the working
// directories of its sessions, which the test changes.
type client struct {
	files Files
	log   zerolog.Logger

	mu   sync.Mutex
	dirs []string
}

func (c *client) Files() *Files           { return &c.files }
func (c *client) Logger() *zerolog.Logger { return &c.log }

func (c *client) WorkingDirectories([]string) (dirs, gone []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.dirs...), nil
}

func (c *client) set(dirs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirs = dirs
}

func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return d
}

// code is the AHP error code of a workspace error (0 for none).
func code(err error) int {
	var we *Error
	if errors.As(err, &we) {
		return we.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

// run checks a command's params and runs it.
func run(op Op, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return op()
}

// TestCommandsFollowTheClientsDirectories: what a connection may touch is
// what the host says its sessions' directories are, at each command.
func TestCommandsFollowTheClientsDirectories(t *testing.T) {
	ctx := context.Background()
	work, other := realDir(t), realDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(work, "a.txt"), []byte("a"), 0o644))
	ws := New(Options{})
	c := &client{}
	t.Cleanup(c.files.Close)
	c.set(FileURI(work))

	res, err := run(ws.List(ctx, c, wire.ResourceListParams{URI: FileURI(work)}))
	require.NoError(t, err)
	assert.Equal(t, []wire.DirectoryEntry{{Name: "a.txt", Type: "file"}}, res.(wire.ResourceListResult).Entries)

	_, err = run(ws.Write(ctx, c, wire.ResourceWriteParams{URI: FileURI(filepath.Join(other, "x")), Data: "x", Encoding: wire.ContentEncodingUtf8}))
	assert.Equal(t, wire.CodePermissionDenied, code(err), "%v", err)
	assert.NoFileExists(t, filepath.Join(other, "x"))

	c.set(FileURI(work), other) // a session in other now: a path works as well as a URI
	_, err = run(ws.Write(ctx, c, wire.ResourceWriteParams{URI: FileURI(filepath.Join(other, "x")), Data: "x", Encoding: wire.ContentEncodingUtf8}))
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(other, "x"))

	c.set() // the sessions are gone
	_, err = run(ws.Resolve(ctx, c, wire.ResourceResolveParams{URI: FileURI(filepath.Join(work, "a.txt"))}))
	assert.Equal(t, wire.CodePermissionDenied, code(err), "%v", err)

	_, err = ws.List(ctx, c, wire.ResourceListParams{URI: "http://x/y"})
	assert.Equal(t, wire.CodeInvalidParams, code(err), "bad params are refused before anything runs: %v", err)

	c.files.Close()
	_, err = run(ws.List(ctx, c, wire.ResourceListParams{URI: FileURI(work)}))
	assert.Error(t, err, "nothing is served once the connection has ended")
}

// TestBrowseRootsAndReadOnly: a browse root is listed and resolved, never
// written; a read-only workspace writes nothing.
func TestBrowseRootsAndReadOnly(t *testing.T) {
	ctx := context.Background()
	work, browse := realDir(t), realDir(t)
	ws := New(Options{ReadOnly: true, BrowseRoots: []string{"", browse, "not/absolute"}})
	c := &client{}
	t.Cleanup(c.files.Close)
	c.set(work)

	_, err := run(ws.List(ctx, c, wire.ResourceListParams{URI: FileURI(browse)}))
	require.NoError(t, err)
	_, err = run(ws.Mkdir(ctx, c, wire.ResourceMkdirParams{URI: FileURI(filepath.Join(browse, "d"))}))
	assert.Equal(t, wire.CodePermissionDenied, code(err), "%v", err)
	_, err = run(ws.Mkdir(ctx, c, wire.ResourceMkdirParams{URI: FileURI(filepath.Join(work, "d"))}))
	assert.Equal(t, wire.CodePermissionDenied, code(err), "read-only: %v", err)
	assert.NoDirExists(t, filepath.Join(work, "d"))
}

// TestWatchReportsAndStops: a watch reports what changes on disk through
// the host's function, until it is stopped; a connection that may no
// longer see it is told so.
func TestWatchReportsAndStops(t *testing.T) {
	ctx := context.Background()
	work := realDir(t)
	ws := New(Options{MaxWatchDirectories: 10})
	c := &client{}
	t.Cleanup(c.files.Close)
	c.set(work)

	_, err := ws.Watch(ctx, c, wire.CreateResourceWatchParams{URI: FileURI(work), Excludes: &wire.GlobList{Items: []string{"/abs"}}})
	assert.Equal(t, wire.CodeInvalidParams, code(err), "%v", err)

	start, err := ws.Watch(ctx, c, wire.CreateResourceWatchParams{URI: FileURI(work), Excludes: &wire.GlobList{Items: []string{"skip"}}})
	require.NoError(t, err)
	w, err := start()
	require.NoError(t, err)
	changes := make(chan wire.ResourceChange, 64)
	require.True(t, ws.RunWatch("ahp-resource-watch:/w", w, func(cs []wire.ResourceChange) {
		for _, ch := range cs {
			changes <- ch
		}
	}))
	n, dirs := ws.WatchStats()
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, dirs)

	require.NoError(t, os.WriteFile(filepath.Join(work, "skip"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "new"), nil, 0o644))
	select {
	case ch := <-changes:
		assert.Equal(t, wire.ResourceChange{URI: FileURI(filepath.Join(work, "new")), Type: wire.ResourceChangeTypeAdded}, ch)
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported")
	}

	assert.NoError(t, ws.Subscribing(ctx, c, "ahp-resource-watch:/w"))
	assert.True(t, ws.ReleasableWatch("ahp-resource-watch:/w", false), "subscribed once: released when nobody watches")
	assert.True(t, ws.MaySee(ctx, c, "ahp-resource-watch:/w"))
	c.set()
	assert.False(t, ws.MaySee(ctx, c, "ahp-resource-watch:/w"), "the session that let it see is gone")
	assert.Equal(t, []string{"ahp-resource-watch:/w"}, ws.UnseenCreated(ctx, c))
	assert.Equal(t, wire.CodePermissionDenied, code(ws.Subscribing(ctx, c, "ahp-resource-watch:/w")))

	ws.StopWatch("ahp-resource-watch:/w")
	n, _ = ws.WatchStats()
	assert.Zero(t, n)
	assert.Empty(t, ws.CloseWatches())
	ws.WaitWatches()
}
