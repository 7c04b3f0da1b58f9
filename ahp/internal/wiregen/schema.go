package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Schema is the subset of JSON Schema (draft 2020-12) that the AHP schemas use.
type Schema struct {
	Ref                  string            `json:"$ref"`
	Type                 json.RawMessage   `json:"type"`
	Description          string            `json:"description"`
	Properties           *Props            `json:"properties"`
	Required             []string          `json:"required"`
	Items                *Schema           `json:"items"`
	AdditionalProperties json.RawMessage   `json:"additionalProperties"`
	OneOf                []*Schema         `json:"oneOf"`
	AnyOf                []*Schema         `json:"anyOf"`
	Enum                 []json.RawMessage `json:"enum"`
	Const                json.RawMessage   `json:"const"`
}

// Props is an object's properties in document order; field order in the
// generated structs follows the schema so diffs against the schema stay readable.
type Props struct {
	Names  []string
	Byname map[string]*Schema
}

// UnmarshalJSON decodes the properties object keeping key order.
func (p *Props) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("properties: want an object, got %v", tok)
	}
	p.Byname = map[string]*Schema{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, ok := tok.(string)
		if !ok {
			return fmt.Errorf("properties: want a key, got %v", tok)
		}
		var s Schema
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("property %q: %w", name, err)
		}
		if _, dup := p.Byname[name]; !dup {
			p.Names = append(p.Names, name)
		}
		p.Byname[name] = &s
	}
	_, err = dec.Token()
	return err
}

// typeName returns the JSON Schema "type" keyword (ignoring "null" in a list)
// and whether "null" was listed.
func (s *Schema) typeName() (string, bool) {
	if len(s.Type) == 0 {
		return "", false
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return one, one == "null"
	}
	var many []string
	if json.Unmarshal(s.Type, &many) != nil {
		return "", false
	}
	name, nullable := "", false
	for _, t := range many {
		if t == "null" {
			nullable = true
		} else {
			name = t
		}
	}
	return name, nullable
}

// isEmpty reports whether s is `{}` (any value), ignoring its description.
func (s *Schema) isEmpty() bool {
	return s.Ref == "" && len(s.Type) == 0 && s.Properties == nil && s.Items == nil &&
		len(s.AdditionalProperties) == 0 && len(s.OneOf) == 0 && len(s.AnyOf) == 0 &&
		len(s.Enum) == 0 && len(s.Const) == 0
}

// refName returns the name a "#/$defs/Name" reference points at.
func refName(ref string) string {
	return strings.TrimPrefix(ref, "#/$defs/")
}

// loadSchemas reads every *.schema.json in dir and merges their $defs. The
// files repeat common definitions; a name defined differently in two files is
// an error because we could not tell which one is meant.
func loadSchemas(dir string) (map[string]*Schema, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.schema.json files in %s", dir)
	}
	sort.Strings(files)
	defs := map[string]*Schema{}
	raw := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var rawFile struct {
			Defs map[string]json.RawMessage `json:"$defs"`
		}
		if err := json.Unmarshal(b, &rawFile); err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		for name, r := range rawFile.Defs {
			if prev, ok := raw[name]; ok {
				if !jsonEqual(withoutEmptyRefs(prev), withoutEmptyRefs(r)) {
					return nil, fmt.Errorf("%s: definition %q differs from an earlier file's", f, name)
				}
				continue
			}
			var s Schema
			if err := json.Unmarshal(r, &s); err != nil {
				return nil, fmt.Errorf("%s: definition %q: %w", f, name, err)
			}
			raw[name] = r
			defs[name] = &s
		}
	}
	return defs, nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// withoutEmptyRefs drops the `{"$ref": "#/$defs/"}` members of oneOf and anyOf
// lists: the schema generator emits one for the leading `|` of a multi-line
// TypeScript union in some files and not in others, and it means nothing
// (nonEmpty ignores it when building).
func withoutEmptyRefs(raw []byte) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, sub := range t {
				if k == "oneOf" || k == "anyOf" {
					if list, ok := sub.([]any); ok {
						kept := []any{}
						for _, m := range list {
							if mm, ok := m.(map[string]any); ok && len(mm) == 1 && mm["$ref"] == "#/$defs/" {
								continue
							}
							kept = append(kept, m)
						}
						sub = kept
					}
				}
				t[k] = walk(sub)
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return x
	}
	out, err := json.Marshal(walk(v))
	if err != nil {
		return raw
	}
	return out
}
