package testenv

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// recorder stands in for *testing.T so the skip/fail decisions can be
// observed without ending the calling test.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skip(args ...any)             { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any)            { r.fatal = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }

func TestSpecDir(t *testing.T) {
	present := t.TempDir()
	if err := os.MkdirAll(filepath.Join(present, "9.9.9", "test-cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		specDir, ci   string
		version       string
		wantSkip      bool
		wantFatal     bool
		wantDirSuffix string
	}{
		{name: "explicit and present", specDir: present, version: "9.9.9", wantDirSuffix: filepath.Join("9.9.9", "test-cases")},
		{name: "explicit and missing fails", specDir: present, version: "0.0.1", wantFatal: true},
		{name: "default missing skips outside CI", specDir: "", version: "0.0.1-nowhere", wantSkip: true},
		{name: "default missing fails under CI", specDir: "", ci: "1", version: "0.0.1-nowhere", wantFatal: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(SpecDirEnv, tc.specDir)
			t.Setenv(CIEnv, tc.ci)
			r := &recorder{TB: t}
			dir := SpecDir(r, tc.version, "test-cases")
			if got := r.skipped != ""; got != tc.wantSkip {
				t.Errorf("skipped = %q, want skip %v", r.skipped, tc.wantSkip)
			}
			if got := r.fatal != ""; got != tc.wantFatal {
				t.Errorf("fatal = %q, want fatal %v", r.fatal, tc.wantFatal)
			}
			if tc.wantDirSuffix != "" && filepath.Base(filepath.Dir(dir))+string(filepath.Separator)+filepath.Base(dir) != tc.wantDirSuffix {
				t.Errorf("dir = %s, want …/%s", dir, tc.wantDirSuffix)
			}
			if r.skipped != "" || r.fatal != "" {
				msg := r.skipped + r.fatal
				if !contains(msg, tc.version) || !contains(msg, SpecDirEnv) {
					t.Errorf("message %q should name the version and %s", msg, SpecDirEnv)
				}
			}
		})
	}
}

func TestNPMFileAndCommand(t *testing.T) {
	for _, ci := range []string{"", "1"} {
		t.Setenv(CIEnv, ci)
		r := &recorder{TB: t}
		NPMFile(r, "no-such-pkg@0.0.0", "no-such-pkg/index.js")
		if (ci == "1") != (r.fatal != "") || (ci == "") != (r.skipped != "") {
			t.Errorf("CI=%q: skipped=%q fatal=%q", ci, r.skipped, r.fatal)
		}
		if msg := r.skipped + r.fatal; !contains(msg, "npm install --prefix .cache/npm no-such-pkg@0.0.0") {
			t.Errorf("message %q should give the install command", msg)
		}
		r = &recorder{TB: t}
		Command(r, "no-such-command-ahp-bridge")
		if (ci == "1") != (r.fatal != "") || (ci == "") != (r.skipped != "") {
			t.Errorf("CI=%q: command: skipped=%q fatal=%q", ci, r.skipped, r.fatal)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestWaitingParallel(t *testing.T) {
	f := flag.Lookup(ParallelFlag)
	if f == nil {
		t.Fatal("the testing package has no -" + ParallelFlag + " flag")
	}
	old := f.Value.String()
	t.Cleanup(func() { _ = flag.Set(ParallelFlag, old) })
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == ParallelFlag })

	WaitingParallel(7)
	want := "7"
	if given {
		want = old // the command line wins
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("-%s = %s after WaitingParallel(7), want %s", ParallelFlag, got, want)
	}
}
