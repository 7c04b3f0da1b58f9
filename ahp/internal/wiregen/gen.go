package main

import (
	"encoding/json"
	"fmt"
	"go/token"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// overrides is the shape of an overrides file: what one version's schemas
// lose on their way from the TypeScript types, restored by hand. Every entry
// names the schema place it applies to, and the generator fails when that
// place does not exist or does not look as expected, so that a regeneration
// against changed schemas surfaces stale overrides instead of hiding them.
type overrides struct {
	// Comment says where the overrides come from; the generator ignores it.
	Comment string `json:"comment"`
	// Source, when set, says where the schemas come from (a repository, a
	// commit, how they were obtained); the header of every generated file
	// repeats it, so that the provenance travels with the code.
	Source string `json:"source"`
	// Drop lists what the schemas define but the generated package must
	// not have, typically what a later protocol version added to schemas
	// taken from its development branch. An entry "Def" drops a definition
	// and every oneOf/anyOf member that refers to it; "Def.prop" drops one
	// property (and its entry in "required"). Dropping happens before any
	// other section applies; a reference left to a dropped definition is an
	// error, so that nothing is dropped by halves.
	Drop []string `json:"drop"`
	// External maps schema names to Go types written by hand (or to builtins).
	External map[string]string `json:"external"`
	// Enums are string enums with member names. A schema definition of the
	// same name (an "enum" without member names) must list the same values.
	Enums map[string]enumDef `json:"enums"`
	// Replace gives definitions the schemas do have a schema of their own,
	// for a shape the schema generator loses: a TypeScript union of one
	// member (SessionOrigin = AutomationSessionOrigin) is a plain reference
	// in the schemas, so a variant of a kind the version does not know would
	// decode into the one it does and lose its members; written as a oneOf,
	// it becomes a union that keeps unknown variants whole. A replacement
	// without a description keeps the schema's.
	Replace map[string]*Schema `json:"replace"`
	// Defs are extra definitions: types the schemas leave out, or names for
	// inline objects that Patches refer to.
	Defs map[string]*Schema `json:"defs"`
	// Docs replace the description of definitions (e.g. of hoisted ones).
	Docs map[string]string `json:"docs"`
	// Patches replace the schema of one property ("Def.prop").
	Patches map[string]*Schema `json:"patches"`
	// Hoist turns inline object schemas into one named definition: every
	// property listed in From ("Def.prop") must hold the same shape, which
	// becomes the definition; the properties then refer to it.
	Hoist map[string]hoistDef `json:"hoist"`
	// ConstEnums types fixed values by an enum of Enums: each "const" (or
	// oneOf of consts) becomes a reference to the member with that value. A
	// key is "Union.prop" (that property of every variant of the union),
	// "Def.prop" (one property) or "Def" (a definition that is a oneOf of
	// consts).
	ConstEnums map[string]string `json:"constEnums"`
	// Optional lists properties ("Def.prop") the schema calls required but the
	// TypeScript types declare `T | undefined`: they may be absent.
	Optional []string `json:"optional"`
	// Skip lists definitions that are not wire shapes (TypeScript-only maps).
	Skip []string `json:"skip"`
	// Numbers gives the Go type of "number" properties by "Def.prop" or by
	// JSON name; the rest are DefaultNumber.
	Numbers map[string]string `json:"numbers"`
	// DefaultNumber is the Go type of the other "number" properties; empty
	// means float64.
	DefaultNumber string `json:"defaultNumber"`
	// Accessors lists, per discriminated union, properties that every
	// variant has (with the same Go type); the union gets a method of that
	// name returning the held variant's value.
	Accessors map[string][]string `json:"accessors"`
}

type hoistDef struct {
	Doc  string   `json:"doc"`
	From []string `json:"from"`
}

type enumDef struct {
	Doc string `json:"doc"`
	// Comment says where the member names come from; the generator ignores it.
	Comment string      `json:"comment"`
	Values  []enumValue `json:"values"`
	// Open, when set, says whether later protocol versions may add values
	// (TypeScript @nonexhaustive) or not (@exhaustive). The enum then
	// documents it and gets an Open method, so that validating code can tell
	// an unknown value to pass on from an invalid one. Unset, nothing is
	// said (the schemas of older versions do not tell).
	Open *bool `json:"open"`
}

type enumValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// field is one generated struct field.
type field struct {
	GoName   string
	JSONName string
	Type     string // Go type as written in the struct
	Tag      string
	Doc      string
	// FillEmpty is the Go literal that replaces a nil required slice or map on
	// encode, so the wire never carries null where the schema wants a list.
	FillEmpty string
}

type structDef struct {
	Name   string
	Doc    string
	Fields []field
	// Forced are discriminator assignments done on encode (Go statements).
	Forced []string
}

type variant struct {
	Type   string   // Go struct name
	Values []string // discriminator values (decoded strings)
	Consts []string // Go expressions for Values
	// SubProp/SubValue tell apart variants sharing a discriminator value
	// (session/toolCallConfirmed approved vs denied).
	SubProp  string
	SubValue string // raw JSON literal
	Field    string // Go field holding the discriminator
}

type unionDef struct {
	Name     string
	Doc      string
	Disc     string // JSON property; "" for an untagged union
	Variants []variant
	// Accessors are methods reading a property every variant has.
	Accessors []accessor
}

type accessor struct {
	Method, Prop, Field, Type string
}

type aliasDef struct {
	Name, Target, Doc string
}

type namedInt struct {
	Name, Doc string
	Values    []json.RawMessage
}

type generator struct {
	// pkg and version name the package and the AHP version in the output.
	pkg, version string
	// source is overrides.source, for the header.
	source  string
	defs    map[string]*Schema
	ov      *overrides
	structs map[string]*structDef
	unions  map[string]*unionDef
	aliases map[string]*aliasDef
	ints    map[string]*namedInt
	// building guards against building a definition twice.
	building map[string]bool
}

func newGenerator(defs map[string]*Schema, ov *overrides) (*generator, error) {
	if err := drop(defs, ov.Drop); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(ov.Replace) {
		old := defs[name]
		if old == nil {
			return nil, fmt.Errorf("overrides.json replace %q: no such definition in the schemas", name)
		}
		s := *ov.Replace[name]
		if s.Description == "" {
			s.Description = old.Description
		}
		defs[name] = &s
	}
	for name, s := range ov.Defs {
		if _, ok := defs[name]; ok {
			return nil, fmt.Errorf("overrides.json defines %q, which the schemas already define", name)
		}
		defs[name] = s
	}
	for _, path := range ov.Optional {
		def, prop, _ := strings.Cut(path, ".")
		if d := defs[def]; d == nil || d.Properties == nil || d.Properties.Byname[prop] == nil {
			return nil, fmt.Errorf("overrides.json optional %q: no such property in the schemas", path)
		}
	}
	for path, s := range ov.Patches {
		def, prop, ok := strings.Cut(path, ".")
		if !ok {
			return nil, fmt.Errorf("overrides.json patch %q: want Def.property", path)
		}
		d := defs[def]
		if d == nil || d.Properties == nil || d.Properties.Byname[prop] == nil {
			return nil, fmt.Errorf("overrides.json patch %q: no such property in the schemas", path)
		}
		d.Properties.Byname[prop] = s
	}
	if err := prepare(defs, ov); err != nil {
		return nil, err
	}
	return &generator{
		pkg:      "wire",
		version:  "unknown",
		source:   ov.Source,
		defs:     defs,
		ov:       ov,
		structs:  map[string]*structDef{},
		unions:   map[string]*unionDef{},
		aliases:  map[string]*aliasDef{},
		ints:     map[string]*namedInt{},
		building: map[string]bool{},
	}, nil
}

func (g *generator) build() error {
	names := make([]string, 0, len(g.defs))
	for n := range g.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ext := g.ov.External[n]; ext || slices.Contains(g.ov.Skip, n) {
			continue
		}
		if _, enum := g.ov.Enums[n]; enum {
			// The overrides' enum, with member names, replaces the schema's.
			continue
		}
		if err := g.buildDef(n, g.defs[n]); err != nil {
			return fmt.Errorf("definition %s: %w", n, err)
		}
	}
	if err := g.buildAccessors(); err != nil {
		return err
	}
	return g.checkForced()
}

