package tui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestRendererGolden renders recorded envelope streams and compares the
// text with testdata/render/NAME.golden (go test -update rewrites them).
func TestRendererGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "render", "*.ndjson"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".ndjson")
		for _, color := range []bool{false, true} {
			golden := name + ".golden"
			if color {
				golden = name + ".color.golden"
			}
			t.Run(golden, func(t *testing.T) {
				f, err := os.Open(in)
				require.NoError(t, err)
				defer f.Close()
				var out bytes.Buffer
				r := newRenderer(&out, color, "me")
				sc := bufio.NewScanner(f)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					if len(bytes.TrimSpace(sc.Bytes())) == 0 {
						continue
					}
					var env wire.ActionEnvelope
					require.NoError(t, json.Unmarshal(sc.Bytes(), &env), "line %q", sc.Text())
					r.envelope(&env)
				}
				require.NoError(t, sc.Err())
				path := filepath.Join("testdata", "render", golden)
				if *updateGolden {
					require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, string(want), out.String())
			})
		}
	}
}

// renderAll renders envelopes given as JSON lines and returns the text.
func renderAll(t *testing.T, lines ...string) string {
	t.Helper()
	var out bytes.Buffer
	r := newRenderer(&out, false, "me")
	for _, l := range lines {
		var env wire.ActionEnvelope
		require.NoError(t, json.Unmarshal([]byte(l), &env), "line %q", l)
		r.envelope(&env)
	}
	return out.String()
}

// The four renderer findings of issue 11, each on the shapes ahp-bridge
// sends for an ACP agent.
func TestRendererIssue11(t *testing.T) {
	t.Run("a tool name is shown once", func(t *testing.T) {
		got := renderAll(t,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/toolCallStart","turnId":"t","toolCallId":"c","toolName":"read","displayName":"Read README.md"},"serverSeq":1}`,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/toolCallReady","turnId":"t","toolCallId":"c","invocationMessage":"Read README.md","confirmed":"not-needed"},"serverSeq":2}`)
		assert.Equal(t, "⚙ Read README.md\n", got)
	})
	t.Run("a new file is created, not edited", func(t *testing.T) {
		got := renderAll(t,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/toolCallComplete","turnId":"t","toolCallId":"c","result":{"success":true,"pastTenseMessage":"Write a.go","content":[`+
				`{"type":"fileEdit","after":{"uri":"file:///p/a.go","content":{"uri":"x:new"}},"diff":{"added":3,"removed":0}},{"type":"text","text":"Created /p/a.go (+3 -0)"},`+
				`{"type":"fileEdit","before":{"uri":"file:///p/b.go","content":{"uri":"x:old"}}}]}},"serverSeq":1}`)
		assert.Equal(t, "  ✓ Write a.go\n    created /p/a.go (+3 -0)\n    deleted /p/b.go\n", got)
	})
	t.Run("the final plan is a checklist", func(t *testing.T) {
		got := renderAll(t,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/responsePart","turnId":"t","part":{"kind":"markdown","id":"p","content":"**Plan**\n\n- [x] Read README.md\n- [~] Answer _(high priority)_\n- [ ] Celebrate"}},"serverSeq":1}`)
		assert.Equal(t, "Plan\n  ✓ Read README.md\n  ▸ Answer (high priority)\n  ○ Celebrate\n", got)
		// Markdown that merely contains a list stays text.
		got = renderAll(t,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/responsePart","turnId":"t","part":{"kind":"markdown","id":"p","content":"Done:\n- [x] a\nand more"}},"serverSeq":1}`)
		assert.Equal(t, "Done:\n- [x] a\nand more", got)
	})
	t.Run("a command's output is shown", func(t *testing.T) {
		got := renderAll(t,
			`{"channel":"ahp-terminal:/t1","action":{"type":"terminal/data","data":"\u001b[1mone\u001b[0m\r\ntwo\r\n"},"serverSeq":1}`,
			`{"channel":"ahp-terminal:/t1","action":{"type":"terminal/exited","exitCode":0},"serverSeq":2}`,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/toolCallComplete","turnId":"t","toolCallId":"c","result":{"success":true,"pastTenseMessage":"echo","content":[{"type":"terminal","resource":"ahp-terminal:/t1","title":"Terminal t1"}]}},"serverSeq":3}`)
		assert.Equal(t, "  ✓ echo\n    one\n    two\n", got)
		// A terminal the client could not follow is still named.
		got = renderAll(t,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/toolCallComplete","turnId":"t","toolCallId":"c","result":{"success":true,"pastTenseMessage":"echo","content":[{"type":"terminal","resource":"ahp-terminal:/t2","title":"Terminal t2"}]}},"serverSeq":3}`)
		assert.Equal(t, "  ✓ echo\n    [terminal ahp-terminal:/t2]\n", got)
	})
	t.Run("a failed command's exit status is shown", func(t *testing.T) {
		// The exit code is in the terminal's lifecycle (AHP 0.9.0 on).
		got := renderAll(t,
			`{"channel":"ahp-terminal:/t3","action":{"type":"terminal/data","data":"boom\r\n"},"serverSeq":1}`,
			`{"channel":"ahp-terminal:/t3","action":{"type":"terminal/exited","exitCode":2},"serverSeq":2}`,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/toolCallComplete","turnId":"t","toolCallId":"c","result":{"success":false,"pastTenseMessage":"make","content":[{"type":"terminal","resource":"ahp-terminal:/t3","title":"Terminal t3"}]}},"serverSeq":3}`)
		assert.Contains(t, got, "    boom\n    (exit status 2)\n")
	})
	t.Run("a turn's error is its error part", func(t *testing.T) {
		got := renderAll(t,
			`{"channel":"ahp-chat:/c","action":{"type":"chat/error","turnId":"t","duration":5,"part":{"kind":"error","error":{"errorType":"runtime","message":"the agent crashed"}}},"serverSeq":1}`)
		assert.Equal(t, "✗ error: the agent crashed (runtime)\n", got)
	})
}

func TestToolLine(t *testing.T) {
	for _, tc := range []struct{ name, invocation, want string }{
		{"Read README.md", "Read README.md", "Read README.md"},
		{"Read file", "Read README.md", "Read file: Read README.md"},
		{"Fetch", "Fetch https://example.com", "Fetch https://example.com"},
		{"Run", "", "Run"},
		{"", "ls", "ls"},
	} {
		assert.Equal(t, tc.want, toolLine(tc.name, tc.invocation), "%q %q", tc.name, tc.invocation)
	}
}

func TestPlainText(t *testing.T) {
	assert.Equal(t, "red plain\nlink\n100%\n", plainText("\x1b[31mred\x1b[0m plain\r\n\x1b]8;;http://x\x07link\x1b]8;;\x07\r\n10%\r100%\r\n"))
}
