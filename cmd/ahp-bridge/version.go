package main

import (
	"fmt"
	"runtime/debug"
)

// commit can be set at link time (-ldflags "-X main.commit=$(git rev-parse HEAD)")
// for builds where the Go toolchain does not stamp VCS information, such as
// `go run` or builds with -buildvcs=false.
var commit string

// versionString reports the module version and the VCS commit the binary was
// built from, as recorded by the Go toolchain.
func versionString() string {
	version, rev, dirty := "(devel)", "unknown", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		rev += "-dirty"
	}
	if commit != "" {
		rev = commit
	}
	return fmt.Sprintf("ahp-bridge %s (commit %s)", version, rev)
}
