//go:build unix

package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// browseWorld is a host with browse roots and a client with no session:
//
//	base/home   the default directory (a browse root)
//	base/extra  a --browse-root, given as a file: URI
//	base/later  a --browse-root that does not exist yet
//	base/out    nobody's
type browseWorld struct {
	hs                *harness
	c                 *testClient
	base, home, extra string
	out               string
}

func newBrowseWorld(t *testing.T) *browseWorld {
	w := &browseWorld{base: realTempDir(t)}
	w.home, w.extra, w.out = filepath.Join(w.base, "home"), filepath.Join(w.base, "extra"), filepath.Join(w.base, "out")
	writeFile(t, filepath.Join(w.home, "notes.txt"), "HOME-CONTENT")
	writeFile(t, filepath.Join(w.home, "proj", "main.go"), "package main")
	writeFile(t, filepath.Join(w.extra, "repo", "README"), "EXTRA-CONTENT")
	writeFile(t, filepath.Join(w.out, "secret.txt"), "OUTSIDE")
	require.NoError(t, os.Symlink("../out", filepath.Join(w.home, "link-out")))
	require.NoError(t, os.Symlink(filepath.Join(w.out, "secret.txt"), filepath.Join(w.home, "secret-link")))
	require.NoError(t, os.Symlink("proj", filepath.Join(w.home, "link-in")))
	later := filepath.Join(w.base, "later")
	w.hs = newHarness(t, Options{DefaultDirectory: w.home, BrowseRoots: []string{fileURI(w.extra), later}})
	w.c = w.hs.dial(t, "picker")
	w.c.initialize(RootURI)
	return w
}

// list lists dir through c and returns each entry's type by name.
func list(c *testClient, dir string) map[string]string {
	c.t.Helper()
	var lr wire.ResourceListResult
	c.mustRes("resourceList", map[string]any{"uri": fileURI(dir)}, &lr)
	types := map[string]string{}
	for _, e := range lr.Entries {
		types[e.Name] = e.Type
	}
	return types
}

// unchanged checks that the browse roots and outside are as made.
func (w *browseWorld) unchanged(t *testing.T) {
	t.Helper()
	assert.Equal(t, "HOME-CONTENT", fileContent(t, filepath.Join(w.home, "notes.txt")))
	assert.Equal(t, "OUTSIDE", fileContent(t, filepath.Join(w.out, "secret.txt")))
	for dir, n := range map[string]int{w.home: 5, w.extra: 1, w.out: 1, filepath.Join(w.home, "proj"): 1} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, entries, n, "%s changed: %v", dir, entries)
	}
}

// TestInitializeDefaultDirectory: the initialize result names the default
// directory as a file: URI in every dialect (each one's schema has
// defaultDirectory), and has no defaultDirectory without one.
func TestInitializeDefaultDirectory(t *testing.T) {
	dir := filepath.Join(realTempDir(t), "my project")
	require.NoError(t, os.Mkdir(dir, 0o755))
	hs := newHarness(t, Options{DefaultDirectory: dir})
	want := "file://" + strings.ReplaceAll(dir, " ", "%20")
	for _, v := range codec.Supported() {
		t.Run(v, func(t *testing.T) {
			c := hs.dial(t, "c-"+v)
			var res map[string]json.RawMessage
			c.mustCall("initialize", map[string]any{
				"channel": RootURI, "protocolVersions": []string{v}, "clientId": "c-" + v, "initialSubscriptions": []string{RootURI},
			}, &res)
			var got string
			require.NoError(t, json.Unmarshal(res["defaultDirectory"], &got), "%s answered %v", v, res)
			assert.Equal(t, want, got)
		})
	}

	t.Run("none", func(t *testing.T) {
		c := newHarness(t, Options{}).dial(t, "none")
		var res map[string]json.RawMessage
		c.mustCall("initialize", map[string]any{"channel": RootURI, "protocolVersions": []string{current}, "clientId": "none"}, &res)
		assert.NotContains(t, res, "defaultDirectory")
	})
}

