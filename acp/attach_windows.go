//go:build !unix

package acp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// attachFiles checks the files a prompt's attachments name against the
// session's working directories. Package sandbox serves Unix systems only,
// so on Windows the check is by path (symbolic links are not followed)
// and files are read directly.
type attachFiles struct{ roots []string }

func (s *session) openAttachFiles() *attachFiles { return &attachFiles{roots: s.roots()} }

func (f *attachFiles) close() {}

func (f *attachFiles) check(_ context.Context, p string) error {
	clean := filepath.Clean(p)
	for _, r := range f.roots {
		if rel, err := filepath.Rel(filepath.Clean(r), clean); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			if _, err := os.Stat(clean); err != nil {
				return fmt.Errorf("%s does not exist", p)
			}
			return nil
		}
	}
	return fmt.Errorf("%s is outside the session's working directories (%s)", p, strings.Join(f.roots, ", "))
}

func (f *attachFiles) readText(ctx context.Context, p string, max int64) (string, error) {
	if err := f.check(ctx, p); err != nil {
		return "", err
	}
	fh, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("%s cannot be read: %w", p, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	if int64(len(b)) > max {
		return "", fmt.Errorf("%s is more than the %d bytes an attachment may embed", p, max)
	}
	return string(b), nil
}
