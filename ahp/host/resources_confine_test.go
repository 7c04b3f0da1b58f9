//go:build unix

package host

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// confineWorld is two sessions' directories and one outside both:
//
//	base/a    client A's session (with links leading out of it)
//	base/b    client B's session
//	base/out  nobody's
type confineWorld struct {
	hs           *harness
	a, b         *testClient
	base         string
	dirA, dirB   string
	out          string
	sessA, sessB string
}

func newConfineWorld(t *testing.T) *confineWorld {
	w := &confineWorld{hs: newHarness(t, Options{}), base: realTempDir(t)}
	w.dirA, w.dirB, w.out = filepath.Join(w.base, "a"), filepath.Join(w.base, "b"), filepath.Join(w.base, "out")
	writeFile(t, filepath.Join(w.dirA, "mine.txt"), "A's")
	writeFile(t, filepath.Join(w.dirA, "sub", "deep.txt"), "deep")
	writeFile(t, filepath.Join(w.dirB, "theirs.txt"), "B's")
	writeFile(t, filepath.Join(w.out, "secret.txt"), "OUTSIDE")
	require.NoError(t, os.Symlink("../out", filepath.Join(w.dirA, "out-link")))
	require.NoError(t, os.Symlink("../out/secret.txt", filepath.Join(w.dirA, "secret-link")))
	require.NoError(t, os.Symlink(w.out, filepath.Join(w.dirA, "abs-link")))
	require.NoError(t, os.Symlink("../b", filepath.Join(w.dirA, "b-link")))
	require.NoError(t, os.Symlink("../out/nothing", filepath.Join(w.dirA, "dangling-out")))
	w.a = w.hs.dial(t, "A")
	w.a.initialize(RootURI)
	w.sessA = workSession(w.a, "a", w.dirA)
	w.b = w.hs.dial(t, "B")
	w.b.initialize(RootURI)
	w.sessB = workSession(w.b, "b", w.dirB)
	return w
}

// outsideUnchanged checks that nothing outside the sessions' directories
// was touched.
func (w *confineWorld) outsideUnchanged(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(w.out)
	require.NoError(t, err)
	require.Len(t, entries, 1, "something was created outside: %v", entries)
	assert.Equal(t, "OUTSIDE", fileContent(t, filepath.Join(w.out, "secret.txt")))
	assert.Equal(t, "B's", fileContent(t, filepath.Join(w.dirB, "theirs.txt")))
	entries, err = os.ReadDir(w.dirB)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "something was created in B's directory: %v", entries)
}

// denied requires PermissionDenied with the refusal's words, and no hint
// of what is there.
func denied(t *testing.T, c *testClient, method string, params map[string]any) *Error {
	t.Helper()
	e := c.resErr(CodePermissionDenied, method, params)
	assert.Contains(t, e.Message, "permission denied", "%s %v", method, params)
	for _, leak := range []string{"no such file", "not found", "exists", "OUTSIDE", "is a directory"} {
		assert.NotContains(t, e.Message, leak, "%s %v", method, params)
	}
	return e
}

// everyCommand tries every resource command on target (a file URI
// outside what c may touch) and requires each refused. inside is a file
// c may touch. When target's last component is a link (inside) leading
// out, the commands that act on a link itself rather than follow it
// (delete, move, resolve without following) are left out: the link is
// c's to remove or rename.
func everyCommand(t *testing.T, c *testClient, target, inside string, lastIsLink bool) {
	t.Helper()
	type call struct {
		method string
		params map[string]any
	}
	calls := []call{
		{"resourceRead", map[string]any{"uri": target}},
		{"resourceList", map[string]any{"uri": target}},
		{"resourceResolve", map[string]any{"uri": target}},
		{"resourceWrite", map[string]any{"uri": target, "data": "pwned", "encoding": "utf-8"}},
		{"resourceWrite", map[string]any{"uri": target + "/new.txt", "data": "pwned", "encoding": "utf-8"}},
		{"resourceWrite", map[string]any{"uri": target, "data": "pwned", "encoding": "utf-8", "mode": "append"}},
		{"resourceMkdir", map[string]any{"uri": target + "/newdir"}},
		{"resourceMove", map[string]any{"source": inside, "destination": target + "/moved"}},
		{"resourceCopy", map[string]any{"source": target, "destination": inside + ".stolen"}},
		{"resourceCopy", map[string]any{"source": inside, "destination": target + "/copied"}},
		{"createResourceWatch", map[string]any{"uri": target}},
	}
	if !lastIsLink {
		calls = append(calls,
			call{"resourceResolve", map[string]any{"uri": target, "followSymlinks": false}},
			call{"resourceDelete", map[string]any{"uri": target, "recursive": true}},
			call{"resourceDelete", map[string]any{"uri": target}},
			call{"resourceMove", map[string]any{"source": target, "destination": inside + ".stolen"}},
			call{"resourceCopy", map[string]any{"source": inside, "destination": target}},
			call{"resourceMove", map[string]any{"source": inside, "destination": target}},
		)
	}
	for _, call := range calls {
		denied(t, c, call.method, call.params)
	}
}

