//go:build unix

package host

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/sandbox"
)

// What a connection may touch on disk.
//
// A connection may touch the working directories of the sessions it
// created or is subscribed to (directly, or through one of their chats),
// and nothing else. Each connection has a sandbox (package sandbox) whose
// roots are those directories; it is brought in line with the sessions
// before every file operation (sandboxFor), and at once when a
// subscription ends or a session is disposed, so that the resource
// watches the connection no longer may see are cut off (enforceWatches).
// The sandbox is what enforces the rest: symbolic links, `..`, device
// files, and a swap racing the check.
//
// Browse roots (Options.BrowseRoots and Options.DefaultDirectory) are the
// one exception, for a client's folder picker before any session exists:
// resourceList and resourceResolve of a path outside the connection's
// sessions are tried again in a second, read-only sandbox over the browse
// roots (browseFor), with the same rules, so a link leading out of a
// browse root is refused like any outside path. Nothing else ever goes
// through that sandbox: reading a file, every change and every watch stay
// confined to the sessions' working directories.

// connFiles is a connection's file access. The zero value is ready.
type connFiles struct {
	// syncMu serialises bringing the roots in line, so that two syncs
	// cannot apply their views out of order. It is taken before any other
	// lock and never while one is held.
	syncMu sync.Mutex

	mu      sync.Mutex
	box     *sandbox.Sandbox    // made on first use
	roots   map[string]struct{} // directories added to box
	created map[string]struct{} // sessions this connection created
	closed  bool

	// browse is the read-only sandbox over the host's browse roots, made
	// on first use; browsed are the roots added to it (one that did not
	// exist is tried again at the next use).
	browse  *sandbox.Sandbox
	browsed map[string]struct{}
}

// errNoFiles is sandboxFor's answer once the connection has ended.
var errNoFiles = errors.New("the connection has ended")

// markCreated records a session the connection created.
func (f *connFiles) markCreated(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created == nil {
		f.created = make(map[string]struct{})
	}
	f.created[session] = struct{}{}
}

// forget drops a session from those the connection created; it reports
// whether the connection has a sandbox to bring in line.
func (f *connFiles) forget(session string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.created, session)
	return f.box != nil
}

// close releases the sandbox; later syncs fail.
func (f *connFiles) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.box != nil {
		_ = f.box.Close()
		f.box = nil
	}
	if f.browse != nil {
		_ = f.browse.Close()
		f.browse = nil
	}
}

// sandboxFor returns c's sandbox with its roots brought in line with the
// working directories of the sessions c created or is subscribed to.
func (h *Host) sandboxFor(c *conn) (*sandbox.Sandbox, error) {
	f := &c.files
	f.syncMu.Lock()
	defer f.syncMu.Unlock()

	f.mu.Lock()
	created := make([]string, 0, len(f.created))
	for s := range f.created {
		created = append(created, s)
	}
	f.mu.Unlock()

	// The sessions, under the sequencer lock; their directories, under
	// each group's (which comes first in the lock order, so not inside).
	h.mu.Lock()
	groups := map[*sessionGroup]struct{}{}
	var gone []string
	for _, s := range created {
		if ch := h.channels[s]; ch != nil && ch.kind == chanSession {
			groups[ch.group] = struct{}{}
		} else {
			gone = append(gone, s)
		}
	}
	for _, ch := range c.subs {
		if ch.kind == chanSession || ch.kind == chanChat {
			groups[ch.group] = struct{}{}
		}
	}
	h.mu.Unlock()
	want := map[string]struct{}{}
	for g := range groups {
		g.mu.Lock()
		if !g.session.removed {
			for _, d := range g.session.session.WorkingDirectories {
				if p, ok := dirPath(d); ok {
					want[p] = struct{}{}
				}
			}
		}
		g.mu.Unlock()
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range gone {
		delete(f.created, s)
	}
	if f.closed {
		return nil, errNoFiles
	}
	if f.box == nil {
		box, err := sandbox.New(sandbox.Options{ReadOnly: h.opts.ReadOnlyFiles})
		if err != nil {
			return nil, fmt.Errorf("making the connection's sandbox: %w", err)
		}
		f.box, f.roots = box, map[string]struct{}{}
	}
	for d := range f.roots {
		if _, ok := want[d]; !ok {
			f.box.RemoveRoot(d)
			delete(f.roots, d)
		}
	}
	for d := range want {
		if _, ok := f.roots[d]; ok {
			continue
		}
		if err := f.box.AddRoot(d); err != nil {
			// A working directory that does not exist (any more) serves
			// nothing; it is tried again at the next sync.
			c.log.Debug().Err(err).Str("dir", d).Msg("a session's working directory cannot be served")
			continue
		}
		f.roots[d] = struct{}{}
	}
	return f.box, nil
}

// browseRoots are the directories any connection may list and resolve
// in (Options.DefaultDirectory and Options.BrowseRoots), as paths, and
// those that name no absolute local directory.
func (h *Host) browseRoots() (roots, bad []string) {
	for _, d := range append([]string{h.opts.DefaultDirectory}, h.opts.BrowseRoots...) {
		if d == "" {
			continue
		}
		if p, ok := dirPath(d); ok {
			roots = append(roots, p)
		} else {
			bad = append(bad, d)
		}
	}
	return roots, bad
}

// browseFor returns c's browse sandbox: read-only, over the browse roots
// that exist. It is nil when the host has no browse roots.
func (h *Host) browseFor(c *conn) (*sandbox.Sandbox, error) {
	roots, bad := h.browseRoots()
	if len(roots) == 0 {
		return nil, nil
	}
	f := &c.files
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errNoFiles
	}
	if f.browse == nil {
		box, err := sandbox.New(sandbox.Options{ReadOnly: true})
		if err != nil {
			return nil, fmt.Errorf("making the connection's browsing sandbox: %w", err)
		}
		f.browse, f.browsed = box, map[string]struct{}{}
		if len(bad) > 0 {
			c.log.Warn().Strs("dirs", bad).Msg("browse roots that are not absolute paths or local file URIs are ignored")
		}
	}
	for _, d := range roots {
		if _, ok := f.browsed[d]; ok {
			continue
		}
		if err := f.browse.AddRoot(d); err != nil {
			// One that does not exist (yet) is tried again next time.
			c.log.Debug().Err(err).Str("dir", d).Msg("a browse root cannot be served")
			continue
		}
		f.browsed[d] = struct{}{}
	}
	return f.browse, nil
}

