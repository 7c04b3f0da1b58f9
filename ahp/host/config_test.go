package host

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// resolvingHandler is the fake handler plus a ConfigResolver with one
// session-mutable "mode" setting and one fixed, dynamic-enum "model".
type resolvingHandler struct{ *fakeHandler }

func (resolvingHandler) ResolveSessionConfig(ctx context.Context, provider string) wire.SessionConfigState {
	return wire.SessionConfigState{
		Schema: wire.SessionConfigSchema{Type: "object", Properties: map[string]wire.SessionConfigPropertySchema{
			"mode": {Type: "string", Title: "Mode", Enum: []wire.JsonPrimitive{"ask", "code"}, SessionMutable: wire.Ptr(true)},
			"model": {Type: "string", Title: "Model", Enum: []wire.JsonPrimitive{"small", "large"}, EnumLabels: []string{"Small", "Large"},
				EnumDescriptions: []string{"fast", "clever"}, EnumDynamic: wire.Ptr(true)},
		}},
		Values: map[string]any{"mode": "ask", "model": "small"},
	}
}

func TestSessionConfigFromResolver(t *testing.T) {
	hs := newHarness(t, Options{})
	hs.h.SetHandler(resolvingHandler{hs.handler})
	c := hs.dial(t, "c")
	c.initialize()

	var resolved wire.ResolveSessionConfigResult
	c.mustCall("resolveSessionConfig", map[string]any{"channel": RootURI, "provider": "fake", "config": map[string]any{"mode": "code"}}, &resolved)
	assert.Contains(t, resolved.Schema.Properties, "mode")
	assert.Equal(t, "code", resolved.Values["mode"], "requested values override the defaults")
	assert.Equal(t, "small", resolved.Values["model"], "the others keep their defaults")

	s := hs.newSession(c, "cfg")
	cfg := hs.readSession(t, s.uri).Config
	require.NotNil(t, cfg, "every session starts with a config")
	assert.Equal(t, "ask", cfg.Values["mode"])

	// A session-mutable property can be changed by a client; the others not.
	c.accepted(s.uri, &wire.SessionConfigChangedAction{Config: map[string]any{"mode": "code"}})
	assert.Equal(t, "code", hs.readSession(t, s.uri).Config.Values["mode"])
	assert.Contains(t, c.rejected(s.uri, &wire.SessionConfigChangedAction{Config: map[string]any{"model": "large"}}), "cannot be changed")

	// sessionConfigCompletions offers the values matching the query.
	var items wire.SessionConfigCompletionsResult
	c.mustCall("sessionConfigCompletions", map[string]any{"channel": RootURI, "provider": "fake", "property": "model", "query": "LARG"}, &items)
	require.Len(t, items.Items, 1)
	assert.Equal(t, "large", items.Items[0].Value)
	assert.Equal(t, "Large", items.Items[0].Label)
	require.NotNil(t, items.Items[0].Description)
	assert.Equal(t, "clever", *items.Items[0].Description)
	c.mustCall("sessionConfigCompletions", map[string]any{"channel": RootURI, "property": "model"}, &items)
	assert.Len(t, items.Items, 2)
	_, err := c.call("sessionConfigCompletions", map[string]any{"channel": RootURI, "property": "colour"})
	require.NotNil(t, err)
	assert.Equal(t, CodeInvalidParams, err.Code)
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
