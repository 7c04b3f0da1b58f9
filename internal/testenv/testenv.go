// Package testenv tells tests where the things a fresh clone lacks live: the
// AHP data vectors (JSON schemas, reducer and round-trip fixtures) kept in
// ../shared/ahp beside CI's checkout, and the npm packages of the test agents
// that .ci/run installs into .cache/npm.
//
// Outside CI a test that needs a missing one skips with a one-line reason
// naming what is missing and where it comes from. Under CI (.ci/run sets
// AHP_BRIDGE_CI=1 and AHP_SPEC_DIR) a missing one fails the test, so a broken
// CI set-up can never pass by skipping.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Environment variables read by this package.
const (
	// SpecDirEnv names the folder that holds one sub-folder per AHP version
	// (0.3.0, 0.7.0, …). When set, a missing version folder is a failure.
	SpecDirEnv = "AHP_SPEC_DIR"
	// CIEnv is set to 1 by .ci/run: whatever a test needs must be present.
	CIEnv = "AHP_BRIDGE_CI"
)

// InCI reports whether the tests run under .ci/run.
func InCI() bool { return os.Getenv(CIEnv) == "1" }

// RepoRoot returns the directory that holds the module's go.mod.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	root, err := repoRoot()
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return root
}

var rootOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's working directory")
		}
		dir = parent
	}
})

func repoRoot() (string, error) { return rootOnce() }

// SpecDir returns the folder of one AHP version's data vectors, e.g.
// SpecDir(t, "0.7.0") is ../shared/ahp/0.7.0 beside the checkout (or
// $AHP_SPEC_DIR/0.7.0). sub, when given, is joined below it and must exist
// too ("test-cases", "reducers"). A missing folder skips the test outside CI
// and fails it under CI or when AHP_SPEC_DIR is set.
func SpecDir(tb testing.TB, version string, sub ...string) string {
	tb.Helper()
	base, explicit := os.LookupEnv(SpecDirEnv)
	if !explicit || base == "" {
		explicit = false
		base = filepath.Join(RepoRoot(tb), "..", "shared", "ahp")
	} else if !filepath.IsAbs(base) {
		// A relative AHP_SPEC_DIR is taken from the repository root, not
		// from each package's directory.
		base = filepath.Join(RepoRoot(tb), base)
	}
	dir := filepath.Join(append([]string{base, version}, sub...)...)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		msg := fmt.Sprintf("AHP %s data vectors not found at %s (they live in ../shared/ahp beside CI's checkout; set %s to their folder)", version, dir, SpecDirEnv)
		if explicit || InCI() {
			tb.Fatal(msg)
		} else {
			tb.Skip(msg)
		}
	}
	return dir
}

// NPMFile returns the path of a file inside an npm package that .ci/run
// installs into the repository's .cache/npm (for example
// NPMFile(t, "@agentclientprotocol/sdk@1.9.0", "@agentclientprotocol/sdk/dist/examples/agent.js")).
// pkg is the install spec, used in the message. A missing file skips the test
// outside CI, with the npm command that installs it, and fails it under CI.
func NPMFile(tb testing.TB, pkg, path string) string {
	tb.Helper()
	p := filepath.Join(RepoRoot(tb), ".cache", "npm", "node_modules", filepath.FromSlash(path))
	if _, err := os.Stat(p); err != nil {
		msg := fmt.Sprintf("npm package %s not installed (%s missing); .ci/run installs it: npm install --prefix .cache/npm %s", pkg, p, pkg)
		if InCI() {
			tb.Fatal(msg)
		} else {
			tb.Skip(msg)
		}
	}
	return p
}

// Command returns the path of an executable the test needs (node, npm),
// skipping outside CI and failing under CI when it is not installed.
func Command(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s is not installed: this test needs it", name)
		if InCI() {
			tb.Fatal(msg)
		} else {
			tb.Skip(msg)
		}
	}
	return p
}
