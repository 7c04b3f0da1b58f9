// Package docs holds the project's documentation; its tests check that
// what the documents say about the code is still true.
package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

const sdk = "github.com/coder/acp-go-sdk"

// packages maps every package directory of the module (relative, slash
// separated) to the import paths of its non-test files.
func packages(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		imports := out[rel]
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports = append(imports, p)
		}
		out[rel] = imports
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestArchitectureNamesEveryPackage is finding 9 of issue 11:
// architecture.md names every package of the module, no package that is
// gone, and exactly the packages that import acp-go-sdk.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := testenv.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	doc := string(data)
	pkgs := packages(t, root)

	tableRow := regexp.MustCompile("(?m)^\\| `([a-z0-9/_-]+)` \\|")
	var listed []string
	for _, m := range tableRow.FindAllStringSubmatch(doc, -1) {
		listed = append(listed, m[1])
	}
	var undescribed, gone []string
	for dir := range pkgs {
		if !slices.Contains(listed, dir) {
			undescribed = append(undescribed, dir)
		}
	}
	for _, dir := range listed {
		if _, ok := pkgs[dir]; !ok {
			gone = append(gone, dir)
		}
	}
	slices.Sort(undescribed)
	assert.Empty(t, undescribed, "packages docs/architecture.md's table does not describe")
	assert.Empty(t, gone, "packages docs/architecture.md's table describes that do not exist")

	var importers []string
	for dir, imports := range pkgs {
		if slices.Contains(imports, sdk) {
			importers = append(importers, dir)
		}
	}
	slices.Sort(importers)
	i := strings.Index(doc, "import `"+sdk+"`")
	require.GreaterOrEqual(t, i, 0, "docs/architecture.md says which packages import %s", sdk)
	sentence := doc[i:]
	sentence = sentence[:strings.Index(sentence, "(")]
	var named []string
	for _, m := range regexp.MustCompile("`([a-z0-9/_-]+)`").FindAllStringSubmatch(sentence, -1) {
		if _, ok := pkgs[m[1]]; ok {
			named = append(named, m[1])
		}
	}
	slices.Sort(named)
	assert.Equal(t, importers, named, "the packages docs/architecture.md says import %s", sdk)
}

// testOnly are the packages under internal/ that only test files may
// import: the oracles and fakes issue 30 moved out of the production tree.
var testOnly = []string{"internal/oracle/", "internal/fakehost"}

// TestProductionImportsNoInternal is issue 30's layering rule, as
// docs/architecture.md states it: no non-test file of a package outside
// cmd/ and internal/ imports a package under internal/ (production code
// imports point inward, never up into the commands' helpers or the test
// rigs), and no non-test file anywhere imports a test oracle or fake.
func TestProductionImportsNoInternal(t *testing.T) {
	root := testenv.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	require.Contains(t, string(data), "TestProductionImportsNoInternal", "docs/architecture.md states the rule this test checks")

	const module = "github.com/ahp-bridge/ahp-bridge/"
	var up, rigs []string
	for dir, imports := range packages(t, root) {
		for _, imp := range imports {
			rel, ok := strings.CutPrefix(imp, module)
			if !ok || !strings.HasPrefix(rel, "internal/") {
				continue
			}
			if !strings.HasPrefix(dir, "cmd/") && !strings.HasPrefix(dir, "internal/") {
				up = append(up, dir+" → "+rel)
			}
			for _, p := range testOnly {
				if rel == p || strings.HasPrefix(rel, p) {
					rigs = append(rigs, dir+" → "+rel)
				}
			}
		}
	}
	slices.Sort(up)
	slices.Sort(rigs)
	assert.Empty(t, up, "production packages outside cmd/ and internal/ that import internal/ (non-test files)")
	assert.Empty(t, rigs, "non-test files that import a test oracle or fake")
}
