package vscodeclient

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scenarioRow is one row of docs/vscode-scenarios.md.
type scenarioRow struct {
	suite, name, verdict, note string
}

// readScenarioTable returns the rows of the doc's tables and its opening
// paragraph.
func readScenarioTable(t *testing.T, path string) (rows []scenarioRow, intro string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	suite := ""
	var introLines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			suite = strings.Fields(strings.TrimPrefix(line, "## "))[0]
		case suite == "" && !strings.HasPrefix(line, "#"):
			introLines = append(introLines, line)
		case strings.HasPrefix(line, "|") && suite != "":
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 3 {
				t.Errorf("%s: a row needs three cells: %s", suite, line)
				continue
			}
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if cells[0] == "scenario" || strings.HasPrefix(cells[0], "---") {
				continue
			}
			rows = append(rows, scenarioRow{suite: suite, name: cells[0], verdict: cells[1], note: cells[2]})
		}
	}
	require.NoError(t, sc.Err())
	return rows, strings.Join(introLines, " ")
}

// testFuncs returns the names of the Test functions under root.
func testFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestScenarioTableIsTrue keeps docs/vscode-scenarios.md true: every
// scenario has a verdict; one that applies names a test that exists or
// says it is still to write; one that differs or does not apply gives a
// reason; no scenario is listed twice; and the counts the doc opens with
// are the table's.
func TestScenarioTableIsTrue(t *testing.T) {
	rows, intro := readScenarioTable(t, filepath.Join("..", "..", "docs", "vscode-scenarios.md"))
	require.NotEmpty(t, rows)
	tests := testFuncs(t, filepath.Join("..", ".."))
	testName := regexp.MustCompile("`(Test\\w+)`")
	seen := map[string]bool{}
	var applies, tested, toWrite, slow, differs, notApply int
	for _, r := range rows {
		key := r.suite + ": " + r.name
		assert.False(t, seen[key], "%s is listed twice", key)
		seen[key] = true
		switch r.verdict {
		case "applies":
			applies++
			named := testName.FindAllStringSubmatch(r.note, -1)
			switch {
			case strings.HasPrefix(r.note, "to write"):
				toWrite++
				if strings.Contains(r.note, "slow tier") {
					slow++
				}
			case len(named) > 0:
				tested++
				for _, m := range named {
					assert.True(t, tests[m[1]], "%s names %s, which is not a test in the repository", key, m[1])
				}
			default:
				t.Errorf("%s applies: name its test or say it is to write, not %q", key, r.note)
			}
		case "differs":
			differs++
			assert.NotEmpty(t, r.note, "%s differs: say how and why", key)
		case "does not apply":
			notApply++
			assert.NotEmpty(t, r.note, "%s does not apply: say why", key)
		default:
			t.Errorf("%s: unknown verdict %q (applies, differs or does not apply)", key, r.verdict)
		}
	}
	t.Logf("%d scenarios: %d apply (%d tested, %d to write, %d of them slow tier), %d differ, %d do not apply",
		len(rows), applies, tested, toWrite, slow, differs, notApply)

	counts := regexp.MustCompile(`(\d+) scenarios: (\d+) apply, of which (\d+) have a test of ours so far, (\d+) are still to write \((\d+) of those need a model-backed agent.*?; (\d+) apply but the bridge deliberately behaves otherwise.*?; (\d+) do not apply`).
		FindStringSubmatch(intro)
	require.NotNil(t, counts, "the doc opens with the counts: %q", intro)
	var got []int
	for _, s := range counts[1:] {
		n, _ := strconv.Atoi(s)
		got = append(got, n)
	}
	assert.Equal(t, []int{len(rows), applies, tested, toWrite, slow, differs, notApply}, got,
		"the counts the doc opens with: total, apply, tested, to write, slow tier, differ, do not apply")
}
