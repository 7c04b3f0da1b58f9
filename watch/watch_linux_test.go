package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inotifyInstances counts this process's open inotify instances.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

func TestCloseReleasesTheInotifyInstance(t *testing.T) {
	root := tempRoot(t)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	before := inotifyInstances(t)
	w, err := New(context.Background(), root, Options{Recursive: true})
	require.NoError(t, err)
	assert.Equal(t, before+1, inotifyInstances(t))
	assert.Equal(t, 3, w.Watched())
	require.NoError(t, w.Close())
	assert.Equal(t, before, inotifyInstances(t), "Close released the inotify instance and with it every watch")

	// A failed New releases it too.
	_, err = New(context.Background(), root, Options{Recursive: true, MaxWatches: 1})
	require.Error(t, err)
	assert.Equal(t, before, inotifyInstances(t))
}
