package host

import (
	"net/url"
	"path/filepath"
	"strings"
)

// defaultDirectoryURI is how the initialize result names
// Options.DefaultDirectory: a file: URI, which VS Code parses and starts
// its folder picker at (it keeps the URI's path). A directory given as a
// file: URI is sent as it is; "" when there is none.
func defaultDirectoryURI(dir string) string {
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
