//go:build unix

package host

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/sandbox"
)

// createWatch creates a resource watch and returns its channel.
func (tc *testClient) createWatch(params map[string]any) string {
	tc.t.Helper()
	var res wire.CreateResourceWatchResult
	tc.mustRes("createResourceWatch", params, &res)
	require.True(tc.t, strings.HasPrefix(res.Channel, "ahp-resource-watch:/"), "channel %q", res.Channel)
	return res.Channel
}

// changesUntil collects the changes a watch channel reports until one
// matches done, and returns them all, in order. Other messages are kept
// for later.
func (tc *testClient) changesUntil(watch string, done func(wire.ResourceChange) bool) []wire.ResourceChange {
	tc.t.Helper()
	var got []wire.ResourceChange
	for {
		m := tc.find("a change on "+watch, func(m rpcMsg) bool {
			return m.Method == wire.MethodAction && isAction(watch, wire.ActionTypeResourceWatchChanged)(decodeEnvelope(tc.t, m))
		})
		e := decodeEnvelope(tc.t, m)
		a, ok := e.Action.Value.(*wire.ResourceWatchChangedAction)
		require.True(tc.t, ok, "%T", e.Action.Value)
		require.NotEmpty(tc.t, a.Changes.Items, "an empty batch was dispatched")
		got = append(got, a.Changes.Items...)
		if slices.ContainsFunc(a.Changes.Items, done) {
			return got
		}
	}
}

// added is a predicate for the addition of path.
func added(path string) func(wire.ResourceChange) bool {
	return func(c wire.ResourceChange) bool {
		return c.Type == wire.ResourceChangeTypeAdded && c.URI == fileURI(path)
	}
}

func change(path string, t wire.ResourceChangeType) wire.ResourceChange {
	return wire.ResourceChange{URI: fileURI(path), Type: t}
}

