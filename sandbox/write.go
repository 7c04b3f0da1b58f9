//go:build unix

package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
)

// WriteMode says where Write puts the data. The values are AHP's
// ResourceWriteMode strings; each reads WriteOptions.Position its own way.
type WriteMode string

// The write modes.
const (
	// WriteTruncate (the default) keeps the first Position bytes of the
	// file, zero-filled if the file is shorter, and writes the data after
	// them: with Position 0, a full overwrite.
	WriteTruncate WriteMode = "truncate"
	// WriteAppend writes the data Position bytes before the end of the
	// file, keeping those bytes after it: with Position 0, an append.
	WriteAppend WriteMode = "append"
	// WriteInsert splices the data in at byte Position, keeping every
	// existing byte.
	WriteInsert WriteMode = "insert"
)

// WriteOptions refine Write.
type WriteOptions struct {
	// Mode is where the data goes; empty means WriteTruncate.
	Mode WriteMode
	// Position is a byte offset read according to Mode.
	Position int64
	// CreateOnly refuses, with ErrAlreadyExists, to touch a file that
	// exists.
	CreateOnly bool
	// IfMatch, when set, is an ETag from Resolve or Open: the write
	// happens only if the file is still that version, and fails with
	// ErrConflict otherwise (also when the file has since disappeared).
	IfMatch string
	// MakeParents creates missing parent directories, as ACP's
	// fs/write_text_file expects; without it a missing parent is
	// ErrNotFound, as AHP's resourceWrite specifies.
	MakeParents bool
}

// New files get these permissions, less the umask.
const (
	filePerm = 0o644
	dirPerm  = 0o755
)

