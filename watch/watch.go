// Package watch reports changes under a directory tree: what AHP's
// createResourceWatch channels deliver as resourceWatch/changed actions.
//
// It sits on fsnotify and adds what AHP needs and fsnotify leaves to its
// users:
//
//   - Recursion done right: every directory of the tree gets an OS
//     watch, a directory that appears gets one at once and is scanned, so
//     files created in it before the watch was in place are reported too,
//     and the watches of a directory that goes away are dropped.
//     Symbolic links are never followed, so a watch never leaves the tree.
//   - Batches: events are coalesced per path over a short window, so a
//     burst of writes to one file is one change, a file created and
//     deleted within the window is nothing, and a file deleted and
//     recreated is a change. A batch is delivered once no event has come
//     for Options.Window, and never later than Options.MaxDelay after its
//     first event.
//   - Limits: running out of OS watches (inotify's max_user_watches on
//     Linux) is a LimitError that names the limit and how to raise it,
//     returned by New or delivered in a Batch, never a silent stop.
//
// Paths in events are relative to the watched root and use forward
// slashes; "" is the root itself.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Op is the kind of a change.
type Op uint8

// The changes a Watcher reports.
const (
	// Create: the path appeared (AHP "added").
	Create Op = iota + 1
	// Change: the file's content changed, or it was replaced (AHP
	// "updated").
	Change
	// Delete: the path is gone (AHP "deleted").
	Delete
	// Rename: the path was renamed away; where it went, if inside the
	// tree, is reported as a Create (AHP "deleted" and "added").
	Rename
)

// String returns the lower-case name of the op.
func (o Op) String() string {
	switch o {
	case Create:
		return "create"
	case Change:
		return "change"
	case Delete:
		return "delete"
	case Rename:
		return "rename"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Event is one change in a Batch.
type Event struct {
	// Op is what happened, net over the batch's window.
	Op Op
	// Path is relative to the watched root, with forward slashes; "" is
	// the root itself.
	Path string
	// Dir reports that the path is (or was) a directory, when known.
	Dir bool
}

// Batch is what a Watcher delivers: the changes of one window, in the
// order of their first event, each path at most once.
type Batch struct {
	// Events are the changes; empty only when Err is set.
	Events []Event
	// Err reports a problem the watch ran into; changes may have been
	// missed. It is a *LimitError when a new directory could not be
	// watched (the rest of the tree still is), or wraps
	// fsnotify.ErrEventOverflow when the OS dropped events.
	Err error
}

// Defaults for Options.
const (
	DefaultWindow   = 50 * time.Millisecond
	DefaultMaxDelay = 250 * time.Millisecond
)

// Options configures a Watcher.
type Options struct {
	// Recursive watches the whole tree. Otherwise only the root and its
	// direct entries are reported, as AHP's non-recursive watch asks.
	Recursive bool
	// Window is how long a batch stays open after its latest event.
	// Zero means DefaultWindow.
	Window time.Duration
	// MaxDelay bounds how long a batch waits for a quiet window, so a
	// steady stream of events is still delivered. Zero means
	// DefaultMaxDelay.
	MaxDelay time.Duration
	// MaxWatches caps the directories this Watcher watches, to keep one
	// watch from using up the OS's watches; reaching it is a LimitError.
	// Zero means only the OS limit applies.
	MaxWatches int
	// Ignore, if set, is asked about every path (relative, with forward
	// slashes) before it is reported or, for a directory, watched: an
	// ignored directory costs no OS watch and nothing under it is
	// reported. It is how AHP's excludes and includes are applied.
	Ignore func(rel string, dir bool) bool

	// addWatch replaces fsnotify's Add in tests, to simulate OS limits.
	addWatch func(fsw *fsnotify.Watcher, name string) error
}

// LimitError reports that a directory could not be watched because a
// limit on watches was reached.
type LimitError struct {
	// Dir is the directory left unwatched.
	Dir string
	// Setting names the limit, e.g. "fs.inotify.max_user_watches".
	Setting string
	// Limit is the limit's value, or -1 when unknown.
	Limit int
	// Hint says how to raise the limit.
	Hint string
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *LimitError) Error() string {
	setting := e.Setting
	if e.Limit >= 0 {
		setting = fmt.Sprintf("%s = %d", e.Setting, e.Limit)
	}
	return fmt.Sprintf("cannot watch %s: every watch allowed is in use (%s); %s", e.Dir, setting, e.Hint)
}

// Unwrap returns the underlying error.
func (e *LimitError) Unwrap() error { return e.Err }

// Watcher watches one tree. Its owner must Close it.
type Watcher struct {
	root   string // absolute, clean
	single string // when the root is a file: its name in the watched parent
	opts   Options
	fsw    *fsnotify.Watcher
	out    chan Batch
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu      sync.Mutex
	watched map[string]struct{} // absolute directories with an OS watch
}

// New starts watching root, a directory or a file, and returns once
// every directory of the tree has its OS watch. ctx bounds only that
// setup; the Watcher runs until Close. Reaching a watch limit during
// setup is a *LimitError, with every watch released.
func New(ctx context.Context, root string, opts Options) (*Watcher, error) {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	if opts.MaxDelay < opts.Window {
		opts.MaxDelay = opts.Window
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", root, err)
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", abs, err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("watching %s: not a directory or regular file", abs)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, instancesError(abs, err)
	}
	w := &Watcher{
		root:    abs,
		opts:    opts,
		fsw:     fsw,
		out:     make(chan Batch),
		done:    make(chan struct{}),
		watched: make(map[string]struct{}),
	}
	if w.opts.addWatch == nil {
		w.opts.addWatch = (*fsnotify.Watcher).Add
	}
	if fi.IsDir() {
		err = w.addTree(ctx, abs, nil)
	} else {
		// A file is watched through its directory, which sees it being
		// replaced as well as written.
		w.single = filepath.Base(abs)
		w.root = filepath.Dir(abs)
		err = w.addDir(w.root)
	}
	if err != nil {
		_ = fsw.Close()
		return nil, err
	}
	w.wg.Add(1)
	go w.run()
	return w, nil
}

// Root returns the absolute path the events are relative to: the watched
// directory, or the directory of the watched file.
func (w *Watcher) Root() string { return w.root }

// Batches delivers the changes. It is closed when the Watcher is closed.
// A Watcher whose batches are not read holds further changes, merged,
// rather than dropping them.
func (w *Watcher) Batches() <-chan Batch { return w.out }

// Watched returns how many directories have an OS watch.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watched)
}

// Close stops the Watcher, releases every OS watch and waits for its
// goroutine to end. It is idempotent.
func (w *Watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		w.wg.Wait()
		err = w.fsw.Close()
		w.mu.Lock()
		clear(w.watched)
		w.mu.Unlock()
	})
	return err
}

