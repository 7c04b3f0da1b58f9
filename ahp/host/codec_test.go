package host

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// markCodec is a stand-in for a future protocol version: it tags every
// frame and withholds session/titleChanged, as a version without that
// action would.
type markCodec struct{}

func (markCodec) Version() string { return "0.9.0" }
func (markCodec) Translate(frame []byte) []byte {
	if bytes.Contains(frame, []byte(`"type":"session/titleChanged"`)) {
		return nil
	}
	return bytes.Replace(frame, []byte(`{"jsonrpc":"2.0"`), []byte(`{"jsonrpc":"2.0","v":"0.9.0"`), 1)
}

func TestCodecAtTheConnectionEdge(t *testing.T) {
	codecs["0.9.0"] = markCodec{}
	supportedVersions = []string{"0.9.0", ProtocolVersion030}
	t.Cleanup(func() {
		delete(codecs, "0.9.0")
		supportedVersions = []string{ProtocolVersion030}
	})
	hs := newHarness(t, Options{})
	owner := hs.dial(t, "owner")
	owner.initialize()
	uri := hs.newSession(owner, "codec")

	newer := []*testClient{hs.dial(t, "n1"), hs.stdio(t, "n2")}
	for _, c := range newer {
		var r initResult
		c.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
			"channel": RootURI, "protocolVersions": []string{"0.9.0", "0.3.0"}, "clientId": c.clientID, "initialSubscriptions": []string{uri}}})
		m, ok := c.recv(testTimeout)
		require.True(t, ok)
		assert.Contains(t, string(m.raw), `"v":"0.9.0"`, "the response goes through the connection's codec")
		require.Nil(t, m.Error)
		require.NoError(t, json.Unmarshal(m.Result, &r))
		assert.Equal(t, "0.9.0", r.ProtocolVersion)
	}

	before := hs.h.Stats().EnvelopesEncoded
	const n = 10
	for i := 0; i < n; i++ {
		_, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionIsReadChangedAction{IsRead: i%2 == 0}))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2*n), hs.h.Stats().EnvelopesEncoded-before, "once for 0.3.0 and once for 0.9.0, however many connections")
	for _, c := range newer {
		for i := 0; i < n; i++ {
			m := c.nextNotification("action")
			assert.Contains(t, string(m.raw), `"v":"0.9.0"`)
		}
	}
	// An action the newer version lacks reaches only 0.3.0 connections.
	seq, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionTitleChangedAction{Title: "t"}))
	require.NoError(t, err)
	last, err := hs.h.Dispatch(uri, wire.Action(&wire.SessionIsReadChangedAction{IsRead: true}))
	require.NoError(t, err)
	for _, c := range newer {
		e := c.nextEnvelope(nil)
		assert.Equal(t, last, e.ServerSeq, "seq %d was withheld", seq)
	}
	assert.Equal(t, seq, owner.nextEnvelope(func(e envelope) bool { return e.ServerSeq == seq }).ServerSeq)
}
