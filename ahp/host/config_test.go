package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// resolvingBackend is the fake backend plus a ConfigResolver with one
// session-mutable "mode" setting.
type resolvingBackend struct{ *fakeBackend }

func (resolvingBackend) ResolveSessionConfig(ctx context.Context, provider string) wire.SessionConfigState {
	return wire.SessionConfigState{
		Schema: wire.SessionConfigSchema{Type: "object", Properties: map[string]wire.SessionConfigPropertySchema{
			"mode": {Type: "string", Title: "Mode", Enum: []string{"ask", "code"}, SessionMutable: wire.Ptr(true)},
		}},
		Values: map[string]any{"mode": "ask"},
	}
}

func TestSessionConfigFromResolver(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.h.SetBackend(resolvingBackend{hs.backend})
	c := hs.dial(t, "c")
	c.initialize()

	var resolved wire.ResolveSessionConfigResult
	c.mustCall("resolveSessionConfig", map[string]any{"channel": RootURI, "provider": "fake", "config": map[string]any{"mode": "code"}}, &resolved)
	assert.Contains(t, resolved.Schema.Properties, "mode")
	assert.Equal(t, "code", resolved.Values["mode"], "requested values override the defaults")

	uri := hs.newSession(c, "cfg")
	var cfg *wire.SessionConfigState
	hs.h.ReadSession(uri, func(s *wire.SessionState) { cfg = s.Config })
	require.NotNil(t, cfg, "every session starts with a config")
	assert.Equal(t, "ask", cfg.Values["mode"])

	// A session-mutable property can now be changed by a client.
	seq := c.dispatch(uri, &wire.SessionConfigChangedAction{Config: map[string]any{"mode": "code"}})
	e := c.ownEcho(seq)
	require.Nil(t, e.RejectionReason)
	hs.h.ReadSession(uri, func(s *wire.SessionState) { cfg = s.Config })
	assert.Equal(t, "code", cfg.Values["mode"])
}

func TestSessionConfigWithoutResolver(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize()
	var resolved json.RawMessage
	c.mustCall("resolveSessionConfig", map[string]any{"channel": RootURI, "config": map[string]any{"x": 1}}, &resolved)
	assert.JSONEq(t, `{"schema":{"type":"object","properties":{}},"values":{"x":1}}`, string(resolved))
	_, err := c.call("resolveSessionConfig", map[string]any{"channel": RootURI, "provider": "nope"})
	require.NotNil(t, err)
	assert.Equal(t, CodeProviderNotFound, err.Code)
}
