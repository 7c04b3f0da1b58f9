package mapping

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePolicy(t *testing.T) {
	for name, want := range map[string]Policy{"ask": PolicyAsk, "all": PolicyAll, "reads": PolicyReads, "none": PolicyNone} {
		got, err := ParsePolicy(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
		assert.Equal(t, name, got.String(), "String is what ParsePolicy reads")
	}
	for _, bad := range []string{"", "ALL", "yes", " ask", "read"} {
		_, err := ParsePolicy(bad)
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "want ask, all, reads or none", "the error lists the valid values")
		assert.Contains(t, err.Error(), `"`+bad+`"`, "the error names what was given")
	}
	assert.Equal(t, PolicyAsk, Policy(0), "the zero value asks")
	assert.Equal(t, "Policy(42)", Policy(42).String())
}

func TestPolicyJSON(t *testing.T) {
	var cfg struct {
		Approve Policy `json:"approve"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"approve":"reads"}`), &cfg))
	assert.Equal(t, PolicyReads, cfg.Approve)
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.JSONEq(t, `{"approve":"reads"}`, string(b))
	err = json.Unmarshal([]byte(`{"approve":"sometimes"}`), &cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want ask, all, reads or none")
	_, err = json.Marshal(struct{ P Policy }{Policy(-1)})
	require.Error(t, err)
}
