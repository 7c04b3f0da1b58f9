package workspace

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// DefaultDirectoryURI is how the initialize result names the host's
// default directory: a file: URI, which VS Code parses and starts its
// folder picker at (it keeps the URI's path). A directory given as a
// file: URI is sent as it is; "" when there is none.
func DefaultDirectoryURI(dir string) string {
	switch {
	case dir == "":
		return ""
	case strings.HasPrefix(dir, "file:"):
		return dir
	}
	p := filepath.ToSlash(filepath.Clean(dir))
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/…
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// DirPath turns a session's working directory (an absolute path or a
// local file URI, as createSession accepts) into a path; false when it
// names neither.
func DirPath(d string) (string, bool) {
	if strings.HasPrefix(d, "file:") {
		p, err := URIPath(d)
		return p, err == nil
	}
	return filepath.Clean(d), filepath.IsAbs(d)
}

// URIPath returns the local path a file URI names, or why it names none.
func URIPath(uri string) (string, error) {
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

// FileURI is the file URI of an absolute path.
func FileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

// paramPath reads a file URI parameter of method.
func paramPath(method, field, uri string) (string, *Error) {
	if uri == "" {
		return "", errorf(wire.CodeInvalidParams, "invalid params for %s: %s is required", method, field)
	}
	p, err := URIPath(uri)
	if err != nil {
		return "", errorf(wire.CodeInvalidParams, "invalid params for %s: %s: %v", method, field, err)
	}
	return p, nil
}
