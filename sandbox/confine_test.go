//go:build unix

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfinement(t *testing.T) {
	w := newWorld(t)
	w.file(t, "a.txt", "alpha")
	w.file(t, "sub/b.txt", "beta")
	w.link(t, w.canary, "link-out")
	w.link(t, filepath.Join(w.outside, "missing.txt"), "link-out-missing")
	w.link(t, "../outside/secret.txt", "link-out-relative")
	w.link(t, w.outside, "dir-out")
	w.link(t, "/dev/null", "null")
	w.link(t, w.in("a.txt"), "link-in")
	w.link(t, "sub/b.txt", "link-in-relative")
	w.link(t, "link-in", "link-chain")
	w.link(t, "../a.txt", "sub/link-up")
	w.link(t, "loop2", "loop1")
	w.link(t, "loop1", "loop2")
	require.NoError(t, syscall.Mkfifo(w.in("fifo"), 0o644))
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	tests := []struct {
		name string
		want Kind   // 0: resolves
		real string // the real path when it resolves
	}{
		{"a.txt", 0, w.in("a.txt")},
		{w.in("a.txt"), 0, w.in("a.txt")},
		{w.in("sub", "..", "a.txt"), 0, w.in("a.txt")},
		{"./sub/./b.txt", 0, w.in("sub", "b.txt")},
		{w.in("link-in"), 0, w.in("a.txt")},
		{"link-in-relative", 0, w.in("sub", "b.txt")},
		{"link-chain", 0, w.in("a.txt")},
		{"sub/link-up", 0, w.in("a.txt")},
		{w.root, 0, w.root},
		{w.root + "/", 0, w.root},
		{"../outside/secret.txt", ErrOutside, ""},
		{w.in("..", "outside", "secret.txt"), ErrOutside, ""},
		{w.in("..", "..", "..", "..", "..", "..", "etc", "passwd"), ErrOutside, ""},
		{w.canary, ErrOutside, ""},
		{filepath.Join(w.outside, "missing.txt"), ErrOutside, ""},
		{"/etc/passwd", ErrOutside, ""},
		{"/", ErrOutside, ""},
		{w.base, ErrOutside, ""},
		{w.root + "-sibling/x", ErrOutside, ""},
		{"link-out", ErrOutside, ""},
		{"link-out-missing", ErrOutside, ""},
		{"link-out-relative", ErrOutside, ""},
		{"dir-out/secret.txt", ErrOutside, ""},
		{"dir-out/missing.txt", ErrOutside, ""},
		{"null", ErrOutside, ""},
		{"loop1", ErrInvalid, ""},
		{"fifo", ErrInvalid, ""},
		{"missing.txt", ErrNotFound, ""},
		{"a.txt/below", ErrNotFound, ""},
		{"", ErrInvalid, ""},
		{"a.txt\x00/etc/passwd", ErrInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, "/", "|"), func(t *testing.T) {
			info, err := s.Resolve(ctx, tt.name, true)
			if tt.want != 0 {
				requireKind(t, err, tt.want)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", tt.name), "the message names the path as given")
				if tt.want == ErrOutside {
					var se *Error
					require.True(t, errors.As(err, &se))
					assert.Nil(t, se.Err, "an outside refusal carries no underlying error")
					assert.Equal(t, fmt.Sprintf("resolve %q: %v", tt.name, ErrOutside), err.Error(),
						"an outside refusal says nothing but that")
				}
				_, err = readAll(t, s, tt.name)
				requireKind(t, err, tt.want, "read")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.real, info.Path)
		})
	}

	// The two outside refusals read the same whether the target exists.
	_, e1 := s.Resolve(ctx, "link-out", true)
	_, e2 := s.Resolve(ctx, "link-out-missing", true)
	assert.Equal(t, strings.Replace(e1.Error(), "link-out", "X", 1), strings.Replace(e2.Error(), "link-out-missing", "X", 1))
	_, e1 = s.Resolve(ctx, w.canary, true)
	_, e2 = s.Resolve(ctx, filepath.Join(w.outside, "missing.txt"), true)
	assert.Equal(t, strings.Replace(e1.Error(), "secret.txt", "X", 1), strings.Replace(e2.Error(), "missing.txt", "X", 1))

	// Not following the last link reports the link itself.
	info, err := s.Resolve(ctx, "link-out", false)
	require.NoError(t, err)
	assert.Equal(t, TypeSymlink, info.Type)
	assert.Equal(t, w.in("link-out"), info.Path)
}

