//go:build unix

package workspace

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/watch"
)

// Resource watches: a watch reports the changes package watch sees on
// disk, coalesced into batches, to the host, which sequences them as
// Watch/changed on the watch's ahp-resource-watch: channel.
// Whoever changes the files, a client, the agent through ACP
// fs/write_text_file, a command in a terminal or anything else, the
// change is seen the same way: on disk.
//
// A watch lives while it is watched (spec: there is no dispose command):
// the host releases it (StopWatch), with its OS watches, when its last
// subscriber unsubscribes or disconnects, or when the connection that
// created it ends without anyone having subscribed. A subscriber must be
// allowed to see the watched path (MaySee), when it subscribes and for as
// long as it stays subscribed.

// watchSet is the host's resource watches.
type watchSet struct {
	mu     sync.Mutex
	byURI  map[string]*Watch
	closed bool
	pumps  sync.WaitGroup // one per watch: Workspace.pump
}

// Watch is one resource watch: started by the op Workspace.Watch
// returns, registered and run by RunWatch.
type Watch struct {
	uri  string // its channel; set by RunWatch
	root string // the watched URI as the client named it
	base string // the watched path as asked: change URIs are below it
	real string // the watched path with its links resolved
	w    *watch.Watcher
	// excludes and includes are the descriptor's globs.
	excludes, includes []string
	recursive          bool
	done               chan struct{} // closed when pump has returned

	// Guarded by watchSet.mu.
	creator    *Files          // nil once that connection has ended
	log        *zerolog.Logger // the creator's
	subscribed bool            // somebody has subscribed
}

// maxGlobs bounds the patterns of a watch's excludes and includes.
const maxGlobs = 256

// Watch serves createResourceWatch: it checks the params and returns the
// op that starts the watch, which the host then registers with RunWatch
// under the URI of the channel it opens for it.
func (ws *Workspace) Watch(ctx context.Context, c Client, p wire.CreateResourceWatchParams) (func() (*Watch, error), error) {
	const method = wire.MethodCreateResourceWatch
	name, perr := paramPath(method, "uri", p.URI)
	if perr != nil {
		return nil, perr
	}
	var excludes, includes []string
	for _, g := range []struct {
		field string
		list  *wire.GlobList
		out   *[]string
	}{{"excludes", p.Excludes, &excludes}, {"includes", p.Includes, &includes}} {
		if g.list == nil {
			continue
		}
		if len(g.list.Items) > maxGlobs {
			return nil, errorf(wire.CodeInvalidParams, "invalid params for %s: %s has %d patterns; at most %d are allowed", method, g.field, len(g.list.Items), maxGlobs)
		}
		for _, pat := range g.list.Items {
			clean, err := cleanGlob(pat)
			if err != nil {
				return nil, errorf(wire.CodeInvalidParams, "invalid params for %s: %s: %v", method, g.field, err)
			}
			*g.out = append(*g.out, clean)
		}
	}
	recursive := deref(p.Recursive)
	return func() (*Watch, error) {
		box, err := ws.sandboxFor(c)
		if err != nil {
			return nil, fileError(method, err)
		}
		info, err := box.Resolve(ctx, name, true)
		if err != nil {
			return nil, fileError(method, err)
		}
		f := c.Files()
		if n := ws.watches.countCreatedBy(f); n >= ws.opts.MaxWatchesPerConn {
			return nil, errorf(wire.CodeInternalError, "%s %s: this connection already has %d resource watches; unsubscribe from some first", method, p.URI, n)
		}
		rw := &Watch{root: p.URI, base: filepath.Clean(name), real: info.Path, excludes: excludes, includes: includes, recursive: recursive,
			creator: f, log: c.Logger(), done: make(chan struct{})}
		// The real path is watched: the watcher never follows links, so
		// it stays inside what the sandbox let through.
		w, err := watch.New(ctx, info.Path, watch.Options{
			Recursive:  recursive,
			MaxWatches: ws.opts.MaxWatchDirectories,
			Ignore:     func(rel string, _ bool) bool { return matchAny(excludes, rel) },
		})
		if err != nil {
			return nil, ws.watchError(method, p.URI, err)
		}
		rw.w = w
		return rw, nil
	}, nil
}

// Close releases a watch RunWatch was not given.
func (rw *Watch) Close() { _ = rw.w.Close() }

// RunWatch registers rw under uri, the channel the host opened for it,
// and starts turning its batches into calls of report, in order, until
// the watch is stopped. It reports false, having closed rw, when the
// workspace is closing.
func (ws *Workspace) RunWatch(uri string, rw *Watch, report func([]wire.ResourceChange)) bool {
	rw.uri = uri
	if !ws.watches.add(uri, rw) {
		rw.Close()
		return false
	}
	go ws.pump(rw, report)
	rw.log.Debug().Str("channel", uri).Str("root", rw.real).Bool("recursive", rw.recursive).Int("directories", rw.w.Watched()).Msg("resource watch created")
	return true
}

