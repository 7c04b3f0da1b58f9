//go:build unix

package host

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// TestResourceCommands drives every resource command over a WebSocket on
// a real directory and checks the disk after each.
func TestResourceCommands(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	dir := realTempDir(t)
	writeFile(t, filepath.Join(dir, "b.txt"), "bee\n")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	workSession(c, "files", dir)
	at := func(rel string) string { return filepath.Join(dir, rel) }
	uri := func(rel string) string { return fileURI(at(rel)) }

	t.Run("list", func(t *testing.T) {
		var lr wire.ResourceListResult
		c.mustRes("resourceList", map[string]any{"uri": fileURI(dir)}, &lr)
		assert.Equal(t, []wire.DirectoryEntry{{Name: "b.txt", Type: "file"}, {Name: "sub", Type: "directory"}}, lr.Entries)
		c.resErr(CodeNotFound, "resourceList", map[string]any{"uri": uri("nope")})
		e := c.resErr(CodeInvalidParams, "resourceList", map[string]any{"uri": uri("b.txt")})
		assert.Contains(t, e.Message, at("b.txt"), "the message names the path")
	})

	t.Run("write create and createOnly", func(t *testing.T) {
		c.mustRes("resourceWrite", map[string]any{"uri": uri("a.txt"), "data": "hello", "encoding": "utf-8"}, nil)
		assert.Equal(t, "hello", fileContent(t, at("a.txt")))
		e := c.resErr(CodeAlreadyExists, "resourceWrite", map[string]any{"uri": uri("a.txt"), "data": "other", "encoding": "utf-8", "createOnly": true})
		assert.Contains(t, e.Message, at("a.txt"))
		assert.Equal(t, "hello", fileContent(t, at("a.txt")))
		c.mustRes("resourceWrite", map[string]any{"uri": uri("new.txt"), "data": "n", "encoding": "utf-8", "createOnly": true}, nil)
		assert.Equal(t, "n", fileContent(t, at("new.txt")))
		// The directory must exist (no mkdir -p for writes).
		e = c.resErr(CodeNotFound, "resourceWrite", map[string]any{"uri": uri("no/dir/x.txt"), "data": "x", "encoding": "utf-8"})
		assert.Contains(t, e.Message, at("no/dir/x.txt"))
		assert.False(t, exists(at("no")))
		c.resErr(CodeInvalidParams, "resourceWrite", map[string]any{"uri": uri("a.txt"), "data": "x", "encoding": "latin-1"})
		c.resErr(CodeInvalidParams, "resourceWrite", map[string]any{"uri": uri("a.txt"), "data": "!!!", "encoding": "base64"})
		assert.Equal(t, "hello", fileContent(t, at("a.txt")))
	})

	t.Run("write modes", func(t *testing.T) {
		write := func(data, mode string, pos int64) {
			t.Helper()
			c.mustRes("resourceWrite", map[string]any{"uri": uri("m.txt"), "data": data, "encoding": "utf-8", "mode": mode, "position": pos}, nil)
		}
		write("0123456789", "truncate", 0)
		assert.Equal(t, "0123456789", fileContent(t, at("m.txt")))
		write("ab", "truncate", 4)
		assert.Equal(t, "0123ab", fileContent(t, at("m.txt")))
		write("XY", "append", 0)
		assert.Equal(t, "0123abXY", fileContent(t, at("m.txt")))
		write("--", "append", 2)
		assert.Equal(t, "0123ab--XY", fileContent(t, at("m.txt")))
		write("++", "insert", 1)
		assert.Equal(t, "0++123ab--XY", fileContent(t, at("m.txt")))
		c.resErr(CodeInvalidParams, "resourceWrite", map[string]any{"uri": uri("m.txt"), "data": "z", "encoding": "utf-8", "mode": "insert", "position": 99})
		c.resErr(CodeInvalidParams, "resourceWrite", map[string]any{"uri": uri("m.txt"), "data": "z", "encoding": "utf-8", "mode": "sideways"})
		assert.Equal(t, "0++123ab--XY", fileContent(t, at("m.txt")))
	})

	t.Run("resolve and ifMatch", func(t *testing.T) {
		var rr wire.ResourceResolveResult
		c.mustRes("resourceResolve", map[string]any{"uri": uri("a.txt")}, &rr)
		assert.Equal(t, uri("a.txt"), rr.URI)
		assert.Equal(t, wire.ResourceTypeFile, rr.Type)
		require.NotNil(t, rr.Size)
		assert.Equal(t, int64(5), *rr.Size)
		require.NotNil(t, rr.Etag)
		require.NotNil(t, rr.Mtime)
		require.NotNil(t, rr.ContentType)
		assert.Contains(t, *rr.ContentType, "text/plain")

		var dr wire.ResourceResolveResult
		c.mustRes("resourceResolve", map[string]any{"uri": uri("sub")}, &dr)
		assert.Equal(t, wire.ResourceTypeDirectory, dr.Type)
		assert.Nil(t, dr.Size)
		e := c.resErr(CodeNotFound, "resourceResolve", map[string]any{"uri": uri("missing")})
		assert.Contains(t, e.Message, at("missing"))

		// A link: followed, the canonical URI; not followed, the link.
		require.NoError(t, os.Symlink("a.txt", at("link")))
		c.mustRes("resourceResolve", map[string]any{"uri": uri("link")}, &dr)
		assert.Equal(t, uri("a.txt"), dr.URI)
		assert.Equal(t, wire.ResourceTypeFile, dr.Type)
		c.mustRes("resourceResolve", map[string]any{"uri": uri("link"), "followSymlinks": false}, &dr)
		assert.Equal(t, uri("link"), dr.URI)
		assert.Equal(t, wire.ResourceTypeSymlink, dr.Type)

		// Someone else changes the file: the old ETag conflicts.
		writeFile(t, at("a.txt"), "changed behind the client's back")
		e = c.resErr(CodeConflict, "resourceWrite", map[string]any{"uri": uri("a.txt"), "data": "mine", "encoding": "utf-8", "ifMatch": *rr.Etag})
		assert.Contains(t, e.Message, at("a.txt"))
		assert.Equal(t, "changed behind the client's back", fileContent(t, at("a.txt")))
		c.mustRes("resourceResolve", map[string]any{"uri": uri("a.txt")}, &rr)
		c.mustRes("resourceWrite", map[string]any{"uri": uri("a.txt"), "data": "mine", "encoding": "utf-8", "ifMatch": *rr.Etag}, nil)
		assert.Equal(t, "mine", fileContent(t, at("a.txt")))
	})

	t.Run("read encodings", func(t *testing.T) {
		text := "line one\n\"quoted\" \\ tab\t ünïcødé\n"
		writeFile(t, at("t.txt"), text)
		got, rr := c.readFile(at("t.txt"), "")
		assert.Equal(t, text, string(got))
		assert.Equal(t, wire.ContentEncodingUtf8, rr.Encoding)
		require.NotNil(t, rr.ContentType)
		assert.Contains(t, *rr.ContentType, "text/plain")
		got, rr = c.readFile(at("t.txt"), wire.ContentEncodingBase64)
		assert.Equal(t, text, string(got))
		assert.Equal(t, wire.ContentEncodingBase64, rr.Encoding)

		bin := []byte{0, 1, 2, 0xff, 0xfe, 'P', 'N', 'G', 0}
		c.mustRes("resourceWrite", map[string]any{"uri": uri("b.bin"), "data": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"}, nil)
		assert.Equal(t, string(bin), fileContent(t, at("b.bin")))
		// Binary content is base64 even when text is asked for.
		got, rr = c.readFile(at("b.bin"), wire.ContentEncodingUtf8)
		assert.Equal(t, bin, got)
		assert.Equal(t, wire.ContentEncodingBase64, rr.Encoding)

		c.resErr(CodeNotFound, "resourceRead", map[string]any{"uri": uri("missing")})
		c.resErr(CodeInvalidParams, "resourceRead", map[string]any{"uri": fileURI(dir)})
		c.resErr(CodeInvalidParams, "resourceRead", map[string]any{"uri": uri("t.txt"), "encoding": "utf-16"})
		// Other URIs are still the handler's.
		var hr wire.ResourceReadResult
		c.mustRes("resourceRead", map[string]any{"uri": "ahp-test:/hello.txt"}, &hr)
		assert.Equal(t, "hello", hr.Data)
	})

	t.Run("mkdir", func(t *testing.T) {
		c.mustRes("resourceMkdir", map[string]any{"uri": uri("x/y/z")}, nil)
		fi, err := os.Stat(at("x/y/z"))
		require.NoError(t, err)
		assert.True(t, fi.IsDir())
		c.mustRes("resourceMkdir", map[string]any{"uri": uri("x/y/z")}, nil) // exists: fine
		e := c.resErr(CodeAlreadyExists, "resourceMkdir", map[string]any{"uri": uri("b.txt")})
		assert.Contains(t, e.Message, at("b.txt"))
	})

	t.Run("copy", func(t *testing.T) {
		writeFile(t, at("tree/one.txt"), "1")
		writeFile(t, at("tree/deep/two.txt"), "2")
		c.mustRes("resourceCopy", map[string]any{"source": uri("b.txt"), "destination": uri("b2.txt")}, nil)
		assert.Equal(t, "bee\n", fileContent(t, at("b2.txt")))
		assert.Equal(t, "bee\n", fileContent(t, at("b.txt")))
		c.mustRes("resourceCopy", map[string]any{"source": uri("tree"), "destination": uri("tree2")}, nil)
		assert.Equal(t, "1", fileContent(t, at("tree2/one.txt")))
		assert.Equal(t, "2", fileContent(t, at("tree2/deep/two.txt")))
		e := c.resErr(CodeAlreadyExists, "resourceCopy", map[string]any{"source": uri("a.txt"), "destination": uri("b2.txt"), "failIfExists": true})
		assert.Contains(t, e.Message, at("b2.txt"))
		assert.Equal(t, "bee\n", fileContent(t, at("b2.txt")))
		c.mustRes("resourceCopy", map[string]any{"source": uri("a.txt"), "destination": uri("b2.txt")}, nil)
		assert.Equal(t, "mine", fileContent(t, at("b2.txt")))
		c.resErr(CodeNotFound, "resourceCopy", map[string]any{"source": uri("nope"), "destination": uri("nope2")})
		assert.False(t, exists(at("nope2")))
	})

	t.Run("move", func(t *testing.T) {
		c.mustRes("resourceMove", map[string]any{"source": uri("b2.txt"), "destination": uri("sub/moved.txt")}, nil)
		assert.False(t, exists(at("b2.txt")))
		assert.Equal(t, "mine", fileContent(t, at("sub/moved.txt")))
		e := c.resErr(CodeAlreadyExists, "resourceMove", map[string]any{"source": uri("b.txt"), "destination": uri("sub/moved.txt"), "failIfExists": true})
		assert.Contains(t, e.Message, at("sub/moved.txt"))
		assert.Equal(t, "bee\n", fileContent(t, at("b.txt")))
		assert.Equal(t, "mine", fileContent(t, at("sub/moved.txt")))
		c.mustRes("resourceMove", map[string]any{"source": uri("tree2"), "destination": uri("sub/tree")}, nil)
		assert.False(t, exists(at("tree2")))
		assert.Equal(t, "2", fileContent(t, at("sub/tree/deep/two.txt")))
	})

	t.Run("delete", func(t *testing.T) {
		e := c.resErr(CodeInvalidParams, "resourceDelete", map[string]any{"uri": uri("tree")})
		assert.Contains(t, e.Message, at("tree"))
		assert.Equal(t, "2", fileContent(t, at("tree/deep/two.txt")), "a directory with contents is deleted only when asked to be recursive")
		c.mustRes("resourceDelete", map[string]any{"uri": uri("tree"), "recursive": true}, nil)
		assert.False(t, exists(at("tree")))
		c.mustRes("resourceDelete", map[string]any{"uri": uri("b.txt")}, nil)
		assert.False(t, exists(at("b.txt")))
		c.mustRes("resourceDelete", map[string]any{"uri": uri("link")}, nil)
		assert.False(t, exists(at("link")))
		assert.Equal(t, "mine", fileContent(t, at("a.txt")), "deleting a link leaves its target")
		c.resErr(CodeNotFound, "resourceDelete", map[string]any{"uri": uri("b.txt")})
		// The working directory itself is not the client's to delete.
		c.resErr(CodePermissionDenied, "resourceDelete", map[string]any{"uri": fileURI(dir), "recursive": true})
		assert.True(t, exists(at("a.txt")))
	})

	t.Run("params", func(t *testing.T) {
		c.resErr(CodeInvalidParams, "resourceList", map[string]any{})
		c.resErr(CodeInvalidParams, "resourceList", map[string]any{"uri": "https://example.com/x"})
		c.resErr(CodeInvalidParams, "resourceList", map[string]any{"uri": "file://elsewhere/etc"})
		c.resErr(CodeInvalidParams, "resourceList", map[string]any{"uri": "file:relative/path"})
		c.resErr(CodeInvalidParams, "resourceList", map[string]any{"uri": fileURI(dir) + "?q=1"})
		c.resErr(CodeInvalidParams, "resourceMove", map[string]any{"source": uri("a.txt")})
		// file://localhost/… is this machine.
		var lr wire.ResourceListResult
		c.mustRes("resourceList", map[string]any{"uri": "file://localhost" + filepath.ToSlash(dir)}, &lr)
		assert.NotEmpty(t, lr.Entries)
	})
}

// TestResourceReadOverStdioAndOlderDialects reads a file over stdio (the
// other streaming transport) and from clients of older dialects, whose
// codecs pass the resource commands and watches through.
func TestResourceReadOverStdioAndOlderDialects(t *testing.T) {
	hs := newHarness(t, Options{})
	dir := realTempDir(t)
	text := strings.Repeat("stdio is one line per message\n", 5000) // 150 KB, many writes
	writeFile(t, filepath.Join(dir, "f.txt"), text)

	s := hs.stdio(t, "stdio")
	s.initialize(RootURI)
	workSession(s, "stdio", dir)
	got, _ := s.readFile(filepath.Join(dir, "f.txt"), "")
	assert.Equal(t, text, string(got))
	s.ping() // the connection still frames messages

	for _, v := range []string{"0.7.0", "0.3.0"} {
		t.Run(v, func(t *testing.T) {
			c := hs.dial(t, "old-"+v)
			c.initializeAs([]string{v}, RootURI)
			c.mustCall("createSession", map[string]any{"channel": "ahp-session:/old-" + v, "provider": "fake", "workingDirectory": fileURI(dir), "workingDirectories": []string{fileURI(dir)}}, nil)
			c.subscribe("ahp-session:/old-" + v)
			got, _ := c.readFile(filepath.Join(dir, "f.txt"), "")
			assert.Equal(t, text, string(got))
			var lr wire.ResourceListResult
			c.mustRes("resourceList", map[string]any{"uri": fileURI(dir)}, &lr)
			assert.Equal(t, []wire.DirectoryEntry{{Name: "f.txt", Type: "file"}}, lr.Entries)
			w := c.createWatch(map[string]any{"uri": fileURI(dir)})
			snap := c.subscribe(w)
			assert.JSONEq(t, `{"root":"`+fileURI(dir)+`","recursive":false}`, string(snap.State))
			createEmpty(t, filepath.Join(dir, "seen-by-"+v))
			c.changesUntil(w, added(filepath.Join(dir, "seen-by-"+v)))
			require.NoError(t, os.Remove(filepath.Join(dir, "seen-by-"+v)))
			c.changesUntil(w, func(ch wire.ResourceChange) bool { return ch.Type == wire.ResourceChangeTypeDeleted })
		})
	}
}

// TestResourceReadOnlyFiles: with ReadOnlyFiles every change is refused
// with PermissionDenied and the disk stays as it was; reading still
// works.
func TestResourceReadOnlyFiles(t *testing.T) {
	hs := newHarness(t, Options{ReadOnlyFiles: true})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	dir := realTempDir(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "keep")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	workSession(c, "ro", dir)
	uri := func(rel string) string { return fileURI(filepath.Join(dir, rel)) }
	for _, call := range []struct {
		method string
		params map[string]any
	}{
		{"resourceWrite", map[string]any{"uri": uri("a.txt"), "data": "x", "encoding": "utf-8"}},
		{"resourceWrite", map[string]any{"uri": uri("new.txt"), "data": "x", "encoding": "utf-8"}},
		{"resourceMkdir", map[string]any{"uri": uri("made")}},
		{"resourceDelete", map[string]any{"uri": uri("a.txt")}},
		{"resourceDelete", map[string]any{"uri": uri("d"), "recursive": true}},
		{"resourceMove", map[string]any{"source": uri("a.txt"), "destination": uri("moved.txt")}},
		{"resourceCopy", map[string]any{"source": uri("a.txt"), "destination": uri("copy.txt")}},
	} {
		e := c.resErr(CodePermissionDenied, call.method, call.params)
		assert.Contains(t, e.Message, "read-only", "%s", call.method)
	}
	assert.Equal(t, "keep", fileContent(t, filepath.Join(dir, "a.txt")))
	for _, gone := range []string{"new.txt", "made", "moved.txt", "copy.txt"} {
		assert.False(t, exists(filepath.Join(dir, gone)), gone)
	}
	assert.True(t, exists(filepath.Join(dir, "d")))
	got, _ := c.readFile(filepath.Join(dir, "a.txt"), "")
	assert.Equal(t, "keep", string(got))
}

// TestResourceSpecialFiles: a FIFO or a device is refused at once, never
// opened for a read that would hang.
func TestResourceSpecialFiles(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	dir := realTempDir(t)
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	workSession(c, "special", dir)
	c.resErr(CodeInvalidParams, "resourceRead", map[string]any{"uri": fileURI(filepath.Join(dir, "fifo"))})
	c.resErr(CodeInvalidParams, "resourceWrite", map[string]any{"uri": fileURI(filepath.Join(dir, "fifo")), "data": "x", "encoding": "utf-8"})
	var lr wire.ResourceListResult
	c.mustRes("resourceList", map[string]any{"uri": fileURI(dir)}, &lr)
	assert.Empty(t, lr.Entries, "a FIFO is not listed")
	// A link to a device leads outside the working directory.
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero")))
	c.resErr(CodePermissionDenied, "resourceRead", map[string]any{"uri": fileURI(filepath.Join(dir, "zero"))})
	c.ping()
}
