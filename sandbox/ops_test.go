//go:build unix

package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

func TestList(t *testing.T) {
	w := newWorld(t)
	w.file(t, "b.txt", "bee")
	w.file(t, "a.go", "package a")
	w.file(t, "dir/inner.txt", "x")
	w.link(t, "b.txt", "link-file")
	w.link(t, "dir", "link-dir")
	w.link(t, w.canary, "link-out")
	w.link(t, "nowhere", "link-dangling")
	require.NoError(t, syscall.Mkfifo(w.in("fifo"), 0o644))
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	require.NoError(t, os.Chtimes(w.in("b.txt"), mtime, mtime))
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	entries, err := s.List(ctx, w.root)
	require.NoError(t, err)
	byName := map[string]Entry{}
	var names []string
	for _, e := range entries {
		byName[e.Name] = e
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"a.go", "b.txt", "dir", "link-dangling", "link-dir", "link-file", "link-out"}, names,
		"sorted, the FIFO left out")
	assert.Equal(t, Entry{Name: "b.txt", Type: TypeFile, Size: 3, ModTime: mtime}, normTime(byName["b.txt"]))
	assert.Equal(t, TypeDirectory, byName["dir"].Type)
	assert.Equal(t, Entry{Name: "link-file", Type: TypeFile, Size: 3, ModTime: mtime, Symlink: true}, normTime(byName["link-file"]))
	assert.Equal(t, TypeDirectory, byName["link-dir"].Type)
	assert.True(t, byName["link-dir"].Symlink)
	for _, n := range []string{"link-out", "link-dangling"} {
		e := byName[n]
		assert.Equal(t, TypeSymlink, e.Type, n)
		assert.Zero(t, e.Size, "nothing about the target of %s", n)
	}

	entries, err = s.List(ctx, "link-dir")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "inner.txt", entries[0].Name)

	_, err = s.List(ctx, "b.txt")
	requireKind(t, err, ErrInvalid)
	_, err = s.List(ctx, "missing")
	requireKind(t, err, ErrNotFound)
}

func normTime(e Entry) Entry { e.ModTime = e.ModTime.UTC(); return e }

func TestResolveInfo(t *testing.T) {
	w := newWorld(t)
	w.file(t, "doc.json", `{"a":1}`)
	w.link(t, "doc.json", "link")
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	info, err := s.Resolve(ctx, "link", true)
	require.NoError(t, err)
	assert.Equal(t, w.in("doc.json"), info.Path, "realpath")
	assert.Equal(t, TypeFile, info.Type)
	assert.EqualValues(t, 7, info.Size)
	assert.Equal(t, "application/json", info.ContentType)
	assert.NotEmpty(t, info.ETag)
	assert.WithinDuration(t, time.Now(), info.ModTime, time.Hour)

	dir, err := s.Resolve(ctx, w.root, true)
	require.NoError(t, err)
	assert.Equal(t, TypeDirectory, dir.Type)
	assert.Empty(t, dir.ETag)

	// The ETag changes with every write, even one of the same size in the
	// same instant.
	tags := map[string]bool{info.ETag: true}
	for i := range 5 {
		got, err := s.Write(ctx, "doc.json", strings.NewReader(`{"a":2}`), WriteOptions{})
		require.NoError(t, err)
		assert.False(t, tags[got.ETag], "write %d reused an ETag", i)
		tags[got.ETag] = true
		again, err := s.Resolve(ctx, "doc.json", true)
		require.NoError(t, err)
		assert.Equal(t, got.ETag, again.ETag, "Write returns the ETag Resolve then sees")
	}
	_, err = s.Resolve(ctx, "missing", true)
	requireKind(t, err, ErrNotFound)
}

