package main

import (
	"fmt"
	"runtime/debug"
)

// versionString reports the module version and the VCS commit the binary was
// built from, as recorded by the Go toolchain.
func versionString() string {
	version, commit, dirty := "(devel)", "unknown", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		commit += "-dirty"
	}
	return fmt.Sprintf("ahp-bridge %s (commit %s)", version, commit)
}