// rel turns an absolute path under the root into an event path, or
// reports that the path is not one to report.
func (w *Watcher) rel(abs string) (string, bool) {
	if abs == w.root {
		return "", w.single == ""
	}
	r, ok := strings.CutPrefix(abs, w.root+string(filepath.Separator))
	if !ok {
		return "", false
	}
	r = filepath.ToSlash(r)
	if w.single != "" {
		// Only the file itself, reported as the root.
		if r != w.single {
			return "", false
		}
		return "", true
	}
	if !w.opts.Recursive && strings.Contains(r, "/") {
		return "", false
	}
	return r, true
}

func (w *Watcher) ignored(rel string, dir bool) bool {
	return w.opts.Ignore != nil && rel != "" && w.opts.Ignore(rel, dir)
}

// addDir puts an OS watch on the directory abs. It makes sure abs is a
// real directory before and after adding, so that a directory swapped for
// a link meanwhile does not leave a watch outside the tree.
func (w *Watcher) addDir(abs string) error {
	before, err := os.Lstat(abs)
	if err != nil || !before.IsDir() {
		return nil // gone or replaced already: nothing to watch
	}
	w.mu.Lock()
	_, have := w.watched[abs]
	n := len(w.watched)
	w.mu.Unlock()
	if have {
		return nil
	}
	if w.opts.MaxWatches > 0 && n >= w.opts.MaxWatches {
		return &LimitError{Dir: abs, Setting: "the watch's MaxWatches option", Limit: w.opts.MaxWatches,
			Hint: "exclude directories (such as .git or node_modules) or watch a smaller tree"}
	}
	if err := w.opts.addWatch(w.fsw, abs); err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
			return osLimitError(abs, err)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("watching %s: %w", abs, err)
	}
	after, err := os.Lstat(abs)
	if err != nil || !os.SameFile(before, after) {
		_ = w.fsw.Remove(abs)
		return nil
	}
	w.mu.Lock()
	w.watched[abs] = struct{}{}
	w.mu.Unlock()
	return nil
}

// addTree watches dir and, when recursive, every directory below it.
// With found set, it reports every entry it finds as created, since they
// may have appeared before dir was watched. The first error stops it; a
// LimitError leaves the directories already watched in place.
func (w *Watcher) addTree(ctx context.Context, dir string, found func(abs string, isDir bool)) error {
	if err := w.addDir(dir); err != nil {
		return err
	}
	if !w.opts.Recursive && found == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while being scanned
			}
			return fmt.Errorf("watching %s: %w", p, err)
		}
		if p == dir {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("watching %s: %w", dir, err)
		}
		r, ok := w.rel(p)
		if !ok || w.ignored(r, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if found != nil {
			found(p, d.IsDir())
		}
		if !d.IsDir() {
			return nil
		}
		if !w.opts.Recursive {
			return filepath.SkipDir
		}
		return w.addDir(p)
	})
}

// dropTree forgets the watches of dir and every directory below it, as
// after dir was removed or renamed away.
func (w *Watcher) dropTree(dir string) bool {
	w.mu.Lock()
	var gone []string
	for p := range w.watched {
		if p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) {
			gone = append(gone, p)
			delete(w.watched, p)
		}
	}
	w.mu.Unlock()
	for _, p := range gone {
		// The kernel has usually dropped the watch already; a renamed
		// directory's watch would live on under its new name.
		_ = w.fsw.Remove(p)
	}
	return len(gone) > 0
}

