package ops_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/ahp-bridge/ahp-bridge/ops"
)

// describer is a prometheus.Registerer that only records the names of the
// metrics registered with it.
type describer struct{ names []string }

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for desc := range ch {
		if m := fq.FindStringSubmatch(desc.String()); m != nil {
			d.names = append(d.names, m[1])
		}
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// TestReadmeListsEveryMetric: README.md's metrics table names exactly the
// metrics the bridge registers.
func TestReadmeListsEveryMetric(t *testing.T) {
	env := bridgetest.Start(t, []backend.Provider{}, bridgetest.Options{})
	var d describer
	_, err := ops.NewMetrics(&d, env.Host, env.Bridge, "v")
	require.NoError(t, err)
	slices.Sort(d.names)

	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	require.NoError(t, err)
	var listed []string
	cell := regexp.MustCompile("`(ahp_bridge_[a-z_]+|…_[a-z_]+)`")
	for line := range strings.Lines(string(data)) {
		if !strings.HasPrefix(line, "| `ahp_bridge_") {
			continue
		}
		first := strings.Split(line, "|")[1]
		prefix := ""
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			name := m[1]
			if rest, ok := strings.CutPrefix(name, "…"); ok {
				name = prefix + rest
			} else if i := strings.LastIndex(name, "_"); i > 0 {
				// "ahp_bridge_agent_processes_started_total, …_crashed_total":
				// the ellipsis stands for what precedes the varying word.
				prefix = name[:strings.LastIndex(name[:i], "_")]
			}
			listed = append(listed, name)
		}
	}
	slices.Sort(listed)
	assert.Equal(t, d.names, listed, "README.md's metrics table")
}
