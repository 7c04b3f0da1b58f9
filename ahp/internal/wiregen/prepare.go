package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// prepare rewrites the merged definitions before any Go is built from them:
// it names inline union members and the inline objects listed in
// overrides.hoist, turns fixed values into enum member references
// (overrides.constEnums), checks that enums defined both by the schemas and
// by the overrides agree, and applies overrides.docs. It runs after the
// overrides' defs and patches are in place.
func prepare(defs map[string]*Schema, ov *overrides) error {
	if err := nameUnionMembers(defs); err != nil {
		return err
	}
	if err := hoist(defs, ov.Hoist); err != nil {
		return err
	}
	for _, key := range sortedKeys(ov.ConstEnums) {
		if err := constEnum(defs, ov, key, ov.ConstEnums[key]); err != nil {
			return fmt.Errorf("overrides constEnums %q: %w", key, err)
		}
	}
	for _, name := range sortedKeys(ov.Enums) {
		if err := checkEnum(defs[name], ov.Enums[name]); err != nil {
			return fmt.Errorf("enum %s: %w", name, err)
		}
	}
	for _, name := range sortedKeys(ov.Docs) {
		d := defs[name]
		if d == nil {
			return fmt.Errorf("overrides docs %q: no such definition", name)
		}
		d.Description = ov.Docs[name]
	}
	return nil
}

// nameUnionMembers gives each inline object member of a definition's oneOf
// a definition of its own, named after the union and the member's fixed
// discriminator value (ChatOrigin's {"kind": {"const": "fork"}, …} becomes
// ChatOriginFork), so that every union variant is a named Go struct. The
// TypeScript types write such variants inline, so the schemas have no name
// for them.
func nameUnionMembers(defs map[string]*Schema) error {
	for _, union := range sortedKeys(defs) {
		d := defs[union]
		for i, m := range d.OneOf {
			if m.Ref != "" || m.Properties == nil {
				continue
			}
			value := ""
			for _, p := range m.Properties.Names {
				if v, ok := constString(m.Properties.Byname[p]); ok {
					value = v
					break
				}
			}
			if value == "" {
				// Not a tagged variant (StringOrMarkdown's {markdown}); left to
				// the overrides, or to buildUnion to reject.
				continue
			}
			name := union + goName(value)
			if _, dup := defs[name]; dup {
				return fmt.Errorf("definition %s: the name %s for its %q member is taken", union, name, value)
			}
			defs[name] = m
			d.OneOf[i] = &Schema{Ref: "#/$defs/" + name}
		}
	}
	return nil
}

// hoist applies overrides.hoist.
func hoist(defs map[string]*Schema, hs map[string]hoistDef) error {
	for _, name := range sortedKeys(hs) {
		h := hs[name]
		if _, dup := defs[name]; dup {
			return fmt.Errorf("overrides hoist %q: the schemas already define it", name)
		}
		if len(h.From) == 0 {
			return fmt.Errorf("overrides hoist %q: no properties to hoist from", name)
		}
		var shape *Schema
		for _, path := range h.From {
			parent, ps, err := property(defs, path)
			if err != nil {
				return fmt.Errorf("overrides hoist %q: %w", name, err)
			}
			if ps.Ref != "" || ps.Properties == nil {
				return fmt.Errorf("overrides hoist %q: %s is not an inline object", name, path)
			}
			if shape == nil {
				shape = ps.clone()
			} else if shapeKey(shape) != shapeKey(ps) {
				return fmt.Errorf("overrides hoist %q: %s differs in shape from %s", name, path, h.From[0])
			} else {
				// Keep only the documentation all places agree on: "URI of the
				// file before the edit" is wrong for the after side.
				shape.keepCommonDocs(ps)
			}
			_, prop, _ := strings.Cut(path, ".")
			parent.Properties.Byname[prop] = &Schema{Ref: "#/$defs/" + name, Description: ps.Description}
		}
		shape.Description = h.Doc
		defs[name] = shape
	}
	return nil
}

