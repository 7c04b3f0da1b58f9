package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// build runs the generator over defs with ov, failing the test on error.
func build(t *testing.T, defs string, ov overrides) *generator {
	t.Helper()
	g, err := newGenerator(schemaDefs(t, defs), &ov)
	require.NoError(t, err)
	require.NoError(t, g.build())
	return g
}

// kinds is a small enum for the tests below.
var kinds = map[string]enumDef{"K": {Doc: "is a kind.", Values: []enumValue{{"A", "a"}, {"BeeSee", "b-c"}}}}

// TestConstDiscriminators checks the 0.7.0 schema style: variants fix their
// discriminator with "const", and inline union members get names.
func TestConstDiscriminators(t *testing.T) {
	defs := `{
		"U": {"oneOf": [{"$ref": "#/$defs/A"},
		                {"type": "object", "properties": {"kind": {"const": "b-c"}, "n": {"type": "number"}}, "required": ["kind"]}]},
		"A": {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]}
	}`
	t.Run("string discriminator", func(t *testing.T) {
		g := build(t, defs, overrides{})
		u := g.unions["U"]
		require.NotNil(t, u)
		assert.Equal(t, "kind", u.Disc)
		require.Len(t, u.Variants, 2)
		assert.Equal(t, "UBC", u.Variants[1].Type, "inline member named after the union and its value")
		assert.Equal(t, []string{`v.Kind = "a"`}, g.structs["A"].Forced)
		assert.Contains(t, g.emitTypes(), "Kind string `json:\"kind\"`")
	})
	t.Run("typed by an enum", func(t *testing.T) {
		g := build(t, defs, overrides{Enums: kinds, ConstEnums: map[string]string{"U.kind": "K"}})
		assert.Equal(t, []string{"v.Kind = KA"}, g.structs["A"].Forced)
		assert.Equal(t, []string{"v.Kind = KBeeSee"}, g.structs["UBC"].Forced)
		assert.Contains(t, g.emitTypes(), "Kind K `json:\"kind\"`")
	})
	t.Run("a value the enum lacks", func(t *testing.T) {
		ov := overrides{Enums: map[string]enumDef{"K": {Values: []enumValue{{"A", "a"}}}}, ConstEnums: map[string]string{"U.kind": "K"}}
		_, err := newGenerator(schemaDefs(t, defs), &ov)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `no member with the value "b-c"`)
	})
}

func TestConstEnumShapes(t *testing.T) {
	defs := `{
		"Sub": {"oneOf": [{"const": "a"}, {"const": "b-c"}]},
		"S": {"type": "object", "properties": {"k": {"oneOf": [{"const": "a"}, {"const": "b-c"}]}, "one": {"type": "string", "enum": ["a"]}, "x": {"type": "string"}}}
	}`
	g := build(t, defs, overrides{Enums: kinds, ConstEnums: map[string]string{"Sub": "K", "S.k": "K", "S.one": "K"}})
	assert.Equal(t, "K", g.aliases["Sub"].Target)
	types := g.emitTypes()
	assert.Contains(t, types, "K *K `json:\"k,omitempty\"`")
	assert.Contains(t, types, "One *K `json:\"one,omitempty\"`")

	ov := overrides{Enums: kinds, ConstEnums: map[string]string{"S.x": "K"}}
	_, err := newGenerator(schemaDefs(t, defs), &ov)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a fixed value")
}

func TestSchemaEnumsNeedTheOverridesValues(t *testing.T) {
	defs := `{"K": {"type": "string", "enum": ["a", "b-c", "d"]}}`
	ov := overrides{Enums: kinds}
	_, err := newGenerator(schemaDefs(t, defs), &ov)
	require.Error(t, err, "the schema has a value the overrides do not name")
	assert.Contains(t, err.Error(), "enum K")

	g := build(t, `{"K": {"type": "string", "enum": ["b-c", "a"]}, "S": {"type": "object", "properties": {"k": {"$ref": "#/$defs/K"}}}}`, overrides{Enums: kinds})
	assert.Nil(t, g.aliases["K"], "the overrides' enum, with names, replaces the schema's")
	assert.Contains(t, g.emitEnums(), "KBeeSee K = \"b-c\"")
}

func TestHoist(t *testing.T) {
	defs := `{
		"E": {"type": "object", "properties": {
			"before": {"type": "object", "description": "old side", "properties": {"uri": {"type": "string", "description": "URI before"}, "n": {"type": "number", "description": "count"}}, "required": ["uri"]},
			"after": {"type": "object", "properties": {"uri": {"type": "string", "description": "URI after"}, "n": {"type": "number", "description": "count"}}, "required": ["uri"]}}},
		"F": {"type": "object", "properties": {"side": {"type": "object", "properties": {"uri": {"type": "number"}}}}}
	}`
	g := build(t, defs, overrides{Hoist: map[string]hoistDef{"Snap": {Doc: "is one side.", From: []string{"E.before", "E.after"}}}})
	types := g.emitTypes()
	assert.Contains(t, types, "// Snap: is one side.\ntype Snap struct")
	assert.Contains(t, types, "Before *Snap `json:\"before,omitempty\"`")
	assert.Contains(t, types, "\t// count\n", "documentation every place shares is kept")
	assert.NotContains(t, types, "URI before", "documentation the places disagree on is dropped")
	assert.Contains(t, types, "// old side", "the property keeps its own documentation")

	ov := overrides{Hoist: map[string]hoistDef{"Snap": {From: []string{"E.before", "F.side"}}}}
	_, err := newGenerator(schemaDefs(t, defs), &ov)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "differs in shape")
}

