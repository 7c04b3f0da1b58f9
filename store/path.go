package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// DefaultPath is where the bridge keeps its state unless told otherwise:
//
//   - $XDG_STATE_HOME/ahp-bridge/state.db when XDG_STATE_HOME is an absolute
//     path, on every system (a user who sets it means it);
//   - else on Windows %LOCALAPPDATA%\ahp-bridge\state.db: the local sibling of
//     os.UserConfigDir's roaming %AppData%, since state belongs to this
//     machine and should not roam;
//   - else on macOS ~/Library/Application Support/ahp-bridge/state.db
//     (os.UserConfigDir itself: macOS has no separate state directory);
//   - else (Linux, the BSDs) ~/.local/state/ahp-bridge/state.db, the XDG
//     default.
func DefaultPath() (string, error) {
	return defaultPath(runtime.GOOS, os.Getenv)
}

func defaultPath(goos string, getenv func(string) string) (string, error) {
	const app, file = "ahp-bridge", "state.db"
	if d := getenv("XDG_STATE_HOME"); d != "" && isAbs(goos, d) {
		return filepath.Join(d, app, file), nil
	}
	switch goos {
	case "windows":
		d := getenv("LOCALAPPDATA")
		if d == "" {
			return "", errors.New("finding the default state file: %LOCALAPPDATA% is not set")
		}
		return filepath.Join(d, app, file), nil
	case "darwin", "ios":
		h := getenv("HOME")
		if h == "" {
			return "", errors.New("finding the default state file: $HOME is not set")
		}
		return filepath.Join(h, "Library", "Application Support", app, file), nil
	default:
		h := getenv("HOME")
		if h == "" {
			return "", errors.New("finding the default state file: neither $XDG_STATE_HOME nor $HOME is set")
		}
		return filepath.Join(h, ".local", "state", app, file), nil
	}
}

// isAbs is filepath.IsAbs for goos, so that the Windows rules can be tested
// anywhere: the XDG spec says to ignore a relative XDG_STATE_HOME.
func isAbs(goos, p string) bool {
	if goos == runtime.GOOS {
		return filepath.IsAbs(p)
	}
	if goos == "windows" {
		return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || len(p) >= 2 && p[0] == '\\' && p[1] == '\\'
	}
	return len(p) > 0 && p[0] == '/'
}
