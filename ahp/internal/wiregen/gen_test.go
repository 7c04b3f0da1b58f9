package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoName(t *testing.T) {
	tests := map[string]string{
		"toolCallId":        "ToolCallID",
		"_meta":             "Meta",
		"uri":               "URI",
		"serverSeq":         "ServerSeq",
		"lastSeenServerSeq": "LastSeenServerSeq",
		"url":               "URL",
		"id":                "ID",
		"sizeHint":          "SizeHint",
	}
	for in, want := range tests {
		assert.Equal(t, want, goName(in), in)
	}
}

func TestDocComment(t *testing.T) {
	got := docComment("Foo", "Does {@link Bar} and {@link Baz.qux | `qux`}.\n\nSecond paragraph.")
	assert.Equal(t, "// Foo: Does Bar and `qux`.\n//\n// Second paragraph.\n", got)
	assert.Equal(t, "// Foo is an AHP wire type.\n", docComment("Foo", ""))
}

func schemaDefs(t *testing.T, js string) map[string]*Schema {
	t.Helper()
	var defs map[string]*Schema
	require.NoError(t, json.Unmarshal([]byte(js), &defs))
	return defs
}

func TestGeneratorErrors(t *testing.T) {
	tests := []struct {
		name, defs, wantErr string
		ov                  overrides
	}{
		{"dangling reference", `{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/Missing"}}}}`, "Missing", overrides{}},
		{"unknown enum member", `{"A":{"type":"object","properties":{"t":{"$ref":"#/$defs/Kind.Nope"}}}}`, "Kind", overrides{}},
		{"patch of a missing property", `{"A":{"type":"object","properties":{}}}`, "no such property",
			overrides{Patches: map[string]*Schema{"A.x": {}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ov := tt.ov
			g, err := newGenerator(schemaDefs(t, tt.defs), &ov)
			if err == nil {
				err = g.build()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestUnionGeneration(t *testing.T) {
	defs := schemaDefs(t, `{
		"U": {"oneOf": [{}, {"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
		"A": {"type": "object", "properties": {"kind": {"$ref": "#/$defs/K.A"}, "n": {"type": "number"}}, "required": ["kind"]},
		"B": {"type": "object", "properties": {"kind": {"$ref": "#/$defs/K.B"}, "xs": {"type": "array", "items": {"type": "string"}}}, "required": ["kind", "xs"]}
	}`)
	ov := overrides{Enums: map[string]enumDef{"K": {Doc: "is a kind.", Values: []enumValue{{"A", "a"}, {"B", "b"}}}}}
	g, err := newGenerator(defs, &ov)
	require.NoError(t, err)
	require.NoError(t, g.build())
	u := g.unions["U"]
	require.NotNil(t, u)
	assert.Equal(t, "kind", u.Disc)
	require.Len(t, u.Variants, 2)
	assert.Equal(t, []string{"a"}, u.Variants[0].Values)
	assert.Equal(t, []string{"v.Kind = KA"}, g.structs["A"].Forced)
	src := g.emitUnions()
	assert.True(t, strings.Contains(src, `if v.Xs == nil { v.Xs = []string{} }`), "required lists are never null")
	types := g.emitTypes()
	assert.Contains(t, types, "N *float64 `json:\"n,omitempty\"`")
}
