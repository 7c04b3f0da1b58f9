//go:build unix

package acp

import (
	"context"
	"errors"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/ahp-bridge/ahp-bridge/sandbox"
)

// The agent's file services (fs/read_text_file, fs/write_text_file) go
// through package sandbox, the same confinement the host's resource
// commands use for clients: the session's working directory and nothing
// else, every symbolic link resolved, device files refused, and the
// check atomic against a link swapped in meanwhile (os.Root). Config's
// ReadOnlyFiles refuses every write.

// fsContext bounds a file operation. The SDK's handlers give one, but the
// calls into this file do not carry it; a file operation is short, and a
// long write is bounded by the agent's own request.
func fsContext() context.Context { return context.Background() }

// sandbox opens a sandbox over the session's working directory. One per
// request keeps the session's lifecycle free of it; opening costs a few
// system calls, nothing next to an agent's request.
func (s *session) sandbox() (*sandbox.Sandbox, error) {
	box, err := sandbox.New(sandbox.Options{ReadOnly: s.p.cfg.ReadOnlyFiles}, s.cwd)
	if err != nil {
		return nil, fsError(codeInternal, "the session's working directory %s cannot be served: %v", s.cwd, err)
	}
	return box, nil
}

// fsFailure is the ACP error for a sandbox error: ResourceNotFound for a
// missing file, InternalError for a failing file system, InvalidParams
// for every refusal. A path outside the working directory is refused in
// the same words whether or not it exists.
func (s *session) fsFailure(err error) *sdk.RequestError {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	var se *sandbox.Error
	if !errors.As(err, &se) {
		return fsError(codeInternal, "%v", err)
	}
	switch se.Kind {
	case sandbox.ErrNotFound:
		// ACP's own wording for -32002 first: agents built on the
		// TypeScript SDK that tell "no such file" from other errors by
		// the text (Gemini CLI) look for it.
		return fsError(codeResourceNotFound, "Resource not found: %v", err)
	case sandbox.ErrIO:
		return fsError(codeInternal, "%v", err)
	case sandbox.ErrOutside:
		return fsError(codeInvalidParams, "%s %q: outside the session's working directory %s", se.Op, se.Path, s.cwd)
	}
	return fsError(codeInvalidParams, "%v", err)
}

// readTextFile implements fs/read_text_file. line is 1-based; limit is a
// number of lines.
func (s *session) readTextFile(p string, line, limit *int) (string, error) {
	if err := checkLineRange(line, limit); err != nil {
		return "", err
	}
	box, err := s.sandbox()
	if err != nil {
		return "", err
	}
	defer box.Close()
	f, err := box.Open(fsContext(), p)
	if err != nil {
		return "", s.fsFailure(err)
	}
	defer f.Close()
	max := s.p.cfg.MaxReadBytes
	if size := f.Info().Size; size > max {
		return "", fsError(codeInvalidParams, "%q is %d bytes, more than the %d bytes a read may return", p, size, max)
	}
	text, err := readCapped(f, p, max)
	if err != nil {
		return "", err
	}
	return lineRange(text, line, limit), nil
}

// writeTextFile implements fs/write_text_file: the file is written to a
// temporary file next to it and renamed into place, so readers never see
// half a file, keeping an existing file's permissions. Missing parent
// directories inside the working directory are created. When the file
// did not exist, a fileCreated for it is queued once it has been
// written, so the turn shows it as created.
func (s *session) writeTextFile(p, content string) error {
	box, err := s.sandbox()
	if err != nil {
		return err
	}
	defer box.Close()
	ctx := fsContext()
	_, err = box.Resolve(ctx, p, true)
	created := sandbox.KindOf(err) == sandbox.ErrNotFound
	if _, err := box.Write(ctx, p, strings.NewReader(content), sandbox.WriteOptions{MakeParents: true}); err != nil {
		return s.fsFailure(err)
	}
	if created {
		s.queue.push(queueItem{event: fileCreated{path: s.absPath(p)}})
	}
	return nil
}

// terminalDir checks a terminal's cwd from the agent against the
// session's working directory and returns it with every link resolved.
func (s *session) terminalDir(p string) (string, error) {
	box, err := s.sandbox()
	if err != nil {
		return "", err
	}
	defer box.Close()
	info, err := box.Resolve(fsContext(), p, true)
	if err != nil {
		return "", s.fsFailure(err)
	}
	if info.Type != sandbox.TypeDirectory {
		return "", fsError(codeInvalidParams, "terminal cwd %q is not a directory", p)
	}
	return info.Path, nil
}