// run turns fsnotify's events into batches until Close.
func (w *Watcher) run() {
	defer w.wg.Done()
	defer close(w.out)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	open := newCoalescer() // the batch being gathered
	due := newCoalescer()  // gathered, waiting for the reader
	var first time.Time
	var ready Batch
	haveReady := false
	// schedule sets the timer for the open batch after an event; start
	// says the event opened it.
	schedule := func(start bool) {
		now := time.Now()
		if start {
			first = now
		}
		timer.Reset(max(0, min(w.opts.Window, first.Add(w.opts.MaxDelay).Sub(now))))
	}
	for {
		var out chan<- Batch
		if haveReady {
			out = w.out
		}
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			wasEmpty := open.empty()
			w.handle(ev, open)
			if !open.empty() {
				schedule(wasEmpty)
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				err = fmt.Errorf("watching %s: the system dropped events; the tree should be read again: %w", w.root, err)
			} else {
				err = fmt.Errorf("watching %s: %w", w.root, err)
			}
			wasEmpty := open.empty()
			open.addErr(err)
			schedule(wasEmpty)
		case <-timer.C:
			due.merge(open)
			open = newCoalescer()
			ready = due.batch()
			haveReady = len(ready.Events) > 0 || ready.Err != nil
			if !haveReady {
				due = newCoalescer()
			}
		case out <- ready:
			due, ready, haveReady = newCoalescer(), Batch{}, false
		}
	}
}

// handle records one fsnotify event, watching or forgetting directories
// as they come and go.
func (w *Watcher) handle(ev fsnotify.Event, c *coalescer) {
	name := filepath.Clean(ev.Name)
	rel, report := w.rel(name)
	if ev.Has(fsnotify.Create) {
		fi, err := os.Lstat(name)
		isDir := err == nil && fi.IsDir()
		if report && !w.ignored(rel, isDir) {
			c.add(rel, Create, isDir)
			if isDir && w.opts.Recursive && w.single == "" {
				err := w.addTree(context.Background(), name, func(p string, d bool) {
					if r, ok := w.rel(p); ok {
						c.add(r, Create, d)
					}
				})
				if err != nil {
					c.addErr(err)
				}
			}
		}
	}
	if ev.Has(fsnotify.Write) && report && !w.ignored(rel, false) {
		c.add(rel, Change, false)
	}
	for _, op := range []struct {
		fs fsnotify.Op
		op Op
	}{{fsnotify.Remove, Delete}, {fsnotify.Rename, Rename}} {
		if !ev.Has(op.fs) {
			continue
		}
		wasDir := w.dropTree(name)
		if name == w.root && w.single == "" {
			c.add("", op.op, true)
			continue
		}
		if report && !w.ignored(rel, wasDir) {
			c.add(rel, op.op, wasDir)
		}
	}
}

// coalescer nets the events of a window per path: only whether the path
// existed before the window and whether it exists after matter, and for
// a disappearance, how it went.
type coalescer struct {
	paths map[string]*pathState
	order []string
	errs  []error
}

type pathState struct {
	before, after bool
	gone          Op // Delete or Rename: how it last disappeared
	dir           bool
}

func newCoalescer() *coalescer { return &coalescer{paths: make(map[string]*pathState)} }

func (c *coalescer) empty() bool { return len(c.order) == 0 && len(c.errs) == 0 }

func (c *coalescer) add(rel string, op Op, dir bool) {
	st := c.paths[rel]
	if st == nil {
		st = &pathState{before: op != Create}
		c.paths[rel] = st
		c.order = append(c.order, rel)
	}
	st.after = op == Create || op == Change
	if !st.after {
		st.gone = op
	}
	st.dir = st.dir || dir
}

func (c *coalescer) addErr(err error) { c.errs = append(c.errs, err) }

// merge adds the later window o to c.
func (c *coalescer) merge(o *coalescer) {
	for _, rel := range o.order {
		ost := o.paths[rel]
		st := c.paths[rel]
		if st == nil {
			cp := *ost
			c.paths[rel] = &cp
			c.order = append(c.order, rel)
			continue
		}
		st.after = ost.after
		if !ost.after {
			st.gone = ost.gone
		}
		st.dir = st.dir || ost.dir
	}
	c.errs = append(c.errs, o.errs...)
}

func (c *coalescer) batch() Batch {
	var b Batch
	for _, rel := range c.order {
		st := c.paths[rel]
		var op Op
		switch {
		case !st.before && st.after:
			op = Create
		case st.before && st.after:
			op = Change
		case st.before && !st.after:
			op = st.gone
		default:
			continue // came and went within the window
		}
		b.Events = append(b.Events, Event{Op: op, Path: rel, Dir: st.dir})
	}
	b.Err = errors.Join(c.errs...)
	return b
}
