package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// commit can be set at link time (-ldflags "-X main.commit=$(git rev-parse HEAD)")
// for builds where the Go toolchain does not stamp VCS information, such as
// `go run` or builds with -buildvcs=false.
var commit string

// versionString reports the module version and the VCS commit the binary was
// built from, as recorded by the Go toolchain.
func versionString() string {
	version, rev := buildVersion()
	return fmt.Sprintf("ahp-bridge %s (commit %s)", version, rev)
}

// buildVersion returns the module version and the commit (with -dirty for
// a modified tree) that debug.ReadBuildInfo reports, or main.commit when
// set at link time.
func buildVersion() (version, rev string) {
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
	return version, rev
}

const versionUsage = `usage: ahp-bridge version

Prints the module version and the commit the binary was built from.
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version")
	err := parseFlags(fs, args)
	if err == nil && fs.NArg() > 0 {
		err = argErrorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		return parseProblem("version", versionUsage, fs, err, stdout, stderr)
	}
	fmt.Fprintln(stdout, versionString())
	return exitOK
}
