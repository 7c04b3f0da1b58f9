package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/stretchr/testify/require"
)

// replayEnv makes the test binary replay the agent traffic of the file it
// names instead of running the tests (see TestMain); the replay file format
// is described at scriptagent.Replay.
const replayEnv = "ACP_TEST_REPLAY"

// replayProvider returns a provider whose agent replays the file
// testdata/replay/NAME.jsonl; it is closed when the test ends.
func replayProvider(t *testing.T, name string, mod func(*Config)) *Provider {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", "replay", name+".jsonl"))
	require.NoError(t, err)
	_, err = os.Stat(path)
	require.NoError(t, err)
	return scriptProvider(t, func(c *Config) {
		c.ID = name
		c.Env = []string{replayEnv + "=" + path, "GORACE=atexit_sleep_ms=0"}
		if mod != nil {
			mod(c)
		}
	})
}

// openReplaySession opens a session with the bridge session id sid in dir.
func openReplaySession(t *testing.T, p *Provider, sid, dir string, model string) (backend.Session, *recorder) {
	t.Helper()
	rec := newRecorder()
	s, err := p.OpenSession(waitCtx(t), backend.SessionOptions{SessionID: sid, Cwd: dir, Model: model}, rec)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Not t.Context(): it is over when cleanups run. An agent whose
		// replay did not reach its end never answers session/close.
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s, rec
}

// settle waits until every event the session has queued reached the
// recorder: events are delivered by the session's own goroutine, after the
// call that caused them returned.
func settle(t *testing.T, s backend.Session) {
	t.Helper()
	require.NoError(t, s.(*session).queue.flush(waitCtx(t)))
}

// eventsOf returns the events of type T a recorder got.
func eventsOf[T backend.Event](rec *recorder) []T {
	var out []T
	for _, ev := range rec.all() {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

// lastConfig is the last ConfigChanged a recorder got.
func lastConfig(t *testing.T, rec *recorder) backend.ConfigChanged {
	t.Helper()
	cc := eventsOf[backend.ConfigChanged](rec)
	require.NotEmpty(t, cc, "no ConfigChanged")
	return cc[len(cc)-1]
}

// optionIDs lists the IDs of config options, in order.
func optionIDs(opts []backend.ConfigOption) []string {
	ids := make([]string, 0, len(opts))
	for _, o := range opts {
		ids = append(ids, o.ID)
	}
	return ids
}

// jsonOf renders v for comparisons.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(bytes.TrimSpace(b))
}