// Write writes data to the file name, creating it if need be, and returns
// what the file is afterwards (with its new ETag). The file is never seen
// half written: the new content goes to a temporary file in the same
// directory, which is then renamed over the old one, keeping its
// permissions. The one exception is a plain append (WriteAppend at
// Position 0), done in place with O_APPEND so that concurrent appenders
// never overwrite each other. Writes to one file through one Sandbox are
// serialised, so IfMatch and the read-modify-write modes are exact among
// them; against other processes they are as good as the file system
// allows.
//
// data is read as it is written, so a large write needs no large buffer.
// A symbolic link to a file inside the roots is written through: the
// target changes and the link stays.
func (s *Sandbox) Write(ctx context.Context, name string, data io.Reader, opts WriteOptions) (Info, error) {
	const op = "write"
	if err := s.checkWritable(op, name); err != nil {
		return Info{}, err
	}
	mode := opts.Mode
	if mode == "" {
		mode = WriteTruncate
	}
	if mode != WriteTruncate && mode != WriteAppend && mode != WriteInsert {
		return Info{}, newErr(op, name, ErrInvalid, "unknown write mode %q (want %q, %q or %q)", mode, WriteTruncate, WriteAppend, WriteInsert)
	}
	if opts.Position < 0 {
		return Info{}, newErr(op, name, ErrInvalid, "position %d is negative", opts.Position)
	}
	l, err := s.resolve(ctx, op, name, true)
	if err != nil {
		return Info{}, err
	}
	defer s.release(l.r)
	if l.rel == "." {
		return Info{}, newErr(op, name, ErrInvalid, "a directory, not a file")
	}
	unlock := s.writeLocks.lock(rootKey{l.r, l.rel})
	defer unlock()

	// Look again under the lock: the resolution may be stale.
	seen, err := l.r.dir.Lstat(l.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		seen = nil
	case err != nil:
		return Info{}, ioErr(op, name, err)
	}

	var cur *os.File
	var size int64
	var perm fs.FileMode = filePerm
	keepPerm := false
	if seen != nil {
		var fi fs.FileInfo
		cur, fi, err = openRegular(l.r, l.rel, op, name, seen)
		if err != nil {
			return Info{}, err
		}
		defer cur.Close()
		if opts.CreateOnly {
			return Info{}, newErr(op, name, ErrAlreadyExists, "the file exists and createOnly was asked")
		}
		if opts.IfMatch != "" && etag(fi) != opts.IfMatch {
			return Info{}, newErr(op, name, ErrConflict, "the file changed since it was read (ETag %s, not %s)", etag(fi), opts.IfMatch)
		}
		size, perm, keepPerm = fi.Size(), fi.Mode().Perm(), true
	} else {
		if opts.IfMatch != "" {
			return Info{}, newErr(op, name, ErrConflict, "the file no longer exists (ifMatch %s)", opts.IfMatch)
		}
		if err := s.ensureParent(l, op, name, opts.MakeParents); err != nil {
			return Info{}, err
		}
	}

	// What to keep of the old content: [0, head) before the data and
	// [tail, size) after it.
	var head, tail int64
	pad := int64(0)
	switch mode {
	case WriteTruncate:
		head, tail = min(opts.Position, size), size
		pad = opts.Position - head
	case WriteInsert:
		if opts.Position > size {
			return Info{}, newErr(op, name, ErrInvalid, "insert position %d is past the end of the file (%d bytes)", opts.Position, size)
		}
		head, tail = opts.Position, opts.Position
	case WriteAppend:
		if opts.Position > size {
			return Info{}, newErr(op, name, ErrInvalid, "append position %d counts back past the start of the file (%d bytes)", opts.Position, size)
		}
		head, tail = size-opts.Position, size-opts.Position
	}

	data = ctxReader{ctx, data}
	if mode == WriteAppend && opts.Position == 0 && cur != nil {
		return s.appendInPlace(l, op, name, data)
	}

	tmpRel, tmp, err := createTemp(l.r, l.rel, perm)
	if err != nil {
		return Info{}, ioErr(op, name, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = l.r.dir.Remove(tmpRel)
		}
	}()
	if cur != nil && head > 0 {
		if _, err := io.Copy(tmp, io.NewSectionReader(cur, 0, head)); err != nil {
			return Info{}, ioErr(op, name, err)
		}
	}
	if pad > 0 {
		// Leave a hole rather than writing zeros: a sparse extension.
		if err := tmp.Truncate(head + pad); err != nil {
			return Info{}, ioErr(op, name, err)
		}
		if _, err := tmp.Seek(head+pad, io.SeekStart); err != nil {
			return Info{}, ioErr(op, name, err)
		}
	}
	if _, err := io.Copy(tmp, data); err != nil {
		return Info{}, ioErr(op, name, err)
	}
	if cur != nil && mode != WriteTruncate && tail < size {
		if _, err := io.Copy(tmp, io.NewSectionReader(cur, tail, size-tail)); err != nil {
			return Info{}, ioErr(op, name, err)
		}
	}
	if keepPerm {
		// Exactly the old permissions: creating applied the umask.
		if err := tmp.Chmod(perm); err != nil {
			return Info{}, ioErr(op, name, err)
		}
	}
	if err := tmp.Sync(); err != nil {
		return Info{}, ioErr(op, name, err)
	}
	if err := tmp.Close(); err != nil {
		return Info{}, ioErr(op, name, err)
	}
	if err := renameIn(l.r, tmpRel, l.r, l.rel, opts.CreateOnly); err != nil {
		if errors.Is(err, syscall.EEXIST) {
			return Info{}, newErr(op, name, ErrAlreadyExists, "the file was created meanwhile and createOnly was asked")
		}
		return Info{}, ioErr(op, name, err)
	}
	ok = true
	return s.statIn(l, op, name)
}