// createEmpty creates an empty file with one system call, so that the
// watch sees exactly one event.
func createEmpty(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// appendOnce appends with one write.
func appendOnce(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestResourceWatchReportsChanges: a change on disk (create, write,
// rename, delete) arrives as resourceWatch/changed exactly once; a burst
// of writes arrives coalesced; writes by others (a command in a terminal,
// the agent through the sandbox its fs/write_text_file uses) show up like
// any other; unsubscribing releases the watch and its OS watches.
func TestResourceWatchReportsChanges(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	dir := realTempDir(t)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "old"), 0o755))
	workSession(c, "watched", dir)
	at := func(rel string) string { return filepath.Join(dir, rel) }
	baseline := osWatches(t)

	w := c.createWatch(map[string]any{"uri": fileURI(dir), "recursive": true})
	snap := c.subscribe(w)
	assert.Equal(t, w, snap.Resource)
	var st wire.ResourceWatchState
	require.NoError(t, json.Unmarshal(snap.State, &st))
	assert.Equal(t, wire.ResourceWatchState{Root: fileURI(dir), Recursive: true}, st)
	watches, dirs := hs.h.watchStats()
	assert.Equal(t, 1, watches)
	assert.Equal(t, 2, dirs, "the directory and old/")

	t.Run("each change once", func(t *testing.T) {
		var got []wire.ResourceChange
		createEmpty(t, at("x.txt"))
		got = append(got, c.changesUntil(w, added(at("x.txt")))...)
		appendOnce(t, at("x.txt"), "more\n")
		got = append(got, c.changesUntil(w, func(ch wire.ResourceChange) bool { return ch == change(at("x.txt"), wire.ResourceChangeTypeUpdated) })...)
		require.NoError(t, os.Rename(at("x.txt"), at("y.txt")))
		got = append(got, c.changesUntil(w, added(at("y.txt")))...)
		require.NoError(t, os.Remove(at("y.txt")))
		got = append(got, c.changesUntil(w, func(ch wire.ResourceChange) bool { return ch == change(at("y.txt"), wire.ResourceChangeTypeDeleted) })...)
		createEmpty(t, at("old/deep.txt"))
		got = append(got, c.changesUntil(w, added(at("old/deep.txt")))...)
		// A marker: whatever was still due arrives before it.
		createEmpty(t, at("marker"))
		got = append(got, c.changesUntil(w, added(at("marker")))...)
		assert.ElementsMatch(t, []wire.ResourceChange{
			change(at("x.txt"), wire.ResourceChangeTypeAdded),
			change(at("x.txt"), wire.ResourceChangeTypeUpdated),
			change(at("x.txt"), wire.ResourceChangeTypeDeleted), // renamed away
			change(at("y.txt"), wire.ResourceChangeTypeAdded),   // renamed to
			change(at("y.txt"), wire.ResourceChangeTypeDeleted),
			change(at("old/deep.txt"), wire.ResourceChangeTypeAdded),
			change(at("marker"), wire.ResourceChangeTypeAdded),
		}, got)
	})

	t.Run("a new directory is watched", func(t *testing.T) {
		require.NoError(t, os.Mkdir(at("new"), 0o755))
		c.changesUntil(w, added(at("new")))
		createEmpty(t, at("new/inner.txt"))
		c.changesUntil(w, added(at("new/inner.txt")))
		_, dirs := hs.h.watchStats()
		assert.Equal(t, 3, dirs)
	})

	t.Run("a burst of writes arrives coalesced", func(t *testing.T) {
		createEmpty(t, at("burst.txt"))
		c.changesUntil(w, added(at("burst.txt")))
		const writes = 1000
		for i := range writes {
			appendOnce(t, at("burst.txt"), fmt.Sprintf("%d\n", i))
		}
		createEmpty(t, at("after-burst"))
		got := c.changesUntil(w, added(at("after-burst")))
		updates := 0
		for _, ch := range got {
			if ch.URI == fileURI(at("burst.txt")) {
				assert.Equal(t, wire.ResourceChangeTypeUpdated, ch.Type)
				updates++
			}
		}
		t.Logf("%d writes arrived as %d changes", writes, updates)
		assert.GreaterOrEqual(t, updates, 1)
		assert.LessOrEqual(t, updates, writes/10, "the writes were not coalesced")
		assert.Equal(t, writes, strings.Count(fileContent(t, at("burst.txt")), "\n"))
	})

	t.Run("edits by a terminal and by the agent show up", func(t *testing.T) {
		// A command in a terminal: another process writing.
		cmd := exec.CommandContext(t.Context(), "/bin/sh", "-c", "echo from-a-terminal > term.txt && mv term.txt term2.txt")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		c.changesUntil(w, added(at("term2.txt")))
		assert.Equal(t, "from-a-terminal\n", fileContent(t, at("term2.txt")))

		// The agent's fs/write_text_file writes through a sandbox over the
		// session's directory (package acp), by a temporary file renamed
		// into place.
		box, err := sandbox.New(sandbox.Options{}, dir)
		require.NoError(t, err)
		defer box.Close()
		_, err = box.Write(t.Context(), at("agent/edit.go"), strings.NewReader("package main\n"), sandbox.WriteOptions{MakeParents: true})
		require.NoError(t, err)
		c.changesUntil(w, added(at("agent/edit.go")))
		_, err = box.Write(t.Context(), at("term2.txt"), strings.NewReader("rewritten by the agent\n"), sandbox.WriteOptions{})
		require.NoError(t, err)
		// Replaced by a rename: the file is there again.
		c.changesUntil(w, func(ch wire.ResourceChange) bool {
			return ch.URI == fileURI(at("term2.txt")) && ch.Type != wire.ResourceChangeTypeDeleted
		})
	})

	t.Run("unsubscribing releases the watch", func(t *testing.T) {
		c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": w}})
		c.ping()
		watches, dirs := hs.h.watchStats()
		assert.Equal(t, 0, watches)
		assert.Equal(t, 0, dirs)
		assert.Equal(t, baseline, osWatches(t), "the OS watches were not all released")
		_, err := c.call("subscribe", map[string]any{"channel": w})
		require.NotNil(t, err, "the watch channel is gone")
		assert.Equal(t, CodeNotFound, err.Code)
	})
}