// TestResourceConfinement: a connection touches only the working
// directories of the sessions it created or is subscribed to. Every way
// out is refused with PermissionDenied, in the same words whether or not
// the path exists, and the disk outside stays as it was.
func TestResourceConfinement(t *testing.T) {
	w := newConfineWorld(t)
	a := w.a
	mine := fileURI(filepath.Join(w.dirA, "mine.txt"))
	uriIn := func(rel string) string { return "file://" + w.dirA + "/" + rel }

	cases := map[string]string{
		"absolute path elsewhere":                  fileURI(filepath.Join(w.out, "secret.txt")),
		"absolute directory elsewhere":             fileURI(w.out),
		"traversal":                                uriIn("../out/secret.txt"),
		"deep traversal":                           uriIn("sub/../../out/secret.txt"),
		"encoded traversal":                        uriIn("%2e%2e/out/secret.txt"),
		"traversal to the parent":                  uriIn(".."),
		"relative link out":                        uriIn("out-link/secret.txt"),
		"absolute link out":                        uriIn("abs-link/secret.txt"),
		"link to another session's":                uriIn("b-link/theirs.txt"),
		"another session's directory":              fileURI(w.dirB),
		"another session's file":                   fileURI(filepath.Join(w.dirB, "theirs.txt")),
		"outside path that does not exist":         fileURI(filepath.Join(w.out, "nothing.txt")),
		"outside directory that does not exist":    "file:///no/such/dir/at/all",
		"traversal to what does not exist":         uriIn("../out/nothing/x.txt"),
		"link out to what does not exist":          uriIn("out-link/nothing.txt"),
		"nested in another session's":              fileURI(filepath.Join(w.dirB, "new", "x.txt")),
		"the working directories' parent":          fileURI(w.base),
		"a sibling with a common prefix":           fileURI(w.dirA + "x/file"),
		"a sibling directory with a common prefix": fileURI(w.dirA + "x"),
	}
	links := map[string]string{
		"the link out itself":     uriIn("out-link"),
		"link to an outside file": uriIn("secret-link"),
		"dangling link out":       uriIn("dangling-out"),
		"link to another session": uriIn("b-link"),
	}
	for name, target := range cases {
		t.Run(name, func(t *testing.T) {
			everyCommand(t, a, target, mine, false)
			w.outsideUnchanged(t)
			assert.Equal(t, "A's", fileContent(t, filepath.Join(w.dirA, "mine.txt")))
			assert.False(t, exists(filepath.Join(w.dirA, "mine.txt.stolen")))
		})
	}
	for name, target := range links {
		t.Run(name, func(t *testing.T) {
			everyCommand(t, a, target, mine, true)
			w.outsideUnchanged(t)
			assert.Equal(t, "A's", fileContent(t, filepath.Join(w.dirA, "mine.txt")))
			assert.False(t, exists(filepath.Join(w.dirA, "mine.txt.stolen")))
		})
	}

	t.Run("a refusal reveals nothing", func(t *testing.T) {
		// The same words for a path that exists and one that does not.
		there := denied(t, a, "resourceRead", map[string]any{"uri": fileURI(filepath.Join(w.out, "secret.txt"))})
		notThere := denied(t, a, "resourceRead", map[string]any{"uri": fileURI(filepath.Join(w.out, "nothere.txt"))})
		assert.Equal(t, strings.ReplaceAll(there.Message, "secret.txt", "X"), strings.ReplaceAll(notThere.Message, "nothere.txt", "X"))
		viaLink := denied(t, a, "resourceRead", map[string]any{"uri": uriIn("out-link/secret.txt")})
		viaMissing := denied(t, a, "resourceRead", map[string]any{"uri": uriIn("out-link/nothere.txt")})
		assert.Equal(t, strings.ReplaceAll(viaLink.Message, "secret.txt", "X"), strings.ReplaceAll(viaMissing.Message, "nothere.txt", "X"))
		assert.Contains(t, there.Message, filepath.Join(w.out, "secret.txt"), "the message names the path asked for")
	})

	t.Run("links inside are followed", func(t *testing.T) {
		require.NoError(t, os.Symlink("sub/deep.txt", filepath.Join(w.dirA, "in-link")))
		got, _ := a.readFile(filepath.Join(w.dirA, "in-link"), "")
		assert.Equal(t, "deep", string(got))
		var lr wire.ResourceListResult
		a.mustRes("resourceList", map[string]any{"uri": fileURI(w.dirA)}, &lr)
		types := map[string]string{}
		for _, e := range lr.Entries {
			types[e.Name] = e.Type
		}
		// Links leading out are listed as links, saying nothing of where.
		assert.Equal(t, "symlink", types["out-link"])
		assert.Equal(t, "symlink", types["secret-link"])
		assert.Equal(t, "file", types["in-link"])
		// A link leading out is the connection's own to remove: the link
		// goes, what it points at stays.
		a.mustRes("resourceDelete", map[string]any{"uri": uriIn("dangling-out")}, nil)
		a.mustRes("resourceDelete", map[string]any{"uri": uriIn("secret-link")}, nil)
		assert.False(t, exists(filepath.Join(w.dirA, "secret-link")))
		w.outsideUnchanged(t)
	})

	t.Run("each client its own session", func(t *testing.T) {
		got, _ := w.b.readFile(filepath.Join(w.dirB, "theirs.txt"), "")
		assert.Equal(t, "B's", string(got))
		denied(t, w.b, "resourceRead", map[string]any{"uri": mine})
		everyCommand(t, w.b, fileURI(w.dirA), fileURI(filepath.Join(w.dirB, "theirs.txt")), false)
		w.outsideUnchanged(t)
	})
}