func (s *Sandbox) appendInPlace(l *loc, op, name string, data io.Reader) (Info, error) {
	f, err := l.r.dir.OpenFile(l.rel, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return Info{}, ioErr(op, name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, ioErr(op, name, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, newErr(op, name, ErrInvalid, "not a regular file (it changed while being opened)")
	}
	if _, err := io.Copy(f, data); err != nil {
		return Info{}, ioErr(op, name, err)
	}
	if err := f.Close(); err != nil {
		return Info{}, ioErr(op, name, err)
	}
	return s.statIn(l, op, name)
}

func (s *Sandbox) statIn(l *loc, op, name string) (Info, error) {
	fi, err := l.r.dir.Stat(l.rel)
	if err != nil {
		return Info{}, ioErr(op, name, err)
	}
	return infoOf(l.abs(), fi), nil
}

// ensureParent checks that the directory l would be created in exists,
// creating it when makeParents is set.
func (s *Sandbox) ensureParent(l *loc, op, name string, makeParents bool) error {
	parent := filepath.Dir(l.rel)
	fi, err := l.r.dir.Stat(parent)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return newErr(op, name, ErrNotFound, "%s is not a directory", filepath.Join(l.r.real, parent))
	case !errors.Is(err, fs.ErrNotExist):
		return ioErr(op, name, err)
	case !makeParents:
		return newErr(op, name, ErrNotFound, "the directory %s does not exist", filepath.Join(l.r.real, parent))
	}
	if err := l.r.dir.MkdirAll(parent, dirPerm); err != nil {
		return ioErr(op, name, err)
	}
	return nil
}

// createTemp creates a new file next to rel.
func createTemp(r *root, rel string, perm fs.FileMode) (string, *os.File, error) {
	dir, base := filepath.Split(rel)
	for range 10 {
		name := filepath.Join(dir, tempName(base, rand.Uint64()))
		f, err := r.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOCTTY, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, &fs.PathError{Op: "create temporary file", Path: rel, Err: fs.ErrExist}
}

// Mkdir creates the directory name and any missing parents (mkdir -p).
// An existing directory is not an error; an existing file is
// ErrAlreadyExists.
func (s *Sandbox) Mkdir(ctx context.Context, name string) error {
	const op = "mkdir"
	if err := s.checkWritable(op, name); err != nil {
		return err
	}
	l, err := s.resolve(ctx, op, name, true)
	if err != nil {
		return err
	}
	defer s.release(l.r)
	if l.fi != nil {
		if l.fi.IsDir() {
			return nil
		}
		return newErr(op, name, ErrAlreadyExists, "exists and is not a directory")
	}
	if err := l.r.dir.MkdirAll(l.rel, dirPerm); err != nil {
		return ioErr(op, name, err)
	}
	return nil
}

// Delete removes the file, link or empty directory name; a directory with
// contents only when recursive is set (ErrInvalid otherwise). A symbolic
// link is removed itself, never its target. A root, or a directory
// holding one, cannot be deleted (ErrPermissionDenied).
func (s *Sandbox) Delete(ctx context.Context, name string, recursive bool) error {
	const op = "delete"
	if err := s.checkWritable(op, name); err != nil {
		return err
	}
	l, err := s.resolve(ctx, op, name, false)
	if err != nil {
		return err
	}
	defer s.release(l.r)
	if l.fi == nil {
		return newErr(op, name, ErrNotFound, "no such file or directory")
	}
	if s.holdsRoot(l.abs()) {
		return newErr(op, name, ErrPermissionDenied, "it is, or holds, a directory being served")
	}
	if l.fi.IsDir() && recursive {
		err = l.r.dir.RemoveAll(l.rel)
	} else {
		err = l.r.dir.Remove(l.rel)
	}
	if err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return &Error{Op: op, Path: name, Kind: ErrInvalid, Msg: "the directory is not empty; delete it recursively to remove its contents too"}
		}
		return ioErr(op, name, err)
	}
	return nil
}