func TestReadEncodings(t *testing.T) {
	w := newWorld(t)
	text := "héllo \"world\"\n\ttab\x01\\"
	w.file(t, "text.txt", text)
	w.file(t, "image.png", "\x89PNG\r\n\x1a\n\x00\x00binary")
	w.file(t, "noext", "plain words")
	w.file(t, "empty.txt", "")
	// Valid text at the start, a stray byte far past the sniffed part.
	bad := strings.Repeat("é", 40000) + "\xff" + "end"
	w.file(t, "late-invalid.txt", bad)
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	read := func(name string, enc Encoding) (*Content, string) {
		t.Helper()
		c, err := s.Read(ctx, name, enc)
		require.NoError(t, err)
		defer c.Close()
		b, err := io.ReadAll(c)
		require.NoError(t, err)
		return c, string(b)
	}
	c, got := read("text.txt", EncodingAuto)
	assert.Equal(t, EncodingUTF8, c.Encoding)
	assert.Equal(t, text, got)
	assert.Equal(t, "text/plain; charset=utf-8", c.ContentType)
	assert.EqualValues(t, len(text), c.Info.Size)

	c, got = read("text.txt", EncodingBase64)
	assert.Equal(t, EncodingBase64, c.Encoding)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte(text)), got)

	c, got = read("image.png", EncodingUTF8)
	assert.Equal(t, EncodingBase64, c.Encoding, "binary content falls back to base64")
	assert.Equal(t, "image/png", c.ContentType)
	raw, err := base64.StdEncoding.DecodeString(got)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG\r\n\x1a\n\x00\x00binary", string(raw))

	c, got = read("noext", EncodingAuto)
	assert.Equal(t, "text/plain; charset=utf-8", c.ContentType, "sniffed")
	assert.Equal(t, "plain words", got)

	c, got = read("empty.txt", EncodingAuto)
	assert.Equal(t, EncodingUTF8, c.Encoding)
	assert.Empty(t, got)

	c, got = read("late-invalid.txt", EncodingUTF8)
	assert.Equal(t, EncodingUTF8, c.Encoding)
	assert.Equal(t, strings.Repeat("é", 40000)+"\uFFFDend", got, "invalid bytes become U+FFFD")

	_, err = s.Read(ctx, "text.txt", "latin-1")
	requireKind(t, err, ErrInvalid)
	_, err = s.Read(ctx, w.root, EncodingAuto)
	requireKind(t, err, ErrInvalid)
	_, err = s.Read(ctx, "missing.txt", EncodingAuto)
	requireKind(t, err, ErrNotFound)
}

// TestBase64ReaderSizes checks the encoder at every length around its
// buffer boundaries.
func TestBase64ReaderSizes(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, readBufSize/4*3 - 1, readBufSize / 4 * 3, readBufSize/4*3 + 1, 3*readBufSize + 2} {
		src := bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6}, n/7+1)[:n]
		got, err := io.ReadAll(newBase64Reader(bytes.NewReader(src)))
		require.NoError(t, err)
		assert.Equal(t, base64.StdEncoding.EncodeToString(src), string(got), "length %d", n)
	}
}

// TestUTF8ReaderSplitsRunes feeds text one byte at a time so that every
// rune is cut by a read.
func TestUTF8ReaderSplitsRunes(t *testing.T) {
	src := "aé€😀z\xffq\xe2\x82"
	got, err := io.ReadAll(newUTF8Reader(&oneByteReader{r: strings.NewReader(src)}))
	require.NoError(t, err)
	assert.Equal(t, "aé€😀z\uFFFDq\uFFFD\uFFFD", string(got))
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestWriteJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\n\r\t\x00\x1f\x7f", "é€😀\u2028", "bad\xffbyte", strings.Repeat("x\"", 70000)} {
		var buf bytes.Buffer
		n, err := WriteJSONString(&buf, strings.NewReader(s))
		require.NoError(t, err)
		assert.EqualValues(t, buf.Len(), n)
		require.True(t, json.Valid(buf.Bytes()), "%q", buf.String())
		var back string
		require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
		want, _ := json.Marshal(s)
		var wantBack string
		require.NoError(t, json.Unmarshal(want, &wantBack))
		assert.Equal(t, wantBack, back)
	}
}

