//go:build unix

package host

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/sandbox"
	"github.com/ahp-bridge/ahp-bridge/watch"
)

// Resource watches: createResourceWatch opens an ahp-resource-watch:
// channel whose state is the watch's descriptor and whose actions are
// the changes package watch sees on disk, coalesced into batches
// (resourceWatch/changed). Whoever changes the files, a client, the
// agent through ACP fs/write_text_file, a command in a terminal or
// anything else, the change is seen the same way: on disk.
//
// A watch lives while it is watched (spec: there is no dispose command):
// it is released, with its OS watches, when its last subscriber
// unsubscribes or disconnects, or when the connection that created it
// ends without anyone having subscribed. A subscriber must be allowed to
// see the watched path (files.go), when it subscribes and for as long as
// it stays subscribed.

// watchSet is the host's resource watches.
type watchSet struct {
	mu     sync.Mutex
	byURI  map[string]*resourceWatch
	closed bool
	pumps  sync.WaitGroup // one per watch: resourceWatch.pump
}

// resourceWatch is one watch and its channel.
type resourceWatch struct {
	ch   *channel
	base string // the watched path as asked: change URIs are below it
	w    *watch.Watcher
	// excludes and includes are the descriptor's globs.
	excludes, includes []string
	done               chan struct{} // closed when pump has returned

	// Guarded by watchSet.mu.
	creator    *conn // nil once that connection has ended
	subscribed bool  // somebody has subscribed
}

// maxGlobs bounds the patterns of a watch's excludes and includes.
const maxGlobs = 256

// createResourceWatch starts a watch and answers with its channel.
func (h *Host) createResourceWatch(ctx context.Context, r *request, _ string) {
	var p wire.CreateResourceWatchParams
	name, ok := h.pathParams(r, &p, func() string { return p.URI })
	if !ok {
		return
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
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for %s: %s has %d patterns; at most %d are allowed", r.method, g.field, len(g.list.Items), maxGlobs))
			return
		}
		for _, pat := range g.list.Items {
			clean, err := cleanGlob(pat)
			if err != nil {
				h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for %s: %s: %v", r.method, g.field, err))
				return
			}
			*g.out = append(*g.out, clean)
		}
	}
	recursive := deref(p.Recursive)
	c := r.c
	h.async(r, func() (any, *Error) {
		box, err := h.sandboxFor(c)
		if err != nil {
			return nil, fileError(r.method, err)
		}
		info, err := box.Resolve(ctx, name, true)
		if err != nil {
			return nil, fileError(r.method, err)
		}
		if n := h.watches.countCreatedBy(c); n >= h.opts.maxWatchesPerConn {
			return nil, Errorf(CodeInternalError, "%s %s: this connection already has %d resource watches; unsubscribe from some first", r.method, p.URI, n)
		}
		rw := &resourceWatch{base: filepath.Clean(name), excludes: excludes, includes: includes, creator: c, done: make(chan struct{})}
		// The real path is watched: the watcher never follows links, so
		// it stays inside what the sandbox let through.
		w, err := watch.New(ctx, info.Path, watch.Options{
			Recursive:  recursive,
			MaxWatches: h.opts.MaxWatchDirectories,
			Ignore:     func(rel string, _ bool) bool { return matchAny(excludes, rel) },
		})
		if err != nil {
			return nil, h.watchError(r.method, p.URI, err)
		}
		rw.w = w
		uri := watchScheme + "/" + h.opts.NewID()
		rw.ch = newChannel(uri, chanResourceWatch)
		rw.ch.watch = &wire.ResourceWatchState{Root: p.URI, Recursive: recursive, Excludes: p.Excludes, Includes: p.Includes}
		h.mu.Lock()
		_, taken := h.channels[uri]
		if !h.closed && !taken {
			h.channels[uri] = rw.ch
		}
		h.mu.Unlock()
		if taken || !h.watches.add(uri, rw) {
			h.mu.Lock()
			if !taken {
				delete(h.channels, uri)
			}
			h.mu.Unlock()
			_ = w.Close()
			return nil, Errorf(CodeInternalError, "%s %s: the server is shutting down", r.method, p.URI)
		}
		go h.pump(rw)
		c.log.Debug().Str("channel", uri).Str("root", info.Path).Bool("recursive", recursive).Int("directories", w.Watched()).Msg("resource watch created")
		return wire.CreateResourceWatchResult{Channel: uri}, nil
	})
}

