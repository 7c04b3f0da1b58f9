package acp

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ahp-bridge/ahp-bridge/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata")

// renderEvents gives events a stable JSON form for golden files.
func renderEvents(t *testing.T, evs []backend.Event) []byte {
	t.Helper()
	type tagged struct {
		Type  string        `json:"type"`
		Event backend.Event `json:"event"`
	}
	out := make([]tagged, 0, len(evs))
	for _, ev := range evs {
		out = append(out, tagged{Type: fmt.Sprintf("%T", ev), Event: ev})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	require.NoError(t, err)
	return append(b, '\n')
}

func TestDecodeUpdateGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "decode", "*.json"))
	require.NoError(t, err)
	var cases []string
	for _, in := range inputs {
		if !strings.HasSuffix(in, ".golden.json") {
			cases = append(cases, in)
		}
	}
	require.GreaterOrEqual(t, len(cases), 25, "decode test inputs are missing")
	for _, in := range cases {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			require.NoError(t, err)
			evs, err := DecodeUpdate(raw)
			require.NoError(t, err)
			got := renderEvents(t, evs)
			golden := strings.TrimSuffix(in, ".json") + ".golden.json"
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "golden file missing; run go test ./acp -run TestDecodeUpdateGolden -update")
			assert.JSONEq(t, string(want), string(got))
		})
	}
}

