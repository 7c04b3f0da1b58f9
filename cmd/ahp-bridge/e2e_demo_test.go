package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/bridgetest"
)

// TestDemoJoinHintWorks is finding 5 of issue 11, end to end: the command
// the demo prints to join its session, run as printed from a second
// "terminal" while the demo's turn runs, queues its prompt, and the demo
// stays up until that prompt's turn is done.
func TestDemoJoinHintWorks(t *testing.T) {
	t.Parallel() // mostly waits on a subprocess or a timer: overlaps the CPU-bound tests
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	demo := exec.CommandContext(ctx, bridgetest.Binary(t), "demo")
	// The demo keeps its state in a file of its own, never the user's.
	stateHome := t.TempDir()
	demo.Env = append(os.Environ(), "XDG_STATE_HOME="+stateHome)
	stdout, err := demo.StdoutPipe()
	require.NoError(t, err)
	var demoErr bytes.Buffer
	demo.Stderr = &lockedWriter{w: &demoErr}
	require.NoError(t, demo.Start())
	t.Cleanup(func() { _ = demo.Process.Kill(); _ = demo.Wait() })

	// Read the demo's output as it comes; the join command is printed
	// before its turn starts.
	var demoOut bytes.Buffer
	demoOutW := &lockedWriter{w: &demoOut}
	joinLine := make(chan string, 1)
	hint := regexp.MustCompile(`^  (\S+ client '[^']+' --session \S+ 'and then\?')$`)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = demoOutW.Write([]byte(sc.Text() + "\n"))
			if m := hint.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case joinLine <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-joinLine:
	case <-ctx.Done():
		t.Fatalf("the demo printed no join command; stdout:\n%s", readLocked(demoOutW))
	}
	// A person pastes the command while the demo's turn runs; a test could
	// be quicker than the demo's own first prompt. Join once the tool call
	// waits for the approver's 3-second countdown.
	require.Eventually(t, func() bool { return strings.Contains(readLocked(demoOutW), "⚙ Read README.md") },
		60*time.Second, 10*time.Millisecond, "the demo's turn did not reach its tool call; stdout:\n%s", readLocked(demoOutW))

	// Exactly as printed, through a shell: the quoting must hold.
	join := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	var out, errOut bytes.Buffer
	join.Stdout, join.Stderr = &out, &errOut
	require.NoError(t, join.Run(), "%s\nstdout:\n%s\nstderr:\n%s\ndemo:\n%s", line, out.String(), errOut.String(), readLocked(demoOutW))
	assert.Contains(t, errOut.String(), "your message is queued")
	assert.Contains(t, out.String(), "approved by demo-auto-approver", "the demo's approver answers the queued turn too")
	assert.Contains(t, out.String(), "Done.")

	require.NoError(t, demo.Wait(), "the demo exits 0 once its session is idle; stderr:\n%s", readLocked(demo.Stderr.(*lockedWriter)))
	demoText := readLocked(demoOutW)
	assertOrder(t, demoText, "Demo complete", "» and then?")
	assert.Contains(t, demoText, "+ queued by ", "the demo shows the queued prompt")
	assert.NoDirExists(t, filepath.Join(stateHome, "ahp-bridge"), "the demo touched the user's state directory")
}

func assertOrder(t *testing.T, text string, first, second string) {
	t.Helper()
	i, j := strings.Index(text, first), strings.Index(text, second)
	require.GreaterOrEqual(t, i, 0, "missing %q in:\n%s", first, text)
	require.GreaterOrEqual(t, j, 0, "missing %q in:\n%s", second, text)
	assert.Less(t, i, j, "%q before %q in:\n%s", first, second, text)
}
