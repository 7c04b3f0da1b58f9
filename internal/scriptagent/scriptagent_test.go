package scriptagent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ahp-bridge/ahp-bridge/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.SkipRaceExitSleep()
	goleak.VerifyTestMain(m)
}

type msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// client is a minimal ACP client driving Main in-process.
type client struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan msg
	done   chan error
	nextID int
}

func start(t *testing.T) *client {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, lines: make(chan msg, 10000), done: make(chan error, 1)}
	go func() {
		err := Main(context.Background(), inR, outW, io.Discard)
		_ = outW.Close()
		c.done <- err
	}()
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m msg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.lines <- m
			}
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case err := <-c.done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Main did not return after stdin closed")
		}
		for range c.lines {
		}
	})
	return c
}

func (c *client) send(v map[string]any) {
	v["jsonrpc"] = "2.0"
	b, err := json.Marshal(v)
	require.NoError(c.t, err)
	_, err = c.in.Write(append(b, '\n'))
	require.NoError(c.t, err)
}

func (c *client) request(method string, params any) string {
	c.nextID++
	c.send(map[string]any{"id": c.nextID, "method": method, "params": params})
	return fmt.Sprint(c.nextID)
}

func (c *client) next() msg {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		require.True(c.t, ok, "agent output ended")
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the agent")
		return msg{}
	}
}

// until collects messages up to the response to id.
func (c *client) until(id string) ([]msg, msg) {
	c.t.Helper()
	var got []msg
	for {
		m := c.next()
		if m.Method == "" && string(m.ID) == id {
			return got, m
		}
		got = append(got, m)
	}
}

func texts(ms []msg) string {
	var b strings.Builder
	for _, m := range ms {
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if m.Method == "session/update" && json.Unmarshal(m.Params, &p) == nil && p.Update.SessionUpdate == "agent_message_chunk" {
			b.WriteString(p.Update.Content.Text)
		}
	}
	return b.String()
}

func (c *client) newSession() string {
	_, init := c.until(c.request("initialize", map[string]any{"protocolVersion": 1}))
	require.Nil(c.t, init.Error)
	assert.JSONEq(c.t, `{"close":{}}`, string(gjson(c.t, init.Result, "agentCapabilities", "sessionCapabilities")))
	_, resp := c.until(c.request("session/new", map[string]any{"cwd": "/work", "mcpServers": []any{}}))
	require.Nil(c.t, resp.Error)
	var r struct {
		SessionID     string `json:"sessionId"`
		ConfigOptions []struct {
			ID           string `json:"id"`
			CurrentValue string `json:"currentValue"`
		} `json:"configOptions"`
		Modes struct {
			CurrentModeID string `json:"currentModeId"`
		} `json:"modes"`
	}
	require.NoError(c.t, json.Unmarshal(resp.Result, &r))
	require.Len(c.t, r.ConfigOptions, 1)
	assert.Equal(c.t, "script-fast", r.ConfigOptions[0].CurrentValue)
	assert.Equal(c.t, "default", r.Modes.CurrentModeID)
	return r.SessionID
}

func gjson(t *testing.T, raw json.RawMessage, path ...string) json.RawMessage {
	for _, p := range path {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &m))
		raw = m[p]
	}
	return raw
}

func (c *client) prompt(sid, text string) ([]msg, msg) {
	return c.until(c.request("session/prompt", map[string]any{"sessionId": sid,
		"prompt": []any{map[string]any{"type": "text", "text": text}}}))
}

func stopReason(t *testing.T, m msg) string {
	require.Nil(t, m.Error, "prompt failed")
	var r struct {
		StopReason string `json:"stopReason"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	return r.StopReason
}

func TestEchoFloodAndErrors(t *testing.T) {
	c := start(t)
	_, _ = c.in.Write([]byte("not json\n"))
	sid := c.newSession()

	ms, resp := c.prompt(sid, "echo hi")
	assert.Equal(t, "end_turn", stopReason(t, resp))
	assert.Contains(t, texts(ms), "text:echo hi")

	ms, resp = c.prompt(sid, "flood 3 10")
	assert.Equal(t, "end_turn", stopReason(t, resp))
	assert.Contains(t, texts(ms), "00000000xx00000001xx00000002xx")

	_, resp = c.prompt(sid, "error")
	require.NotNil(t, resp.Error)
	assert.Equal(t, "scripted failure", resp.Error.Message)

	_, resp = c.until(c.request("no/such_method", map[string]any{}))
	require.NotNil(t, resp.Error)
	assert.Equal(t, -32601, resp.Error.Code)

	_, resp = c.until(c.request("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "script-smart"}))
	require.Nil(t, resp.Error)
	assert.Contains(t, string(resp.Result), `"currentValue":"script-smart"`)
}

func TestPermissionAndCancel(t *testing.T) {
	c := start(t)
	sid := c.newSession()
	id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "permission"}}})
	var req msg
	for req.Method != "session/request_permission" {
		req = c.next()
	}
	var p struct {
		Options []struct {
			Kind string `json:"kind"`
		} `json:"options"`
	}
	require.NoError(t, json.Unmarshal(req.Params, &p))
	require.Len(t, p.Options, 4)
	c.send(map[string]any{"id": req.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-always"}}})
	ms, resp := c.until(id)
	assert.Equal(t, "end_turn", stopReason(t, resp))
	assert.Equal(t, "selected: allow-always", texts(ms))

	id = c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "wait"}}})
	for texts([]msg{c.next()}) != "waiting" {
	}
	c.send(map[string]any{"method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	_, resp = c.until(id)
	assert.Equal(t, "cancelled", stopReason(t, resp))
}

func TestClientCallsAndV2(t *testing.T) {
	c := start(t)
	sid := c.newSession()
	id := c.request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "read ../x.txt"}}})
	req := c.next()
	for req.Method != "fs/read_text_file" {
		req = c.next()
	}
	assert.Equal(t, "/work/../x.txt", string(gjson(t, req.Params, "path"))[1:len("/work/../x.txt")+1])
	c.send(map[string]any{"id": req.ID, "error": map[string]any{"code": -32602, "message": "nope"}})
	ms, _ := c.until(id)
	assert.Equal(t, "read error: -32602 nope", texts(ms))

	ms, resp := c.prompt(sid, "v2")
	assert.Equal(t, "end_turn", stopReason(t, resp))
	kinds := []string{}
	for _, m := range ms {
		kinds = append(kinds, string(gjson(t, m.Params, "update", "sessionUpdate")))
	}
	assert.Contains(t, kinds, `"tool_call_content_chunk"`)
	assert.Contains(t, kinds, `"_custom_update"`)
}
