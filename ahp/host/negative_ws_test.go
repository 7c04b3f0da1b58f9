package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// The negative-path suite of issue #7: every JSON-RPC error path, over a
// real WebSocket, answered with the right code, and the connection still
// usable afterwards except where the spec says to close it.

// negCase is one frame and the error it must draw.
type negCase struct {
	name  string
	frame string
	code  int    // expected error code; 0 = no answer at all
	id    string // expected id of the error response ("null" for unparseable ones)
	msg   string // a substring the message must contain
}

// runNegCases sends each frame on c and checks the answer, then proves the
// connection intact with a ping.
func runNegCases(t *testing.T, c *testClient, cases []negCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.sendRaw([]byte(tc.frame))
			if tc.code == 0 {
				// Nothing comes back: the next response is the ping's.
				c.sendRaw([]byte(`{"jsonrpc":"2.0","id":"after","method":"ping"}`))
				m, ok := c.recvFresh(testTimeout)
				require.True(t, ok, "the connection closed")
				require.Equal(t, `"after"`, string(m.ID), "frame %s drew an answer: %s", tc.frame, m.raw)
				return
			}
			var m rpcMsg
			for {
				var ok bool
				m, ok = c.recvFresh(testTimeout)
				require.True(t, ok, "no answer to %s: the connection closed", tc.frame)
				if m.isResponse() {
					break
				}
			}
			require.NotNil(t, m.Error, "frame %s got %s", tc.frame, m.raw)
			assert.Equal(t, tc.code, m.Error.Code, "frame %s: %s", tc.frame, m.Error.Message)
			assert.Equal(t, tc.id, string(m.ID), "the error answers the request's id")
			assert.Contains(t, m.Error.Message, tc.msg)
			assert.Nil(t, m.Result, "an error response has no result")
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(m.raw, &raw))
			assert.JSONEq(t, `"2.0"`, string(raw["jsonrpc"]))

			_, err := c.call("ping", map[string]any{"channel": RootURI})
			require.Nil(t, err, "the connection stays usable after %s", tc.name)
		})
	}
}

func TestNegativeBeforeInitialize(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "early")
	var cases []negCase
	for _, method := range []string{"subscribe", "createSession", "disposeSession", "listSessions", "fetchTurns", "completions", "resourceRead"} {
		cases = append(cases, negCase{
			name:  method,
			frame: `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{"channel":"ahp-session:/x","provider":"fake","uri":"x"}}`,
			code:  CodeInvalidRequest, id: "7", msg: "initialize",
		})
	}
	cases = append(cases,
		negCase{name: "parse error", frame: `{"jsonrpc":"2.0",`, code: CodeParseError, id: "null"},
		negCase{name: "unknown method", frame: `{"jsonrpc":"2.0","id":8,"method":"nope","params":{"channel":"ahp-root://"}}`, code: CodeMethodNotFound, id: "8", msg: "nope"},
		negCase{name: "dispatchAction notification is dropped",
			frame: `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-root://","clientSeq":1,"action":{"type":"root/activeSessionsChanged","activeSessions":1}}}`},
	)
	runNegCases(t, c, cases)

	// ... and initialize still works afterwards on the same connection.
	c.t = t
	r := c.initialize(RootURI)
	assert.Equal(t, ProtocolVersion030, r.ProtocolVersion)
}

