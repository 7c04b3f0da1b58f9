//go:build unix

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve throws arbitrary paths at a root full of tricky links. No
// input may panic, resolve to anything but a real path inside the root,
// or open a file outside it; every refusal is a sandbox error.
func FuzzResolve(f *testing.F) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	root := filepath.Join(base, "root")
	out := filepath.Join(base, "out")
	for _, d := range []string{root, out, filepath.Join(root, "d", "e")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(root, "a.txt"):      "inside",
		filepath.Join(root, "d", "b.txt"): "inside",
		filepath.Join(out, "secret.txt"):  "outside",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	links := map[string]string{
		"in":        "a.txt",
		"up":        "..",
		"upup":      "../../out/secret.txt",
		"abs-out":   out,
		"abs-in":    filepath.Join(root, "d"),
		"d/e/back":  "../../a.txt",
		"d/e/root":  "/",
		"d/esc":     "e/../../..",
		"loop":      "loop",
		"dot":       ".",
		"d/e/chain": "../../in",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			f.Fatal(err)
		}
	}
	s, err := New(Options{}, root)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })

	for _, seed := range []string{
		"a.txt", "in", "up/out/secret.txt", "upup", "abs-out/secret.txt", "abs-in/b.txt",
		"d/e/back", "d/e/root/etc/passwd", "d/esc/out/secret.txt", "loop", "dot/dot/dot/in",
		"d/e/chain", "../out/secret.txt", root + "/../out/secret.txt", "/etc/passwd", "",
		"a.txt\x00", "//" + root[1:] + "//a.txt", root + "/d/./e/../b.txt", "d/e/../../../out",
	} {
		f.Add(seed, true)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, name string, follow bool) {
		info, err := s.Resolve(ctx, name, follow)
		if err != nil {
			if KindOf(err) == 0 {
				t.Fatalf("Resolve(%q): %v is not a sandbox error", name, err)
			}
		} else {
			checkInside(t, root, name, info.Path, follow)
		}
		fh, err := s.Open(ctx, name)
		if err != nil {
			if KindOf(err) == 0 {
				t.Fatalf("Open(%q): %v is not a sandbox error", name, err)
			}
			return
		}
		defer fh.Close()
		checkInside(t, root, name, fh.Info().Path, true)
		b := make([]byte, 16)
		n, _ := fh.Read(b)
		if strings.Contains(string(b[:n]), "outside") {
			t.Fatalf("Open(%q) read the outside file", name)
		}
	})
}

func checkInside(t *testing.T, root, name, got string, follow bool) {
	t.Helper()
	if _, ok := within(got, root); !ok {
		t.Fatalf("%q resolved to %q, outside %s", name, got, root)
	}
	real := got
	if follow {
		var err error
		if real, err = filepath.EvalSymlinks(got); err != nil {
			t.Fatalf("%q resolved to %q, which does not resolve: %v", name, got, err)
		}
	} else if dir, err := filepath.EvalSymlinks(filepath.Dir(got)); err == nil {
		real = filepath.Join(dir, filepath.Base(got))
	}
	if real != got {
		t.Fatalf("%q resolved to %q, not a real path (it is %q)", name, got, real)
	}
}