// buildAccessors checks and records overrides.accessors.
func (g *generator) buildAccessors() error {
	for _, name := range sortedKeys(g.ov.Accessors) {
		u := g.unions[name]
		if u == nil || u.Disc == "" {
			return fmt.Errorf("overrides accessors %q: not a discriminated union", name)
		}
		for _, prop := range g.ov.Accessors[name] {
			acc := accessor{Method: goName(prop), Prop: prop}
			if acc.Method == goName(u.Disc) || acc.Method == "MarshalJSON" || acc.Method == "UnmarshalJSON" {
				return fmt.Errorf("overrides accessors %q: method %s is taken", name, acc.Method)
			}
			for _, v := range u.Variants {
				var f *field
				for i := range g.structs[v.Type].Fields {
					if g.structs[v.Type].Fields[i].JSONName == prop {
						f = &g.structs[v.Type].Fields[i]
					}
				}
				switch {
				case f == nil:
					return fmt.Errorf("overrides accessors %q: variant %s has no property %s", name, v.Type, prop)
				case acc.Type == "":
					acc.Field, acc.Type = f.GoName, f.Type
				case f.Type != acc.Type:
					return fmt.Errorf("overrides accessors %q: property %s is a %s in %s but a %s elsewhere", name, prop, f.Type, v.Type, acc.Type)
				}
			}
			u.Accessors = append(u.Accessors, acc)
		}
	}
	return nil
}

