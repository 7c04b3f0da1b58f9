//go:build unix

package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unix modes only: on Windows the ACLs of the user's profile apply.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	path := testPath(t)
	s := openTest(t, path, Options{})
	require.NoError(t, s.PutSession(context.Background(), testSession(1))) // makes the WAL exist

	mode := func(p string) fs.FileMode {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	assert.Equal(t, fs.FileMode(0o700), mode(filepath.Dir(path)))
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		assert.Equal(t, fs.FileMode(0o600), mode(p), p)
	}
}