// watchError explains why a watch could not start.
func (h *Host) watchError(method, uri string, err error) *Error {
	var le *watch.LimitError
	if errors.As(err, &le) {
		if le.Err == nil { // the host's own bound, not the system's
			return Errorf(CodeInternalError, "%s %s: too many directories: a resource watch may watch at most %d directories, and this tree has more (%s is one too many); exclude some (excludes, e.g. **/node_modules) or watch a smaller tree",
				method, uri, h.opts.MaxWatchDirectories, le.Dir)
		}
		return Errorf(CodeInternalError, "%s %s: too many directories: %v", method, uri, le)
	}
	return Errorf(CodeInternalError, "%s %s: %v", method, uri, err)
}

// pump turns the watcher's batches into resourceWatch/changed actions
// until the watcher is closed.
func (h *Host) pump(rw *resourceWatch) {
	defer h.watches.pumps.Done()
	defer close(rw.done)
	log := h.log.With().Str("channel", rw.ch.uri).Logger()
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
				items = append(items, wire.ResourceChange{URI: fileURI(rw.base), Type: wire.ResourceChangeTypeUpdated})
			default:
				log.Warn().Err(b.Err).Msg("a resource watch ran into a problem")
			}
		}
		if len(items) == 0 {
			continue // spec: an empty batch is never dispatched
		}
		a := wire.Action(&wire.ResourceWatchChangedAction{Changes: wire.ResourceChangeList{Items: items}})
		rw.ch.mu.Lock()
		if !rw.ch.removed {
			if _, err := h.applyLocked(rw.ch, a, nil, nil); err != nil {
				log.Error().Err(err).Msg("failed to report file changes")
			}
		}
		rw.ch.mu.Unlock()
	}
}

// changes are a batch's events as AHP changes, filtered by the globs.
func (rw *resourceWatch) changes(b watch.Batch) []wire.ResourceChange {
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
		out = append(out, wire.ResourceChange{URI: fileURI(filepath.Join(rw.base, filepath.FromSlash(e.Path))), Type: t})
	}
	return out
}

// mayWatch checks, before a subscription, that c may see every resource
// watch among the host channels names.
func (h *Host) mayWatch(c *conn, names []string) *Error {
	for _, n := range names {
		if !strings.HasPrefix(n, watchScheme) {
			continue
		}
		rw := h.watches.get(n)
		if rw == nil {
			continue // the subscription answers that it does not exist
		}
		if !h.canSee(c, rw) {
			return Errorf(CodePermissionDenied, "subscribe %s: permission denied: the watched %s is not inside the working directory of a session this connection created or is subscribed to",
				n, rw.ch.watch.Root)
		}
		h.watches.markSubscribed(rw)
	}
	return nil
}

// canSee reports whether c may see what rw watches, now.
func (h *Host) canSee(c *conn, rw *resourceWatch) bool {
	box, err := h.sandboxFor(c)
	if err != nil {
		return false
	}
	_, err = box.Resolve(h.ctx, rw.base, true)
	// A watched path that has gone is still inside, or it would be
	// refused as outside whether or not it exists.
	return err == nil || sandbox.KindOf(err) == sandbox.ErrNotFound
}

// enforceWatches ends c's subscriptions to the resource watches it may
// no longer see (the session that let it has gone, or it unsubscribed
// from it), releasing those nobody else watches, and releases the
// watches c created, never subscribed to and may no longer see.
func (h *Host) enforceWatches(c *conn) {
	for _, rw := range h.watches.createdBy(c) {
		if !h.canSee(c, rw) {
			h.releaseIfIdle(rw.ch.uri, true)
		}
	}
	h.mu.Lock()
	var mine []string
	for uri, ch := range c.subs {
		if ch.kind == chanResourceWatch {
			mine = append(mine, uri)
		}
	}
	h.mu.Unlock()
	for _, uri := range mine {
		rw := h.watches.get(uri)
		if rw == nil || h.canSee(c, rw) {
			continue
		}
		h.mu.Lock()
		rw.ch.dropSub(c)
		delete(c.subs, uri)
		h.mu.Unlock()
		c.log.Info().Str("channel", uri).Str("root", rw.ch.watch.Root).Msg("ended a subscription to a resource watch: the connection may no longer see the watched path")
		h.releaseIfIdle(uri, false)
	}
}