// property returns the definition and the property schema that path
// ("Def.prop") names.
func property(defs map[string]*Schema, path string) (*Schema, *Schema, error) {
	def, prop, ok := strings.Cut(path, ".")
	if !ok {
		return nil, nil, fmt.Errorf("%q: want Def.property", path)
	}
	d := defs[def]
	if d == nil || d.Properties == nil || d.Properties.Byname[prop] == nil {
		return nil, nil, fmt.Errorf("%q: no such property in the schemas", path)
	}
	return d, d.Properties.Byname[prop], nil
}

// constEnum applies one overrides.constEnums entry.
func constEnum(defs map[string]*Schema, ov *overrides, key, enum string) error {
	e, ok := ov.Enums[enum]
	if !ok {
		return fmt.Errorf("enum %s is not in the overrides' enums", enum)
	}
	name, prop, hasProp := strings.Cut(key, ".")
	d := defs[name]
	if d == nil {
		return fmt.Errorf("no definition %s", name)
	}
	if !hasProp {
		if len(d.OneOf) == 0 {
			return fmt.Errorf("%s is not a oneOf", name)
		}
		return toEnumRefs(d, enum, e)
	}
	if len(d.OneOf) == 0 {
		_, ps, err := property(defs, key)
		if err != nil {
			return err
		}
		return toEnumRefs(ps, enum, e)
	}
	// A union: the property of every variant, through nested unions.
	var walk func(u *Schema) error
	walk = func(u *Schema) error {
		for _, m := range u.OneOf {
			rn := refName(m.Ref)
			if m.Ref == "" || rn == "" {
				continue
			}
			v := defs[rn]
			if v == nil {
				return fmt.Errorf("union member %s is not defined", m.Ref)
			}
			if len(v.OneOf) > 0 {
				if err := walk(v); err != nil {
					return err
				}
				continue
			}
			ps := v.Properties.propOrNil(prop)
			if ps == nil {
				return fmt.Errorf("variant %s has no property %s", rn, prop)
			}
			if err := toEnumRefs(ps, enum, e); err != nil {
				return fmt.Errorf("variant %s: %w", rn, err)
			}
		}
		return nil
	}
	return walk(d)
}

