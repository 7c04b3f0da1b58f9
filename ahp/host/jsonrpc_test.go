package host

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func TestParseFrame(t *testing.T) {
	cases := []struct {
		name   string
		frame  string
		kind   msgKind
		method string
		id     string
		code   int
	}{
		{"request", `{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}`, kindRequest, "ping", "7", 0},
		{"string id", `{"jsonrpc":"2.0","id":"a","method":"ping"}`, kindRequest, "ping", `"a"`, 0},
		{"null id is a request", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, kindRequest, "ping", "null", 0},
		{"notification", `{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"x"}}`, kindNotification, "unsubscribe", "", 0},
		{"response", `{"jsonrpc":"2.0","id":3,"result":null}`, kindResponse, "", "3", 0},
		{"leading whitespace", " \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", kindRequest, "ping", "1", 0},
		{"garbage", `{{`, 0, "", "", CodeParseError},
		{"empty", ``, 0, "", "", CodeParseError},
		{"array", `[]`, 0, "", "", CodeInvalidRequest},
		{"string", `"hi"`, 0, "", "", CodeInvalidRequest},
		{"no jsonrpc", `{"id":1,"method":"ping"}`, 0, "", "1", CodeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":1,"method":5}`, 0, "", "1", CodeInvalidRequest},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, 0, "", "1", CodeInvalidRequest},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, 0, "", "", CodeInvalidRequest},
		{"no method no result", `{"jsonrpc":"2.0","id":1}`, 0, "", "1", CodeInvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, id, err := parseFrame([]byte(tc.frame))
			if tc.code != 0 {
				require.NotNil(t, err)
				assert.Equal(t, tc.code, err.Code)
				assert.Equal(t, tc.id, string(id))
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tc.kind, m.kind)
			assert.Equal(t, tc.method, m.method)
			assert.Equal(t, tc.id, string(m.id))
		})
	}
}

func TestChannelParam(t *testing.T) {
	cases := map[string]int{
		`{"channel":"ahp-root://"}`: 0,
		``:                          CodeInvalidParams,
		`null`:                      CodeInvalidParams,
		`[]`:                        CodeInvalidParams,
		`{}`:                        CodeInvalidParams,
		`{"channel":""}`:            CodeInvalidParams,
		`{"channel":1}`:             CodeInvalidParams,
	}
	for params, code := range cases {
		ch, err := channelParam(json.RawMessage(params))
		if code == 0 {
			assert.Nil(t, err, params)
			assert.Equal(t, "ahp-root://", ch)
			continue
		}
		require.NotNil(t, err, params)
		assert.Equal(t, code, err.Code, params)
	}
}

func TestAsRPCError(t *testing.T) {
	e := asRPCError(Errorf(CodeNotFound, "gone"))
	assert.Equal(t, CodeNotFound, e.Code)
	e = asRPCError(os.ErrNotExist)
	assert.Equal(t, CodeInternalError, e.Code)
}

// TestGoldenFrames pins the exact bytes of the frames the host writes.
func TestGoldenFrames(t *testing.T) {
	h := New(Options{})
	defer h.Close()
	action, err := json.Marshal(wire.Action(&wire.ChatTurnStartedAction{TurnID: "t1", StartedAt: "2026-01-02T03:04:05.006Z", Message: userMsg("hi")}))
	require.NoError(t, err)
	const chat = "ahp-chat:/s1"
	server, env, inner, err := h.encodeEnvelope(&envelopeOut{Channel: chat, Action: action, ServerSeq: 42})
	require.NoError(t, err)
	assert.True(t, json.Valid(env))
	assert.Equal(t, string(action), string(inner), "the action is spliced in verbatim")
	client, _, _, err := h.encodeEnvelope(&envelopeOut{Channel: chat, Action: action, ServerSeq: 43, Origin: &wire.ActionOrigin{ClientID: "c1", ClientSeq: 5}})
	require.NoError(t, err)
	rejected, _, _, err := h.encodeEnvelope(&envelopeOut{Channel: chat, Action: action, ServerSeq: 43, Origin: &wire.ActionOrigin{ClientID: "c1", ClientSeq: 6}, RejectionReason: "turn t0 is still active"})
	require.NoError(t, err)
	_, _, _, err = h.encodeEnvelope(&envelopeOut{Channel: chat, Action: []byte(`{"type":`), ServerSeq: 44})
	require.Error(t, err, "an untrusted action must be valid JSON")
	unsupported := encodeError(json.RawMessage("1"), &Error{Code: CodeUnsupportedProtocolVersion, Message: "unsupported protocol version",
		Data: wire.UnsupportedProtocolVersionErrorData{SupportedVersions: codec.Supported()}})
	parse := encodeError(nil, &Error{Code: CodeParseError, Message: "parse error"})
	progress := encodeNotification(wire.MethodRootProgress, mustJSON(t, wire.ProgressParams{Channel: RootURI, ProgressToken: "p", Progress: 2, Total: wire.Ptr[int64](2)}))
	for name, got := range map[string][]byte{
		"envelope_server.json":       server,
		"envelope_client.json":       client,
		"envelope_rejected.json":     rejected,
		"error_unsupported.json":     unsupported,
		"error_parse.json":           parse,
		"notification_progress.json": progress,
	} {
		path := filepath.Join("testdata", "golden", name)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test -update to create %s", path)
		assert.Equal(t, string(want), string(got)+"\n", name)
	}
}

func TestReplayRing(t *testing.T) {
	r := newReplayRing(3, 1<<20)
	assert.True(t, r.canReplayFrom(0, 0), "nothing sequenced, nothing missed")
	assert.False(t, r.canReplayFrom(1, 0), "a future seq is unknown")
	for seq := int64(1); seq <= 5; seq++ {
		r.push(ringEntry{seq: seq, channel: "c"})
	}
	oldest, ok := r.oldest()
	require.True(t, ok)
	assert.Equal(t, int64(3), oldest)
	assert.Equal(t, 3, r.len())
	cases := []struct {
		lastSeen int64
		ok       bool
		replay   []int64
	}{
		{5, true, nil},
		{4, true, []int64{5}},
		{2, true, []int64{3, 4, 5}},
		{1, false, nil},
		{0, false, nil},
		{-1, false, nil},
		{6, false, nil},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.ok, r.canReplayFrom(tc.lastSeen, 5), "lastSeen %d", tc.lastSeen)
		if tc.ok {
			var got []int64
			r.after(tc.lastSeen, func(e *ringEntry) { got = append(got, e.seq) })
			assert.Equal(t, tc.replay, got, "lastSeen %d", tc.lastSeen)
		}
	}
}
