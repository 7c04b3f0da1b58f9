//go:build unix

package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"mime"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Type is what a path names. The values are AHP's ResourceType strings.
type Type string

// The types a Sandbox reports.
const (
	TypeFile      Type = "file"
	TypeDirectory Type = "directory"
	// TypeSymlink is reported for a link itself: by Resolve when asked not
	// to follow links, and by List for a link that leads nowhere it may
	// follow (outside every root, or dangling).
	TypeSymlink Type = "symlink"
)

// Info describes a file or directory.
type Info struct {
	// Path is the real absolute path: every symbolic link resolved (but
	// the last, when Resolve was asked not to follow it).
	Path string
	// Type is what Path is.
	Type Type
	// Size is the size in bytes of a file, zero for a directory.
	Size int64
	// ModTime is the last modification time.
	ModTime time.Time
	// ETag identifies this version of a file, for WriteOptions.IfMatch.
	// It changes whenever the file is written or replaced. Empty for
	// directories and links.
	ETag string
	// ContentType is the MIME type guessed from the file name, when known.
	ContentType string
}

// Entry is one entry of a directory listing.
type Entry struct {
	// Name is the base name of the entry.
	Name string
	// Type is the entry's type; for a symbolic link that stays inside the
	// roots it is the type of the link's target.
	Type Type
	// Size and ModTime describe the entry, or a link's target.
	Size    int64
	ModTime time.Time
	// Symlink reports that the entry is a symbolic link.
	Symlink bool
}

// etag derives a version token from what the file system changes on every
// write: size, modification time to the nanosecond, and the inode, which
// an atomic replace changes even within one timestamp tick.
func etag(fi fs.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return fmt.Sprintf(`W/"%x-%x-%x"`, fi.Size(), fi.ModTime().UnixNano(), ino)
}

// typeOf returns the Type of fi, or "" for anything that is not a regular
// file, directory or symbolic link.
func typeOf(fi fs.FileInfo) Type {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return TypeFile
	case m.IsDir():
		return TypeDirectory
	case m&fs.ModeSymlink != 0:
		return TypeSymlink
	}
	return ""
}

func infoOf(path string, fi fs.FileInfo) Info {
	in := Info{Path: path, Type: typeOf(fi), ModTime: fi.ModTime()}
	if in.Type == TypeFile {
		in.Size = fi.Size()
		in.ETag = etag(fi)
		in.ContentType = mime.TypeByExtension(filepath.Ext(path))
	}
	return in
}

// Resolve returns what name is: the POSIX stat and realpath in one. With
// followSymlinks false the last component is not followed and a link is
// reported as TypeSymlink. A missing path is ErrNotFound; a device file,
// FIFO or socket is ErrInvalid.
func (s *Sandbox) Resolve(ctx context.Context, name string, followSymlinks bool) (Info, error) {
	const op = "resolve"
	l, err := s.resolve(ctx, op, name, followSymlinks)
	if err != nil {
		return Info{}, err
	}
	defer s.release(l.r)
	if l.fi == nil {
		return Info{}, newErr(op, name, ErrNotFound, "no such file or directory")
	}
	if typeOf(l.fi) == "" {
		return Info{}, newErr(op, name, ErrInvalid, "not a regular file or directory")
	}
	return infoOf(l.abs(), l.fi), nil
}

// List returns the entries of the directory name, sorted by name. Device
// files, FIFOs and sockets are left out. A symbolic link is followed if
// it stays inside the roots; one that does not is listed as TypeSymlink
// without saying anything about its target.
func (s *Sandbox) List(ctx context.Context, name string) ([]Entry, error) {
	const op = "list"
	l, err := s.resolve(ctx, op, name, true)
	if err != nil {
		return nil, err
	}
	defer s.release(l.r)
	if l.fi == nil {
		return nil, newErr(op, name, ErrNotFound, "no such directory")
	}
	if !l.fi.IsDir() {
		return nil, newErr(op, name, ErrInvalid, "not a directory")
	}
	d, err := l.r.dir.Open(l.rel)
	if err != nil {
		return nil, ioErr(op, name, err)
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		return nil, newErr(op, name, ErrInvalid, "not a directory (it changed while being listed)")
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, ioErr(op, name, err)
	}
	slices.Sort(names)
	entries := make([]Entry, 0, len(names))
	dirAbs := l.abs()
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, ioErr(op, name, err)
		}
		// Through the root, not d's DirEntry.Info, which stats by path
		// name and so could be led outside by a swapped parent.
		fi, err := l.r.dir.Lstat(filepath.Join(l.rel, n))
		if err != nil {
			continue // gone since the directory was read
		}
		e := Entry{Name: n, Type: typeOf(fi), ModTime: fi.ModTime()}
		switch e.Type {
		case "":
			continue
		case TypeFile:
			e.Size = fi.Size()
		case TypeSymlink:
			e.Symlink = true
			if t, ok := s.follow(ctx, filepath.Join(dirAbs, n)); ok {
				e.Type, e.Size, e.ModTime = t.Type, t.Size, t.ModTime
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// follow resolves a link found inside a root, reporting whether it leads
// to a file or directory inside the roots.
func (s *Sandbox) follow(ctx context.Context, abs string) (Info, bool) {
	l, err := s.resolve(ctx, "list", abs, true)
	if err != nil {
		return Info{}, false
	}
	defer s.release(l.r)
	if l.fi == nil {
		return Info{}, false
	}
	switch t := typeOf(l.fi); t {
	case TypeFile, TypeDirectory:
		return infoOf(l.abs(), l.fi), true
	}
	return Info{}, false
}

// holdsRoot reports whether the real path abs is a root or contains one.
func (s *Sandbox) holdsRoot(abs string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.roots {
		if _, ok := within(r.real, abs); ok {
			return true
		}
	}
	return false
}

// isBelow reports whether the real path p is dir or inside it.
func isBelow(p, dir string) bool {
	_, ok := within(p, dir)
	return ok
}

// tempName is a fresh hidden name next to base for writing a file or
// directory before renaming it into place. Long names are shortened so
// the result stays within NAME_MAX.
func tempName(base string, n uint64) string {
	if len(base) > 120 {
		base = base[:120]
	}
	return "." + strings.TrimPrefix(base, ".") + fmt.Sprintf(".ahp-%016x.tmp", n)
}