func TestRefusesOutsideForEveryOperation(t *testing.T) {
	w := newWorld(t)
	w.file(t, "a.txt", "alpha")
	w.link(t, w.canary, "link-out")
	w.link(t, w.outside, "dir-out")
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()
	data := func() *strings.Reader { return strings.NewReader("overwritten") }

	for _, p := range []string{w.canary, "link-out", "dir-out/secret.txt", "dir-out/new.txt", "../outside/new.txt"} {
		t.Run(strings.ReplaceAll(p, "/", "|"), func(t *testing.T) {
			_, err := s.Write(ctx, p, data(), WriteOptions{})
			requireKind(t, err, ErrOutside, "write")
			_, err = s.Write(ctx, p, data(), WriteOptions{Mode: WriteAppend})
			requireKind(t, err, ErrOutside, "append")
			_, err = s.Write(ctx, p, data(), WriteOptions{MakeParents: true})
			requireKind(t, err, ErrOutside, "write with parents")
			_, err = s.Read(ctx, p, EncodingAuto)
			requireKind(t, err, ErrOutside, "read")
			requireKind(t, s.Copy(ctx, p, "copied.txt", false), ErrOutside, "copy from")
			if p != "link-out" {
				requireKind(t, s.Copy(ctx, "a.txt", p, false), ErrOutside, "copy to")
				requireKind(t, s.Move(ctx, "a.txt", p, false), ErrOutside, "move to")
			}
		})
	}
	// A copy or move onto a link replaces the link, not its target.
	require.NoError(t, s.Copy(ctx, "a.txt", "link-out", false))
	fi, err := os.Lstat(w.in("link-out"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the link was replaced by the copy")
	w.link(t, w.canary, "link-out2")
	require.NoError(t, s.Move(ctx, "link-out", "link-out2", false))
	fi, err = os.Lstat(w.in("link-out2"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the link was replaced by the moved file")

	requireKind(t, s.Mkdir(ctx, "dir-out/newdir/deeper"), ErrOutside, "mkdir")
	requireKind(t, s.Delete(ctx, "dir-out/secret.txt", false), ErrOutside, "delete")
	requireKind(t, s.Delete(ctx, w.canary, false), ErrOutside, "delete")
	requireKind(t, s.Move(ctx, "dir-out/secret.txt", "stolen.txt", false), ErrOutside, "move from")
	_, err = s.List(ctx, "dir-out")
	requireKind(t, err, ErrOutside, "list")
	_, err = s.List(ctx, w.outside)
	requireKind(t, err, ErrOutside, "list")
	_, err = os.Stat(w.in("copied.txt"))
	assert.True(t, os.IsNotExist(err))
	_, err = os.Stat(w.in("stolen.txt"))
	assert.True(t, os.IsNotExist(err))
	b, err := os.ReadFile(w.in("a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha", string(b))
}

// TestDeviceFiles serves /dev itself, so that real device nodes are
// inside the root and only the device check can refuse them (making a
// node needs privileges a test should not rely on).
func TestDeviceFiles(t *testing.T) {
	s := newBox(t, Options{}, "/dev")
	ctx := context.Background()
	for _, name := range []string{"/dev/null", "/dev/zero", "null"} {
		_, err := s.Open(ctx, name)
		requireKind(t, err, ErrInvalid, "open %s", name)
		assert.Contains(t, err.Error(), "not a regular file")
		_, err = s.Resolve(ctx, name, true)
		requireKind(t, err, ErrInvalid, "resolve %s", name)
		_, err = s.Write(ctx, name, strings.NewReader("x"), WriteOptions{Mode: WriteAppend})
		requireKind(t, err, ErrInvalid, "write %s", name)
		requireKind(t, s.Copy(ctx, name, "/dev/copied-null", false), ErrInvalid, "copy %s", name)
	}
	entries, err := s.List(ctx, "/dev")
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotEqual(t, "null", e.Name, "device files are not listed")
		assert.Contains(t, []Type{TypeFile, TypeDirectory, TypeSymlink}, e.Type)
	}
}

func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	w := newWorld(t)
	require.NoError(t, syscall.Mkfifo(w.in("fifo"), 0o644))
	w.link(t, "fifo", "to-fifo")
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()
	for _, name := range []string{"fifo", "to-fifo"} {
		_, err := s.Open(ctx, name)
		requireKind(t, err, ErrInvalid)
		_, err = s.Write(ctx, name, strings.NewReader("x"), WriteOptions{})
		requireKind(t, err, ErrInvalid)
	}
	// Even past the checks, opening a FIFO does not wait for a writer.
	l, err := s.resolve(ctx, "test", "fifo", true)
	require.NoError(t, err)
	defer s.release(l.r)
	_, _, err = openRegular(l.r, l.rel, "read", "fifo", regularLie{l.fi})
	requireKind(t, err, ErrInvalid)
}

// regularLie pretends a file is regular, as a stale check would.
type regularLie struct{ os.FileInfo }

func (regularLie) Mode() os.FileMode { return 0o644 }
func (regularLie) IsDir() bool       { return false }

// TestEscapeErrorIsRecognised pins the os.Root error text escapes
// depends on.
func TestEscapeErrorIsRecognised(t *testing.T) {
	w := newWorld(t)
	w.link(t, w.canary, "link-out")
	r, err := os.OpenRoot(w.root)
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Open("link-out")
	require.Error(t, err)
	assert.True(t, escapes(err), "os.Root's refusal %q is no longer recognised", err)
	requireKind(t, ioErr("read", "link-out", err), ErrOutside)
	_, err = r.Open("missing")
	assert.False(t, escapes(err))
}

func TestRootsChangeAtRuntime(t *testing.T) {
	a, b := newWorld(t), newWorld(t)
	a.file(t, "a.txt", "in a")
	b.file(t, "b.txt", "in b")
	a.link(t, b.in("b.txt"), "to-b")
	s := newBox(t, Options{}, a.root)
	ctx := context.Background()

	_, err := readAll(t, s, "to-b")
	requireKind(t, err, ErrOutside, "b is not a root yet")

	require.NoError(t, s.AddRoot(b.root))
	assert.Equal(t, []string{a.root, b.root}, s.Roots())
	got, err := readAll(t, s, a.in("to-b"))
	require.NoError(t, err)
	assert.Equal(t, "in b", got, "a link from one root into another is followed")
	_, err = s.Resolve(ctx, "a.txt", true)
	requireKind(t, err, ErrInvalid, "a relative path is ambiguous with two roots")

	// A file opened before its root goes is still readable.
	f, err := s.Open(ctx, b.in("b.txt"))
	require.NoError(t, err)
	defer f.Close()

	require.NoError(t, s.AddRoot(b.root), "a second add of the same root")
	assert.True(t, s.RemoveRoot(b.root))
	got, err = readAll(t, s, b.in("b.txt"))
	require.NoError(t, err, "still added once")
	assert.Equal(t, "in b", got)

	assert.True(t, s.RemoveRoot(b.root))
	assert.False(t, s.RemoveRoot(b.root))
	assert.Equal(t, []string{a.root}, s.Roots())
	_, err = readAll(t, s, b.in("b.txt"))
	requireKind(t, err, ErrOutside, "b's files after b was removed")
	_, err = readAll(t, s, a.in("to-b"))
	requireKind(t, err, ErrOutside, "a link into the removed root")
	_, err = s.Write(ctx, b.in("new.txt"), strings.NewReader("x"), WriteOptions{})
	requireKind(t, err, ErrOutside)
	_, err = os.Stat(b.in("new.txt"))
	assert.True(t, os.IsNotExist(err))

	buf := make([]byte, 16)
	n, err := f.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "in b", string(buf[:n]))

	got, err = readAll(t, s, "a.txt")
	require.NoError(t, err, "the remaining root is served, and relative paths work again")
	assert.Equal(t, "in a", got)

	require.NoError(t, s.Close())
	_, err = readAll(t, s, a.in("a.txt"))
	requireKind(t, err, ErrOutside, "after Close")
	requireKind(t, s.AddRoot(a.root), ErrInvalid, "add after Close")
}

func TestAddRootRefusesNonDirectories(t *testing.T) {
	w := newWorld(t)
	f := w.file(t, "a.txt", "x")
	_, err := New(Options{}, f)
	requireKind(t, err, ErrInvalid)
	_, err = New(Options{}, w.in("missing"))
	requireKind(t, err, ErrNotFound)
	_, err = New(Options{}, "")
	requireKind(t, err, ErrInvalid)
}

func TestNestedRootsUseTheOutermost(t *testing.T) {
	w := newWorld(t)
	w.file(t, "top.txt", "top")
	require.NoError(t, os.Mkdir(w.in("inner"), 0o755))
	w.link(t, "../top.txt", "inner/up")
	s := newBox(t, Options{}, w.in("inner"), w.root)
	got, err := readAll(t, s, w.in("inner", "up"))
	require.NoError(t, err)
	assert.Equal(t, "top", got)
	requireKind(t, s.Delete(context.Background(), w.in("inner"), true), ErrPermissionDenied, "a root inside another")
}
