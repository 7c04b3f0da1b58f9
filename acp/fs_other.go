//go:build !unix

package acp

// Where package sandbox cannot work (it needs Unix system calls), the
// file services check paths by name: lexically, then with symbolic links
// resolved. fs.go is the Unix implementation.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// within reports whether p is root or inside it. Both must be clean.
func within(p, root string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// confine checks a path from the agent against the session's working
// directory and returns it absolute and clean. Relative paths are taken
// relative to the working directory; `..` components are refused outright.
func (s *session) confine(p string) (string, *sdk.RequestError) {
	if p == "" {
		return "", fsError(codeInvalidParams, "path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", fsError(codeInvalidParams, "path contains a NUL byte")
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return "", fsError(codeInvalidParams, "path %q must not contain '..'", p)
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.cwd, p)
	}
	p = filepath.Clean(p)
	if !within(p, s.cwd) && !within(p, s.cwdReal) {
		return "", fsError(codeInvalidParams, "path %q is outside the session's working directory %s", p, s.cwd)
	}
	return p, nil
}

// resolveExisting resolves symlinks of an existing path and checks the
// result is still inside the working directory.
func (s *session) resolveExisting(p string) (string, *sdk.RequestError) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fsError(codeResourceNotFound, "file %q does not exist", p)
		}
		return "", fsError(codeInternal, "resolving %q: %v", p, err)
	}
	if !within(real, s.cwdReal) {
		return "", fsError(codeInvalidParams, "path %q leads through a symbolic link to %q, outside the session's working directory", p, real)
	}
	return real, nil
}

// readTextFile implements fs/read_text_file. line is 1-based; limit is a
// number of lines.
func (s *session) readTextFile(p string, line, limit *int) (string, error) {
	if err := checkLineRange(line, limit); err != nil {
		return "", err
	}
	clean, rerr := s.confine(p)
	if rerr != nil {
		return "", rerr
	}
	real, rerr := s.resolveExisting(clean)
	if rerr != nil {
		return "", rerr
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fsError(codeInternal, "reading %q: %v", p, err)
	}
	if fi.IsDir() {
		return "", fsError(codeInvalidParams, "%q is a directory, not a file", p)
	}
	if isDevice(fi) || !fi.Mode().IsRegular() {
		return "", fsError(codeInvalidParams, "%q is not a regular file", p)
	}
	max := s.p.cfg.MaxReadBytes
	if fi.Size() > max {
		return "", fsError(codeInvalidParams, "%q is %d bytes, more than the %d bytes a read may return", p, fi.Size(), max)
	}
	f, err := os.Open(real)
	if err != nil {
		return "", fsError(codeInternal, "reading %q: %v", p, err)
	}
	defer f.Close()
	text, err := readCapped(f, p, max)
	if err != nil {
		return "", err
	}
	return lineRange(text, line, limit), nil
}

// writeTextFile implements fs/write_text_file: the file is written to a
// temporary file next to it and renamed into place, so readers never see
// half a file. Missing parent directories inside the working directory
// are created. When the file did not exist, a fileCreated for it is
// queued once it has been written, so the turn shows it as created.
func (s *session) writeTextFile(p, content string) error {
	if s.p.cfg.ReadOnlyFiles {
		return fsError(codeInvalidParams, "write %q: permission denied: files are served read-only", p)
	}
	clean, rerr := s.confine(p)
	if rerr != nil {
		return rerr
	}
	created, err := s.writeConfined(p, clean, content)
	if err == nil && created {
		s.queue.push(queueItem{event: fileCreated{path: clean}})
	}
	return err
}

// writeConfined writes the file of writeTextFile, clean being p confined;
// created says the file did not exist before.
func (s *session) writeConfined(p, clean, content string) (created bool, _ error) {
	target := clean
	mode := fs.FileMode(0o644)
	if _, err := os.Lstat(clean); err == nil {
		real, rerr := s.resolveExisting(clean)
		if rerr != nil {
			return false, rerr
		}
		rfi, err := os.Stat(real)
		if err != nil {
			return false, fsError(codeInternal, "writing %q: %v", p, err)
		}
		if rfi.IsDir() {
			return false, fsError(codeInvalidParams, "%q is a directory, not a file", p)
		}
		if isDevice(rfi) || !rfi.Mode().IsRegular() {
			return false, fsError(codeInvalidParams, "%q is not a regular file", p)
		}
		target = real
		mode = rfi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fsError(codeInternal, "writing %q: %v", p, err)
	} else {
		// New file: the nearest existing ancestor must resolve inside.
		created = true
		dir := filepath.Dir(clean)
		anc := dir
		for {
			if _, err := os.Lstat(anc); err == nil {
				break
			}
			parent := filepath.Dir(anc)
			if parent == anc {
				break
			}
			anc = parent
		}
		if _, rerr := s.resolveExisting(anc); rerr != nil {
			return false, rerr
		}
		if anc != dir {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return false, fsError(codeInternal, "creating the directory of %q: %v", p, err)
			}
		}
		realDir, rerr := s.resolveExisting(dir)
		if rerr != nil {
			return false, rerr
		}
		target = filepath.Join(realDir, filepath.Base(clean))
	}

	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return false, fsError(codeInternal, "writing %q: %v", p, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.WriteString(content); err != nil {
		_ = tmp.Close()
		return false, fsError(codeInternal, "writing %q: %v", p, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return false, fsError(codeInternal, "writing %q: %v", p, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fsError(codeInternal, "writing %q: %v", p, err)
	}
	if err := os.Chmod(tmpName, mode); err != nil {
		return false, fsError(codeInternal, "writing %q: %v", p, err)
	}
	if err := os.Rename(tmpName, target); err != nil {
		return false, fsError(codeInternal, "writing %q: %v", p, err)
	}
	ok = true
	return created, nil
}

// terminalDir checks a terminal's cwd from the agent against the
// session's working directory and returns it with every link resolved.
func (s *session) terminalDir(p string) (string, error) {
	clean, rerr := s.confine(p)
	if rerr != nil {
		return "", rerr
	}
	real, rerr := s.resolveExisting(clean)
	if rerr != nil {
		return "", rerr
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fsError(codeInvalidParams, "terminal cwd %q is not a directory", p)
	}
	return real, nil
}
