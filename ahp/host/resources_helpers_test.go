//go:build unix

package host

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/workspace"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// fileURI is the file URI of an absolute path.
func fileURI(p string) string { return workspace.FileURI(p) }

// realTempDir is a fresh directory with every symbolic link of its path
// resolved, so that the paths the host reports compare equal.
func realTempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return d
}

// workSession creates a session working in dir through tc and
// subscribes tc to it.
func workSession(tc *testClient, id string, dirs ...string) string {
	tc.t.Helper()
	uri := "ahp-session:/" + id
	wd := make([]string, len(dirs))
	for i, d := range dirs {
		wd[i] = fileURI(d)
	}
	tc.mustCall("createSession", map[string]any{"channel": uri, "provider": "fake", "workingDirectories": wd}, nil)
	tc.subscribe(uri)
	return uri
}

// res calls a resource command on the root channel.
func (tc *testClient) res(method string, params map[string]any) (json.RawMessage, *Error) {
	tc.t.Helper()
	params["channel"] = RootURI
	return tc.call(method, params)
}

// mustRes calls a resource command that must succeed and decodes its
// result into out (when not nil).
func (tc *testClient) mustRes(method string, params map[string]any, out any) {
	tc.t.Helper()
	res, err := tc.res(method, params)
	require.Nil(tc.t, err, "%s %v", method, params)
	if out != nil {
		require.NoError(tc.t, json.Unmarshal(res, out), "%s answered %s", method, res)
	}
}

// resErr calls a resource command that must fail with code and returns
// the error.
func (tc *testClient) resErr(code int, method string, params map[string]any) *Error {
	tc.t.Helper()
	res, err := tc.res(method, params)
	require.NotNil(tc.t, err, "%s %v succeeded: %s", method, params, res)
	assert.Equal(tc.t, code, err.Code, "%s %v: %s", method, params, err.Message)
	return err
}

// readText reads a file through resourceRead and returns its bytes.
func (tc *testClient) readFile(path string, enc wire.ContentEncoding) ([]byte, wire.ResourceReadResult) {
	tc.t.Helper()
	p := map[string]any{"uri": fileURI(path)}
	if enc != "" {
		p["encoding"] = enc
	}
	var rr wire.ResourceReadResult
	tc.mustRes("resourceRead", p, &rr)
	switch rr.Encoding {
	case wire.ContentEncodingBase64:
		b, err := base64.StdEncoding.DecodeString(rr.Data)
		require.NoError(tc.t, err)
		return b, rr
	case wire.ContentEncodingUtf8:
		return []byte(rr.Data), rr
	}
	tc.t.Fatalf("resourceRead %s: unknown encoding %q", path, rr.Encoding)
	return nil, rr
}

// fileContent is what is on disk at path ("<missing>" when nothing is).
func fileContent(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "<missing>"
	}
	require.NoError(t, err)
	return string(b)
}

// writeFile puts content at path, making its directory.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
