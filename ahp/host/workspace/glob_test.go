//go:build unix

package workspace

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCleanGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, clean, err string
	}{
		{pat: "node_modules", clean: "node_modules"},
		{pat: "./src/**/*.go", clean: "src/**/*.go"},
		{pat: "build/", clean: "build"},
		{pat: "", err: "non-empty path relative"},
		{pat: "/abs", err: "non-empty path relative"},
		{pat: "a/[x", err: "malformed pattern"},
	} {
		clean, err := cleanGlob(tc.pat)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.pat)
			continue
		}
		assert.NoError(t, err, tc.pat)
		assert.Equal(t, tc.clean, clean, tc.pat)
	}
}

func TestMatchAny(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		rel      string
		want     bool
	}{
		{[]string{"node_modules"}, "node_modules", true},
		{[]string{"node_modules"}, "node_modules/x/y.js", true}, // what is inside too
		{[]string{"node_modules"}, "src/node_modules", false},
		{[]string{"**/node_modules"}, "src/node_modules/x", true},
		{[]string{"**/*.go"}, "a/b/c.go", true},
		{[]string{"*.go"}, "a/c.go", false},
		{[]string{"src/**/gen"}, "src/gen", true},
		{[]string{"src/**/gen"}, "src/a/b/gen/x", true},
		{nil, "anything", false},
		{[]string{"**"}, "", false},
	} {
		assert.Equal(t, tc.want, matchAny(tc.patterns, tc.rel), "%v %q", tc.patterns, tc.rel)
	}
}