func (g *generator) buildDef(name string, s *Schema) error {
	if g.building[name] {
		return nil
	}
	g.building[name] = true
	switch {
	case len(s.Enum) > 0:
		t, _ := s.typeName()
		if t != "number" && t != "integer" {
			// String enums are emitted as plain strings with the values documented.
			g.aliases[name] = &aliasDef{Name: name, Target: "string", Doc: s.Description}
			return nil
		}
		g.ints[name] = &namedInt{Name: name, Doc: s.Description, Values: s.Enum}
		return nil
	case len(s.OneOf) > 0:
		members := nonEmpty(s.OneOf)
		if base, ok := g.enumMembersBase(members); ok {
			g.aliases[name] = &aliasDef{Name: name, Target: base, Doc: s.Description}
			return nil
		}
		if t, _, ok := scalarUnion(members); ok {
			g.aliases[name] = &aliasDef{Name: name, Target: t, Doc: s.Description}
			return nil
		}
		return g.buildUnion(name, s.Description, members)
	case s.Properties == nil && (s.Ref != "" || isScalar(s)):
		// A named scalar or another name for a definition.
		t, _, _, err := g.goType(name, "", s)
		if err != nil {
			return err
		}
		g.aliases[name] = &aliasDef{Name: name, Target: t, Doc: s.Description}
		return nil
	default:
		return g.buildStruct(name, s)
	}
}

// isScalar reports whether s is a string, number, integer or boolean, or a
// fixed value of one.
func isScalar(s *Schema) bool {
	if s.Ref != "" || s.Properties != nil || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return false
	}
	t, _ := s.typeName()
	switch t {
	case "string", "number", "integer", "boolean":
		return true
	case "":
		return len(s.Const) > 0
	}
	return false
}

// scalarUnion reports whether every member of a union is an inline scalar
// (TypeScript `'a' | 'b'` or `string | number | boolean | null`) and gives
// the Go type that holds them all: string when every member is a string,
// otherwise any.
func scalarUnion(members []*Schema) (string, typeKind, bool) {
	if len(members) == 0 {
		return "", 0, false
	}
	allStrings := true
	for _, m := range members {
		t, _ := m.typeName()
		if t == "null" && m.Ref == "" && len(m.Const) == 0 {
			allStrings = false
			continue
		}
		if !isScalar(m) {
			return "", 0, false
		}
		if _, isString := constString(m); !isString && t != "string" {
			allStrings = false
		}
	}
	if allStrings {
		return "string", kindPlain, true
	}
	return "any", kindAny, true
}

