//go:build unix

package acp

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFileServicesReadOnly: with ReadOnlyFiles (--read-only-files) every
// fs/write_text_file is refused and the disk stays as it was; reads still
// work.
func TestFileServicesReadOnly(t *testing.T) {
	p := scriptProvider(t, func(c *Config) { c.ReadOnlyFiles = true })
	s, rec, dir := openSession(t, p)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("keep"), 0o644))
	for _, text := range []string{"write a.txt replaced", "write new.txt x", "write deep/new.txt x"} {
		t.Run(text, func(t *testing.T) {
			rec.reset()
			r := prompt(t, s, text)
			require.NoError(t, r.err)
			assert.Contains(t, rec.text(), "write error: -32602")
			assert.Contains(t, rec.text(), "read-only")
		})
	}
	b, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b))
	for _, gone := range []string{"new.txt", "deep"} {
		_, err := os.Lstat(filepath.Join(dir, gone))
		assert.True(t, os.IsNotExist(err), "%s was created", gone)
	}
	rec.reset()
	r := prompt(t, s, "read a.txt")
	require.NoError(t, r.err)
	assert.Equal(t, "content:keep", rec.text())
}

// TestFileServicesTerminalDir: a terminal's cwd is confined like a path
// of the file services.
func TestFileServicesTerminalDir(t *testing.T) {
	p := scriptProvider(t, nil)
	s, _, dir := openSession(t, p)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644))
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))
	sess := s.(*session)
	real, err := filepath.EvalSymlinks(filepath.Join(dir, "sub"))
	require.NoError(t, err)
	got, err := sess.terminalDir("sub")
	require.NoError(t, err)
	assert.Equal(t, real, got)
	for p, want := range map[string]string{
		"out":     "outside the session's working directory",
		"../":     "outside the session's working directory",
		outside:   "outside the session's working directory",
		"f":       "is not a directory",
		"missing": "no such file",
	} {
		_, err := sess.terminalDir(p)
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), want, p)
	}
}
