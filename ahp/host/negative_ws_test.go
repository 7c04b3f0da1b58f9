package host

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/codec"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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
				_, m := c.until("the ping's answer", rpcMsg.isResponse)
				require.Equal(t, `"after"`, string(m.ID), "frame %s drew an answer: %s", tc.frame, m.raw)
				return
			}
			_, m := c.until("the answer to "+tc.frame, rpcMsg.isResponse)
			require.NotNil(t, m.Error, "frame %s got %s", tc.frame, m.raw)
			assert.Equal(t, tc.code, m.Error.Code, "frame %s: %s", tc.frame, m.Error.Message)
			assert.Equal(t, tc.id, string(m.ID), "the error answers the request's id")
			assert.Contains(t, m.Error.Message, tc.msg)
			assert.Nil(t, m.Result, "an error response has no result")
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(m.raw, &raw))
			assert.JSONEq(t, `"2.0"`, string(raw["jsonrpc"]))

			c.ping() // the connection stays usable
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
		negCase{name: "the codec-only method", frame: `{"jsonrpc":"2.0","id":9,"method":"` + codec.InternalFetchTurnsPage + `","params":{"channel":"ahp-chat:/x"}}`, code: CodeMethodNotFound, id: "9"},
		negCase{name: "reconnect of an unknown client", frame: `{"jsonrpc":"2.0","id":10,"method":"reconnect","params":{"channel":"ahp-root://","clientId":"stranger","lastSeenServerSeq":0,"subscriptions":[]}}`,
			code: CodeNotFound, id: "10", msg: "not known"},
		negCase{name: "initialize without clientId", frame: `{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.7.0"]}}`,
			code: CodeInvalidParams, id: "11", msg: "clientId"},
		negCase{name: "initialize without versions", frame: `{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"channel":"ahp-root://","clientId":"early"}}`,
			code: CodeInvalidParams, id: "12", msg: "protocolVersions"},
		negCase{name: "initialize with a malformed version", frame: `{"jsonrpc":"2.0","id":13,"method":"initialize","params":{"channel":"ahp-root://","clientId":"early","protocolVersions":["seven"]}}`,
			code: CodeInvalidParams, id: "13", msg: "seven"},
		negCase{name: "dispatchAction notification is dropped",
			frame: `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-root://","clientSeq":1,"action":{"type":"root/activeSessionsChanged","activeSessions":1}}}`},
	)
	runNegCases(t, c, cases)

	// ... and initialize still works afterwards on the same connection.
	c.t = t
	r := c.initialize(RootURI)
	assert.Equal(t, current, r.ProtocolVersion)
}

func TestNegativeAfterInitialize(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "neg")
	c.initialize(RootURI)
	s := hs.newSession(c, "exists")
	existing := s.uri
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
		{name: "initialize twice", frame: `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.7.0"],"clientId":"neg"}}`,
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
		{name: "field of the wrong type", frame: `{"jsonrpc":"2.0","id":16,"method":"fetchTurns","params":{"channel":"` + s.chat + `","cursor":10}}`, code: CodeInvalidParams, id: "16"},
		{name: "createSession on a non-session URI", frame: `{"jsonrpc":"2.0","id":17,"method":"createSession","params":{"channel":"ahp-terminal:/t","provider":"fake"}}`, code: CodeInvalidParams, id: "17"},
		{name: "resourceRead without uri", frame: `{"jsonrpc":"2.0","id":18,"method":"resourceRead","params":{"channel":"ahp-root://"}}`, code: CodeInvalidParams, id: "18", msg: "uri"},

		// Unknown session.
		{name: "subscribe to an unknown session", frame: `{"jsonrpc":"2.0","id":19,"method":"subscribe","params":{"channel":"ahp-session:/nope"}}`, code: CodeSessionNotFound, id: "19"},
		{name: "fetchTurns of an unknown chat", frame: `{"jsonrpc":"2.0","id":20,"method":"fetchTurns","params":{"channel":"ahp-chat:/nope"}}`, code: CodeNotFound, id: "20"},
		{name: "fetchTurns of a session", frame: `{"jsonrpc":"2.0","id":201,"method":"fetchTurns","params":{"channel":"` + existing + `"}}`, code: CodeSessionNotFound, id: "201"},
		{name: "subscribe to an unknown chat", frame: `{"jsonrpc":"2.0","id":202,"method":"subscribe","params":{"channel":"ahp-chat:/nope"}}`, code: CodeNotFound, id: "202"},
		{name: "completions of an unknown chat", frame: `{"jsonrpc":"2.0","id":203,"method":"completions","params":{"channel":"ahp-chat:/nope","kind":"userMessage","text":"","offset":0}}`, code: CodeNotFound, id: "203"},
		{name: "dispose an unknown chat", frame: `{"jsonrpc":"2.0","id":204,"method":"disposeChat","params":{"channel":"ahp-chat:/nope"}}`, code: CodeNotFound, id: "204"},
		{name: "createChat in an unknown session", frame: `{"jsonrpc":"2.0","id":205,"method":"createChat","params":{"channel":"ahp-session:/nope","chat":"ahp-chat:/c"}}`, code: CodeSessionNotFound, id: "205"},
		{name: "negative view.turns", frame: `{"jsonrpc":"2.0","id":206,"method":"subscribe","params":{"channel":"` + s.chat + `","view":{"turns":-1}}}`, code: CodeInvalidParams, id: "206", msg: "view.turns"},
		{name: "listSessions with a zero limit", frame: `{"jsonrpc":"2.0","id":207,"method":"listSessions","params":{"channel":"ahp-root://","limit":0}}`, code: CodeInvalidParams, id: "207", msg: "limit"},
		{name: "forking a session", frame: `{"jsonrpc":"2.0","id":208,"method":"createSession","params":{"channel":"ahp-session:/fork","provider":"fake","fork":{"session":"` + existing + `","turnId":"t"}}}`, code: CodeInvalidParams, id: "208", msg: "fork"},
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
		{name: "dispatchAction to an unknown chat", frame: `{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-chat:/nope","clientSeq":3,"action":{"type":"chat/turnCancelled","turnId":"x"}}}`},
	})

	// A malformed action for a known channel is echoed with a
	// rejectionReason, and the connection stays up.
	c.t = t
	c.sendRaw([]byte(`{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"` + existing + `","clientSeq":77,"action":{"type":"session/titleChanged","title":5}}}`))
	echo := c.ownEcho(77)
	require.NotNil(t, echo.RejectionReason, "%s", echo.raw)
	assert.Contains(t, *echo.RejectionReason, "malformed")
	assert.Contains(t, string(echo.raw), `"title":5`, "echoed as sent")
	c.ping()
}