// Move renames src to dst; both may be anywhere in the roots. A symbolic
// link is moved itself. An existing dst is replaced, unless failIfExists
// is set (ErrAlreadyExists); the check and the rename are one atomic step
// where the system offers it (Linux renameat2). The directory dst goes
// into must exist.
func (s *Sandbox) Move(ctx context.Context, src, dst string, failIfExists bool) error {
	const op = "move"
	if err := s.checkWritable(op, src); err != nil {
		return err
	}
	ls, ld, err := s.twoPaths(ctx, op, src, dst, false)
	if err != nil {
		return err
	}
	defer s.release(ls.r)
	defer s.release(ld.r)
	if s.holdsRoot(ls.abs()) {
		return newErr(op, src, ErrPermissionDenied, "it is, or holds, a directory being served")
	}
	if ls.abs() == ld.abs() {
		return nil
	}
	if ld.fi != nil && !failIfExists && (ld.fi.IsDir() || ls.fi.IsDir()) {
		// rename(2) replaces only a file by a file or an empty directory
		// by a directory; a move that overwrites replaces whatever is
		// there.
		if err := ld.r.dir.RemoveAll(ld.rel); err != nil {
			return ioErr(op, dst, err)
		}
	}
	err = renameIn(ls.r, ls.rel, ld.r, ld.rel, failIfExists)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EEXIST):
		return newErr(op, dst, ErrAlreadyExists, "the destination exists and failIfExists was asked")
	case errors.Is(err, syscall.EXDEV):
		// Different file systems: copy, then remove the original.
		if err := s.copyInto(ctx, op, src, ls, dst, ld, failIfExists); err != nil {
			return err
		}
		if err := ls.r.dir.RemoveAll(ls.rel); err != nil {
			return ioErr(op, src, err)
		}
		return nil
	}
	return ioErr(op, src, err)
}

// Copy copies the file or directory src (following a link to it) to dst.
// A directory is copied with everything in it; links inside it are copied
// as links, and device files, FIFOs and sockets are left out. An existing
// dst is replaced, unless failIfExists is set (ErrAlreadyExists). The copy
// is made under a temporary name and renamed into place, so dst is never
// seen half copied. The directory dst goes into must exist.
func (s *Sandbox) Copy(ctx context.Context, src, dst string, failIfExists bool) error {
	const op = "copy"
	if err := s.checkWritable(op, src); err != nil {
		return err
	}
	ls, ld, err := s.twoPaths(ctx, op, src, dst, true)
	if err != nil {
		return err
	}
	defer s.release(ls.r)
	defer s.release(ld.r)
	if ls.abs() == ld.abs() {
		if failIfExists {
			return newErr(op, dst, ErrAlreadyExists, "the destination is the source")
		}
		return nil
	}
	return s.copyInto(ctx, op, src, ls, dst, ld, failIfExists)
}

// twoPaths resolves the source and destination of a move or copy and
// checks what both have in common: the source exists and is a file or
// directory, the destination's directory exists, the destination is not
// a root and not inside the source.
func (s *Sandbox) twoPaths(ctx context.Context, op, src, dst string, followSrc bool) (*loc, *loc, error) {
	ls, err := s.resolve(ctx, op, src, followSrc)
	if err != nil {
		return nil, nil, err
	}
	ld, err := s.resolve(ctx, op, dst, false)
	if err != nil {
		s.release(ls.r)
		return nil, nil, err
	}
	fail := func(err error) (*loc, *loc, error) {
		s.release(ls.r)
		s.release(ld.r)
		return nil, nil, err
	}
	if ls.fi == nil {
		return fail(newErr(op, src, ErrNotFound, "no such file or directory"))
	}
	if t := typeOf(ls.fi); t == "" || (followSrc && t == TypeSymlink) {
		return fail(newErr(op, src, ErrInvalid, "not a regular file or directory"))
	}
	if ls.abs() == ld.abs() {
		return ls, ld, nil
	}
	if ls.fi.IsDir() && isBelow(ld.abs(), ls.abs()) {
		return fail(newErr(op, dst, ErrInvalid, "the destination is inside the source directory %s", src))
	}
	if s.holdsRoot(ld.abs()) {
		return fail(newErr(op, dst, ErrPermissionDenied, "it is, or holds, a directory being served"))
	}
	if err := s.ensureParent(ld, op, dst, false); err != nil {
		return fail(err)
	}
	return ls, ld, nil
}