// isOutside reports whether err is the sandbox refusing a path outside
// its roots.
func isOutside(err error) bool {
	var se *sandbox.Error
	return errors.As(err, &se) && se.Kind == sandbox.ErrOutside
}

// dirPath turns a session's working directory (an absolute path or a
// local file URI, as createSession accepts) into a path.
func dirPath(d string) (string, bool) {
	if strings.HasPrefix(d, "file:") {
		p, err := uriPath(d)
		return p, err == nil
	}
	return filepath.Clean(d), filepath.IsAbs(d)
}

// uriPath returns the local path a file URI names.
func uriPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not a valid URI: %w", uri, err)
	case !strings.EqualFold(u.Scheme, "file"):
		return "", fmt.Errorf("%q is not a file URI", uri)
	case u.Host != "" && u.Host != "localhost":
		return "", fmt.Errorf("%q names a file on host %q; this server reaches only its own file system", uri, u.Host)
	case u.Opaque != "" || !strings.HasPrefix(u.Path, "/"):
		return "", fmt.Errorf("%q does not name an absolute path (write file:///path)", uri)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", fmt.Errorf("%q has a query or fragment; encode '?' and '#' in file names as %%3F and %%23", uri)
	}
	return u.Path, nil
}

// fileURI is the file URI of an absolute path.
func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

// paramPath reads a file URI parameter of method.
func paramPath(method, field, uri string) (string, *Error) {
	if uri == "" {
		return "", Errorf(CodeInvalidParams, "invalid params for %s: %s is required", method, field)
	}
	p, err := uriPath(uri)
	if err != nil {
		return "", Errorf(CodeInvalidParams, "invalid params for %s: %s: %v", method, field, err)
	}
	return p, nil
}

// fileError is the JSON-RPC error for a sandbox error: AHP's codes, and a
// message naming the path.
func fileError(method string, err error) *Error {
	var se *sandbox.Error
	if !errors.As(err, &se) {
		return Errorf(CodeInternalError, "%s: %v", method, err)
	}
	switch se.Kind {
	case sandbox.ErrOutside:
		// The same words whether or not the path exists: a refusal
		// reveals nothing about the world outside.
		return Errorf(CodePermissionDenied, "%s %s: permission denied: %s is not inside the working directory of a session this connection created or is subscribed to",
			method, fileURI(se.Path), se.Path)
	case sandbox.ErrPermissionDenied:
		return Errorf(CodePermissionDenied, "%s %s: permission denied: %s", method, fileURI(se.Path), err)
	case sandbox.ErrNotFound:
		return Errorf(CodeNotFound, "%s %s: not found: %s", method, fileURI(se.Path), err)
	case sandbox.ErrAlreadyExists:
		return Errorf(CodeAlreadyExists, "%s %s: already exists: %s", method, fileURI(se.Path), err)
	case sandbox.ErrConflict:
		return Errorf(CodeConflict, "%s %s: conflict: %s", method, fileURI(se.Path), err)
	case sandbox.ErrInvalid:
		return Errorf(CodeInvalidParams, "%s %s: %s", method, fileURI(se.Path), err)
	}
	return Errorf(CodeInternalError, "%s %s: %s", method, fileURI(se.Path), err)
}

// filesCreated grants c the working directories of a session it created.
func (h *Host) filesCreated(c *conn, session string) { c.files.markCreated(session) }

// filesUnsubscribed takes back what an ended subscription granted: a
// session's directories (unless another subscription or the session's
// creation still grants them), and a resource watch nobody watches any
// more is released.
func (h *Host) filesUnsubscribed(c *conn, uri string) {
	if strings.HasPrefix(uri, watchScheme) {
		h.releaseIfIdle(uri, false)
		return
	}
	if c.files.forget(uri) {
		h.enforceWatches(c)
	}
}

// filesDisposed takes a disposed session's directories back from every
// connection that had them.
func (h *Host) filesDisposed(session string) {
	h.mu.Lock()
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		if c.files.forget(session) {
			h.enforceWatches(c)
		}
	}
}

// filesDropped releases an ended connection's file access: its sandbox,
// its subscriptions to resource watches, and the watches it created that
// nobody watches. Called before dropConn forgets its subscriptions.
func (h *Host) filesDropped(c *conn) {
	c.files.close()
	h.dropWatches(c)
}
