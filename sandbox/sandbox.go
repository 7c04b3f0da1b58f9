//go:build unix

// Package sandbox serves files from a set of root directories and nowhere
// else. It is the one place where the bridge touches the file system on a
// peer's behalf: the AHP resource commands (resourceList, resourceRead,
// resourceWrite, resourceResolve, resourceMkdir, resourceDelete,
// resourceMove, resourceCopy) and the ACP agent's fs/* requests both go
// through a Sandbox, so both follow the same confinement rules:
//
//   - A path is absolute, or relative to the only root when there is
//     exactly one. ".." is resolved lexically first (like
//     filepath.Clean), so "a/../b" is "b" and a ".." that climbs above
//     every root is refused.
//   - Every symbolic link on the way is followed, across roots if need be,
//     and the real path it leads to must lie inside a root. A link that
//     points outside is refused exactly like an outside path: with
//     ErrOutside, whether or not its target exists, so a refusal reveals
//     nothing about the world outside.
//   - Each operation then runs through an [os.Root] opened on the root, so
//     a symbolic link swapped in between the check and the operation can
//     still never lead outside: the kernel is walked one directory file
//     descriptor at a time.
//   - Only regular files are read, written or copied, and only regular
//     files and directories are reported; device files, FIFOs and sockets
//     are refused, and files are opened non-blocking so that even a FIFO
//     swapped in at the last moment cannot hang a request.
//   - In read-only mode every change is refused with ErrPermissionDenied.
//
// Roots can be added and removed while requests are being served; a
// request that started in a root that is then removed finishes normally.
// The package works on Unix systems.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// maxLinks bounds the symbolic links followed while resolving one path,
// as the kernel's ELOOP limit does.
const maxLinks = 40

// Options configures a Sandbox.
type Options struct {
	// ReadOnly refuses every operation that would change the file system
	// (Write, Mkdir, Delete, Move, Copy) with ErrPermissionDenied.
	ReadOnly bool
}

// A Sandbox confines file operations to its roots. It is safe for
// concurrent use. The zero value is not usable; call New.
type Sandbox struct {
	readOnly bool

	mu     sync.Mutex
	roots  []*root
	closed bool

	// writeLocks serialises writes to the same file from this process,
	// so that read-modify-write modes (insert, append before EOF, ifMatch)
	// never lose each other's changes. Keys are rootKey values.
	writeLocks keyedMutex
}

// root is one directory the sandbox serves.
type root struct {
	path string   // absolute and clean, as added
	real string   // path with every symbolic link resolved
	dir  *os.Root // the handle every operation goes through

	adds    int  // AddRoot calls not yet matched by RemoveRoot; guarded by Sandbox.mu
	users   int  // operations in flight; guarded by Sandbox.mu
	removed bool // guarded by Sandbox.mu
}