// copyInto copies ls to ld through a temporary name beside ld.
func (s *Sandbox) copyInto(ctx context.Context, op, src string, ls *loc, dst string, ld *loc, failIfExists bool) error {
	if ld.fi != nil && failIfExists {
		return newErr(op, dst, ErrAlreadyExists, "the destination exists and failIfExists was asked")
	}
	dir, base := filepath.Split(ld.rel)
	tmpRel := ""
	var err error
	switch typeOf(ls.fi) {
	case TypeDirectory:
		tmpRel, err = mkdirTemp(ld.r, dir, base)
		if err == nil {
			err = copyDir(ctx, ls.r, ls.rel, ld.r, tmpRel)
		}
	case TypeSymlink: // only when Move falls back to copying
		var target string
		if target, err = ls.r.dir.Readlink(ls.rel); err == nil {
			tmpRel = filepath.Join(dir, tempName(base, rand.Uint64()))
			if err = ld.r.dir.Symlink(target, tmpRel); err != nil {
				tmpRel = ""
			}
		}
	default:
		var in *os.File
		in, _, err = openRegular(ls.r, ls.rel, op, src, ls.fi)
		if err != nil {
			return err
		}
		defer in.Close()
		var out *os.File
		tmpRel, out, err = createTemp(ld.r, ld.rel, ls.fi.Mode().Perm())
		if err == nil {
			_, err = io.Copy(out, in)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		if tmpRel != "" {
			_ = ld.r.dir.RemoveAll(tmpRel)
		}
		if KindOf(err) != 0 {
			return err
		}
		return ioErr(op, src, err)
	}
	if ld.fi != nil && (ld.fi.IsDir() || ls.fi.IsDir()) {
		if err := ld.r.dir.RemoveAll(ld.rel); err != nil {
			_ = ld.r.dir.RemoveAll(tmpRel)
			return ioErr(op, dst, err)
		}
	}
	if err := renameIn(ld.r, tmpRel, ld.r, ld.rel, failIfExists); err != nil {
		_ = ld.r.dir.RemoveAll(tmpRel)
		if errors.Is(err, syscall.EEXIST) {
			return newErr(op, dst, ErrAlreadyExists, "the destination was created meanwhile and failIfExists was asked")
		}
		return ioErr(op, dst, err)
	}
	return nil
}

func mkdirTemp(r *root, dir, base string) (string, error) {
	for range 10 {
		name := filepath.Join(dir, tempName(base, rand.Uint64()))
		err := r.dir.Mkdir(name, dirPerm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, err
	}
	return "", &fs.PathError{Op: "create temporary directory", Path: filepath.Join(dir, base), Err: fs.ErrExist}
}

// copyDir copies the contents of the directory srel (in sr) into the
// existing directory drel (in dr), never leaving either root.
func copyDir(ctx context.Context, sr *root, srel string, dr *root, drel string) error {
	d, err := sr.dir.Open(srel)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		from, to := filepath.Join(srel, n), filepath.Join(drel, n)
		fi, err := sr.dir.Lstat(from)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		switch typeOf(fi) {
		case TypeDirectory:
			if err := dr.dir.Mkdir(to, fi.Mode().Perm()|0o700); err != nil {
				return err
			}
			if err := copyDir(ctx, sr, from, dr, to); err != nil {
				return err
			}
		case TypeFile:
			if err := copyFile(sr, from, dr, to, fi.Mode().Perm()); err != nil {
				return err
			}
		case TypeSymlink:
			target, err := sr.dir.Readlink(from)
			if err != nil {
				return err
			}
			if err := dr.dir.Symlink(target, to); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(sr *root, from string, dr *root, to string, perm fs.FileMode) error {
	in, err := sr.dir.OpenFile(from, openFlags, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return nil // swapped for something else meanwhile: leave it out
	}
	out, err := dr.dir.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOCTTY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
