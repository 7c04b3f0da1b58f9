package wire

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedCodeUpToDate re-runs the generator into a temporary
// directory and checks that the committed *.gen.go files match its output,
// so that a schema or generator change without `go generate` fails.
func TestGeneratedCodeUpToDate(t *testing.T) {
	schema := testenv.SpecDir(t, "0.7.0", "schema")
	out := t.TempDir()
	cmd := exec.Command("go", "run", "../../internal/wiregen", "-schema", schema,
		"-overrides", "overrides.json", "-pkg", "wire", "-version", "0.7.0", "-out", out)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "running the generator: %s", msg)

	generated, err := filepath.Glob(filepath.Join(out, "*.gen.go"))
	require.NoError(t, err)
	require.NotEmpty(t, generated)
	committed, err := filepath.Glob("*.gen.go")
	require.NoError(t, err)
	assert.Len(t, committed, len(generated), "the set of *.gen.go files differs from the generator's")
	for _, g := range generated {
		name := filepath.Base(g)
		want, err := os.ReadFile(g)
		require.NoError(t, err)
		got, err := os.ReadFile(name)
		require.NoError(t, err, "%s is generated but not committed; run go generate ./ahp/v070/wire", name)
		assert.True(t, string(want) == string(got), "%s is out of date; run go generate ./ahp/v070/wire", name)
	}
}