// TestResourceBrowseRoots: with no session at all, a client lists and
// resolves under the default directory and every browse root, and
// nothing more: file contents, changes and watches there are refused like
// anywhere outside its sessions, and outside the browse roots listing and
// resolving are refused too, whether or not the path exists. A link out
// of a browse root lists nothing.
func TestResourceBrowseRoots(t *testing.T) {
	w := newBrowseWorld(t)
	c := w.c

	t.Run("list and resolve without a session", func(t *testing.T) {
		assert.Equal(t, map[string]string{
			"notes.txt": "file", "proj": "directory", "link-in": "directory",
			"link-out": "symlink", "secret-link": "symlink", // links out: listed as links, nothing of their targets
		}, list(c, w.home))
		assert.Equal(t, map[string]string{"main.go": "file"}, list(c, filepath.Join(w.home, "proj")))
		assert.Equal(t, map[string]string{"main.go": "file"}, list(c, filepath.Join(w.home, "link-in")))
		assert.Equal(t, map[string]string{"repo": "directory"}, list(c, w.extra))
		assert.Equal(t, map[string]string{"README": "file"}, list(c, filepath.Join(w.extra, "repo")))

		var rr wire.ResourceResolveResult
		c.mustRes("resourceResolve", map[string]any{"uri": fileURI(w.home)}, &rr)
		assert.Equal(t, wire.ResourceType("directory"), rr.Type)
		c.mustRes("resourceResolve", map[string]any{"uri": fileURI(filepath.Join(w.home, "notes.txt"))}, &rr)
		assert.Equal(t, wire.ResourceType("file"), rr.Type)
		require.NotNil(t, rr.Size)
		assert.EqualValues(t, len("HOME-CONTENT"), *rr.Size)
		c.mustRes("resourceResolve", map[string]any{"uri": fileURI(filepath.Join(w.home, "link-in"))}, &rr)
		assert.Equal(t, fileURI(filepath.Join(w.home, "proj")), rr.URI, "the real path")
		c.mustRes("resourceResolve", map[string]any{"uri": fileURI(filepath.Join(w.home, "link-out")), "followSymlinks": false}, &rr)
		assert.Equal(t, wire.ResourceType("symlink"), rr.Type, "the link itself, not where it leads")
		assert.Equal(t, fileURI(filepath.Join(w.home, "link-out")), rr.URI)
		// Inside a browse root a missing path is just missing.
		c.resErr(CodeNotFound, "resourceResolve", map[string]any{"uri": fileURI(filepath.Join(w.extra, "nothing"))})
		c.resErr(CodeNotFound, "resourceList", map[string]any{"uri": fileURI(filepath.Join(w.home, "nothing"))})
		// Browsing goes on working once the client has a session.
		workSession(c, "s", filepath.Join(w.home, "proj"))
		assert.Contains(t, list(c, w.home), "notes.txt")
		got, _ := c.readFile(filepath.Join(w.home, "proj", "main.go"), "")
		assert.Equal(t, "package main", string(got), "the session's own directory is served in full")
	})

	t.Run("a browse root made later", func(t *testing.T) {
		later := filepath.Join(w.base, "later")
		denied(t, c, "resourceList", map[string]any{"uri": fileURI(later)})
		writeFile(t, filepath.Join(later, "x.txt"), "x")
		assert.Equal(t, map[string]string{"x.txt": "file"}, list(c, later))
	})

	t.Run("only names and types: everything else refused", func(t *testing.T) {
		c := w.hs.dial(t, "fresh")
		c.initialize(RootURI)
		for _, target := range []string{
			fileURI(filepath.Join(w.home, "notes.txt")), fileURI(filepath.Join(w.home, "nothing.txt")),
			fileURI(w.home), fileURI(filepath.Join(w.extra, "repo", "README")), fileURI(w.extra),
		} {
			for _, call := range []struct {
				method string
				params map[string]any
			}{
				{"resourceRead", map[string]any{"uri": target}},
				{"resourceWrite", map[string]any{"uri": target, "data": "pwned", "encoding": "utf-8"}},
				{"resourceWrite", map[string]any{"uri": target + "/new.txt", "data": "pwned", "encoding": "utf-8"}},
				{"resourceMkdir", map[string]any{"uri": target + "/newdir"}},
				{"resourceDelete", map[string]any{"uri": target, "recursive": true}},
				{"resourceMove", map[string]any{"source": target, "destination": target + ".moved"}},
				{"resourceCopy", map[string]any{"source": target, "destination": target + ".copied"}},
				{"createResourceWatch", map[string]any{"uri": target, "recursive": true}},
			} {
				denied(t, c, call.method, call.params)
			}
		}
		// A read refusal says the same whether or not the file exists.
		there := denied(t, c, "resourceRead", map[string]any{"uri": fileURI(filepath.Join(w.home, "notes.txt"))})
		notThere := denied(t, c, "resourceRead", map[string]any{"uri": fileURI(filepath.Join(w.home, "nothing.txt"))})
		assert.Equal(t, strings.ReplaceAll(there.Message, "notes.txt", "X"), strings.ReplaceAll(notThere.Message, "nothing.txt", "X"))
		w.unchanged(t)
	})

	t.Run("outside the browse roots", func(t *testing.T) {
		uriIn := func(rel string) string { return "file://" + w.home + "/" + rel }
		for name, target := range map[string]string{
			"a directory elsewhere":          fileURI(w.out),
			"a file elsewhere":               fileURI(filepath.Join(w.out, "secret.txt")),
			"what does not exist":            fileURI(filepath.Join(w.out, "nothing")),
			"nowhere at all":                 "file:///no/such/dir/at/all",
			"the roots' parent":              fileURI(w.base),
			"traversal":                      uriIn("../out"),
			"encoded traversal":              uriIn("%2e%2e/out/secret.txt"),
			"a link out":                     uriIn("link-out"),
			"through a link out":             uriIn("link-out/secret.txt"),
			"through a link out, missing":    uriIn("link-out/nothing"),
			"a link to an outside file":      uriIn("secret-link"),
			"a sibling with a common prefix": fileURI(w.home + "x"),
		} {
			t.Run(name, func(t *testing.T) {
				denied(t, c, "resourceList", map[string]any{"uri": target})
				denied(t, c, "resourceResolve", map[string]any{"uri": target})
				denied(t, c, "resourceRead", map[string]any{"uri": target})
			})
		}
		// The same words whether or not the path exists, plain or
		// through a link.
		for i, pair := range [][2]string{
			{fileURI(filepath.Join(w.out, "secret.txt")), fileURI(filepath.Join(w.out, "nothing.txt"))},
			{uriIn("link-out/secret.txt"), uriIn("link-out/nothing.txt")},
		} {
			for _, method := range []string{"resourceList", "resourceResolve"} {
				there := denied(t, c, method, map[string]any{"uri": pair[0]})
				notThere := denied(t, c, method, map[string]any{"uri": pair[1]})
				assert.Equal(t, strings.ReplaceAll(there.Message, "secret.txt", "X"), strings.ReplaceAll(notThere.Message, "nothing.txt", "X"), method)
				assert.Contains(t, there.Message, "browse", "the refusal says where browsing is allowed")
				if i == 1 {
					assert.NotContains(t, there.Message, w.out, "a refusal never says where a link leads")
				}
			}
		}
		w.unchanged(t)
	})
}

// TestResourceNoBrowseRoots: without a default directory or browse roots
// nothing can be listed before a session exists, as before.
func TestResourceNoBrowseRoots(t *testing.T) {
	dir := realTempDir(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "a")
	c := newHarness(t, Options{}).dial(t, "c")
	c.initialize(RootURI)
	denied(t, c, "resourceList", map[string]any{"uri": fileURI(dir)})
	denied(t, c, "resourceResolve", map[string]any{"uri": fileURI(filepath.Join(dir, "a.txt"))})
}