func TestNumbersAndScalars(t *testing.T) {
	defs := `{
		"P": {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
		"Name": {"type": "string", "description": "A name."},
		"S": {"type": "object", "properties": {"seq": {"type": "number"}, "ratio": {"type": "number"}, "p": {"$ref": "#/$defs/P"}, "name": {"$ref": "#/$defs/Name"}, "yes": {"const": true}}, "required": ["seq", "ratio", "yes"]}
	}`
	g := build(t, defs, overrides{DefaultNumber: "int64", Numbers: map[string]string{"S.ratio": "float64"}})
	types := g.emitTypes()
	assert.Contains(t, types, "Seq int64 `json:\"seq\"`")
	assert.Contains(t, types, "Ratio float64 `json:\"ratio\"`")
	assert.Contains(t, types, "P P `json:\"p,omitempty\"`", "an open value is nil when absent, not a pointer")
	assert.Contains(t, types, "type P = any")
	assert.Contains(t, types, "type Name = string")
	assert.Contains(t, types, "Yes bool `json:\"yes\"`")
}

func TestAccessors(t *testing.T) {
	defs := `{
		"U": {"oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
		"A": {"type": "object", "properties": {"kind": {"const": "a"}, "id": {"type": "string"}, "n": {"type": "string"}}, "required": ["kind", "id"]},
		"B": {"type": "object", "properties": {"kind": {"const": "b"}, "id": {"type": "string"}, "n": {"type": "number"}}, "required": ["kind", "id"]}
	}`
	g := build(t, defs, overrides{Accessors: map[string][]string{"U": {"id"}}})
	src := g.emitUnions()
	assert.Contains(t, src, "func (u U) ID() (v string) {")
	assert.Contains(t, src, `v = unionMember[string](x, "id")`)
	assert.Contains(t, src, "func unionMember[T any]")

	for prop, want := range map[string]string{"n": "is a *float64 in B", "missing": "has no property", "kind": "is taken"} {
		ov := overrides{Accessors: map[string][]string{"U": {prop}}}
		g, err := newGenerator(schemaDefs(t, defs), &ov)
		require.NoError(t, err)
		err = g.build()
		require.Error(t, err, prop)
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, build(t, defs, overrides{}).emitUnions(), "unionMember", "no accessors, no helper")
}