// watchError explains why a watch could not start.
func (ws *Workspace) watchError(method, uri string, err error) *Error {
	var le *watch.LimitError
	if errors.As(err, &le) {
		if le.Err == nil { // the host's own bound, not the system's
			return errorf(wire.CodeInternalError, "%s %s: too many directories: a resource watch may watch at most %d directories, and this tree has more (%s is one too many); exclude some (excludes, e.g. **/node_modules) or watch a smaller tree",
				method, uri, ws.opts.MaxWatchDirectories, le.Dir)
		}
		return errorf(wire.CodeInternalError, "%s %s: too many directories: %v", method, uri, le)
	}
	return errorf(wire.CodeInternalError, "%s %s: %v", method, uri, err)
}

// pump turns the watcher's batches into changes reported to the host
// until the watcher is closed.
func (ws *Workspace) pump(rw *Watch, report func([]wire.ResourceChange)) {
	defer ws.watches.pumps.Done()
	defer close(rw.done)
	log := ws.opts.Logger.With().Str("channel", rw.uri).Logger()
	for b := range rw.w.Batches() {
		items := rw.changes(b)
		if b.Err != nil {
			var le *watch.LimitError
			switch {
			case errors.As(b.Err, &le):
				log.Warn().Err(b.Err).Msg("a directory that appeared under a resource watch cannot be watched; changes in it are not reported")
			case errors.Is(b.Err, fsnotify.ErrEventOverflow):
				// Changes were lost: the watched root changed in ways
				// unknown, so clients read it again.
				log.Warn().Err(b.Err).Msg("the system dropped file events; reporting the watched root as updated")
				items = append(items, wire.ResourceChange{URI: FileURI(rw.base), Type: wire.ResourceChangeTypeUpdated})
			default:
				log.Warn().Err(b.Err).Msg("a resource watch ran into a problem")
			}
		}
		if len(items) == 0 {
			continue // spec: an empty batch is never dispatched
		}
		report(items)
	}
}

// changes are a batch's events as AHP changes, filtered by the globs.
func (rw *Watch) changes(b watch.Batch) []wire.ResourceChange {
	var out []wire.ResourceChange
	for _, e := range b.Events {
		if e.Path != "" && (matchAny(rw.excludes, e.Path) || len(rw.includes) > 0 && !matchAny(rw.includes, e.Path)) {
			continue
		}
		var t wire.ResourceChangeType
		switch e.Op {
		case watch.Create:
			t = wire.ResourceChangeTypeAdded
		case watch.Change:
			t = wire.ResourceChangeTypeUpdated
		case watch.Delete, watch.Rename:
			// A rename is the old name gone; the new one, if inside the
			// tree, comes as its own Create.
			t = wire.ResourceChangeTypeDeleted
		default:
			continue
		}
		out = append(out, wire.ResourceChange{URI: FileURI(filepath.Join(rw.base, filepath.FromSlash(e.Path))), Type: t})
	}
	return out
}

// Subscribing checks, before c subscribes to the resource watch uri, that
// c may see what it watches, and notes that the watch has a subscriber
// (ReleasableWatch). A URI that is no watch passes: the subscription
// answers that it does not exist.
func (ws *Workspace) Subscribing(ctx context.Context, c Client, uri string) error {
	rw := ws.watches.get(uri)
	if rw == nil {
		return nil
	}
	if !ws.canSee(ctx, c, rw) {
		return errorf(wire.CodePermissionDenied, "subscribe %s: permission denied: the watched %s is not inside the working directory of a session this connection created or is subscribed to",
			uri, rw.root)
	}
	ws.watches.markSubscribed(rw)
	return nil
}

// UnseenCreated returns the watches c created that it may no longer see
// (the session that let it has gone): the host releases those nobody
// watches.
func (ws *Workspace) UnseenCreated(ctx context.Context, c Client) []string {
	var out []string
	for _, rw := range ws.watches.createdBy(c.Files()) {
		if !ws.canSee(ctx, c, rw) {
			out = append(out, rw.uri)
		}
	}
	return out
}

// Orphan forgets f's connection, which has ended, as the creator of its
// watches and returns them: the host releases those nobody watches.
func (ws *Workspace) Orphan(f *Files) []string { return ws.watches.orphan(f) }

// ReleasableWatch reports whether the watch uri may be released once
// nobody is subscribed to it: somebody was (the last one left), or force
// is set (its creator has gone). False for a URI that is no watch.
func (ws *Workspace) ReleasableWatch(uri string, force bool) bool {
	rw := ws.watches.get(uri)
	return rw != nil && (force || ws.watches.wasSubscribed(rw))
}