func TestNegativeAfterInitialize(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "neg")
	c.initialize(RootURI)
	existing := hs.newSession(c, "exists")
	c.t = t

	runNegCases(t, c, []negCase{
		// Parse errors: the id cannot be known, so it is null.
		{name: "truncated JSON", frame: `{"jsonrpc":"2.0","id":1,"method":`, code: CodeParseError, id: "null"},
		{name: "not JSON", frame: `hello`, code: CodeParseError, id: "null"},
		{name: "empty frame", frame: ``, code: CodeParseError, id: "null"},

		// Invalid requests.
		{name: "a number", frame: `42`, code: CodeInvalidRequest, id: "null"},
		{name: "an empty batch", frame: `[]`, code: CodeInvalidRequest, id: "null"},
		{name: "a batch", frame: `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, code: CodeInvalidRequest, id: "null"},
		{name: "jsonrpc 1.0", frame: `{"jsonrpc":"1.0","id":4,"method":"ping"}`, code: CodeInvalidRequest, id: "4"},
		{name: "no jsonrpc member", frame: `{"id":5,"method":"ping"}`, code: CodeInvalidRequest, id: "5"},
		{name: "method is a number", frame: `{"jsonrpc":"2.0","id":6,"method":6}`, code: CodeInvalidRequest, id: "6"},
		{name: "id is an object", frame: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		{name: "id is an array", frame: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		{name: "initialize twice", frame: `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.3.0"],"clientId":"neg"}}`,
			code: CodeInvalidRequest, id: "9", msg: "already initialized"},

		// Unknown method.
		{name: "unknown method", frame: `{"jsonrpc":"2.0","id":10,"method":"frobnicate","params":{"channel":"ahp-root://"}}`, code: CodeMethodNotFound, id: "10", msg: "frobnicate"},
		{name: "string id kept", frame: `{"jsonrpc":"2.0","id":"abc","method":"frobnicate","params":{"channel":"ahp-root://"}}`, code: CodeMethodNotFound, id: `"abc"`},

		// Invalid params and missing channel.
		{name: "params missing", frame: `{"jsonrpc":"2.0","id":11,"method":"subscribe"}`, code: CodeInvalidParams, id: "11"},
		{name: "channel missing", frame: `{"jsonrpc":"2.0","id":12,"method":"subscribe","params":{}}`, code: CodeInvalidParams, id: "12", msg: "channel"},
		{name: "channel empty", frame: `{"jsonrpc":"2.0","id":13,"method":"listSessions","params":{"channel":""}}`, code: CodeInvalidParams, id: "13", msg: "channel"},
		{name: "channel a number", frame: `{"jsonrpc":"2.0","id":14,"method":"subscribe","params":{"channel":1}}`, code: CodeInvalidParams, id: "14"},
		{name: "params an array", frame: `{"jsonrpc":"2.0","id":15,"method":"subscribe","params":["ahp-root://"]}`, code: CodeInvalidParams, id: "15"},
		{name: "field of the wrong type", frame: `{"jsonrpc":"2.0","id":16,"method":"fetchTurns","params":{"channel":"` + existing + `","limit":"ten"}}`, code: CodeInvalidParams, id: "16"},
		{name: "createSession on a non-session URI", frame: `{"jsonrpc":"2.0","id":17,"method":"createSession","params":{"channel":"ahp-terminal:/t","provider":"fake"}}`, code: CodeInvalidParams, id: "17"},
		{name: "resourceRead without uri", frame: `{"jsonrpc":"2.0","id":18,"method":"resourceRead","params":{"channel":"ahp-root://"}}`, code: CodeInvalidParams, id: "18", msg: "uri"},

		// Unknown session.
		{name: "subscribe to an unknown session", frame: `{"jsonrpc":"2.0","id":19,"method":"subscribe","params":{"channel":"ahp-session:/nope"}}`, code: CodeSessionNotFound, id: "19"},
		{name: "fetchTurns of an unknown session", frame: `{"jsonrpc":"2.0","id":20,"method":"fetchTurns","params":{"channel":"ahp-session:/nope"}}`, code: CodeSessionNotFound, id: "20"},
		{name: "dispose an unknown session", frame: `{"jsonrpc":"2.0","id":21,"method":"disposeSession","params":{"channel":"ahp-session:/nope"}}`, code: CodeSessionNotFound, id: "21"},

		// Session already exists; provider unknown.
		{name: "session already exists", frame: `{"jsonrpc":"2.0","id":22,"method":"createSession","params":{"channel":"` + existing + `","provider":"fake"}}`, code: CodeSessionAlreadyExists, id: "22"},
		{name: "unknown provider", frame: `{"jsonrpc":"2.0","id":23,"method":"createSession","params":{"channel":"ahp-session:/new","provider":"ghost"}}`, code: CodeProviderNotFound, id: "23", msg: "ghost"},

		// Things that draw no answer at all.
		{name: "unknown notification", frame: `{"jsonrpc":"2.0","method":"frobnicate","params":{}}`},
		{name: "a stray response", frame: `{"jsonrpc":"2.0","id":99,"result":{}}`},
		{name: "a stray error response", frame: `{"jsonrpc":"2.0","id":98,"error":{"code":1,"message":"x"}}`},
		{name: "malformed unsubscribe", frame: `{"jsonrpc":"2.0","method":"unsubscribe","params":{}}`},
		{name: "dispatchAction without channel", frame: `{"jsonrpc":"2.0","method":"dispatchAction","params":{"clientSeq":1}}`},
		{name: "dispatchAction to an unknown channel", frame: `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/nope","clientSeq":2,"action":{"type":"session/titleChanged","title":"x"}}}`},
	})

	// A malformed action for a known channel is echoed with a
	// rejectionReason, and the connection stays up.
	c.t = t
	c.sendRaw([]byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + existing + `","clientSeq":77,"action":{"type":"session/titleChanged","title":5}}}`))
	for {
		m, ok := c.recv(testTimeout)
		require.True(t, ok, "no echo of the malformed action")
		if m.Method != "action" {
			continue
		}
		var echo struct {
			Origin          struct{ ClientSeq int64 } `json:"origin"`
			RejectionReason *string                   `json:"rejectionReason"`
		}
		require.NoError(t, json.Unmarshal(m.Params, &echo))
		if echo.Origin.ClientSeq != 77 {
			continue
		}
		require.NotNil(t, echo.RejectionReason, "%s", m.Params)
		assert.Contains(t, *echo.RejectionReason, "malformed")
		break
	}
	_, err := c.call("ping", map[string]any{"channel": RootURI})
	require.Nil(t, err)
}