func nonEmpty(ss []*Schema) []*Schema {
	var out []*Schema
	for _, s := range ss {
		if s.isEmpty() || refName(s.Ref) == "" && s.Ref != "" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// enumMembersBase reports whether every schema is a reference to a member of
// the same enum (e.g. "#/$defs/ToolCallStatus.Running") and returns that enum.
func (g *generator) enumMembersBase(ss []*Schema) (string, bool) {
	base := ""
	for _, s := range ss {
		b, _, ok := strings.Cut(refName(s.Ref), ".")
		if s.Ref == "" || !ok {
			return "", false
		}
		if base != "" && b != base {
			return "", false
		}
		base = b
	}
	return base, base != ""
}

func (g *generator) enumValue(ref string) (goConst, value string, err error) {
	base, member, ok := strings.Cut(refName(ref), ".")
	if !ok {
		return "", "", fmt.Errorf("%s is not an enum member reference", ref)
	}
	e, ok := g.ov.Enums[base]
	if !ok {
		return "", "", fmt.Errorf("enum %s (referenced by %s) is not in overrides.json", base, ref)
	}
	for _, v := range e.Values {
		if v.Name == member {
			return base + v.Name, v.Value, nil
		}
	}
	return "", "", fmt.Errorf("enum %s has no member %s (referenced by %s)", base, member, ref)
}

func (g *generator) buildStruct(name string, s *Schema) error {
	sd := &structDef{Name: name, Doc: s.Description}
	g.structs[name] = sd
	if s.Properties == nil {
		return nil
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = !slices.Contains(g.ov.Optional, name+"."+r)
	}
	for _, prop := range s.Properties.Names {
		ps := s.Properties.Byname[prop]
		goType, kind, nullable, err := g.goType(name, prop, ps)
		if err != nil {
			return fmt.Errorf("property %s: %w", prop, err)
		}
		f := field{GoName: goName(prop), JSONName: prop, Doc: ps.Description}
		if !token.IsIdentifier(f.GoName) {
			return fmt.Errorf("property %q does not make a Go identifier; add the definition to skip in overrides.json", prop)
		}
		switch {
		case required[prop] && nullable && kind == kindPlain:
			f.Type, f.Tag = "*"+goType, prop
		case required[prop]:
			f.Type, f.Tag = goType, prop
			switch kind {
			case kindSlice, kindMap:
				f.FillEmpty = goType + "{}"
			}
		default:
			switch kind {
			case kindSlice, kindMap:
				f.Type, f.Tag = goType, prop+",omitzero"
			case kindAny:
				f.Type, f.Tag = goType, prop+",omitempty"
			default:
				f.Type, f.Tag = "*"+goType, prop+",omitempty"
			}
		}
		sd.Fields = append(sd.Fields, f)
	}
	return nil
}

type typeKind int

const (
	kindPlain typeKind = iota // scalar, struct, union: pointer when optional
	kindSlice
	kindMap
	kindAny // interface or raw JSON: nil when absent
)

// goType returns the Go type for the schema of property prop of parent.
func (g *generator) goType(parent, prop string, s *Schema) (string, typeKind, bool, error) {
	if s.Ref != "" {
		name := refName(s.Ref)
		if name == "" {
			return "any", kindAny, false, nil
		}
		if t, ok := g.ov.External[name]; ok {
			if t == "any" {
				return t, kindAny, false, nil
			}
			return t, kindPlain, false, nil
		}
		if base, _, ok := strings.Cut(name, "."); ok {
			if _, _, err := g.enumValue(s.Ref); err != nil {
				return "", 0, false, err
			}
			return base, kindPlain, false, nil
		}
		if _, ok := g.ov.Enums[name]; ok {
			return name, kindPlain, false, nil
		}
		d, ok := g.defs[name]
		if !ok {
			return "", 0, false, fmt.Errorf("reference %s is not defined in the schemas or overrides.json", s.Ref)
		}
		if err := g.buildDef(name, d); err != nil {
			return "", 0, false, fmt.Errorf("definition %s: %w", name, err)
		}
		if a := g.aliases[name]; a != nil && a.Target == "any" {
			return name, kindAny, false, nil
		}
		return name, kindPlain, false, nil
	}
	if len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		all := append(append([]*Schema{}, s.OneOf...), s.AnyOf...)
		members := nonEmpty(all)
		nullable := len(members) < len(all)
		if base, ok := g.enumMembersBase(members); ok {
			return base, kindPlain, nullable, nil
		}
		if len(members) == 1 {
			t, k, _, err := g.goType(parent, prop, members[0])
			return t, k, nullable, err
		}
		if t, k, ok := scalarUnion(members); ok {
			return t, k, nullable, nil
		}
		name := parent + exported(prop)
		if err := g.buildUnion(name, s.Description, members); err != nil {
			return "", 0, false, err
		}
		return name, kindPlain, nullable, nil
	}
	t, nullable := s.typeName()
	if t == "" && len(s.Const) > 0 {
		// A fixed value without a "type" (TypeScript literal types).
		var v any
		if err := json.Unmarshal(s.Const, &v); err != nil {
			return "", 0, false, fmt.Errorf("const %s: %w", s.Const, err)
		}
		switch v.(type) {
		case string:
			t = "string"
		case bool:
			t = "boolean"
		case float64:
			t = "number"
		default:
			return "", 0, false, fmt.Errorf("unsupported const %s", s.Const)
		}
	}
	switch t {
	case "string":
		return "string", kindPlain, nullable, nil
	case "boolean":
		return "bool", kindPlain, nullable, nil
	case "integer":
		if n, ok := g.number(parent, prop); ok {
			return n, kindPlain, nullable, nil
		}
		return "int64", kindPlain, nullable, nil
	case "number":
		if n, ok := g.number(parent, prop); ok {
			return n, kindPlain, nullable, nil
		}
		if g.ov.DefaultNumber != "" {
			return g.ov.DefaultNumber, kindPlain, nullable, nil
		}
		return "float64", kindPlain, nullable, nil
	case "array":
		if s.Items == nil {
			return "[]any", kindSlice, nullable, nil
		}
		et, _, _, err := g.goType(parent, prop+"Item", s.Items)
		if err != nil {
			return "", 0, false, err
		}
		return "[]" + et, kindSlice, nullable, nil
	case "object", "":
		if s.Properties != nil {
			name := parent + exported(prop)
			if _, dup := g.defs[name]; dup {
				return "", 0, false, fmt.Errorf("inline object name %s collides with a definition", name)
			}
			if err := g.buildStruct(name, s); err != nil {
				return "", 0, false, err
			}
			return name, kindPlain, nullable, nil
		}
		if t == "" && s.isEmpty() {
			return "any", kindAny, false, nil
		}
		vt := "any"
		if len(s.AdditionalProperties) > 0 && string(s.AdditionalProperties) != "true" {
			var ap Schema
			if err := json.Unmarshal(s.AdditionalProperties, &ap); err != nil {
				return "", 0, false, fmt.Errorf("additionalProperties: %w", err)
			}
			if !ap.isEmpty() {
				var err error
				vt, _, _, err = g.goType(parent, prop+"Value", &ap)
				if err != nil {
					return "", 0, false, err
				}
			}
		}
		return "map[string]" + vt, kindMap, nullable, nil
	}
	return "", 0, false, fmt.Errorf("unsupported schema type %q", t)
}

// number returns the Go type overrides.numbers gives property prop of
// parent, by "Def.prop" or else by name.
func (g *generator) number(parent, prop string) (string, bool) {
	if n, ok := g.ov.Numbers[parent+"."+prop]; ok {
		return n, true
	}
	n, ok := g.ov.Numbers[prop]
	return n, ok
}

// discriminatorOf finds the property of variant struct schema s whose value
// is fixed: an enum member reference, a one-value enum, a string const, or a
// oneOf of members of one enum or of string consts.
func (g *generator) discriminatorOf(s *Schema) (prop string, values, consts []string, err error) {
	if s.Properties == nil {
		return "", nil, nil, nil
	}
	for _, p := range s.Properties.Names {
		ps := s.Properties.Byname[p]
		var refs []*Schema
		switch {
		case ps.Ref != "" && strings.Contains(refName(ps.Ref), "."):
			refs = []*Schema{ps}
		case len(ps.OneOf) > 0:
			if _, ok := g.enumMembersBase(nonEmpty(ps.OneOf)); ok {
				refs = nonEmpty(ps.OneOf)
				break
			}
			for _, m := range nonEmpty(ps.OneOf) {
				v, ok := constString(m)
				if !ok {
					values, consts = nil, nil
					break
				}
				values = append(values, v)
				consts = append(consts, fmt.Sprintf("%q", v))
			}
			if len(values) > 0 {
				return p, values, consts, nil
			}
		case len(ps.Const) > 0:
			if v, ok := constString(ps); ok {
				return p, []string{v}, []string{fmt.Sprintf("%q", v)}, nil
			}
		case len(ps.Enum) > 0:
			for _, e := range ps.Enum {
				var v string
				if json.Unmarshal(e, &v) != nil {
					return "", nil, nil, fmt.Errorf("property %s: non-string enum value %s", p, e)
				}
				values = append(values, v)
				consts = append(consts, fmt.Sprintf("%q", v))
			}
			return p, values, consts, nil
		}
		if refs == nil {
			continue
		}
		for _, r := range refs {
			c, v, err := g.enumValue(r.Ref)
			if err != nil {
				return "", nil, nil, err
			}
			values = append(values, v)
			consts = append(consts, c)
		}
		return p, values, consts, nil
	}
	return "", nil, nil, nil
}

func (g *generator) buildUnion(name, doc string, members []*Schema) error {
	u := &unionDef{Name: name, Doc: doc}
	g.unions[name] = u
	// Flatten members that are unions themselves (StateAction holds
	// SessionToolCallConfirmedAction, itself approved | denied).
	var flat []string
	var expand func(ms []*Schema) error
	expand = func(ms []*Schema) error {
		for _, m := range ms {
			if m.Ref == "" {
				return fmt.Errorf("inline union member schemas are not supported")
			}
			rn := refName(m.Ref)
			d, ok := g.defs[rn]
			if !ok {
				return fmt.Errorf("union member %s is not defined", m.Ref)
			}
			if len(d.OneOf) > 0 {
				if err := g.buildDef(rn, d); err != nil {
					return err
				}
				if err := expand(nonEmpty(d.OneOf)); err != nil {
					return err
				}
				continue
			}
			flat = append(flat, rn)
		}
		return nil
	}
	if err := expand(members); err != nil {
		return err
	}
	disc := ""
	for i, vn := range flat {
		d := g.defs[vn]
		if err := g.buildDef(vn, d); err != nil {
			return err
		}
		p, vals, consts, err := g.discriminatorOf(d)
		if err != nil {
			return fmt.Errorf("variant %s: %w", vn, err)
		}
		if i == 0 {
			disc = p
		} else if p != disc {
			disc = ""
			break
		}
		v := variant{Type: vn, Values: vals, Consts: consts, Field: goName(p)}
		u.Variants = append(u.Variants, v)
	}
	if disc == "" {
		// Untagged union: decoding keeps the raw JSON.
		u.Variants = nil
		for _, vn := range flat {
			u.Variants = append(u.Variants, variant{Type: vn})
		}
		return nil
	}
	u.Disc = disc
	// Variants sharing a discriminator value must differ in a const property.
	for i := range u.Variants {
		for j := range u.Variants {
			if i == j || !overlap(u.Variants[i].Values, u.Variants[j].Values) {
				continue
			}
			sp, sv, err := g.constProp(g.defs[u.Variants[i].Type])
			if err != nil || sp == "" {
				return fmt.Errorf("variants %s and %s share a discriminator value and have no const property to tell them apart", u.Variants[i].Type, u.Variants[j].Type)
			}
			u.Variants[i].SubProp, u.Variants[i].SubValue = sp, sv
		}
	}
	for _, v := range u.Variants {
		sd := g.structs[v.Type]
		for i := range sd.Fields {
			f := &sd.Fields[i]
			if f.JSONName != disc || (f.Doc != "" && f.Doc != "Discriminant") {
				continue
			}
			if len(v.Values) == 1 {
				f.Doc = fmt.Sprintf("Discriminator, always %q; encoding fills it in.", v.Values[0])
			} else {
				f.Doc = fmt.Sprintf("Discriminator: %s (encoding defaults it to the first).", strings.Join(quoteAll(v.Values), " or "))
			}
		}
		if len(v.Consts) == 1 {
			addForced(sd, fmt.Sprintf("v.%s = %s", v.Field, v.Consts[0]))
		} else if len(v.Consts) > 1 {
			addForced(sd, fmt.Sprintf("if v.%s == \"\" { v.%s = %s }", v.Field, v.Field, v.Consts[0]))
		}
		if v.SubProp != "" {
			addForced(sd, fmt.Sprintf("v.%s = %s", goName(v.SubProp), v.SubValue))
		}
	}
	return nil
}

func addForced(sd *structDef, stmt string) {
	for _, s := range sd.Forced {
		if s == stmt {
			return
		}
	}
	sd.Forced = append(sd.Forced, stmt)
}

// checkForced rejects a struct that two unions would force to different values.
func (g *generator) checkForced() error {
	for _, sd := range g.structs {
		seen := map[string]string{}
		for _, s := range sd.Forced {
			lhs := strings.Fields(s)[0]
			if strings.HasPrefix(s, "if ") {
				lhs = strings.Fields(s)[1]
			}
			if prev, ok := seen[lhs]; ok && prev != s {
				return fmt.Errorf("%s: unions disagree on the discriminator: %q vs %q", sd.Name, prev, s)
			}
			seen[lhs] = s
		}
	}
	return nil
}

func (g *generator) constProp(s *Schema) (string, string, error) {
	if s.Properties == nil {
		return "", "", nil
	}
	for _, p := range s.Properties.Names {
		if c := s.Properties.Byname[p].Const; len(c) > 0 {
			return p, string(c), nil
		}
	}
	return "", "", nil
}

func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

var initialisms = map[string]string{"Id": "ID", "Ids": "IDs", "Uri": "URI", "Uris": "URIs", "Url": "URL", "Json": "JSON", "Http": "HTTP"}

// goName turns a JSON property name into an exported Go field name:
// "toolCallId" → "ToolCallID", "_meta" → "Meta".
func goName(prop string) string {
	var words []string
	cur := []rune{}
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range prop {
		switch {
		case r == '_' || r == '-' || r == '/' || r == '.' || r == ' ':
			flush()
		case r >= 'A' && r <= 'Z':
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	var b strings.Builder
	for _, w := range words {
		w = strings.ToUpper(w[:1]) + w[1:]
		if r, ok := initialisms[w]; ok {
			w = r
		}
		b.WriteString(w)
	}
	return b.String()
}

func exported(s string) string { return goName(s) }

var linkRE = regexp.MustCompile(`\{@link\s+([^}|\s]+)\s*(?:\|\s*([^}]*))?\}`)

// docComment renders a schema description as a Go comment. head, if not
// empty, is prepended to the first line (the identifier being documented).
func docComment(head, desc string) string {
	desc = strings.TrimSpace(desc)
	desc = linkRE.ReplaceAllStringFunc(desc, func(m string) string {
		sub := linkRE.FindStringSubmatch(m)
		if strings.TrimSpace(sub[2]) != "" {
			return strings.TrimSpace(sub[2])
		}
		return sub[1]
	})
	if desc == "" {
		if head == "" {
			return ""
		}
		return "// " + head + " is an AHP wire type.\n"
	}
	if head != "" {
		desc = head + ": " + desc
	}
	var b strings.Builder
	for _, line := range strings.Split(desc, "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			b.WriteString("//\n")
			continue
		}
		b.WriteString("// " + line + "\n")
	}
	return b.String()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
