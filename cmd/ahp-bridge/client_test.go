package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/internal/fakehost"
	"github.com/ahp-bridge/ahp-bridge/internal/tui"
)

// The terminal UI itself is tested in internal/tui; these tests cover the
// command line around it.

func TestParseClientArgs(t *testing.T) {
	const url = "ws://127.0.0.1:8081/?tkn=x"
	tests := []struct {
		name    string
		args    []string
		want    clientArgs
		wantErr string
	}{
		{name: "plain", args: []string{url, "hello", "world"},
			want: clientArgs{URL: url, Prompt: "hello world"}},
		{name: "flags first", args: []string{"--json", "--provider", "claude", url, "hi"},
			want: clientArgs{URL: url, Prompt: "hi", Options: tui.Options{Provider: "claude", JSON: true}}},
		{name: "flags interleaved", args: []string{url, "--approve-all", "fix", "--cwd=/tmp", "the", "bug"},
			want: clientArgs{URL: url, Prompt: "fix the bug", Options: tui.Options{ApproveAll: true, Cwd: "/tmp"}}},
		{name: "double dash keeps flag-like prompt", args: []string{url, "--deny-all", "--", "explain", "--json"},
			want: clientArgs{URL: url, Prompt: "explain --json", Options: tui.Options{DenyAll: true}}},
		{name: "join session", args: []string{"--session", "ahp-session:/abc", url, "go"},
			want: clientArgs{URL: url, Prompt: "go", Options: tui.Options{Session: "ahp-session:/abc"}}},
		{name: "follow a session", args: []string{url, "--session", "ahp-session:/abc"},
			want: clientArgs{URL: url, Options: tui.Options{Session: "ahp-session:/abc"}}},
		{name: "follow explicitly, answering", args: []string{url, "--session", "ahp-session:/abc", "--watch", "--approve-all"},
			want: clientArgs{URL: url, Options: tui.Options{Session: "ahp-session:/abc", ApproveAll: true}}},
		{name: "missing url", args: nil, wantErr: "missing the server URL"},
		{name: "missing prompt", args: []string{url, "--json"}, wantErr: "missing the PROMPT (or --session URI to follow a session)"},
		{name: "blank prompt", args: []string{url, " "}, wantErr: "missing the PROMPT"},
		{name: "watch without session", args: []string{url, "--watch"}, wantErr: "--watch follows an existing session"},
		{name: "watch with prompt", args: []string{url, "--watch", "--session", "ahp-session:/a", "hi"}, wantErr: "give no PROMPT"},
		{name: "not a websocket url", args: []string{"http://x/", "hi"}, wantErr: "ws://HOST:PORT"},
		{name: "approve and deny", args: []string{url, "--approve-all", "--deny-all", "hi"}, wantErr: "exclude each other"},
		{name: "session with provider", args: []string{url, "--session", "ahp-session:/a", "--provider", "p", "hi"}, wantErr: "only apply to new ones"},
		{name: "session not a uri", args: []string{url, "--session", "abc", "hi"}, wantErr: "wants a session URI"},
		// ahpx (AHP 0.5.x) names its sessions <provider>:/<uuid>; the host
		// keeps that URI, and listSessions shows it to every client.
		{name: "join an ahpx session", args: []string{url, "--session", "demo:/5ac4da4c-9522-4e3e-a2c4-617b1491f155", "go"},
			want: clientArgs{URL: url, Prompt: "go", Options: tui.Options{Session: "demo:/5ac4da4c-9522-4e3e-a2c4-617b1491f155"}}},
		{name: "session is a chat", args: []string{url, "--session", "ahp-chat:/abc", "hi"}, wantErr: "wants a session URI"},
		{name: "session is the root", args: []string{url, "--session", "ahp-root://", "hi"}, wantErr: "wants a session URI"},
		{name: "session is a VS Code terminal", args: []string{url, "--session", "agenthost-terminal:/5ac4da4c", "hi"}, wantErr: "wants a session URI"},
		{name: "unknown flag", args: []string{url, "--nope", "hi"}, wantErr: "unknown flag --nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := parseClientArgs(tc.args)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRunClientUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, runClient(t.Context(), []string{"ws://x/"}, strings.NewReader(""), &stdout, &stderr))
	assert.Equal(t, "ahp-bridge client: missing the PROMPT (or --session URI to follow a session)\n\n"+synopsis(clientUsage)+
		"Run 'ahp-bridge client --help' for more.\n", stderr.String())
	assert.Empty(t, stdout.String())

	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, exitOK, runClient(t.Context(), []string{"--help"}, strings.NewReader(""), &stdout, &stderr))
	assert.Contains(t, stdout.String(), "Exit codes:")
	assert.Contains(t, stdout.String(), "  --approve-all\n")
	assert.Empty(t, stderr.String())
}

func TestRunClientConnectionError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runClient(t.Context(), []string{"ws://127.0.0.1:1/?tkn=s3cret", "hi"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr.String(), "connecting to AHP server")
	assert.NotContains(t, stderr.String(), "s3cret")
}

func TestRunClientAgainstFakeHost(t *testing.T) {
	h := fakehost.New(fakehost.Options{})
	t.Cleanup(h.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runClient(ctx, []string{h.URL(), "--approve-all", "tool"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, exitOK, code, "stderr:\n%s", stderr.String())
	assert.Contains(t, stdout.String(), "The README has a title.\n")
}
