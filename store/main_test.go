package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// helperEnv makes the test binary, re-executed by a test, play a second
// process instead of running tests; helperPathEnv names its state file.
const (
	helperEnv     = "AHP_STORE_TEST_HELPER"
	helperPathEnv = "AHP_STORE_TEST_PATH"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()

	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role, os.Getenv(helperPathEnv)))
	}
	goleak.VerifyTestMain(m)
}

func runHelper(role, path string) int {
	var err error
	switch role {
	case "hold":
		err = holdHelper(path)
	case "crash":
		err = crashHelper(path) // returns only on failure: success kills the process
	default:
		err = fmt.Errorf("unknown helper role %q", role)
	}
	fmt.Fprintln(os.Stderr, "helper:", err)
	return 2
}

// testPath is a state file in a fresh directory that does not exist yet, so
// that Open has to create it.
func testPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state", "state.db")
}

func openTest(t testing.TB, path string, opt Options) *SQLite {
	t.Helper()
	s, err := Open(context.Background(), path, opt)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// at is a fixed UTC time with nanoseconds, so that round trips compare with
// require.Equal.
func at(sec int64) time.Time { return time.Unix(1_780_000_000+sec, 123_456_789).UTC() }

// turnJSON is a deterministic turn of about size bytes, with the whitespace
// and non-ASCII text a byte-exact round trip must keep.
func turnJSON(id string, size int) json.RawMessage {
	head := fmt.Sprintf(`{ "id": %q,  "message": {"text": "héllo ☃"}, "parts": [ {"kind": "markdown", "content": "`, id)
	tail := `"} ], "usage": {"inputTokens": 12, "outputTokens": 34} }`
	fill := size - len(head) - len(tail)
	if fill < 0 {
		fill = 0
	}
	return json.RawMessage(head + strings.Repeat("abcdefghij", fill/10+1)[:fill] + tail)
}

func testSession(n int) Session {
	return Session{
		URI:         fmt.Sprintf("copilot:/session-%03d", n),
		Provider:    "acp:claude",
		Title:       fmt.Sprintf("Session %d", n),
		WorkingDirs: []string{"/home/u/project", "/tmp/other"},
		Config:      json.RawMessage(`{"model":"opus","mode":"ask"}`),
		Summary:     json.RawMessage(fmt.Sprintf(`{"title":"Session %d","status":1}`, n)),
		Created:     at(int64(n)),
		Modified:    at(int64(n) + 1000),
	}
}

func testChat(sessionURI string, n int) Chat {
	return Chat{
		URI:          fmt.Sprintf("%s/chat-%d", sessionURI, n),
		SessionURI:   sessionURI,
		ACPSessionID: fmt.Sprintf("acp-%d", n),
		Summary:      json.RawMessage(fmt.Sprintf(`{"title":"chat %d"}`, n)),
		Created:      at(int64(n)),
	}
}

// countRows counts a table's rows through the writer connection.
func countRows(t testing.TB, s *SQLite, table string) int {
	t.Helper()
	var n int
	require.NoError(t, s.w.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n))
	return n
}
