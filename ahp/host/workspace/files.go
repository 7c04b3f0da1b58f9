//go:build unix

package workspace

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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
// watches the connection no longer may see are cut off (the host then asks which watches it may still see: Workspace.MaySee).
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

// Files is a connection's file access: the sessions it created, its
// sandbox over their working directories and those it is subscribed to,
// and its browse sandbox. The zero value is ready; the host keeps one
// with each connection and calls Close when the connection ends.
type Files struct {
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

// Created records a session the connection created: its working
// directories are the connection's for as long as the session exists.
func (f *Files) Created(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created == nil {
		f.created = make(map[string]struct{})
	}
	f.created[session] = struct{}{}
}

// Forget drops a session from those the connection created (it was
// disposed, or the connection unsubscribed from it); it reports whether
// the connection has a sandbox to bring in line, in which case the host
// checks the connection's resource watches again (Workspace.MaySee).
func (f *Files) Forget(session string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.created, session)
	return f.box != nil
}

// Close releases the sandboxes; later operations fail.
func (f *Files) Close() {
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
func (ws *Workspace) sandboxFor(c Client) (*sandbox.Sandbox, error) {
	f := c.Files()
	f.syncMu.Lock()
	defer f.syncMu.Unlock()

	f.mu.Lock()
	created := make([]string, 0, len(f.created))
	for s := range f.created {
		created = append(created, s)
	}
	f.mu.Unlock()

	dirs, gone := c.WorkingDirectories(created)
	want := map[string]struct{}{}
	for _, d := range dirs {
		if p, ok := DirPath(d); ok {
			want[p] = struct{}{}
		}
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
		box, err := sandbox.New(sandbox.Options{ReadOnly: ws.opts.ReadOnly})
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
			c.Logger().Debug().Err(err).Str("dir", d).Msg("a session's working directory cannot be served")
			continue
		}
		f.roots[d] = struct{}{}
	}
	return f.box, nil
}

// browseRoots are the directories any connection may list and resolve
// in (Options.BrowseRoots), as paths, and those that name no absolute
// local directory.
func (ws *Workspace) browseRoots() (roots, bad []string) {
	for _, d := range ws.opts.BrowseRoots {
		if d == "" {
			continue
		}
		if p, ok := DirPath(d); ok {
			roots = append(roots, p)
		} else {
			bad = append(bad, d)
		}
	}
	return roots, bad
}

// browseFor returns c's browse sandbox: read-only, over the browse roots
// that exist. It is nil when the host has no browse roots.
func (ws *Workspace) browseFor(c Client) (*sandbox.Sandbox, error) {
	roots, bad := ws.browseRoots()
	if len(roots) == 0 {
		return nil, nil
	}
	f := c.Files()
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
			c.Logger().Warn().Strs("dirs", bad).Msg("browse roots that are not absolute paths or local file URIs are ignored")
		}
	}
	for _, d := range roots {
		if _, ok := f.browsed[d]; ok {
			continue
		}
		if err := f.browse.AddRoot(d); err != nil {
			// One that does not exist (yet) is tried again next time.
			c.Logger().Debug().Err(err).Str("dir", d).Msg("a browse root cannot be served")
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

// fileError is the error for a sandbox error: AHP's codes, and a message
// naming the path.
func fileError(method string, err error) *Error {
	var se *sandbox.Error
	if !errors.As(err, &se) {
		return errorf(wire.CodeInternalError, "%s: %v", method, err)
	}
	switch se.Kind {
	case sandbox.ErrOutside:
		// The same words whether or not the path exists: a refusal
		// reveals nothing about the world outside.
		return errorf(wire.CodePermissionDenied, "%s %s: permission denied: %s is not inside the working directory of a session this connection created or is subscribed to",
			method, FileURI(se.Path), se.Path)
	case sandbox.ErrPermissionDenied:
		return errorf(wire.CodePermissionDenied, "%s %s: permission denied: %s", method, FileURI(se.Path), err)
	case sandbox.ErrNotFound:
		return errorf(wire.CodeNotFound, "%s %s: not found: %s", method, FileURI(se.Path), err)
	case sandbox.ErrAlreadyExists:
		return errorf(wire.CodeAlreadyExists, "%s %s: already exists: %s", method, FileURI(se.Path), err)
	case sandbox.ErrConflict:
		return errorf(wire.CodeConflict, "%s %s: conflict: %s", method, FileURI(se.Path), err)
	case sandbox.ErrInvalid:
		return errorf(wire.CodeInvalidParams, "%s %s: %s", method, FileURI(se.Path), err)
	}
	return errorf(wire.CodeInternalError, "%s %s: %s", method, FileURI(se.Path), err)
}

// MaySee reports whether c may see what the resource watch uri watches,
// now; true for a URI that is no watch of this workspace (a subscription
// to it answers that it does not exist).
func (ws *Workspace) MaySee(ctx context.Context, c Client, uri string) bool {
	rw := ws.watches.get(uri)
	return rw == nil || ws.canSee(ctx, c, rw)
}

// canSee reports whether c may see what rw watches, now.
func (ws *Workspace) canSee(ctx context.Context, c Client, rw *Watch) bool {
	box, err := ws.sandboxFor(c)
	if err != nil {
		return false
	}
	_, err = box.Resolve(ctx, rw.base, true)
	// A watched path that has gone is still inside, or it would be
	// refused as outside whether or not it exists.
	return err == nil || sandbox.KindOf(err) == sandbox.ErrNotFound
}
