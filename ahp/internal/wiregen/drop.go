package main

import (
	"fmt"
	"slices"
	"strings"
)

// drop applies overrides.drop to the merged definitions: properties first,
// then definitions, then the union members that referred to a dropped
// definition. It fails for an entry that names nothing (a stale entry must
// not pass silently) and for any other reference left to a dropped
// definition, which would otherwise surface later as a confusing "not
// defined" error, or not at all when the reference sits in raw JSON.
func drop(defs map[string]*Schema, entries []string) error {
	dropped := map[string]bool{}
	for _, e := range entries {
		def, prop, isProp := strings.Cut(e, ".")
		if !isProp {
			if defs[def] == nil {
				return fmt.Errorf("overrides drop %q: no such definition in the schemas", e)
			}
			dropped[def] = true
			continue
		}
		d := defs[def]
		if d == nil || d.Properties == nil || d.Properties.Byname[prop] == nil {
			return fmt.Errorf("overrides drop %q: no such property in the schemas", e)
		}
		delete(d.Properties.Byname, prop)
		d.Properties.Names = slices.DeleteFunc(d.Properties.Names, func(n string) bool { return n == prop })
		d.Required = slices.DeleteFunc(d.Required, func(n string) bool { return n == prop })
	}
	for name := range dropped {
		delete(defs, name)
	}
	if len(dropped) == 0 {
		return nil
	}
	isDropped := func(ref string) bool { return ref != "" && dropped[refName(ref)] }
	var prune func(s *Schema)
	prune = func(s *Schema) {
		if s == nil {
			return
		}
		s.OneOf = slices.DeleteFunc(s.OneOf, func(m *Schema) bool { return isDropped(m.Ref) })
		s.AnyOf = slices.DeleteFunc(s.AnyOf, func(m *Schema) bool { return isDropped(m.Ref) })
		for _, m := range s.OneOf {
			prune(m)
		}
		for _, m := range s.AnyOf {
			prune(m)
		}
		prune(s.Items)
		if s.Properties != nil {
			for _, ps := range s.Properties.Byname {
				prune(ps)
			}
		}
	}
	for _, name := range sortedKeys(defs) {
		prune(defs[name])
	}
	for _, name := range sortedKeys(defs) {
		if ref := danglingRef(defs[name], dropped); ref != "" {
			return fmt.Errorf("overrides drop: %s still refers to the dropped %s; drop that property too", name, ref)
		}
	}
	return nil
}

// danglingRef returns the first dropped definition s still refers to, or "".
func danglingRef(s *Schema, dropped map[string]bool) string {
	if s == nil {
		return ""
	}
	if dropped[refName(s.Ref)] {
		return refName(s.Ref)
	}
	for _, name := range sortedKeys(dropped) {
		// additionalProperties is kept as raw JSON.
		if strings.Contains(string(s.AdditionalProperties), `"#/$defs/`+name+`"`) {
			return name
		}
	}
	subs := append(append([]*Schema{s.Items}, s.OneOf...), s.AnyOf...)
	if s.Properties != nil {
		for _, n := range s.Properties.Names {
			subs = append(subs, s.Properties.Byname[n])
		}
	}
	for _, sub := range subs {
		if ref := danglingRef(sub, dropped); ref != "" {
			return ref
		}
	}
	return ""
}