// TestResourceAccessFollowsSessions: access comes with creating a
// session or subscribing to it (or to one of its chats), and goes with
// unsubscribing and disposing.
func TestResourceAccessFollowsSessions(t *testing.T) {
	w := newConfineWorld(t)
	mine := map[string]any{"uri": fileURI(filepath.Join(w.dirA, "mine.txt"))}
	c := w.hs.dial(t, "C")
	c.initialize(RootURI)
	denied(t, c, "resourceRead", mine)

	c.subscribe(w.sessA)
	got, _ := c.readFile(filepath.Join(w.dirA, "mine.txt"), "")
	assert.Equal(t, "A's", string(got))
	c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": w.sessA}})
	c.ping()
	denied(t, c, "resourceRead", mine)

	// Through a chat of the session.
	var st wire.SessionState
	require.NoError(t, json.Unmarshal(w.a.subscribe(w.sessA).State, &st))
	c.subscribe(*st.DefaultChat)
	got, _ = c.readFile(filepath.Join(w.dirA, "mine.txt"), "")
	assert.Equal(t, "A's", string(got))
	c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": *st.DefaultChat}})
	c.ping()
	denied(t, c, "resourceRead", mine)

	// Created but not subscribed: still its creator's.
	d := w.hs.dial(t, "D")
	d.initialize(RootURI)
	d.mustCall("createSession", map[string]any{"channel": "ahp-session:/d", "provider": "fake", "workingDirectories": []string{w.dirA}}, nil)
	got, _ = d.readFile(filepath.Join(w.dirA, "mine.txt"), "")
	assert.Equal(t, "A's", string(got))

	// Disposed: gone for everyone it granted.
	w.a.mustCall("disposeSession", map[string]any{"channel": w.sessA}, nil)
	denied(t, w.a, "resourceRead", mine)
	got, _ = d.readFile(filepath.Join(w.dirA, "mine.txt"), "") // D's own session still grants it
	assert.Equal(t, "A's", string(got))
	d.mustCall("disposeSession", map[string]any{"channel": "ahp-session:/d"}, nil)
	denied(t, d, "resourceRead", mine)
}

