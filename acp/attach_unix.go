//go:build unix

package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/sandbox"
)

// attachFiles looks at and reads the files a prompt's attachments name,
// through a read-only sandbox of the session's working directories: the
// one place the bridge decides what a client may show the agent, with the
// same rules as every other file access (package sandbox).
type attachFiles struct {
	sb    *sandbox.Sandbox
	roots []string
	err   error // the sandbox could not be made
}

func (s *session) openAttachFiles() *attachFiles {
	roots := s.roots()
	sb, err := sandbox.New(sandbox.Options{ReadOnly: true}, roots...)
	if err != nil {
		return &attachFiles{roots: roots, err: fmt.Errorf("the session's working directories cannot be opened: %w", err)}
	}
	return &attachFiles{sb: sb, roots: roots}
}

func (f *attachFiles) close() {
	if f.sb != nil {
		_ = f.sb.Close()
	}
}

// check refuses a path outside the working directories (or missing).
func (f *attachFiles) check(ctx context.Context, p string) error {
	if f.err != nil {
		return f.err
	}
	if _, err := f.sb.Resolve(ctx, p, true); err != nil {
		return f.describe(p, err)
	}
	return nil
}

// readText returns the text of a file, refusing one that is not text or
// larger than max bytes.
func (f *attachFiles) readText(ctx context.Context, p string, max int64) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	c, err := f.sb.Read(ctx, p, sandbox.EncodingUTF8)
	if err != nil {
		return "", f.describe(p, err)
	}
	defer c.Close()
	if c.Encoding != sandbox.EncodingUTF8 {
		return "", fmt.Errorf("%s is not a text file, so no text can be selected in it", p)
	}
	if c.Info.Size > max {
		return "", fmt.Errorf("%s is %d bytes, more than the %d bytes an attachment may embed", p, c.Info.Size, max)
	}
	b, err := io.ReadAll(io.LimitReader(c, max+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	return string(b), nil
}

// describe words a sandbox refusal for the turn's error.
func (f *attachFiles) describe(p string, err error) error {
	switch {
	case errors.Is(err, sandbox.ErrOutside):
		return fmt.Errorf("%s is outside the session's working directories (%s)", p, strings.Join(f.roots, ", "))
	case errors.Is(err, sandbox.ErrNotFound):
		return fmt.Errorf("%s does not exist", p)
	}
	return fmt.Errorf("%s cannot be read: %w", p, err)
}