// TestNegativeUnsupportedVersionCloses: the spec's one error that ends the
// connection — after the answer is delivered.
func TestNegativeUnsupportedVersionCloses(t *testing.T) {
	hs := newHarness(t, Options{})
	wsc := hs.dialRaw(t)
	defer wsc.Close()
	require.NoError(t, wsc.WriteMessage(websocket.TextMessage,
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","protocolVersions":["0.1.0"],"clientId":"old"}}`)))
	b, err := readRaw(t, wsc)
	require.NoError(t, err, "the error is delivered before the close")
	var m rpcMsg
	require.NoError(t, json.Unmarshal(b, &m))
	require.NotNil(t, m.Error)
	assert.Equal(t, CodeUnsupportedProtocolVersion, m.Error.Code)
	assert.Equal(t, "1", string(m.ID))
	data, _ := json.Marshal(m.Error.Data)
	assert.JSONEq(t, `{"supportedVersions":["1.0.0","0.9.0","0.7.0","0.6.0","0.5.2","0.5.1","0.5.0","0.3.0"]}`, string(data))

	_, err = readRaw(t, wsc)
	require.Error(t, err, "then the server closes the connection")

	// Other connections do not notice.
	c := hs.dial(t, "new")
	c.initialize(RootURI)
}

// slowReads is the fake handler with a resourceRead that waits for release.
type slowReads struct {
	*fakeHandler
	release chan struct{}
}

func (b *slowReads) ResourceRead(ctx context.Context, p wire.ResourceReadParams) (wire.ResourceReadResult, error) {
	select {
	case <-b.release:
	case <-ctx.Done():
		return wire.ResourceReadResult{}, ctx.Err()
	}
	return b.fakeHandler.ResourceRead(ctx, p)
}

// TestNegativePendingRequestLimit: a client that keeps asking without
// waiting gets an error per request over the limit, not unbounded work,
// and every admitted request is still answered.
func TestNegativePendingRequestLimit(t *testing.T) {
	hs := newHarness(t, Options{MaxPendingRequests: 4})
	slow := &slowReads{fakeHandler: hs.handler, release: make(chan struct{})}
	hs.h.SetHandler(slow)
	c := hs.dial(t, "greedy")
	c.initialize(RootURI)

	const sent = 10
	for i := 1; i <= sent; i++ {
		c.send(map[string]any{"jsonrpc": "2.0", "id": i, "method": "resourceRead",
			"params": map[string]any{"channel": RootURI, "uri": "ahp-test:/hello.txt"}})
	}
	refused := map[string]bool{}
	for len(refused) < sent-4 {
		_, m := c.until(fmt.Sprintf("refusal %d", len(refused)+1), rpcMsg.isResponse)
		require.NotNil(t, m.Error, "nothing is answered before the handler is released: %s", m.raw)
		assert.Equal(t, CodeInternalError, m.Error.Code)
		assert.Contains(t, m.Error.Message, "too many pending requests")
		refused[string(m.ID)] = true
	}
	c.ping() // the connection stays usable

	close(slow.release)
	answered := 0
	for answered < 4 {
		_, m := c.until(fmt.Sprintf("answer %d", answered+1), rpcMsg.isResponse)
		require.Nil(t, m.Error, "%s", m.raw)
		assert.False(t, refused[string(m.ID)])
		answered++
	}
	// With the earlier requests answered, new ones are admitted again.
	res, rerr := c.call("resourceRead", map[string]any{"channel": RootURI, "uri": "ahp-test:/hello.txt"})
	require.Nil(t, rerr)
	assert.Contains(t, string(res), "hello")
}
