package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuthenticateWithoutProtectedResources: this host advertises no
// protected resources, so authenticate answers the spec's error for an
// unrecognized resource (InvalidParams), not "method not found".
func TestAuthenticateWithoutProtectedResources(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	_, err := c.call("authenticate", map[string]any{"channel": RootURI, "resource": "https://api.example/mcp", "token": "t"})
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidParams, err.Code)
	assert.Contains(t, err.Message, "advertises no protected resources")
	assert.Contains(t, err.Message, "https://api.example/mcp")

	_, err = c.call("authenticate", map[string]any{"channel": RootURI, "resource": 3})
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidParams, err.Code, "malformed params")
	c.ping() // the connection stays usable
}

// TestClientIDTakenOver: a second connection initializing with a clientId
// in use takes it over; the first is told why and closed. The same holds
// for a connection that resumes with reconnect.
func TestClientIDTakenOver(t *testing.T) {
	hs := newHarness(t, Options{})
	first := hs.dial(t, "same")
	first.initialize(RootURI)
	other := hs.dial(t, "other")
	other.initialize(RootURI)

	second := hs.dial(t, "same")
	second.initialize(RootURI)
	m := first.find("the take-over error", func(m rpcMsg) bool { return m.isResponse() && m.Error != nil && string(m.ID) == "null" })
	assert.Equal(t, CodeConflict, m.Error.Code)
	assert.Contains(t, m.Error.Message, "client same connected again")
	assert.True(t, first.closed(), "the older connection is closed")
	second.ping()
	other.ping()

	seq := hs.h.Stats().ServerSeq
	third := hs.dial(t, "same")
	third.mustCall("reconnect", map[string]any{"channel": RootURI, "clientId": "same", "lastSeenServerSeq": seq,
		"subscriptions": []string{RootURI}}, nil)
	assert.True(t, second.closed(), "reconnect takes the id over too")
	third.ping()
	other.ping()
}