// TestResourceWatchScope: a non-recursive watch sees its directory's own
// entries only; excludes and includes filter what is reported; a file
// can be watched by itself.
func TestResourceWatchScope(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	dir := realTempDir(t)
	at := func(rel string) string { return filepath.Join(dir, rel) }
	require.NoError(t, os.MkdirAll(at("sub"), 0o755))
	require.NoError(t, os.MkdirAll(at("node_modules/pkg"), 0o755))
	require.NoError(t, os.MkdirAll(at("src"), 0o755))
	writeFile(t, at("single.txt"), "one")
	workSession(c, "scope", dir)

	flat := c.createWatch(map[string]any{"uri": fileURI(dir)})
	c.subscribe(flat)
	filtered := c.createWatch(map[string]any{"uri": fileURI(dir), "recursive": true,
		"excludes": map[string]any{"items": []string{"node_modules", "**/*.log"}}})
	c.subscribe(filtered)
	included := c.createWatch(map[string]any{"uri": fileURI(dir), "recursive": true,
		"includes": map[string]any{"items": []string{"src/**/*.go", "marker"}}})
	c.subscribe(included)
	file := c.createWatch(map[string]any{"uri": fileURI(at("single.txt"))})
	c.subscribe(file)
	_, dirs := hs.h.watchStats()
	// flat 1, filtered 3 (node_modules is never watched), included 5,
	// file 1 (its directory).
	assert.Equal(t, 10, dirs)

	createEmpty(t, at("sub/inner.txt"))
	createEmpty(t, at("node_modules/pkg/index.js"))
	createEmpty(t, at("sub/debug.log"))
	createEmpty(t, at("src/main.go"))
	createEmpty(t, at("src/notes.txt"))
	createEmpty(t, at("top.txt"))
	appendOnce(t, at("single.txt"), " two")
	createEmpty(t, at("marker"))

	gotFlat := c.changesUntil(flat, added(at("marker")))
	assert.ElementsMatch(t, []wire.ResourceChange{
		change(at("top.txt"), wire.ResourceChangeTypeAdded),
		change(at("single.txt"), wire.ResourceChangeTypeUpdated),
		change(at("marker"), wire.ResourceChangeTypeAdded),
	}, gotFlat)
	gotFiltered := c.changesUntil(filtered, added(at("marker")))
	assert.ElementsMatch(t, []wire.ResourceChange{
		change(at("sub/inner.txt"), wire.ResourceChangeTypeAdded),
		change(at("src/main.go"), wire.ResourceChangeTypeAdded),
		change(at("src/notes.txt"), wire.ResourceChangeTypeAdded),
		change(at("top.txt"), wire.ResourceChangeTypeAdded),
		change(at("single.txt"), wire.ResourceChangeTypeUpdated),
		change(at("marker"), wire.ResourceChangeTypeAdded),
	}, gotFiltered)
	gotIncluded := c.changesUntil(included, added(at("marker")))
	assert.ElementsMatch(t, []wire.ResourceChange{
		change(at("src/main.go"), wire.ResourceChangeTypeAdded),
		change(at("marker"), wire.ResourceChangeTypeAdded),
	}, gotIncluded)
	gotFile := c.changesUntil(file, func(wire.ResourceChange) bool { return true })
	assert.Equal(t, []wire.ResourceChange{change(at("single.txt"), wire.ResourceChangeTypeUpdated)}, gotFile)

	c.resErr(CodeInvalidParams, "createResourceWatch", map[string]any{"uri": fileURI(dir), "excludes": map[string]any{"items": []string{"[unclosed"}}})
	c.resErr(CodeInvalidParams, "createResourceWatch", map[string]any{"uri": fileURI(dir), "includes": map[string]any{"items": []string{"/absolute"}}})
	c.resErr(CodeNotFound, "createResourceWatch", map[string]any{"uri": fileURI(at("missing"))})
}

