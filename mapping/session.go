package mapping

import (
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/ahp-bridge/ahp-bridge/ahp/v030/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// SessionConfig describes the backend's session settings as AHP session
// config: one string property per option (key = option id) whose enum lists
// the option's values, and the current values.
func SessionConfig(opts []backend.ConfigOption) wire.SessionConfigState {
	st := wire.SessionConfigState{
		Schema: wire.SessionConfigSchema{Type: "object", Properties: map[string]wire.SessionConfigPropertySchema{}},
		Values: map[string]any{},
	}
	for _, o := range opts {
		if o.ID == "" {
			continue
		}
		prop := wire.SessionConfigPropertySchema{
			Type:           "string",
			Title:          orDefault(o.Name, o.ID),
			SessionMutable: wire.Ptr(true),
		}
		if o.Description != "" {
			prop.Description = wire.Ptr(o.Description)
		}
		if len(o.Values) > 0 {
			prop.Enum = make([]string, 0, len(o.Values))
			prop.EnumLabels = make([]string, 0, len(o.Values))
			descs := make([]string, 0, len(o.Values))
			anyDesc := false
			for _, v := range o.Values {
				prop.Enum = append(prop.Enum, v.ID)
				prop.EnumLabels = append(prop.EnumLabels, orDefault(v.Name, v.ID))
				descs = append(descs, v.Description)
				anyDesc = anyDesc || v.Description != ""
			}
			if anyDesc {
				prop.EnumDescriptions = descs
			}
		}
		if o.Current != "" {
			prop.Default = o.Current
			st.Values[o.ID] = o.Current
		}
		st.Schema.Properties[o.ID] = prop
	}
	return st
}

// CompletionItems offers the backend's slash commands for a `completions`
// request: when the word at the cursor is at the start of the message and
// begins with "/", every command whose name starts with the rest of it
// (case-insensitively). Accepting an item replaces the word with
// "/name " and attaches a simple attachment naming the command (no model
// representation, since the command is already in the text).
func CompletionItems(cmds []backend.Command, params wire.CompletionsParams) []wire.CompletionItem {
	if params.Kind != wire.CompletionItemKindUserMessage {
		return nil
	}
	units := utf16.Encode([]rune(params.Text))
	offset := int(params.Offset)
	if offset < 0 || offset > len(units) {
		return nil
	}
	before := string(utf16.Decode(units[:offset]))
	trimmed := strings.TrimLeftFunc(before, unicode.IsSpace)
	if !strings.HasPrefix(trimmed, "/") || strings.ContainsFunc(trimmed, unicode.IsSpace) {
		return nil
	}
	start := offset - len(utf16.Encode([]rune(trimmed)))
	prefix := strings.ToLower(trimmed[1:])
	var items []wire.CompletionItem
	for _, c := range cmds {
		if c.Name == "" || !strings.HasPrefix(strings.ToLower(c.Name), prefix) {
			continue
		}
		meta := map[string]any{"command": c.Name}
		if c.Description != "" {
			meta["description"] = c.Description
		}
		if c.InputHint != "" {
			meta["inputHint"] = c.InputHint
		}
		items = append(items, commandItem(c.Name, start, offset, meta))
	}
	return items
}