// TestNegativeUnsupportedVersionCloses: the spec's one error that ends the
// connection — after the answer is delivered.
func TestNegativeUnsupportedVersionCloses(t *testing.T) {
	hs := newHarness(t, Options{})
	wsc := hs.dialRaw(t)
	defer wsc.Close()
	require.NoError(t, wsc.WriteMessage(websocket.TextMessage,
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.1.0"],"clientId":"old"}}`)))
	require.NoError(t, wsc.SetReadDeadline(time.Now().Add(testTimeout)))
	_, b, err := wsc.ReadMessage()
	require.NoError(t, err, "the error is delivered before the close")
	var m rpcMsg
	require.NoError(t, json.Unmarshal(b, &m))
	require.NotNil(t, m.Error)
	assert.Equal(t, CodeUnsupportedProtocolVersion, m.Error.Code)
	assert.Equal(t, "1", string(m.ID))
	data, _ := json.Marshal(m.Error.Data)
	assert.JSONEq(t, `{"supportedVersions":["0.3.0"]}`, string(data))

	_, _, err = wsc.ReadMessage()
	require.Error(t, err, "then the server closes the connection")
	assert.False(t, strings.Contains(err.Error(), "timeout"), "closed, not timed out: %v", err)

	// Other connections do not notice.
	c := hs.dial(t, "new")
	c.initialize(RootURI)
}

// slowReads is the fake backend with a resourceRead that waits for release.
type slowReads struct {
	*fakeBackend
	release chan struct{}
}

func (b *slowReads) ResourceRead(ctx context.Context, p wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return wire.ResourceReadResult{}, ctx.Err()
	}
	return b.fakeBackend.ResourceRead(ctx, p)
}

// TestNegativePendingRequestLimit: a client that keeps asking without
// waiting gets an error per request over the limit, not unbounded work,
// and every admitted request is still answered.
func TestNegativePendingRequestLimit(t *testing.T) {
	hs := newHarness(t, Options{MaxPendingRequests: 4})
	slow := &slowReads{fakeBackend: hs.backend, release: make(chan struct{})}
	hs.h.SetBackend(slow)
	c := hs.dial(t, "greedy")
	c.initialize(RootURI)

	const sent = 10
	for i := 1; i <= sent; i++ {
		c.send(map[string]any{"jsonrpc": "2.0", "id": i, "method": "resourceRead",
			"params": map[string]any{"channel": RootURI, "uri": "file:///hello.txt"}})
	}
	refused := map[string]bool{}
	for len(refused) < sent-4 {
		m, ok := c.recv(testTimeout)
		require.True(t, ok, "only %d refusals arrived", len(refused))
		if !m.isResponse() {
			continue
		}
		require.NotNil(t, m.Error, "nothing is answered before the backend is released: %s", m.raw)
		assert.Equal(t, CodeInternalError, m.Error.Code)
		assert.Contains(t, m.Error.Message, "too many pending requests")
		refused[string(m.ID)] = true
	}
	_, err := c.call("ping", map[string]any{"channel": RootURI})
	require.Nil(t, err, "the connection stays usable")

	close(slow.release)
	answered := 0
	for answered < 4 {
		m, ok := c.recv(testTimeout)
		require.True(t, ok)
		if !m.isResponse() {
			continue
		}
		require.Nil(t, m.Error, "%s", m.raw)
		assert.False(t, refused[string(m.ID)])
		answered++
	}
	// With the earlier requests answered, new ones are admitted again.
	res, rerr := c.call("resourceRead", map[string]any{"channel": RootURI, "uri": "file:///hello.txt"})
	require.Nil(t, rerr)
	assert.Contains(t, string(res), "hello")
}