// New returns a Sandbox serving roots.
func New(opts Options, roots ...string) (*Sandbox, error) {
	s := &Sandbox{readOnly: opts.ReadOnly}
	for _, r := range roots {
		if err := s.AddRoot(r); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ReadOnly reports whether the sandbox refuses every change.
func (s *Sandbox) ReadOnly() bool { return s.readOnly }

// AddRoot starts serving dir, which must be an existing directory. Adding
// a directory that is already a root counts another use of it: it stays
// served until RemoveRoot has been called as many times, so that two
// sessions sharing a working directory can each add and remove it.
func (s *Sandbox) AddRoot(dir string) error {
	if dir == "" || strings.IndexByte(dir, 0) >= 0 {
		return newErr("add root", dir, ErrInvalid, "a root must be a non-empty path without NUL bytes")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &Error{Op: "add root", Path: dir, Kind: ErrInvalid, Err: err}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ioErr("add root", dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return ioErr("add root", dir, err)
	}
	if !fi.IsDir() {
		return newErr("add root", dir, ErrInvalid, "a root must be a directory")
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return newErr("add root", dir, ErrInvalid, "the sandbox is closed")
	}
	for _, r := range s.roots {
		if r.real == real {
			r.adds++
			s.mu.Unlock()
			return nil
		}
	}
	s.mu.Unlock()

	d, err := os.OpenRoot(real)
	if err != nil {
		return ioErr("add root", dir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = d.Close()
		return newErr("add root", dir, ErrInvalid, "the sandbox is closed")
	}
	for _, r := range s.roots { // added meanwhile by another caller
		if r.real == real {
			r.adds++
			_ = d.Close()
			return nil
		}
	}
	s.roots = append(s.roots, &root{path: filepath.Clean(abs), real: real, dir: d, adds: 1})
	return nil
}

// RemoveRoot undoes one AddRoot of dir (named as added, or by its real
// path). When the last one is undone the directory stops being served at
// once; operations already under way in it finish. It reports whether dir
// was a root.
func (s *Sandbox) RemoveRoot(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	abs = filepath.Clean(abs)
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		real = abs // the directory may be gone; match by name then
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.roots {
		if r.path != abs && r.real != abs && r.real != real {
			continue
		}
		r.adds--
		if r.adds == 0 {
			s.roots = slices.Delete(s.roots, i, i+1)
			s.retireLocked(r)
		}
		return true
	}
	return false
}

// Roots returns the directories being served, as they were added.
func (s *Sandbox) Roots() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.roots))
	for i, r := range s.roots {
		out[i] = r.path
	}
	return out
}

// Close stops serving every root and releases their directory handles
// once the operations under way have finished. Later operations fail with
// ErrOutside. Close is idempotent.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, r := range s.roots {
		s.retireLocked(r)
	}
	s.roots = nil
	return nil
}

func (s *Sandbox) retireLocked(r *root) {
	r.removed = true
	if r.users == 0 {
		_ = r.dir.Close()
	}
}

// release ends an operation's use of r.
func (s *Sandbox) release(r *root) {
	if r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.users--
	if r.users == 0 && r.removed {
		_ = r.dir.Close()
	}
}

// locate finds the root holding the absolute clean path p, marks it in
// use and returns it with p relative to it ("." for the root itself).
// When roots nest, the outermost wins: its os.Root confines the least, so
// in-root symbolic links that the inner root would refuse still work.
func (s *Sandbox) locate(p string) (*root, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *root
	var bestRel, bestBase string
	for _, r := range s.roots {
		for _, base := range [2]string{r.real, r.path} {
			rel, ok := within(p, base)
			if ok && (best == nil || len(base) < len(bestBase)) {
				best, bestRel, bestBase = r, rel, base
			}
		}
	}
	if best == nil {
		return nil, "", false
	}
	best.users++
	return best, bestRel, true
}

// within returns p relative to base if p is base or below it. Both must be
// absolute and clean.
func within(p, base string) (string, bool) {
	if p == base {
		return ".", true
	}
	prefix := base
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if !strings.HasPrefix(p, prefix) {
		return "", false
	}
	return p[len(prefix):], true
}

// loc is a path resolved inside a root. Its root is in use until
// Sandbox.release is called on it.
type loc struct {
	r   *root
	rel string      // relative to r, no symbolic links at resolution time
	fi  fs.FileInfo // Lstat of rel; nil when it does not exist
}

// abs is the real absolute path of l.
func (l *loc) abs() string { return filepath.Join(l.r.real, l.rel) }

