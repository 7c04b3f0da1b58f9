package sandbox

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMoveAcrossFileSystems moves between a root on the test's disk and
// one on the tmpfs at /dev/shm, where rename(2) answers EXDEV and Move
// must copy and then delete.
func TestMoveAcrossFileSystems(t *testing.T) {
	w := newWorld(t)
	shm, err := os.MkdirTemp("/dev/shm", "sandbox-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(shm) })
	var a, b syscall.Stat_t
	require.NoError(t, syscall.Stat(w.root, &a))
	require.NoError(t, syscall.Stat(shm, &b))
	require.NotEqual(t, a.Dev, b.Dev, "the test needs two file systems")

	w.file(t, "f.txt", "file")
	w.file(t, "tree/deep/g.txt", "deep")
	w.link(t, "deep/g.txt", "tree/link")
	w.link(t, "f.txt", "alias")
	w.file(t, "exists.txt", "x")
	require.NoError(t, os.WriteFile(shm+"/exists.txt", []byte("kept"), 0o644))
	s := newBox(t, Options{}, w.root, shm)
	ctx := context.Background()

	require.NoError(t, s.Move(ctx, w.in("f.txt"), shm+"/f.txt", false))
	got, err := os.ReadFile(shm + "/f.txt")
	require.NoError(t, err)
	assert.Equal(t, "file", string(got))
	assert.NoFileExists(t, w.in("f.txt"))

	require.NoError(t, s.Move(ctx, w.in("tree"), shm+"/tree", false))
	got, err = os.ReadFile(shm + "/tree/deep/g.txt")
	require.NoError(t, err)
	assert.Equal(t, "deep", string(got))
	target, err := os.Readlink(shm + "/tree/link")
	require.NoError(t, err)
	assert.Equal(t, "deep/g.txt", target)
	assert.NoDirExists(t, w.in("tree"))

	require.NoError(t, s.Move(ctx, w.in("alias"), shm+"/alias", false))
	target, err = os.Readlink(shm + "/alias")
	require.NoError(t, err)
	assert.Equal(t, "f.txt", target, "a link moves as a link")

	requireKind(t, s.Move(ctx, w.in("exists.txt"), shm+"/exists.txt", true), ErrAlreadyExists)
	got, err = os.ReadFile(shm + "/exists.txt")
	require.NoError(t, err)
	assert.Equal(t, "kept", string(got))
	assert.FileExists(t, w.in("exists.txt"))
	noTempFiles(t, shm)
}
