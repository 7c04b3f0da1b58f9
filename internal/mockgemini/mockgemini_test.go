package mockgemini

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// chunk is one streamed response, as far as the tests read it.
type chunk struct {
	Candidates []struct {
		Content      Content `json:"content"`
		FinishReason string  `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata map[string]int `json:"usageMetadata"`
}

// TestStreamedTextThenCall: a streamed reply is one SSE event per piece of
// text, then one with the function call, the last one finished; the next
// request's function result is readable by the responder.
func TestStreamedTextThenCall(t *testing.T) {
	var got []Request
	s := Start(func(r Request) Reply {
		got = append(got, r)
		if res := r.FunctionResponses(); len(res) > 0 {
			return Reply{Text: "done"}
		}
		return Reply{Text: "let me run it", Chunks: 3, Calls: []FunctionCall{{Name: "run_shell_command", Args: map[string]any{"command": "echo hi"}}}}
	})
	t.Cleanup(s.Close)

	body := `{"contents":[{"role":"user","parts":[{"text":"run it"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`
	resp := post(t, s.URL+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var chunks []chunk
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var c chunk
			require.NoError(t, json.Unmarshal([]byte(data), &c))
			chunks = append(chunks, c)
		}
	}
	require.Len(t, chunks, 4)
	var text string
	for i, c := range chunks[:3] {
		require.Len(t, c.Candidates, 1)
		text += c.Candidates[0].Content.Parts[0].Text
		assert.Empty(t, c.Candidates[0].FinishReason, "piece %d", i)
	}
	assert.Equal(t, "let me run it", text)
	last := chunks[3].Candidates[0]
	assert.Equal(t, "STOP", last.FinishReason)
	require.Len(t, last.Content.Parts, 1)
	call := last.Content.Parts[0].FunctionCall
	require.NotNil(t, call)
	assert.Equal(t, "run_shell_command", call.Name)
	assert.Equal(t, map[string]any{"command": "echo hi"}, call.Args)
	assert.NotEmpty(t, call.ID)
	assert.Positive(t, chunks[3].UsageMetadata["totalTokenCount"])
	require.Len(t, got, 1)
	assert.Equal(t, chunks[3].UsageMetadata["promptTokenCount"], s.Requests()[0].PromptTokens, "the usage reported is recorded")
	assert.Equal(t, chunks[3].UsageMetadata["candidatesTokenCount"], s.Requests()[0].CandidatesTokens)
	assert.Equal(t, "gemini-x", got[0].Model)
	assert.True(t, got[0].Stream)
	assert.True(t, got[0].HasFunction("run_shell_command"))
	assert.Equal(t, "run it", got[0].LastUserText())

	resp = post(t, s.URL+"/v1beta/models/gemini-x:generateContent", `{"contents":[{"role":"user","parts":[{"text":"run it"}]},`+
		`{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{}}}]},`+
		`{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"hi"}}}]}]}`)
	var one chunk
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&one))
	assert.Equal(t, "done", one.Candidates[0].Content.Parts[0].Text)
	require.Len(t, got, 2)
	assert.JSONEq(t, `{"output":"hi"}`, string(got[1].FunctionResponses()[0].Response))
	assert.Len(t, s.Requests(), 2)
}

// TestSideQuestionFromSchema: a request for JSON is answered from its
// schema without asking the responder.
func TestSideQuestionFromSchema(t *testing.T) {
	s := Start(func(Request) Reply { t.Error("the responder was asked a side question"); return Reply{} })
	t.Cleanup(s.Close)
	resp := post(t, s.URL+"/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],
		"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT",
		"properties":{"reasoning":{"type":"STRING"},"next_speaker":{"type":"STRING","enum":["user","model"]},"score":{"type":"INTEGER"}}}}}`)
	var one chunk
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&one))
	assert.JSONEq(t, `{"reasoning":"mock","next_speaker":"user","score":1}`, one.Candidates[0].Content.Parts[0].Text)
}

// TestCountTokensAndOther: countTokens is answered, and any other path is
// answered empty and recorded.
func TestCountTokensAndOther(t *testing.T) {
	s := Start(func(Request) Reply { return Reply{} })
	t.Cleanup(s.Close)
	resp := post(t, s.URL+"/v1beta/models/m:countTokens", `{"contents":[]}`)
	var n struct{ TotalTokens int }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&n))
	assert.Positive(t, n.TotalTokens)
	resp = post(t, s.URL+"/v1beta/cachedContents", `{}`)
	b, _ := io.ReadAll(resp.Body)
	assert.JSONEq(t, `{}`, string(b))
	assert.Equal(t, []string{"POST /v1beta/cachedContents"}, s.Other())
	assert.Empty(t, s.Requests())
}

// TestSlowStreamStopsWhenTheReaderLeaves: a slow reply can be read piece
// by piece, and the server stops sending when the client goes away.
func TestSlowStreamStopsWhenTheReaderLeaves(t *testing.T) {
	s := Start(func(Request) Reply {
		return Reply{Text: strings.Repeat("x", 1000), Chunks: 1000, Delay: 50 * time.Millisecond}
	})
	t.Cleanup(s.Close)
	resp := post(t, s.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[]}`)
	sc := bufio.NewScanner(resp.Body)
	require.True(t, sc.Scan())
	assert.True(t, strings.HasPrefix(sc.Text(), "data: "))
	start := time.Now()
	_ = resp.Body.Close()
	s.Close() // waits for the handler, which must notice the closed connection
	assert.Less(t, time.Since(start), 25*time.Second, "the handler stopped instead of streaming 50 s more")
}