// StopWatch releases the watch uri, whose channel the host has removed:
// its OS watches and its pump, which has returned when StopWatch does
// (so report is no longer called).
func (ws *Workspace) StopWatch(uri string) {
	rw := ws.watches.get(uri)
	if rw == nil || !ws.watches.remove(rw) {
		return // released already
	}
	if err := rw.w.Close(); err != nil {
		ws.opts.Logger.Warn().Err(err).Str("channel", uri).Msg("closing a resource watch")
	}
	<-rw.done
	ws.opts.Logger.Debug().Str("channel", uri).Msg("resource watch released")
}

// CloseWatches refuses new watches and returns those still registered,
// for the host to remove their channels and stop them (StopWatch); then
// WaitWatches.
func (ws *Workspace) CloseWatches() []string {
	list := ws.watches.close()
	out := make([]string, len(list))
	for i, rw := range list {
		out[i] = rw.uri
	}
	return out
}

// WaitWatches waits until every watch's pump has returned.
func (ws *Workspace) WaitWatches() { ws.watches.pumps.Wait() }

// WatchStats reports the live watches and the directories they watch.
func (ws *Workspace) WatchStats() (watches, dirs int) {
	ws.watches.mu.Lock()
	list := make([]*Watch, 0, len(ws.watches.byURI))
	for _, rw := range ws.watches.byURI {
		list = append(list, rw)
	}
	ws.watches.mu.Unlock()
	for _, rw := range list {
		dirs += rw.w.Watched()
	}
	return len(list), dirs
}

// add registers a started watch and counts its pump, unless the
// workspace is closing.
func (s *watchSet) add(uri string, rw *Watch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.byURI == nil {
		s.byURI = make(map[string]*Watch)
	}
	s.byURI[uri] = rw
	s.pumps.Add(1)
	return true
}

func (s *watchSet) get(uri string) *Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byURI[uri]
}

// remove forgets rw; only the first caller gets true.
func (s *watchSet) remove(rw *Watch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byURI[rw.uri] != rw {
		return false
	}
	delete(s.byURI, rw.uri)
	return true
}

// close refuses new watches and returns those still registered.
func (s *watchSet) close() []*Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	out := make([]*Watch, 0, len(s.byURI))
	for _, rw := range s.byURI {
		out = append(out, rw)
	}
	return out
}

func (s *watchSet) markSubscribed(rw *Watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rw.subscribed = true
}

func (s *watchSet) wasSubscribed(rw *Watch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rw.subscribed
}

// createdBy returns the watches f's connection created.
func (s *watchSet) createdBy(f *Files) []*Watch {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Watch
	for _, rw := range s.byURI {
		if rw.creator == f {
			out = append(out, rw)
		}
	}
	return out
}

func (s *watchSet) countCreatedBy(f *Files) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rw := range s.byURI {
		if rw.creator == f {
			n++
		}
	}
	return n
}

// orphan forgets f as the creator of its watches and returns them.
func (s *watchSet) orphan(f *Files) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for uri, rw := range s.byURI {
		if rw.creator == f {
			rw.creator = nil
			out = append(out, uri)
		}
	}
	return out
}

// cleanGlob checks a pattern of excludes or includes: slash-separated,
// relative to the watched URI, each segment a path.Match pattern or "**"
// (any number of segments).
func cleanGlob(pat string) (string, error) {
	p := strings.TrimSuffix(strings.TrimPrefix(pat, "./"), "/")
	if p == "" || strings.HasPrefix(p, "/") {
		return "", errors.New("a pattern must be a non-empty path relative to the watched URI, got " + strconv.Quote(pat))
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return "", errors.New("malformed pattern " + strconv.Quote(pat) + ": " + err.Error())
		}
	}
	return p, nil
}

// matchAny reports whether one of the patterns matches rel or a
// directory above it, so that excluding "node_modules" excludes what is
// inside it too.
func matchAny(patterns []string, rel string) bool {
	if len(patterns) == 0 || rel == "" {
		return false
	}
	segs := strings.Split(rel, "/")
	for _, p := range patterns {
		ps := strings.Split(p, "/")
		for n := 1; n <= len(segs); n++ {
			if matchSegments(ps, segs[:n]) {
				return true
			}
		}
	}
	return false
}

// matchSegments matches a path against a pattern segment by segment, "**"
// standing for any number of segments, in time proportional to the
// product of their lengths (m[i][j]: ps[i:] matches rs[j:]).
func matchSegments(ps, rs []string) bool {
	next := make([]bool, len(rs)+1) // row i+1
	cur := make([]bool, len(rs)+1)
	next[len(rs)] = true
	for i := len(ps) - 1; i >= 0; i-- {
		for j := len(rs); j >= 0; j-- {
			if ps[i] == "**" {
				cur[j] = next[j] || j < len(rs) && cur[j+1]
				continue
			}
			ok := false
			if j < len(rs) {
				ok, _ = path.Match(ps[i], rs[j])
			}
			cur[j] = ok && next[j+1]
		}
		next, cur = cur, next
	}
	return next[0]
}
