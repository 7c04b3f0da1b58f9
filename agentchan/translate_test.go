package agentchan

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenStep is a step as written in the golden files.
type goldenStep struct {
	Frame     int               `json:"frame"`
	Events    []json.RawMessage `json:"events,omitempty"`
	RequestID string            `json:"requestId,omitempty"`
	AnswerTo  string            `json:"answerTo,omitempty"`
	End       *turnEnd          `json:"end,omitempty"`
}

// TestTranslateGolden feeds each testdata/translate/*.input.json frame list
// through one turn's translation and compares the steps with the golden
// file (rewrite with -update, then review the diff).
func TestTranslateGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/translate/*.input.json")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".input.json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			require.NoError(t, err)
			var input struct {
				TaskID string            `json:"taskId"`
				Frames []json.RawMessage `json:"frames"`
			}
			require.NoError(t, json.Unmarshal(raw, &input))
			ts := newTurnState(input.TaskID)
			var got []goldenStep
			for i, fr := range input.Frames {
				f, err := DecodeFrame(fr)
				require.NoError(t, err, "frame %d", i)
				st := ts.translate(f)
				gs := goldenStep{Frame: i, RequestID: st.RequestID, AnswerTo: st.AnswerTo, End: st.End}
				for _, ev := range st.Events {
					b, err := eventJSON(ev)
					require.NoError(t, err)
					gs.Events = append(gs.Events, b)
				}
				got = append(got, gs)
			}
			out, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			out = append(out, '\n')
			golden := filepath.Join("testdata/translate", name+".golden.json")
			if *update {
				require.NoError(t, os.WriteFile(golden, out, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden file; run with -update and review it")
			assert.JSONEq(t, string(want), string(out))
		})
	}
}

func TestRejectedSyntheticCallIsNotCompleted(t *testing.T) {
	ts := newTurnState("t")
	for _, fr := range []string{
		`{"channel":"agent","type":"permission","requestId":"a"}`,
		`{"channel":"agent","type":"permission","requestId":"b"}`,
	} {
		f, err := DecodeFrame([]byte(fr))
		require.NoError(t, err)
		ts.translate(f)
	}
	ts.rejected("perm-a")
	st := ts.translate(Frame{Channel: "agent", Type: "result", Summary: "s"})
	require.Len(t, st.Events, 1)
	assert.Equal(t, backend.ToolCall{ID: "perm-b", Update: true, Status: backend.ToolCompleted}, st.Events[0])
	assert.Equal(t, &turnEnd{Summary: "s"}, st.End)
}

func TestToolKind(t *testing.T) {
	tests := map[string]string{
		"":             "other",
		"read_file":    "read",
		"readFile":     "read",
		"view":         "read",
		"write_file":   "edit",
		"str_replace":  "edit",
		"edit":         "edit",
		"bash":         "execute",
		"run_command":  "execute",
		"grep":         "search",
		"list_files":   "search",
		"web_fetch":    "fetch",
		"delete_file":  "delete",
		"rename_file":  "move",
		"think":        "think",
		"ask_user":     "other",
		"tools":        "other",
		"DeleteBranch": "delete",
	}
	for name, want := range tests {
		assert.Equal(t, want, ToolKind(name), name)
	}
}

func TestPromptText(t *testing.T) {
	got := PromptText(backend.Prompt{
		Text: "Fix it",
		Attachments: []backend.Attachment{
			{Kind: backend.AttachResourceLink, URI: "file:///a.go", Name: "a.go"},
			{Kind: backend.AttachEmbedded, URI: "file:///b.txt", Name: "b.txt", Text: "hello"},
		},
	})
	assert.Equal(t, "Fix it\n\n[attached: a.go (file:///a.go)]\n\n<attachment name=\"b.txt\" uri=\"file:///b.txt\">\nhello\n</attachment>", got)
	assert.Equal(t, "plain", PromptText(backend.Prompt{Text: "plain"}))
}
