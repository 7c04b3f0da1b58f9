package acp

import (
	"io"
	"strings"
)

// The parts of fs/read_text_file that do not depend on how the file was
// opened (through package sandbox on Unix, by path elsewhere).

// checkLineRange refuses a line or limit an fs/read_text_file cannot mean.
func checkLineRange(line, limit *int) error {
	if line != nil && *line < 1 {
		return fsError(codeInvalidParams, "line must be 1 or more, got %d", *line)
	}
	if limit != nil && *limit < 0 {
		return fsError(codeInvalidParams, "limit must not be negative, got %d", *limit)
	}
	return nil
}

// readCapped reads the file p opened as r, refusing one larger than max
// bytes (it may have grown since its size was checked).
func readCapped(r io.Reader, p string, max int64) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return "", fsError(codeInternal, "reading %q: %v", p, err)
	}
	if int64(len(b)) > max {
		return "", fsError(codeInvalidParams, "%q is larger than the %d bytes a read may return", p, max)
	}
	return string(b), nil
}

// lineRange returns the lines of text from line (1-based; nil: the first)
// on, at most limit of them (nil: all), with their line endings.
func lineRange(text string, line, limit *int) string {
	if line == nil && limit == nil {
		return text
	}
	start := 0
	if line != nil {
		start = *line - 1
	}
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if start >= len(lines) {
		return ""
	}
	end := len(lines)
	if limit != nil && start+*limit < end {
		end = start + *limit
	}
	return strings.Join(lines[start:end], "")
}