// TestDecodeUpdateSemantics checks the rules the golden files encode, so a
// wrong golden file cannot hide a wrong rule.
func TestDecodeUpdateSemantics(t *testing.T) {
	str := func(s string) *string { return &s }
	i64 := func(n int64) *int64 { return &n }
	tests := []struct {
		name string
		in   string
		want []backend.Event
	}{
		{"text chunk", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`,
			[]backend.Event{backend.TextChunk{Text: "hi"}}},
		{"thought chunk", `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}`,
			[]backend.Event{backend.ThoughtChunk{Text: "hm"}}},
		{"update without content leaves it", `{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed"}`,
			[]backend.Event{backend.ToolCall{ID: "a", Update: true, Status: backend.ToolCompleted, ContentMode: backend.ContentUnchanged}}},
		{"empty content replaces", `{"sessionUpdate":"tool_call_update","toolCallId":"a","content":[]}`,
			[]backend.Event{backend.ToolCall{ID: "a", Update: true, ContentMode: backend.ContentReplace, Content: []backend.ToolContent{}}}},
		{"null content replaces", `{"sessionUpdate":"tool_call_update","toolCallId":"a","content":null}`,
			[]backend.Event{backend.ToolCall{ID: "a", Update: true, ContentMode: backend.ContentReplace, Content: []backend.ToolContent{}}}},
		{"content chunk appends", `{"sessionUpdate":"tool_call_content_chunk","toolCallId":"a","content":{"type":"content","content":{"type":"text","text":"x"}}}`,
			[]backend.Event{backend.ToolCall{ID: "a", Update: true, ContentMode: backend.ContentAppend, Content: []backend.ToolContent{
				{Type: "content", Text: "x", Raw: json.RawMessage(`{"type":"content","content":{"type":"text","text":"x"}}`)}}}}},
		{"new tool call defaults to pending", `{"sessionUpdate":"tool_call","toolCallId":"b","title":"T"}`,
			[]backend.Event{backend.ToolCall{ID: "b", Title: "T", Status: backend.ToolPending}}},
		{"custom status and kind kept", `{"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"_k","status":"_s"}`,
			[]backend.Event{backend.ToolCall{ID: "c", Update: true, Kind: "_k", Status: "_s"}}},
		{"diff with null oldText", `{"sessionUpdate":"tool_call_content_chunk","toolCallId":"a","content":{"type":"diff","path":"/p","oldText":null,"newText":"n"}}`,
			[]backend.Event{backend.ToolCall{ID: "a", Update: true, ContentMode: backend.ContentAppend, Content: []backend.ToolContent{
				{Type: "diff", Path: "/p", NewText: "n", Raw: json.RawMessage(`{"type":"diff","path":"/p","oldText":null,"newText":"n"}`)}}}}},
		{"diff with oldText", `{"sessionUpdate":"tool_call_content_chunk","toolCallId":"a","content":{"type":"diff","path":"/p","oldText":"o","newText":"n"}}`,
			[]backend.Event{backend.ToolCall{ID: "a", Update: true, ContentMode: backend.ContentAppend, Content: []backend.ToolContent{
				{Type: "diff", Path: "/p", OldText: str("o"), NewText: "n", Raw: json.RawMessage(`{"type":"diff","path":"/p","oldText":"o","newText":"n"}`)}}}}},
		{"title", `{"sessionUpdate":"session_info_update","title":"T"}`, []backend.Event{backend.TitleChanged{Title: "T"}}},
		{"no title", `{"sessionUpdate":"session_info_update"}`, nil},
		{"mode", `{"sessionUpdate":"current_mode_update","currentModeId":"m"}`,
			[]backend.Event{backend.ConfigChanged{Options: []backend.ConfigOption{{ID: ModeOptionID, Name: "Mode", Category: "mode", Current: "m"}}}}},
		{"usage is the context window", `{"sessionUpdate":"usage_update","used":5,"size":9}`,
			[]backend.Event{backend.ContextUsage{Used: i64(5), Size: i64(9)}}},
		{"usage with cost and meta", `{"sessionUpdate":"usage_update","used":5,"size":9,"cost":{"amount":0.25,"currency":"USD"},"_meta":{"_claude/model":"m"}}`,
			[]backend.Event{backend.ContextUsage{Used: i64(5), Size: i64(9), Cost: &backend.Cost{Amount: 0.25, Currency: "USD"}, Meta: map[string]any{"_claude/model": "m"}}}},
		{"usage with used null keeps the rest", `{"sessionUpdate":"usage_update","used":null,"size":9}`,
			[]backend.Event{backend.ContextUsage{Size: i64(9)}}},
		{"usage with nothing known says nothing", `{"sessionUpdate":"usage_update","used":null}`, nil},
		{"usage without used", `{"sessionUpdate":"usage_update","size":3}`, []backend.Event{backend.ContextUsage{Size: i64(3)}}},
		{"empty raw input says nothing", `{"sessionUpdate":"tool_call","toolCallId":"b","title":"Terminal","rawInput":{ }}`,
			[]backend.Event{backend.ToolCall{ID: "b", Title: "Terminal", Status: backend.ToolPending}}},
		{"empty locations clear", `{"sessionUpdate":"tool_call_update","toolCallId":"b","locations":[]}`,
			[]backend.Event{backend.ToolCall{ID: "b", Update: true, Locations: []backend.Location{}}}},
		{"custom kind", `{"sessionUpdate":"_x","a":1}`, []backend.Event{backend.Custom{Kind: "_x", Raw: json.RawMessage(`{"sessionUpdate":"_x","a":1}`)}}},
		{"user message kept as custom", `{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"u"}}`,
			[]backend.Event{backend.Custom{Kind: "user_message_chunk", Raw: json.RawMessage(`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"u"}}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeUpdate(json.RawMessage(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDecodeUpdateErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"not json", `not json`, "decoding session update"},
		{"array", `[1,2]`, "decoding session update"},
		{"no kind", `{"content":{}}`, "no sessionUpdate kind"},
		{"kind not a string", `{"sessionUpdate":5}`, "decoding session update"},
		{"chunk without content", `{"sessionUpdate":"agent_message_chunk"}`, "content is missing"},
		{"block without type", `{"sessionUpdate":"agent_message_chunk","content":{"text":"x"}}`, "no type"},
		{"tool call without id", `{"sessionUpdate":"tool_call","title":"x"}`, "toolCallId is missing"},
		{"content not an array", `{"sessionUpdate":"tool_call_update","toolCallId":"a","content":{"type":"diff"}}`, "content"},
		{"content item without type", `{"sessionUpdate":"tool_call_update","toolCallId":"a","content":[{}]}`, "content[0]"},
		{"chunk without id", `{"sessionUpdate":"tool_call_content_chunk","content":{"type":"terminal"}}`, "toolCallId is missing"},
		{"plan entries wrong", `{"sessionUpdate":"plan","entries":"x"}`, "plan"},
		{"config option without id", `{"sessionUpdate":"config_option_update","configOptions":[{"name":"x"}]}`, "no id"},
		{"mode missing", `{"sessionUpdate":"current_mode_update"}`, "currentModeId is missing"},
		{"usage not a number", `{"sessionUpdate":"usage_update","used":"many"}`, "usage_update"},
		{"title wrong type", `{"sessionUpdate":"session_info_update","title":3}`, "title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := DecodeUpdate(json.RawMessage(tt.in))
			require.Error(t, err)
			assert.Nil(t, evs)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestDecodeConfigOptionsAndModes(t *testing.T) {
	opts, err := DecodeConfigOptions(json.RawMessage(`[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"a",
		"options":[{"value":"a","name":"A"},{"value":"b","name":"B","description":"bee"}]},
		{"id":"flag","name":"Flag","type":"boolean","currentValue":true}]`))
	require.NoError(t, err)
	assert.Equal(t, []backend.ConfigOption{
		{ID: "model", Name: "Model", Category: "model", Current: "a", Values: []backend.ConfigValue{{ID: "a", Name: "A"}, {ID: "b", Name: "B", Description: "bee"}}},
		{ID: "flag", Name: "Flag", Current: "true", Values: []backend.ConfigValue{{ID: "true", Name: "On"}, {ID: "false", Name: "Off"}}},
	}, opts)

	m, err := DecodeModes(json.RawMessage(`{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code","description":"Writes code"}]}`))
	require.NoError(t, err)
	assert.Equal(t, &backend.ConfigOption{ID: ModeOptionID, Name: "Mode", Category: "mode", Current: "ask",
		Values: []backend.ConfigValue{{ID: "ask", Name: "Ask"}, {ID: "code", Name: "Code", Description: "Writes code"}}}, m)

	m, err = DecodeModes(nil)
	require.NoError(t, err)
	assert.Nil(t, m)
	_, err = DecodeModes(json.RawMessage(`[]`))
	assert.Error(t, err)
}

// FuzzDecodeUpdate checks that no input makes the decoder panic, that it
// is deterministic, and that it never reports success with nothing to say
// for kinds that always carry content.
func FuzzDecodeUpdate(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "decode", "*.json"))
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs1, err1 := DecodeUpdate(data)
		evs2, err2 := DecodeUpdate(bytes.Clone(data))
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(evs1, evs2) {
			t.Fatalf("decoding is not deterministic for %q", data)
		}
		if err1 != nil {
			if evs1 != nil {
				t.Fatalf("events returned with error %v", err1)
			}
			return
		}
		for _, ev := range evs1 {
			if ev == nil {
				t.Fatalf("nil event for %q", data)
			}
		}
	})
}
