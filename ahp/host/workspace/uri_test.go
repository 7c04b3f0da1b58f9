package workspace

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestURIPath(t *testing.T) {
	for _, tc := range []struct {
		uri, path, err string
	}{
		{uri: "file:///home/a/b.txt", path: "/home/a/b.txt"},
		{uri: "file://localhost/tmp/x", path: "/tmp/x"},
		{uri: "FILE:///tmp/x", path: "/tmp/x"},
		{uri: "file:///tmp/a%3Fb", path: "/tmp/a?b"},
		{uri: "http://example.com/x", err: "is not a file URI"},
		{uri: "file://other/tmp/x", err: `names a file on host "other"`},
		{uri: "file:tmp/x", err: "does not name an absolute path"},
		{uri: "file:///tmp/x?y", err: "has a query or fragment"},
		{uri: "file:///tmp/x#y", err: "has a query or fragment"},
		{uri: "file:///tmp/%zz", err: "is not a valid URI"},
	} {
		p, err := URIPath(tc.uri)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.uri)
			continue
		}
		assert.NoError(t, err, tc.uri)
		assert.Equal(t, tc.path, p, tc.uri)
	}
}

func TestDirPath(t *testing.T) {
	for _, tc := range []struct {
		dir, path string
		ok        bool
	}{
		{"/home/a/", "/home/a", true},
		{"file:///home/a", "/home/a", true},
		{"relative/dir", "relative/dir", false},
		{"file://other/x", "", false},
	} {
		p, ok := DirPath(tc.dir)
		assert.Equal(t, tc.ok, ok, tc.dir)
		if tc.ok {
			assert.Equal(t, tc.path, p, tc.dir)
		}
	}
}

func TestFileURIRoundTrip(t *testing.T) {
	for _, p := range []string{"/", "/tmp/a b", "/tmp/a?b#c", "/tmp/ü"} {
		u := FileURI(p)
		assert.True(t, IsFileURI(u), u)
		back, err := URIPath(u)
		assert.NoError(t, err, u)
		assert.Equal(t, p, back, u)
	}
	assert.False(t, IsFileURI("ahp-bridge:/diff"))
	assert.False(t, IsFileURI("fil"))
}

func TestDefaultDirectoryURI(t *testing.T) {
	assert.Equal(t, "", DefaultDirectoryURI(""))
	assert.Equal(t, "file:///home/a", DefaultDirectoryURI("/home/a/"))
	assert.Equal(t, "file:///already/a/uri", DefaultDirectoryURI("file:///already/a/uri"))
	assert.Equal(t, "file:///C:/Users", DefaultDirectoryURI("C:/Users"))
}
