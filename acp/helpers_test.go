package acp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/ahp-bridge/ahp-bridge/internal/scriptagent"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// scriptAgentEnv makes the test binary run the scripted agent instead of
// the tests (see TestMain), so tests start it as a real subprocess.
const scriptAgentEnv = "ACP_TEST_RUN_SCRIPTAGENT"

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()

	if os.Getenv(scriptAgentEnv) == "1" {
		if err := scriptagent.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "scriptagent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv(replayEnv); path != "" {
		if err := scriptagent.Replay(path, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "replay agent:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// recorder is a Sink that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []backend.Event
	notify chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) Event(ev backend.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) all() []backend.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]backend.Event(nil), r.events...)
}

// waitFor waits until pred holds for some event and returns it.
func (r *recorder) waitFor(t *testing.T, what string, pred func(backend.Event) bool) backend.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		for _, ev := range r.all() {
			if pred(ev) {
				return ev
			}
		}
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; events: %v", what, summarize(r.all()))
		}
	}
}

func (r *recorder) permission(t *testing.T) backend.PermissionRequest {
	t.Helper()
	return r.waitFor(t, "permission request", func(ev backend.Event) bool {
		_, ok := ev.(backend.PermissionRequest)
		return ok
	}).(backend.PermissionRequest)
}

// text is the concatenated TextChunks.
func (r *recorder) text() string {
	var b strings.Builder
	for _, ev := range r.all() {
		if tc, ok := ev.(backend.TextChunk); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

func summarize(evs []backend.Event) string {
	var parts []string
	for _, ev := range evs {
		s := fmt.Sprintf("%T%+v", ev, ev)
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n")
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// scriptProvider returns a provider running the scripted agent; it is
// closed when the test ends.
func scriptProvider(t *testing.T, mod func(*Config)) *Provider {
	t.Helper()
	cfg := Config{
		ID:          "script",
		DisplayName: "Script agent",
		Command:     []string{os.Args[0]},
		// The race runtime sleeps a second before exiting unless told not to.
		Env: []string{scriptAgentEnv + "=1", "GORACE=atexit_sleep_ms=0"},
	}
	if mod != nil {
		mod(&cfg)
	}
	p := NewProvider(cfg, testLogger(t))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, p.Close(ctx))
	})
	return p
}

// openSession opens a session in a fresh temporary directory.
func openSession(t *testing.T, p *Provider) (backend.Session, *recorder, string) {
	t.Helper()
	dir := t.TempDir()
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := p.OpenSession(ctx, backend.SessionOptions{SessionID: "0123456789abcdef", Cwd: dir}, rec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s, rec, dir
}

type promptResult struct {
	res backend.TurnResult
	err error
}

// waitTimeout bounds one wait of these tests: a prompt, a call, an event.
// A passing wait takes milliseconds to a few seconds under -race.
const waitTimeout = 60 * time.Second

// waitCtx returns the context of one wait; it ends after waitTimeout or
// with the test.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// startPrompt runs Prompt in the background.
func startPrompt(t *testing.T, s backend.Session, text string) <-chan promptResult {
	ch := make(chan promptResult, 1)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	go func() {
		defer cancel()
		res, err := s.Prompt(ctx, backend.Prompt{TurnID: "t", Text: text})
		ch <- promptResult{res, err}
	}()
	return ch
}

func waitPrompt(t *testing.T, ch <-chan promptResult) promptResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitTimeout):
		t.Fatal("prompt did not return")
		return promptResult{}
	}
}

// prompt runs one turn to its end.
func prompt(t *testing.T, s backend.Session, text string) promptResult {
	t.Helper()
	return waitPrompt(t, startPrompt(t, s, text))
}