// TestReadLargeFileStreams reads a 100 MiB file through Read and
// WriteJSONString, as a host answering resourceRead would, and checks the
// bytes allocated meanwhile stay far below the file's size. The file is
// sparse, so making it costs nothing.
func TestReadLargeFileStreams(t *testing.T) {
	w := newWorld(t)
	size := 100 << 20
	if testenv.Race {
		// Base64 under the race detector took 5 s for 100 MiB; reading
		// 16 MiB whole would still pass the 8 MiB bound twice over. Like
		// 100 MiB, 16 MiB is 1 modulo 3, which the tail check below needs.
		size = 16 << 20
	}
	f, err := os.Create(w.in("big.bin"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(int64(size-4)))
	_, err = f.WriteAt([]byte("tail"), int64(size-4))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	s := newBox(t, Options{}, w.root)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := s.Read(context.Background(), "big.bin", EncodingAuto)
	require.NoError(t, err)
	assert.Equal(t, EncodingBase64, c.Encoding)
	tail := &tailWriter{}
	n, err := WriteJSONString(tail, c)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	runtime.ReadMemStats(&after)

	assert.EqualValues(t, base64.StdEncoding.EncodedLen(size)+2, n)
	// The last 49 bytes start on a base64 group boundary (size-49 is a
	// multiple of 3), so they encode on their own.
	wantTail := base64.StdEncoding.EncodeToString(append(make([]byte, 45), "tail"...)) + `"`
	assert.True(t, strings.HasSuffix(string(tail.last), wantTail), "%q", tail.last)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("streamed %d MiB of JSON, allocating %d KiB", n>>20, allocated>>10)
	assert.Less(t, allocated, uint64(8<<20), "reading %d MiB allocated %d bytes: not streamed", size>>20, allocated)
}

// tailWriter keeps only the last bytes written.
type tailWriter struct{ last []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.last = append(w.last, p...)
	if len(w.last) > 128 {
		w.last = append(w.last[:0], w.last[len(w.last)-128:]...)
	}
	return len(p), nil
}

func TestWriteModes(t *testing.T) {
	w := newWorld(t)
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()
	write := func(name, data string, opts WriteOptions) (Info, error) {
		return s.Write(ctx, name, strings.NewReader(data), opts)
	}
	content := func(name string) string {
		b, err := os.ReadFile(w.in(name))
		require.NoError(t, err)
		return string(b)
	}

	info, err := write("f.txt", "hello", WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "hello", content("f.txt"))
	assert.Equal(t, w.in("f.txt"), info.Path)
	fi, err := os.Stat(w.in("f.txt"))
	require.NoError(t, err)
	assert.Equal(t, 0o644&^umask(), fi.Mode().Perm(), "new files are 0644 less the umask")

	steps := []struct {
		data string
		opts WriteOptions
		want string
	}{
		{"HELLO WORLD", WriteOptions{}, "HELLO WORLD"},
		{"there", WriteOptions{Mode: WriteTruncate, Position: 6}, "HELLO there"},
		{"!", WriteOptions{Mode: WriteTruncate, Position: 13}, "HELLO there\x00\x00!"},
		{"", WriteOptions{Mode: WriteTruncate, Position: 5}, "HELLO"},
		{", world", WriteOptions{Mode: WriteAppend}, "HELLO, world"},
		{" big", WriteOptions{Mode: WriteAppend, Position: 7}, "HELLO big, world"},
		{">", WriteOptions{Mode: WriteInsert}, ">HELLO big, world"},
		{"<", WriteOptions{Mode: WriteInsert, Position: 17}, ">HELLO big, world<"},
		{"_", WriteOptions{Mode: WriteInsert, Position: 6}, ">HELLO_ big, world<"},
		{"^", WriteOptions{Mode: WriteAppend, Position: 19}, "^>HELLO_ big, world<"},
	}
	for _, st := range steps {
		_, err := write("f.txt", st.data, st.opts)
		require.NoError(t, err, "%+v", st.opts)
		assert.Equal(t, st.want, content("f.txt"), "%+v", st.opts)
	}

	for _, bad := range []WriteOptions{
		{Mode: WriteInsert, Position: 100},
		{Mode: WriteAppend, Position: 100},
		{Position: -1},
		{Mode: "overwrite"},
	} {
		_, err := write("f.txt", "x", bad)
		requireKind(t, err, ErrInvalid, "%+v", bad)
	}
	assert.Equal(t, "^>HELLO_ big, world<", content("f.txt"), "refused writes change nothing")

	_, err = write("new-append.txt", "first", WriteOptions{Mode: WriteAppend})
	require.NoError(t, err, "append creates a missing file")
	assert.Equal(t, "first", content("new-append.txt"))

	_, err = write("missing/dir/f.txt", "x", WriteOptions{})
	requireKind(t, err, ErrNotFound, "the parent must exist")
	_, err = write("made/dir/f.txt", "x", WriteOptions{MakeParents: true})
	require.NoError(t, err)
	fi, err = os.Stat(w.in("made", "dir"))
	require.NoError(t, err)
	assert.Equal(t, 0o755&^umask(), fi.Mode().Perm(), "new directories are 0755 less the umask")

	_, err = write("f.txt/below", "x", WriteOptions{MakeParents: true})
	requireKind(t, err, ErrNotFound)
	_, err = write(".", "x", WriteOptions{})
	requireKind(t, err, ErrInvalid)
	_, err = write("made", "x", WriteOptions{})
	requireKind(t, err, ErrInvalid, "a directory")
	noTempFiles(t, w.root)
}

func TestWriteKeepsModeAndLinks(t *testing.T) {
	w := newWorld(t)
	w.file(t, "private.txt", "old")
	require.NoError(t, os.Chmod(w.in("private.txt"), 0o600))
	w.link(t, "private.txt", "alias")
	s := newBox(t, Options{}, w.root)

	_, err := s.Write(context.Background(), "alias", strings.NewReader("new"), WriteOptions{})
	require.NoError(t, err)
	fi, err := os.Lstat(w.in("alias"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the link stays a link")
	b, err := os.ReadFile(w.in("private.txt"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(b), "the target was written")
	fi, err = os.Stat(w.in("private.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a rewrite keeps the mode")
}

func TestWriteConditions(t *testing.T) {
	w := newWorld(t)
	w.file(t, "f.txt", "v1")
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	info, err := s.Resolve(ctx, "f.txt", true)
	require.NoError(t, err)
	v2, err := s.Write(ctx, "f.txt", strings.NewReader("v2"), WriteOptions{IfMatch: info.ETag})
	require.NoError(t, err)
	_, err = s.Write(ctx, "f.txt", strings.NewReader("lost"), WriteOptions{IfMatch: info.ETag})
	requireKind(t, err, ErrConflict, "a stale ETag")
	b, _ := os.ReadFile(w.in("f.txt"))
	assert.Equal(t, "v2", string(b))
	_, err = s.Write(ctx, "f.txt", strings.NewReader("v3"), WriteOptions{IfMatch: v2.ETag, Mode: WriteAppend})
	require.NoError(t, err)
	b, _ = os.ReadFile(w.in("f.txt"))
	assert.Equal(t, "v2v3", string(b))
	_, err = s.Write(ctx, "gone.txt", strings.NewReader("x"), WriteOptions{IfMatch: v2.ETag})
	requireKind(t, err, ErrConflict, "ifMatch on a missing file")

	_, err = s.Write(ctx, "f.txt", strings.NewReader("x"), WriteOptions{CreateOnly: true})
	requireKind(t, err, ErrAlreadyExists)
	_, err = s.Write(ctx, "fresh.txt", strings.NewReader("fresh"), WriteOptions{CreateOnly: true})
	require.NoError(t, err)
	b, _ = os.ReadFile(w.in("fresh.txt"))
	assert.Equal(t, "fresh", string(b))
}

// TestConcurrentWrites has many writers appending and inserting at once:
// every piece must land, none overwritten.
func TestConcurrentWrites(t *testing.T) {
	w := newWorld(t)
	w.file(t, "log.txt", "")
	w.file(t, "spliced.txt", "[]")
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()
	var wg sync.WaitGroup
	const writers, each = 8, 25
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				line := fmt.Sprintf("w%d-%d\n", g, i)
				_, err := s.Write(ctx, "log.txt", strings.NewReader(line), WriteOptions{Mode: WriteAppend})
				assert.NoError(t, err)
				_, err = s.Write(ctx, "spliced.txt", strings.NewReader(line), WriteOptions{Mode: WriteInsert, Position: 1})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	for _, name := range []string{"log.txt", "spliced.txt"} {
		b, err := os.ReadFile(w.in(name))
		require.NoError(t, err)
		text := strings.TrimSuffix(strings.TrimPrefix(string(b), "["), "]")
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		sort.Strings(lines)
		var want []string
		for g := range writers {
			for i := range each {
				want = append(want, fmt.Sprintf("w%d-%d", g, i))
			}
		}
		sort.Strings(want)
		assert.Equal(t, want, lines, name)
	}
	noTempFiles(t, w.root)
}

func TestReadOnly(t *testing.T) {
	w := newWorld(t)
	w.file(t, "a.txt", "alpha")
	w.file(t, "dir/b.txt", "beta")
	s := newBox(t, Options{ReadOnly: true}, w.root)
	ctx := context.Background()
	assert.True(t, s.ReadOnly())

	_, err := s.Write(ctx, "a.txt", strings.NewReader("x"), WriteOptions{})
	requireKind(t, err, ErrPermissionDenied)
	assert.Contains(t, err.Error(), "read-only")
	_, err = s.Write(ctx, "new.txt", strings.NewReader("x"), WriteOptions{})
	requireKind(t, err, ErrPermissionDenied)
	requireKind(t, s.Mkdir(ctx, "newdir"), ErrPermissionDenied)
	requireKind(t, s.Delete(ctx, "a.txt", false), ErrPermissionDenied)
	requireKind(t, s.Delete(ctx, "dir", true), ErrPermissionDenied)
	requireKind(t, s.Move(ctx, "a.txt", "moved.txt", false), ErrPermissionDenied)
	requireKind(t, s.Copy(ctx, "a.txt", "copied.txt", false), ErrPermissionDenied)

	got, err := readAll(t, s, "a.txt")
	require.NoError(t, err, "reading still works")
	assert.Equal(t, "alpha", got)
	entries, err := os.ReadDir(w.root)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "nothing was created or removed")
}

func TestMkdir(t *testing.T) {
	w := newWorld(t)
	w.file(t, "file", "x")
	w.link(t, "existing", "to-existing")
	require.NoError(t, os.Mkdir(w.in("existing"), 0o700))
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	require.NoError(t, s.Mkdir(ctx, "a/b/c"))
	for _, p := range []string{"a", "a/b", "a/b/c"} {
		fi, err := os.Stat(w.in(p))
		require.NoError(t, err)
		assert.True(t, fi.IsDir())
		assert.Equal(t, 0o755&^umask(), fi.Mode().Perm(), p)
	}
	require.NoError(t, s.Mkdir(ctx, "a/b/c"), "an existing directory is fine")
	require.NoError(t, s.Mkdir(ctx, "to-existing"), "so is a link to one")
	require.NoError(t, s.Mkdir(ctx, "to-existing/new"))
	assert.DirExists(t, w.in("existing", "new"))
	requireKind(t, s.Mkdir(ctx, "file"), ErrAlreadyExists)
	requireKind(t, s.Mkdir(ctx, "file/below"), ErrNotFound)
}

func TestDelete(t *testing.T) {
	w := newWorld(t)
	w.file(t, "a.txt", "x")
	w.file(t, "full/deep/f.txt", "x")
	require.NoError(t, os.Mkdir(w.in("empty"), 0o755))
	w.link(t, w.outside, "link-out")
	w.link(t, "full", "link-in")
	s := newBox(t, Options{}, w.root)
	ctx := context.Background()

	require.NoError(t, s.Delete(ctx, "a.txt", false))
	assert.NoFileExists(t, w.in("a.txt"))
	require.NoError(t, s.Delete(ctx, "empty", false))
	assert.NoDirExists(t, w.in("empty"))

	err := s.Delete(ctx, "full", false)
	requireKind(t, err, ErrInvalid, "a non-empty directory needs recursive")
	assert.Contains(t, err.Error(), "not empty")
	assert.FileExists(t, w.in("full", "deep", "f.txt"))

	require.NoError(t, s.Delete(ctx, "link-out", false), "a link is deleted itself")
	_, err = os.Lstat(w.in("link-out"))
	assert.True(t, os.IsNotExist(err))
	require.NoError(t, s.Delete(ctx, "link-in", true), "recursive on a link removes the link only")
	assert.FileExists(t, w.in("full", "deep", "f.txt"))

	require.NoError(t, s.Delete(ctx, "full", true))
	assert.NoDirExists(t, w.in("full"))

	requireKind(t, s.Delete(ctx, "missing", false), ErrNotFound)
	requireKind(t, s.Delete(ctx, w.root, true), ErrPermissionDenied, "a root")
	assert.DirExists(t, w.root)
}

func TestMove(t *testing.T) {
	w := newWorld(t)
	other := newWorld(t)
	w.file(t, "a.txt", "alpha")
	w.file(t, "b.txt", "beta")
	w.file(t, "dir/inner.txt", "inner")
	w.file(t, "target/old.txt", "old")
	require.NoError(t, os.Mkdir(w.in("sub"), 0o755))
	w.link(t, "b.txt", "link")
	s := newBox(t, Options{}, w.root, other.root)
	ctx := context.Background()
	content := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b)
	}

	require.NoError(t, s.Move(ctx, w.in("a.txt"), w.in("sub", "a.txt"), false))
	assert.Equal(t, "alpha", content(w.in("sub", "a.txt")))
	assert.NoFileExists(t, w.in("a.txt"))

	requireKind(t, s.Move(ctx, w.in("b.txt"), w.in("sub", "a.txt"), true), ErrAlreadyExists)
	assert.Equal(t, "beta", content(w.in("b.txt")), "failIfExists keeps both")
	assert.Equal(t, "alpha", content(w.in("sub", "a.txt")))
	require.NoError(t, s.Move(ctx, w.in("b.txt"), w.in("sub", "a.txt"), false))
	assert.Equal(t, "beta", content(w.in("sub", "a.txt")), "overwritten")

	require.NoError(t, s.Move(ctx, w.in("dir"), w.in("target"), false), "a directory replaces a directory")
	assert.Equal(t, "inner", content(w.in("target", "inner.txt")))
	assert.NoFileExists(t, w.in("target", "old.txt"))

	require.NoError(t, s.Move(ctx, w.in("link"), w.in("sub", "link"), false))
	fi, err := os.Lstat(w.in("sub", "link"))
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "a link is moved itself")

	require.NoError(t, s.Move(ctx, w.in("sub", "a.txt"), other.in("a.txt"), false), "between roots")
	assert.Equal(t, "beta", content(other.in("a.txt")))
	assert.NoFileExists(t, w.in("sub", "a.txt"))

	requireKind(t, s.Move(ctx, w.in("target"), w.in("target", "inside"), false), ErrInvalid, "into itself")
	requireKind(t, s.Move(ctx, w.in("missing"), w.in("x"), false), ErrNotFound)
	requireKind(t, s.Move(ctx, w.in("target"), w.in("nodir", "x"), false), ErrNotFound, "the destination's directory must exist")
	requireKind(t, s.Move(ctx, w.root, other.in("stolen"), false), ErrPermissionDenied, "a root")
	requireKind(t, s.Move(ctx, w.in("target"), other.root, false), ErrPermissionDenied, "onto a root")
	require.NoError(t, s.Move(ctx, w.in("target"), w.in("target"), false), "onto itself")
	noTempFiles(t, w.root)
}

func TestCopy(t *testing.T) {
	w := newWorld(t)
	other := newWorld(t)
	w.file(t, "a.txt", "alpha")
	require.NoError(t, os.Chmod(w.in("a.txt"), 0o640))
	w.file(t, "b.txt", "beta")
	w.file(t, "tree/one.txt", "one")
	w.file(t, "tree/deep/two.txt", "two")
	w.link(t, "one.txt", "tree/link")
	require.NoError(t, syscall.Mkfifo(w.in("tree", "fifo"), 0o644))
	w.link(t, "a.txt", "link-a")
	s := newBox(t, Options{}, w.root, other.root)
	ctx := context.Background()
	content := func(p string) string {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return string(b)
	}

	require.NoError(t, s.Copy(ctx, w.in("a.txt"), w.in("c.txt"), false))
	assert.Equal(t, "alpha", content(w.in("c.txt")))
	assert.Equal(t, "alpha", content(w.in("a.txt")))
	fi, err := os.Stat(w.in("c.txt"))
	require.NoError(t, err)
	assert.Equal(t, 0o640&^umask(), fi.Mode().Perm())

	requireKind(t, s.Copy(ctx, w.in("b.txt"), w.in("c.txt"), true), ErrAlreadyExists)
	assert.Equal(t, "alpha", content(w.in("c.txt")))
	require.NoError(t, s.Copy(ctx, w.in("b.txt"), w.in("c.txt"), false))
	assert.Equal(t, "beta", content(w.in("c.txt")))

	require.NoError(t, s.Copy(ctx, w.in("link-a"), w.in("from-link.txt"), false))
	fi, err = os.Lstat(w.in("from-link.txt"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "copying a link copies its target")

	require.NoError(t, s.Copy(ctx, w.in("tree"), other.in("tree"), false), "a directory, between roots")
	assert.Equal(t, "one", content(other.in("tree", "one.txt")))
	assert.Equal(t, "two", content(other.in("tree", "deep", "two.txt")))
	target, err := os.Readlink(other.in("tree", "link"))
	require.NoError(t, err)
	assert.Equal(t, "one.txt", target, "links inside are copied as links")
	_, err = os.Lstat(other.in("tree", "fifo"))
	assert.True(t, os.IsNotExist(err), "FIFOs are left out")

	require.NoError(t, s.Copy(ctx, w.in("tree", "deep"), other.in("tree"), false), "replacing a directory")
	assert.Equal(t, "two", content(other.in("tree", "two.txt")))
	assert.NoFileExists(t, other.in("tree", "one.txt"))

	requireKind(t, s.Copy(ctx, w.in("tree"), w.in("tree", "deep", "copy"), false), ErrInvalid, "into itself")
	requireKind(t, s.Copy(ctx, w.in("missing"), w.in("x"), false), ErrNotFound)
	requireKind(t, s.Copy(ctx, w.in("a.txt"), w.in("nodir", "x"), false), ErrNotFound)
	requireKind(t, s.Copy(ctx, w.in("a.txt"), w.in("a.txt"), true), ErrAlreadyExists)
	require.NoError(t, s.Copy(ctx, w.in("a.txt"), w.in("a.txt"), false))
	noTempFiles(t, w.root)
	noTempFiles(t, other.root)
}

func TestErrorsReadWell(t *testing.T) {
	w := newWorld(t)
	s := newBox(t, Options{}, w.root)
	_, err := s.Open(context.Background(), w.in("missing.txt"))
	requireKind(t, err, ErrNotFound)
	assert.Equal(t, fmt.Sprintf("read %q: no such file", w.in("missing.txt")), err.Error())
	assert.Equal(t, ErrNotFound, KindOf(fmt.Errorf("wrapped: %w", err)))
	assert.Zero(t, KindOf(os.ErrNotExist))

	_, err = s.Write(context.Background(), w.in("no/dir/f.txt"), strings.NewReader(""), WriteOptions{})
	assert.Equal(t, fmt.Sprintf("write %q: the directory %s does not exist", w.in("no/dir/f.txt"), filepath.Join(w.root, "no", "dir")), err.Error())
}

func TestCancelledContext(t *testing.T) {
	w := newWorld(t)
	w.file(t, "a.txt", "x")
	s := newBox(t, Options{}, w.root)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Open(ctx, "a.txt")
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Write(ctx, "a.txt", strings.NewReader("y"), WriteOptions{})
	require.ErrorIs(t, err, context.Canceled)
	b, _ := os.ReadFile(w.in("a.txt"))
	assert.Equal(t, "x", string(b))
}
