package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// TestOpenSessionResumes: a second agent process (as after a restart of
// the bridge) continues the first one's session with SessionOptions.Resume:
// session/resume, else session/load with its replay swallowed (the title,
// settings and commands it sends still come through), else a new session
// reported as fresh, saying why.
func TestOpenSessionResumes(t *testing.T) {
	for _, tc := range []struct {
		sessions, path string
		how            backend.AttachKind
		recall         string
	}{
		{"both", "resume sess-1", backend.AttachResumed, "recall: echo kept"},
		{"load", "load sess-1", backend.AttachLoaded, "recall: echo kept"},
		{"", "new sess-2", backend.AttachFresh, "recall: nothing"},
		{"resume-fail", "resume-failed sess-1", backend.AttachFresh, "recall: nothing"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			state := t.TempDir()
			mod := func(c *Config) {
				c.Env = append(c.Env, "SCRIPTAGENT_SESSIONS="+tc.sessions, "SCRIPTAGENT_STATE_DIR="+state)
			}
			first := scriptProvider(t, mod)
			s, rec, dir := openSession(t, first)
			att := rec.waitFor(t, "attached", func(ev backend.Event) bool { _, ok := ev.(backend.Attached); return ok }).(backend.Attached)
			assert.Equal(t, backend.Attached{ID: "sess-1", How: backend.AttachNew}, att)
			require.NoError(t, prompt(t, s, "echo kept").err)
			require.NoError(t, first.Close(waitCtx(t)))

			second := scriptProvider(t, mod)
			rec2 := newRecorder()
			s2, err := second.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: "0123456789abcdef", Cwd: dir, Resume: "sess-1"}, rec2)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s2.Close(context.Background()) })
			r := prompt(t, s2, "recall")
			require.NoError(t, r.err)
			assert.Equal(t, tc.recall, rec2.text(), "the replay is not passed on, and the agent remembers or not")
			var got backend.Attached
			var config bool
			for _, ev := range rec2.all() {
				switch e := ev.(type) {
				case backend.Attached:
					got = e
				case backend.ConfigChanged:
					config = len(e.Options) > 0
				}
			}
			assert.Equal(t, tc.how, got.How)
			assert.True(t, config, "the settings of the continued session are reported")
			if tc.how == backend.AttachFresh {
				assert.Equal(t, "sess-2", got.ID)
				assert.NotEmpty(t, got.Reason)
			} else {
				assert.Equal(t, "sess-1", got.ID)
			}
			b, err := os.ReadFile(filepath.Join(state, "paths.log"))
			require.NoError(t, err)
			assert.Contains(t, strings.Split(strings.TrimSpace(string(b)), "\n"), tc.path)
		})
	}
}
