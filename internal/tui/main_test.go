package tui

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ahp-bridge/ahp-bridge/ahp/client"
	"github.com/ahp-bridge/ahp-bridge/internal/fakehost"
	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
)

// TestMain fails the package's tests when any of them leaves a goroutine
// running.
func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait of these tests; on a quiet machine each
// takes a small fraction of it.
const waitTimeout = 20 * time.Second

// run is one Run against a fake host.
type run struct {
	code           int
	stdout, stderr string
}

// runOn runs Run on a fresh connection to h, without a terminal.
func runOn(t *testing.T, h *fakehost.Host, opts Options, prompt string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c := dialFake(t, h)
	var stdout, stderr bytes.Buffer
	code := Run(ctx, c, opts, prompt, IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Interrupts: make(chan struct{})})
	return run{code, stdout.String(), stderr.String()}
}

func newFakeHost(t *testing.T, opts fakehost.Options) *fakehost.Host {
	h := fakehost.New(opts)
	t.Cleanup(func() {
		h.Close()
		assert.NoError(t, h.Err())
	})
	return h
}

func dialFake(t *testing.T, h *fakehost.Host) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	c, err := client.Dial(ctx, h.URL(), client.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Initialize(ctx)
	require.NoError(t, err)
	return c
}

// assertInOrder checks that every want string occurs in got, in order.
func assertInOrder(t *testing.T, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if !assert.GreaterOrEqual(t, i, 0, "missing (in order) %q in output:\n%s", w, got) {
			return
		}
		rest = rest[i+len(w):]
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// eventually waits for cond, failing the test after a while.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, waitTimeout, 10*time.Millisecond, append([]any{msg}, args...)...)
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
