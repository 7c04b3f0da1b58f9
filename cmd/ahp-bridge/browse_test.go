package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowseSettings: --default-directory (defaultDirectory, by default
// the working directory) and the repeatable --browse-root (browseRoots)
// are read from flags and the file, made absolute, and must name
// existing directories.
func TestBrowseSettings(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	cfg, err := parseServeConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, wd, cfg.DefaultDirectory, "the default is where serve starts")
	assert.Empty(t, cfg.BrowseRoots)

	base := t.TempDir()
	home, a, b := filepath.Join(base, "home"), filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{home, a, b} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))

	cfg, err = parseServeConfig([]string{"--default-directory", home, "--browse-root", a, "--browse-root", b})
	require.NoError(t, err)
	assert.Equal(t, home, cfg.DefaultDirectory)
	assert.Equal(t, []string{a, b}, cfg.BrowseRoots)

	// Relative names are taken from the working directory.
	rel, err := filepath.Rel(wd, a)
	require.NoError(t, err)
	cfg, err = parseServeConfig([]string{"--default-directory", ".", "--browse-root", rel})
	require.NoError(t, err)
	assert.Equal(t, wd, cfg.DefaultDirectory)
	assert.Equal(t, []string{a}, cfg.BrowseRoots)

	path := writeConfig(t, `{"defaultDirectory": "`+home+`", "browseRoots": ["`+a+`", "`+b+`"]}`)
	cfg, err = parseServeConfig([]string{"--config", path})
	require.NoError(t, err)
	assert.Equal(t, home, cfg.DefaultDirectory)
	assert.Equal(t, []string{a, b}, cfg.BrowseRoots)
	cfg, err = parseServeConfig([]string{"--config", path, "--browse-root", home, "--default-directory", b})
	require.NoError(t, err)
	assert.Equal(t, []string{home}, cfg.BrowseRoots, "--browse-root replaces browseRoots")
	assert.Equal(t, b, cfg.DefaultDirectory, "the flag wins over the file")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing default directory", []string{"--default-directory", filepath.Join(base, "nope")}, `--default-directory "` + filepath.Join(base, "nope") + `": stat`},
		{"default directory is a file", []string{"--default-directory", file}, `--default-directory "` + file + `": not a directory`},
		{"empty default directory", []string{"--default-directory", ""}, `--default-directory: want a directory`},
		{"missing browse root", []string{"--browse-root", a, "--browse-root", filepath.Join(base, "nope")}, `--browse-root "` + filepath.Join(base, "nope") + `"`},
		{"browse root is a file", []string{"--browse-root", file}, `--browse-root "` + file + `": not a directory`},
		{"empty browse root", []string{"--browse-root", ""}, `--browse-root: want a directory`},
		{"in the file", []string{"--config", writeConfig(t, "{\n  \"browseRoots\": [\""+file+"\"]\n}")}, `:2:18: browseRoots "` + file + `": not a directory`},
		{"wrong type in the file", []string{"--config", writeConfig(t, `{"browseRoots": "`+a+`"}`)}, `browseRoots: want a list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseServeConfig(tc.args)
			var ue *usageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