// dropWatches ends an ended connection's part in resource watches: its
// subscriptions end, and the watches it created that nobody watches are
// released.
func (h *Host) dropWatches(c *conn) {
	h.mu.Lock()
	var uris []string
	for uri, ch := range c.subs {
		if ch.kind == chanResourceWatch {
			ch.dropSub(c)
			delete(c.subs, uri)
			uris = append(uris, uri)
		}
	}
	h.mu.Unlock()
	uris = append(uris, h.watches.orphan(c)...)
	for _, uri := range uris {
		h.releaseIfIdle(uri, true)
	}
}

// releaseIfIdle releases the watch uri when nobody is subscribed to it,
// and somebody was (the last one left) or force is set (its creator has
// gone). The check and the removal of the channel are one step under the
// channel's lock, so a subscription cannot slip in between.
func (h *Host) releaseIfIdle(uri string, force bool) {
	rw := h.watches.get(uri)
	if rw == nil || !force && !h.watches.wasSubscribed(rw) {
		return
	}
	ch := rw.ch
	ch.mu.Lock()
	h.mu.Lock()
	idle := len(ch.subs) == 0
	h.mu.Unlock()
	if !idle || ch.removed {
		ch.mu.Unlock()
		return
	}
	h.removeChannelLocked(ch)
	ch.mu.Unlock()
	h.stopWatch(rw)
}

// stopWatch releases a watch whose channel is gone: its OS watches and
// its pump.
func (h *Host) stopWatch(rw *resourceWatch) {
	if !h.watches.remove(rw) {
		return // released already
	}
	if err := rw.w.Close(); err != nil {
		h.log.Warn().Err(err).Str("channel", rw.ch.uri).Msg("closing a resource watch")
	}
	<-rw.done
	h.log.Debug().Str("channel", rw.ch.uri).Msg("resource watch released")
}

// closeWatches releases every watch; Host.Close calls it.
func (h *Host) closeWatches() {
	for _, rw := range h.watches.close() {
		rw.ch.mu.Lock()
		if !rw.ch.removed {
			h.removeChannelLocked(rw.ch)
		}
		rw.ch.mu.Unlock()
		h.stopWatch(rw)
	}
	h.watches.pumps.Wait()
}

// watchStats reports the live watches and the directories they watch.
func (h *Host) watchStats() (watches, dirs int) {
	h.watches.mu.Lock()
	list := make([]*resourceWatch, 0, len(h.watches.byURI))
	for _, rw := range h.watches.byURI {
		list = append(list, rw)
	}
	h.watches.mu.Unlock()
	for _, rw := range list {
		dirs += rw.w.Watched()
	}
	return len(list), dirs
}

// add registers a started watch and counts its pump, unless the host is
// closing.
func (s *watchSet) add(uri string, rw *resourceWatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.byURI == nil {
		s.byURI = make(map[string]*resourceWatch)
	}
	s.byURI[uri] = rw
	s.pumps.Add(1)
	return true
}

func (s *watchSet) get(uri string) *resourceWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byURI[uri]
}

// remove forgets rw; only the first caller gets true.
func (s *watchSet) remove(rw *resourceWatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byURI[rw.ch.uri] != rw {
		return false
	}
	delete(s.byURI, rw.ch.uri)
	return true
}

// close refuses new watches and returns those still registered.
func (s *watchSet) close() []*resourceWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	out := make([]*resourceWatch, 0, len(s.byURI))
	for _, rw := range s.byURI {
		out = append(out, rw)
	}
	return out
}

func (s *watchSet) markSubscribed(rw *resourceWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rw.subscribed = true
}

func (s *watchSet) wasSubscribed(rw *resourceWatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rw.subscribed
}

// createdBy returns the watches c created.
func (s *watchSet) createdBy(c *conn) []*resourceWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*resourceWatch
	for _, rw := range s.byURI {
		if rw.creator == c {
			out = append(out, rw)
		}
	}
	return out
}

func (s *watchSet) countCreatedBy(c *conn) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, rw := range s.byURI {
		if rw.creator == c {
			n++
		}
	}
	return n
}

// orphan forgets c as the creator of its watches and returns them.
func (s *watchSet) orphan(c *conn) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for uri, rw := range s.byURI {
		if rw.creator == c {
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
