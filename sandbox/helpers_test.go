//go:build unix

package sandbox

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()

	goleak.VerifyTestMain(m)
}

// world is a root directory and, beside it, an outside directory holding
// a canary file that no test may ever read or change.
type world struct {
	base, root, outside, canary string
}

const canaryText = "canary: must never be read or written through the sandbox"

func newWorld(t *testing.T) world {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	w := world{base: base, root: filepath.Join(base, "work"), outside: filepath.Join(base, "outside")}
	require.NoError(t, os.Mkdir(w.root, 0o755))
	require.NoError(t, os.Mkdir(w.outside, 0o755))
	w.canary = filepath.Join(w.outside, "secret.txt")
	require.NoError(t, os.WriteFile(w.canary, []byte(canaryText), 0o644))
	t.Cleanup(func() { w.checkCanary(t) })
	return w
}

// checkCanary fails the test if anything outside changed.
func (w world) checkCanary(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(w.canary)
	require.NoError(t, err)
	assert.Equal(t, canaryText, string(b), "the canary outside the root changed")
	entries, err := os.ReadDir(w.outside)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"secret.txt"}, names, "something was created outside the root")
}

func (w world) in(parts ...string) string {
	return filepath.Join(append([]string{w.root}, parts...)...)
}

func (w world) file(t *testing.T, rel, content string) string {
	t.Helper()
	p := w.in(rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func (w world) link(t *testing.T, target, rel string) {
	t.Helper()
	require.NoError(t, os.Symlink(target, w.in(rel)))
}

func newBox(t *testing.T, opts Options, roots ...string) *Sandbox {
	t.Helper()
	s, err := New(opts, roots...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func requireKind(t *testing.T, err error, want Kind, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	assert.Equal(t, want, KindOf(err), "error %q has kind %v, want %v", err, KindOf(err), want)
	assert.True(t, errors.Is(err, want), "errors.Is(%q, %v)", err, want)
	var se *Error
	assert.True(t, errors.As(err, &se), "%q is not a *sandbox.Error", err)
}

// readAll reads a whole file through the sandbox.
func readAll(t *testing.T, s *Sandbox, name string) (string, error) {
	t.Helper()
	got, err := readString(context.Background(), s, name)
	if err != nil && KindOf(err) == 0 {
		require.NoError(t, err)
	}
	return got, err
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		assert.NotContains(t, d.Name(), ".ahp-", "temporary file left behind: %s", p)
		return nil
	})
	require.NoError(t, err)
}

// readString reads a whole file through the sandbox; safe off the test
// goroutine.
func readString(ctx context.Context, s *Sandbox, name string) (string, error) {
	f, err := s.Open(ctx, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}
