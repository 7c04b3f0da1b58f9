package store

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name, goos string
		env        map[string]string
		want       string
		wantErr    string
	}{
		{name: "linux XDG", goos: "linux", env: map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"},
			want: filepath.Join("/x/state", "ahp-bridge", "state.db")},
		{name: "linux default", goos: "linux", env: map[string]string{"HOME": "/home/u"},
			want: filepath.Join("/home/u", ".local", "state", "ahp-bridge", "state.db")},
		{name: "relative XDG is ignored", goos: "freebsd", env: map[string]string{"XDG_STATE_HOME": "rel/state", "HOME": "/home/u"},
			want: filepath.Join("/home/u", ".local", "state", "ahp-bridge", "state.db")},
		{name: "macOS", goos: "darwin", env: map[string]string{"HOME": "/Users/u"},
			want: filepath.Join("/Users/u", "Library", "Application Support", "ahp-bridge", "state.db")},
		{name: "macOS honours XDG", goos: "darwin", env: map[string]string{"HOME": "/Users/u", "XDG_STATE_HOME": "/Users/u/.state"},
			want: filepath.Join("/Users/u/.state", "ahp-bridge", "state.db")},
		{name: "windows", goos: "windows", env: map[string]string{"LOCALAPPDATA": `C:\Users\u\AppData\Local`, "APPDATA": `C:\Users\u\AppData\Roaming`},
			want: filepath.Join(`C:\Users\u\AppData\Local`, "ahp-bridge", "state.db")},
		{name: "windows honours XDG", goos: "windows", env: map[string]string{"LOCALAPPDATA": `C:\Users\u\AppData\Local`, "XDG_STATE_HOME": `D:\state`},
			want: filepath.Join(`D:\state`, "ahp-bridge", "state.db")},
		{name: "no home", goos: "linux", env: map[string]string{}, wantErr: "neither $XDG_STATE_HOME nor $HOME"},
		{name: "windows without LOCALAPPDATA", goos: "windows", env: map[string]string{}, wantErr: "LOCALAPPDATA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := defaultPath(tt.goos, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// DefaultPath reads this process's environment.
func TestDefaultPathFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	got, err := DefaultPath()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "ahp-bridge", "state.db"), got, runtime.GOOS)
}