// toEnumRefs rewrites s, a fixed value (const, a one-value enum, or a oneOf
// of those), into references to the members of enum with those values. A
// schema already rewritten (a definition shared by two unions) is left alone.
func toEnumRefs(s *Schema, enum string, e enumDef) error {
	member := func(v string) (string, error) {
		for _, ev := range e.Values {
			if ev.Value == v {
				return "#/$defs/" + enum + "." + ev.Name, nil
			}
		}
		return "", fmt.Errorf("enum %s has no member with the value %q", enum, v)
	}
	switch {
	case strings.HasPrefix(refName(s.Ref), enum+"."):
		return nil
	case len(s.Const) > 0 || len(s.Enum) == 1:
		v, ok := constString(s)
		if !ok {
			return fmt.Errorf("fixed value %s%s is not a string", s.Const, s.Enum)
		}
		ref, err := member(v)
		if err != nil {
			return err
		}
		*s = Schema{Ref: ref, Description: s.Description}
		return nil
	case len(s.Enum) > 1:
		var members []*Schema
		for _, raw := range s.Enum {
			members = append(members, &Schema{Const: raw})
		}
		*s = Schema{OneOf: members, Description: s.Description}
		return toEnumRefs(s, enum, e)
	case len(s.OneOf) > 0:
		for _, m := range nonEmpty(s.OneOf) {
			if err := toEnumRefs(m, enum, e); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("not a fixed value")
}

// constString returns the string a schema fixes: {"const": "x"} or
// {"enum": ["x"]}.
func constString(s *Schema) (string, bool) {
	raw := s.Const
	if len(raw) == 0 && len(s.Enum) == 1 {
		raw = s.Enum[0]
	}
	var v string
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// checkEnum checks that a schema's definition of an enum, if any, has the
// values the overrides name, no more and no fewer.
func checkEnum(d *Schema, e enumDef) error {
	if d == nil {
		return nil
	}
	if len(d.Enum) == 0 {
		return fmt.Errorf("the schemas define it, but not as an enum")
	}
	var schema, ours []string
	for _, raw := range d.Enum {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("schema value %s is not a string", raw)
		}
		schema = append(schema, v)
	}
	for _, v := range e.Values {
		ours = append(ours, v.Value)
	}
	sort.Strings(schema)
	sort.Strings(ours)
	if !slices.Equal(schema, ours) {
		return fmt.Errorf("the schemas list %q, the overrides %q", schema, ours)
	}
	return nil
}

func (p *Props) propOrNil(name string) *Schema {
	if p == nil {
		return nil
	}
	return p.Byname[name]
}

// clone returns a deep copy of s.
func (s *Schema) clone() *Schema {
	if s == nil {
		return nil
	}
	c := *s
	c.Items = s.Items.clone()
	c.OneOf = cloneAll(s.OneOf)
	c.AnyOf = cloneAll(s.AnyOf)
	c.Required = slices.Clone(s.Required)
	c.Enum = slices.Clone(s.Enum)
	if s.Properties != nil {
		c.Properties = &Props{Names: slices.Clone(s.Properties.Names), Byname: map[string]*Schema{}}
		for n, ps := range s.Properties.Byname {
			c.Properties.Byname[n] = ps.clone()
		}
	}
	return &c
}

func cloneAll(ss []*Schema) []*Schema {
	if ss == nil {
		return nil
	}
	out := make([]*Schema, len(ss))
	for i, s := range ss {
		out[i] = s.clone()
	}
	return out
}

// keepCommonDocs clears the descriptions in s (recursively through
// properties and items) that other, of the same shape, does not share.
func (s *Schema) keepCommonDocs(other *Schema) {
	if s == nil || other == nil {
		return
	}
	if s.Description != other.Description {
		s.Description = ""
	}
	s.Items.keepCommonDocs(other.Items)
	if s.Properties != nil && other.Properties != nil {
		for n, ps := range s.Properties.Byname {
			ps.keepCommonDocs(other.Properties.Byname[n])
		}
	}
}

// shapeKey renders s without its descriptions, as a key for comparing shapes.
func shapeKey(s *Schema) string {
	b, _ := json.Marshal(shapeOf(s))
	return string(b)
}

func shapeOf(s *Schema) any {
	if s == nil {
		return nil
	}
	m := map[string]any{}
	if s.Ref != "" {
		m["$ref"] = s.Ref
	}
	for k, raw := range map[string]json.RawMessage{"type": s.Type, "const": s.Const, "additionalProperties": s.AdditionalProperties} {
		if len(raw) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, raw) != nil {
				buf.Reset()
				buf.Write(raw)
			}
			m[k] = buf.String()
		}
	}
	if len(s.Enum) > 0 {
		m["enum"] = s.Enum
	}
	if len(s.Required) > 0 {
		req := slices.Clone(s.Required)
		sort.Strings(req)
		m["required"] = req
	}
	if s.Items != nil {
		m["items"] = shapeOf(s.Items)
	}
	for k, ms := range map[string][]*Schema{"oneOf": s.OneOf, "anyOf": s.AnyOf} {
		if len(ms) > 0 {
			var out []any
			for _, x := range ms {
				out = append(out, shapeOf(x))
			}
			m[k] = out
		}
	}
	if s.Properties != nil {
		props := map[string]any{}
		for n, ps := range s.Properties.Byname {
			props[n] = shapeOf(ps)
		}
		m["properties"] = props
	}
	return m
}
