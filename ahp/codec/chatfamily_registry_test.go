package codec

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// chatFamilyVersions are the versions the chat-family codec serves.
func chatFamilyVersions() []Version {
	return []Version{{0, 6, 0}, {0, 5, 2}, {0, 5, 1}, {0, 5, 0}}
}

// registry is testdata/chatfamily/registry.json: what each version's own
// registry.ts says it knows.
type registry struct {
	Versions map[string]struct {
		Commit        string   `json:"commit"`
		Actions       []string `json:"actions"`
		Notifications []string `json:"notifications"`
	} `json:"versions"`
}

func readRegistry(t *testing.T) registry {
	t.Helper()
	var r registry
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join("testdata", "chatfamily", "registry.json")), &r))
	for _, v := range append(chatFamilyVersions(), V070) {
		require.Contains(t, r.Versions, v.String())
	}
	return r
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// wireActionTypes lists the ActionType constants of ahp/v070/wire, read from its
// source so that a new action type is covered without touching this test.
func wireActionTypes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "v070", "wire", "enums.gen.go"), nil, 0)
	require.NoError(t, err)
	var types []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ActionType" {
				continue
			}
			for _, v := range vs.Values {
				lit := v.(*ast.BasicLit)
				s, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				types = append(types, s)
			}
		}
	}
	require.Greater(t, len(types), 80, "ActionType constants of ahp/v070/wire")
	return types
}

// TestKnownToMatchesEachRegistry checks introduced.go against the registry
// of every release: a version knows exactly the action types and
// notifications its own registry lists, for every action type of ahp/v070/wire.
func TestKnownToMatchesEachRegistry(t *testing.T) {
	reg := readRegistry(t)
	types := wireActionTypes(t)
	require.ElementsMatch(t, reg.Versions[V070.String()].Actions, types,
		"the %s registry and the ActionType constants of ahp/v070/wire list different action types", V070)
	for _, v := range append(chatFamilyVersions(), V070) {
		known := reg.Versions[v.String()]
		for _, typ := range types {
			if got, want := ActionKnownTo(typ, v), slices.Contains(known.Actions, typ); got != want {
				t.Errorf("ActionKnownTo(%s, %s) = %v; the %s registry (%s) says %v", typ, v, got, v, known.Commit, want)
			}
		}
		for _, m := range reg.Versions[V070.String()].Notifications {
			if got, want := NotificationKnownTo(m, v), slices.Contains(known.Notifications, m); got != want {
				t.Errorf("NotificationKnownTo(%s, %s) = %v; the %s registry says %v", m, v, got, v, want)
			}
		}
	}
}
