package reducer030

import (
	"encoding/json"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
)

// customizationID returns the id of a top-level customization.
func customizationID(c wire.Customization) string {
	switch v := c.Value.(type) {
	case *wire.PluginCustomization:
		if v != nil {
			return v.ID
		}
	case *wire.DirectoryCustomization:
		if v != nil {
			return v.ID
		}
	case *wire.McpServerCustomization:
		if v != nil {
			return v.ID
		}
	case json.RawMessage:
		id, _ := rawString(v, "id")
		return id
	}
	return ""
}

// childID returns the id of a child customization.
func childID(c wire.ChildCustomization) string {
	switch v := c.Value.(type) {
	case *wire.AgentCustomization:
		if v != nil {
			return v.ID
		}
	case *wire.SkillCustomization:
		if v != nil {
			return v.ID
		}
	case *wire.PromptCustomization:
		if v != nil {
			return v.ID
		}
	case *wire.RuleCustomization:
		if v != nil {
			return v.ID
		}
	case *wire.HookCustomization:
		if v != nil {
			return v.ID
		}
	case *wire.McpServerCustomization:
		if v != nil {
			return v.ID
		}
	case json.RawMessage:
		id, _ := rawString(v, "id")
		return id
	}
	return ""
}

// children returns a pointer to the children list of a container
// customization, or nil for MCP servers and unknown variants.
func children(c wire.Customization) *[]wire.ChildCustomization {
	switch v := c.Value.(type) {
	case *wire.PluginCustomization:
		if v != nil {
			return &v.Children
		}
	case *wire.DirectoryCustomization:
		if v != nil {
			return &v.Children
		}
	}
	return nil
}

// patchRaw sets member key of the raw JSON object b, returning b unchanged
// when it is not an object.
func patchRaw(b json.RawMessage, key string, value any) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return b
	}
	v, err := json.Marshal(value)
	if err != nil {
		return b
	}
	m[key] = v
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

// toggleCustomization sets enabled on the top-level customization id.
func toggleCustomization(s *wire.SessionState, id string, enabled bool) {
	for i, c := range s.Customizations {
		if customizationID(c) != id {
			continue
		}
		switch v := c.Value.(type) {
		case *wire.PluginCustomization:
			v.Enabled = enabled
		case *wire.DirectoryCustomization:
			v.Enabled = enabled
		case *wire.McpServerCustomization:
			v.Enabled = enabled
		case json.RawMessage:
			s.Customizations[i].Value = patchRaw(v, "enabled", enabled)
		}
		return
	}
}

// removeCustomization removes the top-level customization id or, failing
// that, the child id of a container.
func removeCustomization(s *wire.SessionState, id string) {
	for i, c := range s.Customizations {
		if customizationID(c) == id {
			s.Customizations = append(s.Customizations[:i:i], s.Customizations[i+1:]...)
			return
		}
	}
	for _, c := range s.Customizations {
		kids := children(c)
		if kids == nil {
			continue
		}
		for j, k := range *kids {
			if childID(k) == id {
				*kids = append((*kids)[:j:j], (*kids)[j+1:]...)
				break
			}
		}
	}
}

// setMcpServerState updates the state and channel of the MCP server id,
// top-level or a container's child.
func setMcpServerState(s *wire.SessionState, a *wire.SessionMcpServerStateChangedAction) {
	set := func(m *wire.McpServerCustomization) {
		m.State = clone(a.State)
		m.Channel = clone(a.Channel)
	}
	for _, c := range s.Customizations {
		if customizationID(c) == a.ID {
			if m, ok := c.Value.(*wire.McpServerCustomization); ok && m != nil {
				set(m)
			}
			return
		}
	}
	for _, c := range s.Customizations {
		kids := children(c)
		if kids == nil {
			continue
		}
		for _, k := range *kids {
			if childID(k) != a.ID {
				continue
			}
			if m, ok := k.Value.(*wire.McpServerCustomization); ok && m != nil {
				set(m)
			}
			break
		}
	}
}