func TestLoadSchemasIgnoresEmptyRefs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, js string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(js), 0o644))
	}
	write("a.schema.json", `{"$defs": {"U": {"oneOf": [{"$ref": "#/$defs/"}, {"$ref": "#/$defs/A"}]}}}`)
	write("b.schema.json", `{"$defs": {"U": {"oneOf": [{"$ref": "#/$defs/A"}]}}}`)
	_, err := loadSchemas(dir)
	require.NoError(t, err, "the empty reference is a generator artefact, not a difference")

	write("c.schema.json", `{"$defs": {"U": {"oneOf": [{"$ref": "#/$defs/B"}]}}}`)
	_, err = loadSchemas(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"U" differs`)
}

func TestOverridesFileIsStrict(t *testing.T) {
	dir := t.TempDir()
	schemaDir := filepath.Join(dir, "9.9.9", "schema")
	require.NoError(t, os.MkdirAll(schemaDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(schemaDir, "x.schema.json"), []byte(`{"$defs": {"S": {"type": "object", "properties": {"a": {"type": "string"}}}}}`), 0o644))
	ovFile := filepath.Join(dir, "overrides.json")

	require.NoError(t, os.WriteFile(ovFile, []byte(`{"comment": "ok", "pacthes": {}}`), 0o644))
	err := run(config{schemaDir: schemaDir, overridesFile: ovFile, outDir: dir, pkg: "wire"})
	require.Error(t, err, "a misspelt section must not be ignored")
	assert.Contains(t, err.Error(), "pacthes")

	require.NoError(t, os.WriteFile(ovFile, []byte(`{"comment": "ok"}`), 0o644))
	require.NoError(t, run(config{schemaDir: schemaDir, overridesFile: ovFile, outDir: dir, pkg: "wirex"}))
	src, err := os.ReadFile(filepath.Join(dir, "types.gen.go"))
	require.NoError(t, err)
	assert.Contains(t, string(src), "from the AHP 9.9.9 JSON schemas", "the version defaults to the schema folder's parent")
	assert.Contains(t, string(src), "package wirex")
}

// TestDrop checks overrides.drop: a dropped definition leaves the unions that
// listed it, a dropped property leaves its struct and the required list, and
// a stale entry or a reference left behind is an error.
func TestDrop(t *testing.T) {
	defs := `{
		"U": {"oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/Later"}]},
		"A": {"type": "object", "properties": {"kind": {"const": "a"}, "keep": {"type": "string"}, "later": {"$ref": "#/$defs/LaterCap"}}, "required": ["kind", "later"]},
		"Later": {"type": "object", "properties": {"kind": {"const": "later"}}, "required": ["kind"]},
		"LaterCap": {"type": "object", "properties": {"n": {"type": "number"}}}
	}`
	g := build(t, defs, overrides{Drop: []string{"Later", "LaterCap", "A.later"}})
	require.NotNil(t, g.unions["U"])
	require.Len(t, g.unions["U"].Variants, 1)
	assert.Equal(t, "A", g.unions["U"].Variants[0].Type)
	assert.Nil(t, g.structs["Later"])
	assert.Nil(t, g.structs["LaterCap"])
	types := g.emitTypes()
	assert.NotContains(t, types, "Later")
	assert.Contains(t, types, "Keep *string `json:\"keep,omitempty\"`")
	assert.NotContains(t, g.defs["A"].Required, "later")

	for _, tt := range []struct {
		name    string
		drop    []string
		wantErr string
	}{
		{"reference left behind", []string{"LaterCap"}, "A still refers to the dropped LaterCap"},
		{"no such definition", []string{"Nope"}, `drop "Nope": no such definition`},
		{"no such property", []string{"A.nope"}, `drop "A.nope": no such property`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ov := overrides{Drop: tt.drop}
			_, err := newGenerator(schemaDefs(t, defs), &ov)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestOpenEnums checks that an enum that says whether it is open documents
// it and gets an Open method, and that one that says nothing is emitted as
// before (the older versions' generated code must not change).
func TestOpenEnums(t *testing.T) {
	yes, no := true, false
	ov := overrides{Enums: map[string]enumDef{
		"Kind":  {Doc: "is a kind.", Values: []enumValue{{"A", "a"}}, Open: &yes},
		"State": {Doc: "is a state.", Values: []enumValue{{"On", "on"}}, Open: &no},
		"Plain": {Doc: "is plain.", Comment: "named after nothing", Values: []enumValue{{"X", "x"}}},
	}}
	g := build(t, `{}`, ov)
	g.version = "9.9.9"
	src := g.emitEnums()
	assert.Contains(t, src, "// Kind is a kind.\n//\n// Open: a later AHP version may add values")
	assert.Contains(t, src, "func (Kind) Open() bool { return true }")
	assert.Contains(t, src, "// State is a state.\n//\n// Closed: AHP 9.9.9 lists every value")
	assert.Contains(t, src, "func (State) Open() bool { return false }")
	assert.Contains(t, src, "// Plain is plain.\ntype Plain string")
	assert.NotContains(t, src, "func (Plain) Open")
	assert.NotContains(t, src, "named after nothing", "the comment is for the overrides' reader only")
}

// TestSourceHeader checks that overrides.source is repeated in every
// generated file's header, apart from the package clause, and that without
// it the header is the one-line generated-code comment.
func TestSourceHeader(t *testing.T) {
	g := build(t, `{}`, overrides{Source: "upstream at commit abc\nreconstructed "})
	g.version = "9.9.9"
	want := "// Code generated by ahp/internal/wiregen from the AHP 9.9.9 JSON schemas; DO NOT EDIT.\n//\n// upstream at commit abc\n// reconstructed\n\npackage wire\n\n"
	for _, src := range []string{g.emitEnums(), g.emitTypes(), g.emitUnions()} {
		assert.True(t, strings.HasPrefix(src, want), "header:\n%.200s", src)
	}
	g = build(t, `{}`, overrides{})
	g.version = "9.9.9"
	assert.True(t, strings.HasPrefix(g.emitTypes(), "// Code generated by ahp/internal/wiregen from the AHP 9.9.9 JSON schemas; DO NOT EDIT.\n\npackage wire\n\n"))
}

// TestReplace checks overrides.replace: a one-member union the schemas
// write as a plain reference becomes a union, which keeps a variant of an
// unknown kind whole, and a replacement of nothing is an error.
func TestReplace(t *testing.T) {
	defs := `{
		"Origin": {"$ref": "#/$defs/AutoOrigin", "description": "Where it came from."},
		"AutoOrigin": {"type": "object", "properties": {"kind": {"const": "auto"}, "run": {"type": "string"}}, "required": ["kind", "run"]}
	}`
	g := build(t, defs, overrides{})
	assert.Equal(t, "AutoOrigin", g.aliases["Origin"].Target, "without the override, an alias")

	one := &Schema{OneOf: []*Schema{{Ref: "#/$defs/AutoOrigin"}}}
	g = build(t, defs, overrides{Replace: map[string]*Schema{"Origin": one}})
	u := g.unions["Origin"]
	require.NotNil(t, u)
	assert.Equal(t, "kind", u.Disc)
	require.Len(t, u.Variants, 1)
	assert.Contains(t, g.emitUnions(), "// Origin: Where it came from.", "the schema's description is kept")

	ov := overrides{Replace: map[string]*Schema{"Nope": one}}
	_, err := newGenerator(schemaDefs(t, defs), &ov)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `replace "Nope": no such definition`)
}