// absolute turns a caller's path into an absolute clean one.
func (s *Sandbox) absolute(op, name string) (string, error) {
	if name == "" {
		return "", newErr(op, name, ErrInvalid, "the path is empty")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", newErr(op, name, ErrInvalid, "the path contains a NUL byte")
	}
	if filepath.IsAbs(name) {
		return filepath.Clean(name), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch len(s.roots) {
	case 1:
		return filepath.Join(s.roots[0].real, name), nil // Join cleans
	case 0:
		return "", outside(op, name)
	}
	return "", newErr(op, name, ErrInvalid, "a relative path is ambiguous with %d roots; give an absolute path", len(s.roots))
}

// resolve finds name inside the roots, following every symbolic link on
// the way, and the last one too when followLast is set. A path that does
// not exist resolves as far as it does exist, with the rest taken as
// given, so that it can be created. On success the caller must release
// the returned loc's root.
func (s *Sandbox) resolve(ctx context.Context, op, name string, followLast bool) (*loc, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: op, Path: name, Kind: ErrIO, Err: err}
	}
	p, err := s.absolute(op, name)
	if err != nil {
		return nil, err
	}
	r, rel, ok := s.locate(p)
	if !ok {
		return nil, outside(op, name)
	}
	links := 0
	comps := splitRel(rel)
	done := "."
	var fi fs.FileInfo
	for i := 0; i < len(comps); i++ {
		cand := filepath.Join(done, comps[i])
		last := i == len(comps)-1
		fi, err = r.dir.Lstat(cand)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return &loc{r: r, rel: filepath.Join(append([]string{cand}, comps[i+1:]...)...)}, nil
			}
			s.release(r)
			return nil, ioErr(op, name, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 && (!last || followLast) {
			links++
			if links > maxLinks {
				s.release(r)
				return nil, newErr(op, name, ErrInvalid, "more than %d symbolic links on the way", maxLinks)
			}
			target, err := r.dir.Readlink(cand)
			if err != nil {
				s.release(r)
				return nil, ioErr(op, name, err)
			}
			// The directory holding the link has no links in it (we walked
			// it), so a relative target is resolved lexically from there.
			next := target
			if !filepath.IsAbs(next) {
				next = filepath.Join(r.real, done, next)
			}
			next = filepath.Join(append([]string{filepath.Clean(next)}, comps[i+1:]...)...)
			s.release(r)
			r, rel, ok = s.locate(next)
			if !ok {
				return nil, outside(op, name)
			}
			comps, done, i, fi = splitRel(rel), ".", -1, nil
			continue
		}
		if !last && !fi.IsDir() {
			s.release(r)
			return nil, &Error{Op: op, Path: name, Kind: ErrNotFound, Msg: fmt.Sprintf("%s is not a directory", filepath.Join(r.real, cand))}
		}
		done = cand
	}
	if fi == nil { // the root itself
		if fi, err = r.dir.Lstat("."); err != nil {
			s.release(r)
			return nil, ioErr(op, name, err)
		}
	}
	return &loc{r: r, rel: done, fi: fi}, nil
}

func splitRel(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, string(filepath.Separator))
}

// ioErr classifies an error from the file system.
func ioErr(op, name string, err error) *Error {
	e := &Error{Op: op, Path: name, Kind: ErrIO, Err: err}
	switch {
	case escapes(err):
		return outside(op, name)
	// Errno matches fs.ErrExist for ENOTEMPTY too, so the specific
	// numbers come first.
	case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENAMETOOLONG),
		errors.Is(err, syscall.EINVAL):
		e.Kind = ErrInvalid
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		e.Kind = ErrNotFound
	case errors.Is(err, fs.ErrExist):
		e.Kind = ErrAlreadyExists
	case errors.Is(err, fs.ErrPermission):
		e.Kind = ErrPermissionDenied
	}
	return e
}

// escapes reports whether err is os.Root refusing a path that leads out
// of it. The standard library does not export that error, only its text;
// TestSymlinkSwapRace fails if the text ever changes.
func escapes(err error) bool {
	for err != nil {
		if err.Error() == "path escapes from parent" {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

// checkWritable refuses changes in read-only mode.
func (s *Sandbox) checkWritable(op, name string) error {
	if s.readOnly {
		return newErr(op, name, ErrPermissionDenied, "files are served read-only")
	}
	return nil
}

// keyedMutex is a set of mutexes created on demand and dropped when
// unused.
type keyedMutex struct {
	mu sync.Mutex
	m  map[rootKey]*keyedEntry
}

type rootKey struct {
	r   *root
	rel string
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key rootKey) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[rootKey]*keyedEntry)
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
