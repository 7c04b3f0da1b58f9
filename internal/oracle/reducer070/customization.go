package reducer070

import (
	"encoding/json"
	"slices"

	"github.com/ahp-bridge/ahp-bridge/ahp/v070/wire"
)

// The customization actions address entries by id, searching the top-level
// list first and then the children of every container. A container is a
// plugin or directory, or a variant this package does not know that has a
// "children" array: a newer host may add container kinds, and a client of
// ours must still be able to toggle or remove what they hold. MCP servers are
// never containers.

// customizationChildren returns the children of the container c and a
// function that stores a changed list back into c. ok is false when c is not
// a container or has no children yet.
func customizationChildren(c *wire.Customization) (kids []wire.ChildCustomization, store func([]wire.ChildCustomization), ok bool) {
	switch v := c.Value.(type) {
	case *wire.PluginCustomization:
		if v == nil || v.Children == nil {
			return nil, nil, false
		}
		return v.Children, func(k []wire.ChildCustomization) { v.Children = k }, true
	case *wire.DirectoryCustomization:
		if v == nil || v.Children == nil {
			return nil, nil, false
		}
		return v.Children, func(k []wire.ChildCustomization) { v.Children = k }, true
	case json.RawMessage:
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m["children"] == nil {
			return nil, nil, false
		}
		if err := json.Unmarshal(m["children"], &kids); err != nil || kids == nil {
			return nil, nil, false
		}
		return kids, func(k []wire.ChildCustomization) { c.Value = setRawMember(v, "children", k) }, true
	}
	return nil, nil, false
}

// setRawMember returns the JSON object b with member key set to value, or b
// unchanged when b is not an object or value cannot be encoded. Other
// members keep their bytes (wire.Marshal does not escape HTML), though not
// their order.
func setRawMember(b json.RawMessage, key string, value any) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return b
	}
	v, err := wire.Marshal(value)
	if err != nil {
		return b
	}
	m[key] = v
	out, err := wire.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

// setCustomizationEnabled sets the enabled flag of a top-level entry.
func setCustomizationEnabled(c *wire.Customization, enabled bool) {
	switch v := c.Value.(type) {
	case *wire.PluginCustomization:
		if v != nil {
			v.Enabled = enabled
		}
	case *wire.DirectoryCustomization:
		if v != nil {
			v.Enabled = enabled
		}
	case *wire.McpServerCustomization:
		if v != nil {
			v.Enabled = enabled
		}
	case json.RawMessage:
		c.Value = setRawMember(v, "enabled", enabled)
	}
}

// setChildEnabled sets the enabled flag of a container's child.
func setChildEnabled(c *wire.ChildCustomization, enabled bool) {
	switch v := c.Value.(type) {
	case *wire.AgentCustomization:
		if v != nil {
			v.Enabled = wire.Ptr(enabled)
		}
	case *wire.SkillCustomization:
		if v != nil {
			v.Enabled = wire.Ptr(enabled)
		}
	case *wire.PromptCustomization:
		if v != nil {
			v.Enabled = wire.Ptr(enabled)
		}
	case *wire.RuleCustomization:
		if v != nil {
			v.Enabled = wire.Ptr(enabled)
		}
	case *wire.HookCustomization:
		if v != nil {
			v.Enabled = wire.Ptr(enabled)
		}
	case *wire.McpServerCustomization:
		if v != nil {
			v.Enabled = enabled
		}
	case json.RawMessage:
		c.Value = setRawMember(v, "enabled", enabled)
	}
}

// topCustomization returns the index of the top-level entry id, or -1.
func topCustomization(list []wire.Customization, id string) int {
	for i, c := range list {
		if c.ID() == id {
			return i
		}
	}
	return -1
}

// childCustomization returns the index of the child id in kids, or -1.
func childCustomization(kids []wire.ChildCustomization, id string) int {
	for i, k := range kids {
		if k.ID() == id {
			return i
		}
	}
	return -1
}

// toggleCustomization sets enabled on the entry id: a top-level entry if one
// has the id, else the child of the first container that has it.
func toggleCustomization(s *wire.SessionState, id string, enabled bool) {
	if i := topCustomization(s.Customizations, id); i >= 0 {
		setCustomizationEnabled(&s.Customizations[i], enabled)
		return
	}
	for i := range s.Customizations {
		kids, store, ok := customizationChildren(&s.Customizations[i])
		if !ok {
			continue
		}
		if j := childCustomization(kids, id); j >= 0 {
			setChildEnabled(&kids[j], enabled)
			store(kids)
			return
		}
	}
}

// removeCustomization removes the top-level entry id (with its children) or,
// when no top-level entry has the id, the child id from every container that
// has one.
func removeCustomization(s *wire.SessionState, id string) {
	if i := topCustomization(s.Customizations, id); i >= 0 {
		s.Customizations = slices.Delete(s.Customizations, i, i+1)
		return
	}
	for i := range s.Customizations {
		kids, store, ok := customizationChildren(&s.Customizations[i])
		if !ok {
			continue
		}
		if j := childCustomization(kids, id); j >= 0 {
			store(slices.Delete(kids, j, j+1))
		}
	}
}

// updateMcpServer applies f to the MCP server id: the top-level entry with
// the id, if there is one (and nothing happens when that entry is not an MCP
// server), else every container child with the id that is an MCP server.
func updateMcpServer(s *wire.SessionState, id string, f func(*wire.McpServerCustomization)) {
	if i := topCustomization(s.Customizations, id); i >= 0 {
		if m, ok := s.Customizations[i].Value.(*wire.McpServerCustomization); ok && m != nil {
			f(m)
		}
		return
	}
	for i := range s.Customizations {
		kids, store, ok := customizationChildren(&s.Customizations[i])
		if !ok {
			continue
		}
		j := childCustomization(kids, id)
		if j < 0 {
			continue
		}
		if m, ok := kids[j].Value.(*wire.McpServerCustomization); ok && m != nil {
			f(m)
			store(kids)
		}
	}
}
