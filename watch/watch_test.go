package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()

	// These tests spend their time waiting for the kernel's notifications
	// to go quiet (settle), not on the CPU. TestCloseReleasesTheInotifyInstance,
	// which counts the process's inotify instances, is not parallel, so it
	// runs before them.
	testenv.WaitingParallel(16)
	goleak.VerifyTestMain(m)
}

// settle is how long without a batch means the changes are all in. It is
// well past MaxDelay, so a batch still being gathered is not missed.
const settle = 4 * DefaultMaxDelay

func tempRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

func start(t *testing.T, root string, opts Options) *Watcher {
	t.Helper()
	w, err := New(context.Background(), root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// collect gathers batches until none has come for settle, and returns
// their events and errors.
func collect(t *testing.T, w *Watcher) ([]Event, []error, int) {
	t.Helper()
	var evs []Event
	var errs []error
	batches := 0
	deadline := time.After(20 * time.Second)
	for {
		select {
		case b, ok := <-w.Batches():
			require.True(t, ok, "the watcher stopped")
			batches++
			evs = append(evs, b.Events...)
			if b.Err != nil {
				errs = append(errs, b.Err)
			} else {
				assert.NotEmpty(t, b.Events, "an empty batch was delivered")
			}
		case <-time.After(settle):
			return evs, errs, batches
		case <-deadline:
			t.Fatal("changes kept coming for 20s")
		}
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestEachChangeArrivesOnce(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	write(t, filepath.Join(root, "existing.txt"), "x")
	write(t, filepath.Join(root, "victim.txt"), "x")
	write(t, filepath.Join(root, "old.txt"), "x")
	w := start(t, root, Options{Recursive: true})
	assert.Equal(t, root, w.Root())

	steps := []struct {
		name string
		do   func()
		want []Event
	}{
		{"create", func() { write(t, filepath.Join(root, "new.txt"), "hello") },
			[]Event{{Op: Create, Path: "new.txt"}}},
		{"write", func() { appendTo(t, filepath.Join(root, "existing.txt"), "more") },
			[]Event{{Op: Change, Path: "existing.txt"}}},
		{"delete", func() { require.NoError(t, os.Remove(filepath.Join(root, "victim.txt"))) },
			[]Event{{Op: Delete, Path: "victim.txt"}}},
		{"rename", func() {
			require.NoError(t, os.Rename(filepath.Join(root, "old.txt"), filepath.Join(root, "renamed.txt")))
		},
			[]Event{{Op: Rename, Path: "old.txt"}, {Op: Create, Path: "renamed.txt"}}},
		{"mkdir", func() { require.NoError(t, os.Mkdir(filepath.Join(root, "dir"), 0o755)) },
			[]Event{{Op: Create, Path: "dir", Dir: true}}},
		{"rmdir", func() { require.NoError(t, os.Remove(filepath.Join(root, "dir"))) },
			[]Event{{Op: Delete, Path: "dir", Dir: true}}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			began := time.Now()
			st.do()
			select {
			case b := <-w.Batches():
				t.Logf("first batch after %v", time.Since(began))
				evs, errs, _ := collect(t, w)
				assert.Empty(t, errs)
				assert.Equal(t, st.want, append(b.Events, evs...))
			case <-time.After(10 * time.Second):
				t.Fatal("no batch")
			}
		})
	}
}

func TestBurstIsCoalesced(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	p := filepath.Join(root, "burst.txt")
	write(t, p, "")
	w := start(t, root, Options{Recursive: true})
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	for i := range 1000 {
		_, err := fmt.Fprintf(f, "line %d\n", i)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	evs, errs, batches := collect(t, w)
	assert.Empty(t, errs)
	assert.Equal(t, []Event{{Op: Change, Path: "burst.txt"}}, evs)
	assert.Equal(t, 1, batches)
}

func TestCoalescing(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	tests := []struct {
		ops  []Op
		want Op // 0: nothing to report
	}{
		{[]Op{Create, Change, Change}, Create},
		{[]Op{Create, Delete}, 0},
		{[]Op{Create, Change, Rename}, 0},
		{[]Op{Delete, Create}, Change},
		{[]Op{Rename, Create, Change}, Change},
		{[]Op{Change, Delete}, Delete},
		{[]Op{Change, Rename}, Rename},
		{[]Op{Change, Change}, Change},
		{[]Op{Delete}, Delete},
	}
	for _, tt := range tests {
		// Whether split over two windows or not, the net is the same.
		for split := 0; split <= len(tt.ops); split++ {
			a, b := newCoalescer(), newCoalescer()
			for i, op := range tt.ops {
				if i < split {
					a.add("f", op, false)
				} else {
					b.add("f", op, false)
				}
			}
			a.merge(b)
			got := a.batch()
			if tt.want == 0 {
				assert.Empty(t, got.Events, "%v split at %d", tt.ops, split)
			} else {
				assert.Equal(t, []Event{{Op: tt.want, Path: "f"}}, got.Events, "%v split at %d", tt.ops, split)
			}
		}
	}
}

func TestNewSubdirectoriesAreWatched(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	w := start(t, root, Options{Recursive: true})
	assert.Equal(t, 1, w.Watched())

	// Files land in new directories before the watcher can have seen
	// the directories: the scan must find them.
	write(t, filepath.Join(root, "a", "f1.txt"), "1")
	write(t, filepath.Join(root, "a", "b", "c", "deep.txt"), "deep")
	evs, errs, _ := collect(t, w)
	assert.Empty(t, errs)
	assert.ElementsMatch(t, []Event{
		{Op: Create, Path: "a", Dir: true},
		{Op: Create, Path: "a/f1.txt"},
		{Op: Create, Path: "a/b", Dir: true},
		{Op: Create, Path: "a/b/c", Dir: true},
		{Op: Create, Path: "a/b/c/deep.txt"},
	}, evs)
	assert.Equal(t, 4, w.Watched())

	appendTo(t, filepath.Join(root, "a", "b", "c", "deep.txt"), "er")
	write(t, filepath.Join(root, "a", "b", "late.txt"), "late")
	evs, _, _ = collect(t, w)
	assert.ElementsMatch(t, []Event{{Op: Change, Path: "a/b/c/deep.txt"}, {Op: Create, Path: "a/b/late.txt"}}, evs)

	// A directory renamed within the tree is watched under its new name.
	require.NoError(t, os.Rename(filepath.Join(root, "a", "b"), filepath.Join(root, "moved")))
	evs, _, _ = collect(t, w)
	assert.Contains(t, evs, Event{Op: Rename, Path: "a/b", Dir: true})
	assert.Contains(t, evs, Event{Op: Create, Path: "moved", Dir: true})
	appendTo(t, filepath.Join(root, "moved", "c", "deep.txt"), "!")
	evs, _, _ = collect(t, w)
	assert.Equal(t, []Event{{Op: Change, Path: "moved/c/deep.txt"}}, evs)
	assert.Equal(t, 4, w.Watched(), "root, a, moved, moved/c")

	require.NoError(t, os.RemoveAll(filepath.Join(root, "moved")))
	require.NoError(t, os.RemoveAll(filepath.Join(root, "a")))
	evs, _, _ = collect(t, w)
	assert.Contains(t, evs, Event{Op: Delete, Path: "a", Dir: true})
	assert.Contains(t, evs, Event{Op: Delete, Path: "moved", Dir: true})
	assert.Equal(t, 1, w.Watched(), "the removed directories' watches are dropped")
}

func TestNonRecursive(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	write(t, filepath.Join(root, "sub", "inner.txt"), "x")
	w := start(t, root, Options{})
	assert.Equal(t, 1, w.Watched())
	write(t, filepath.Join(root, "top.txt"), "x")
	appendTo(t, filepath.Join(root, "sub", "inner.txt"), "y")
	write(t, filepath.Join(root, "newdir", "below.txt"), "x")
	evs, _, _ := collect(t, w)
	assert.ElementsMatch(t, []Event{{Op: Create, Path: "top.txt"}, {Op: Create, Path: "newdir", Dir: true}}, evs)
	assert.Equal(t, 1, w.Watched())
}

func TestIgnore(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	write(t, filepath.Join(root, ".git", "objects", "x"), "x")
	w := start(t, root, Options{Recursive: true, Ignore: func(rel string, dir bool) bool {
		return rel == ".git" || strings.HasPrefix(rel, ".git/") || strings.HasSuffix(rel, ".tmp")
	}})
	assert.Equal(t, 1, w.Watched(), "an ignored directory costs no watch")
	write(t, filepath.Join(root, ".git", "objects", "y"), "y")
	write(t, filepath.Join(root, ".git", "HEAD"), "ref")
	write(t, filepath.Join(root, "scratch.tmp"), "x")
	write(t, filepath.Join(root, "kept.txt"), "x")
	evs, _, _ := collect(t, w)
	assert.Equal(t, []Event{{Op: Create, Path: "kept.txt"}}, evs)
}

func TestWatchOneFile(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	p := filepath.Join(root, "only.txt")
	write(t, p, "x")
	w := start(t, p, Options{Recursive: true})
	write(t, filepath.Join(root, "sibling.txt"), "x")
	appendTo(t, p, "y")
	evs, _, _ := collect(t, w)
	assert.Equal(t, []Event{{Op: Change, Path: ""}}, evs)
	require.NoError(t, os.Remove(p))
	evs, _, _ = collect(t, w)
	assert.Equal(t, []Event{{Op: Delete, Path: ""}}, evs)
}

// TestUnreadBatchesMerge leaves batches unread across windows: nothing
// is dropped, and what was waiting is merged with what came after.
func TestUnreadBatchesMerge(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	write(t, filepath.Join(root, "a.txt"), "x")
	w := start(t, root, Options{Recursive: true, Window: 20 * time.Millisecond, MaxDelay: 40 * time.Millisecond})
	appendTo(t, filepath.Join(root, "a.txt"), "y")
	time.Sleep(200 * time.Millisecond) // a batch is due and not read
	write(t, filepath.Join(root, "b.txt"), "x")
	require.NoError(t, os.Remove(filepath.Join(root, "a.txt")))
	time.Sleep(200 * time.Millisecond)
	evs, _, batches := collect(t, w)
	assert.Equal(t, []Event{{Op: Delete, Path: "a.txt"}, {Op: Create, Path: "b.txt"}}, evs)
	assert.Equal(t, 1, batches)
}

func TestMaxWatchesLimit(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	for _, d := range []string{"a", "b", "c"} {
		require.NoError(t, os.Mkdir(filepath.Join(root, d), 0o755))
	}
	_, err := New(context.Background(), root, Options{Recursive: true, MaxWatches: 3})
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 3, le.Limit)
	assert.Contains(t, err.Error(), "MaxWatches")
	assert.Contains(t, err.Error(), "MaxWatches option = 3")

	w := start(t, root, Options{Recursive: true, MaxWatches: 4})
	assert.Equal(t, 4, w.Watched())
}

// TestOSWatchLimit simulates inotify's ENOSPC: at setup it fails New
// with a clear error, and later it is reported while the rest of the
// tree goes on being watched.
func TestOSWatchLimit(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	require.NoError(t, os.Mkdir(filepath.Join(root, "a"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(root, "b"), 0o755))
	var budget atomic.Int64
	opts := Options{Recursive: true}
	opts.addWatch = func(fsw *fsnotify.Watcher, name string) error {
		if budget.Add(-1) < 0 {
			return fmt.Errorf("inotify_add_watch %s: %w", name, syscall.ENOSPC)
		}
		return fsw.Add(name)
	}
	budget.Store(2)
	_, err := New(context.Background(), root, opts)
	var le *LimitError
	require.ErrorAs(t, err, &le, "three directories, room for two")
	assert.ErrorIs(t, err, syscall.ENOSPC)
	assert.Contains(t, err.Error(), "fs.inotify.max_user_watches")
	assert.Contains(t, err.Error(), "sysctl")

	budget.Store(3)
	w2, err := New(context.Background(), root, opts)
	require.NoError(t, err)
	defer w2.Close()
	require.NoError(t, os.Mkdir(filepath.Join(root, "c"), 0o755))
	evs, errs, _ := collect(t, w2)
	assert.Equal(t, []Event{{Op: Create, Path: "c", Dir: true}}, evs)
	require.Len(t, errs, 1)
	require.ErrorAs(t, errs[0], &le)
	assert.Equal(t, filepath.Join(root, "c"), le.Dir)
	t.Log(errs[0])

	write(t, filepath.Join(root, "a", "still.txt"), "x")
	evs, _, _ = collect(t, w2)
	assert.Equal(t, []Event{{Op: Create, Path: "a/still.txt"}}, evs, "the watch goes on")
}

func TestCloseStopsEverything(t *testing.T) {
	t.Parallel() // waits on the kernel, not the CPU (TestMain)
	root := tempRoot(t)
	w, err := New(context.Background(), root, Options{Recursive: true})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "Close is idempotent")
	_, ok := <-w.Batches()
	assert.False(t, ok, "Batches is closed")
	assert.Zero(t, w.Watched())
	_, err = New(context.Background(), filepath.Join(root, "missing"), Options{})
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), filepath.Join(root, "missing"))

	// Closing while a batch waits to be read does not hang.
	w, err = New(context.Background(), root, Options{Window: time.Millisecond})
	require.NoError(t, err)
	write(t, filepath.Join(root, "x"), "x")
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, w.Close())
}

// BenchmarkLatency measures how long a change takes to arrive, from the
// write to the batch: the design bound is DefaultMaxDelay (250 ms), well
// within AHP's 500 ms.
func BenchmarkLatency(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	w, err := New(context.Background(), root, Options{Recursive: true})
	require.NoError(b, err)
	defer w.Close()
	var worst time.Duration
	for i := 0; b.Loop(); i++ {
		began := time.Now()
		require.NoError(b, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", i)), []byte("x"), 0o644))
		<-w.Batches()
		worst = max(worst, time.Since(began))
	}
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
}