// TestResourceWatchTooManyDirectories: a tree larger than a watch may
// watch is refused with an error that says so, and nothing is left
// watched.
func TestResourceWatchTooManyDirectories(t *testing.T) {
	hs := newHarness(t, Options{MaxWatchDirectories: 3})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	dir := realTempDir(t)
	for i := range 5 {
		require.NoError(t, os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%d", i)), 0o755))
	}
	workSession(c, "big", dir)
	baseline := osWatches(t)
	e := c.resErr(CodeInternalError, "createResourceWatch", map[string]any{"uri": fileURI(dir), "recursive": true})
	assert.Contains(t, e.Message, "too many directories")
	assert.Contains(t, e.Message, "at most 3 directories")
	assert.Contains(t, e.Message, "excludes")
	watches, dirs := hs.h.watchStats()
	assert.Equal(t, 0, watches)
	assert.Equal(t, 0, dirs)
	assert.Equal(t, baseline, osWatches(t))

	// Excluding enough of the tree makes it fit.
	w := c.createWatch(map[string]any{"uri": fileURI(dir), "recursive": true, "excludes": map[string]any{"items": []string{"d[0-3]"}}})
	c.subscribe(w)
	_, dirs = hs.h.watchStats()
	assert.Equal(t, 2, dirs)
	// So does a watch of the directory's own entries.
	c.subscribe(c.createWatch(map[string]any{"uri": fileURI(dir)}))
}

// TestResourceWatchLifecycle: who may subscribe to a watch, and when it
// is released.
func TestResourceWatchLifecycle(t *testing.T) {
	hs := newHarness(t, Options{})
	dir := realTempDir(t)
	owner := hs.dial(t, "owner")
	owner.initialize(RootURI)
	sess := workSession(owner, "life", dir)
	stranger := hs.dial(t, "stranger")
	stranger.initialize(RootURI)

	// Created and never subscribed: released with its creator.
	owner2 := hs.dial(t, "owner2")
	owner2.initialize(RootURI)
	owner2.subscribe(sess)
	owner2.createWatch(map[string]any{"uri": fileURI(dir)})
	watches, _ := hs.h.watchStats()
	require.Equal(t, 1, watches)
	owner2.close()
	eventually(t, "the watch of a connection that ended is released", func() bool {
		n, _ := hs.h.watchStats()
		return n == 0
	})

	w := owner.createWatch(map[string]any{"uri": fileURI(dir), "recursive": true})
	// A connection that may not see the directory may not watch it,
	// even knowing the channel.
	_, err := stranger.call("subscribe", map[string]any{"channel": w})
	require.NotNil(t, err)
	assert.Equal(t, CodePermissionDenied, err.Code)
	assert.Contains(t, err.Message, "permission denied")
	// Subscribed to the session, it may.
	stranger.subscribe(sess)
	stranger.subscribe(w)
	createEmpty(t, filepath.Join(dir, "seen"))
	stranger.changesUntil(w, added(filepath.Join(dir, "seen")))

	// Leaving the session ends its watching too; nobody else watches, so
	// the watch is released.
	stranger.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": sess}})
	stranger.ping()
	watches, _ = hs.h.watchStats()
	assert.Equal(t, 0, watches)

	// A disposed session takes its watches' subscribers with it, and the
	// watches created under it that nobody subscribed to.
	w = owner.createWatch(map[string]any{"uri": fileURI(dir)})
	owner.subscribe(w)
	owner.createWatch(map[string]any{"uri": fileURI(dir)})
	watches, _ = hs.h.watchStats()
	require.Equal(t, 2, watches)
	owner.mustCall("disposeSession", map[string]any{"channel": sess}, nil)
	watches, _ = hs.h.watchStats()
	assert.Equal(t, 0, watches)
	denied(t, owner, "createResourceWatch", map[string]any{"uri": fileURI(dir)})
}

// osWatches counts the inotify watches this process holds, where the
// system tells (Linux); elsewhere it is -1 and the tests rely on the
// host's own count.
func osWatches(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		return -1
	}
	n := 0
	for _, fd := range fds {
		b, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

// TestResourceWatchPerConnectionLimit: a connection may hold only so many
// watches; releasing one makes room.
func TestResourceWatchPerConnectionLimit(t *testing.T) {
	hs := newHarness(t, Options{maxWatchesPerConn: 2})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	dir := realTempDir(t)
	sess := workSession(c, "limit", dir)
	first := c.createWatch(map[string]any{"uri": fileURI(dir)})
	c.createWatch(map[string]any{"uri": fileURI(dir)})
	e := c.resErr(CodeInternalError, "createResourceWatch", map[string]any{"uri": fileURI(dir)})
	assert.Contains(t, e.Message, "already has 2 resource watches")
	watches, _ := hs.h.watchStats()
	assert.Equal(t, 2, watches)

	// Another connection has its own allowance.
	other := hs.dial(t, "other")
	other.initialize(RootURI)
	other.subscribe(sess)
	other.createWatch(map[string]any{"uri": fileURI(dir)})

	c.subscribe(first)
	c.send(map[string]any{"jsonrpc": "2.0", "method": "unsubscribe", "params": map[string]any{"channel": first}})
	c.ping()
	c.createWatch(map[string]any{"uri": fileURI(dir)})
}