// TestResourceSymlinkSwap: a link swapped between inside and outside
// while requests go through it never lets one reach outside: each
// answer is the inside content or a refusal, and nothing outside
// changes.
func TestResourceSymlinkSwap(t *testing.T) {
	w := newConfineWorld(t)
	inside := filepath.Join(w.dirA, "real")
	writeFile(t, filepath.Join(inside, "secret.txt"), "inside")
	swap := filepath.Join(w.dirA, "swap")
	require.NoError(t, os.Symlink("real", swap))

	writeFile(t, filepath.Join(inside, "inside-marker"), "")

	// The swapper replaces the link atomically (rename over it), in and
	// out, until told to stop.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer halt()
	wg.Add(1)
	go func() {
		defer wg.Done()
		targets := [2]string{"../out", "real"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.Context().Done():
				return
			default:
			}
			tmp := filepath.Join(w.dirA, fmt.Sprintf(".swap-%d", i))
			if err := os.Symlink(targets[i%2], tmp); err != nil {
				t.Errorf("making a link: %v", err)
				return
			}
			if err := os.Rename(tmp, swap); err != nil {
				t.Errorf("swapping the link: %v", err)
				return
			}
		}
	}()

	const rounds = 150
	type pending struct {
		id     string
		method string
	}
	answered := map[string]int{}
	for i := range rounds {
		var sent []pending
		for _, call := range []struct {
			method string
			params map[string]any
		}{
			{"resourceRead", map[string]any{"uri": fileURI(filepath.Join(swap, "secret.txt"))}},
			{"resourceWrite", map[string]any{"uri": fileURI(filepath.Join(swap, fmt.Sprintf("new-%d.txt", i))), "data": "x", "encoding": "utf-8"}},
			{"resourceWrite", map[string]any{"uri": fileURI(filepath.Join(swap, "secret.txt")), "data": "inside", "encoding": "utf-8"}},
			{"resourceList", map[string]any{"uri": fileURI(swap)}},
			{"resourceMkdir", map[string]any{"uri": fileURI(filepath.Join(swap, fmt.Sprintf("dir-%d", i)))}},
			{"resourceDelete", map[string]any{"uri": fileURI(filepath.Join(swap, "secret.txt.gone"))}},
		} {
			w.a.nextID++
			call.params["channel"] = RootURI
			w.a.send(map[string]any{"jsonrpc": "2.0", "id": w.a.nextID, "method": call.method, "params": call.params})
			sent = append(sent, pending{fmt.Sprint(w.a.nextID), call.method})
		}
		for _, p := range sent {
			res, err := w.a.await(p.id)
			if err != nil {
				assert.Contains(t, []int{CodePermissionDenied, CodeNotFound}, err.Code, "%s: %s", p.method, err.Message)
				continue
			}
			answered[p.method]++
			switch p.method {
			case "resourceRead":
				var rr wire.ResourceReadResult
				require.NoError(t, json.Unmarshal(res, &rr))
				assert.Equal(t, "inside", rr.Data, "a read went outside")
			case "resourceList":
				var lr wire.ResourceListResult
				require.NoError(t, json.Unmarshal(res, &lr))
				assert.Contains(t, lr.Entries, wire.DirectoryEntry{Name: "inside-marker", Type: "file"}, "a listing went outside")
			}
		}
	}
	halt()
	w.outsideUnchanged(t)
	t.Logf("answered while the link was inside: %v", answered)
}
