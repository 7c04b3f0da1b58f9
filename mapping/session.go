package mapping

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
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
			prop.Enum = make([]wire.JsonPrimitive, 0, len(o.Values))
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
	if params.Offset < 0 || params.Offset > int64(len(units)) {
		return nil
	}
	offset := int(params.Offset)
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
		items = append(items, commandItem(c.Name, int64(start), int64(offset), meta))
	}
	return items
}

// OnSession reports whether an action this package produced belongs on the
// session channel (session/*: title, settings, _meta) rather than on the
// chat whose turn produced it (chat/*: everything in the turn).
func OnSession(a wire.StateAction) bool {
	return strings.HasPrefix(a.Type(), "session/")
}

// CurrentModel is the model an agent session runs, as its settings say:
// the current value of the option with id "model", else of the first
// option of category "model"; "" when it reports none.
func CurrentModel(opts []backend.ConfigOption) string {
	for _, o := range opts {
		if o.ID == "model" {
			return o.Current
		}
	}
	for _, o := range opts {
		if o.Category == "model" {
			return o.Current
		}
	}
	return ""
}

// TurnModel is the model a turn asks for: its message's model, else the
// model of the chat's draft (AHP 0.3.0 clients choose a model with
// session/modelChanged, which reaches the host as a draft), else "" (the
// agent session's current model).
func TurnModel(msg wire.Message, draft *wire.Message) string {
	if msg.Model != nil && msg.Model.ID != "" {
		return msg.Model.ID
	}
	if draft != nil && draft.Model != nil {
		return draft.Model.ID
	}
	return ""
}

// ConfigChange is one agent setting a turn asks for.
type ConfigChange struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// TurnModelConfig is the model configuration a turn asks for
// (message.model.config, VS Code's per-model picker values such as a
// reasoning effort) as changes of the agent session's settings: each key
// that names one of the agent's settings (opts) other than the model
// itself, whose value differs from the current one, in key order. Keys the
// agent does not have are left out (a client may send a configuration of
// its own); numbers and booleans are given as their JSON text.
func TurnModelConfig(msg wire.Message, opts []backend.ConfigOption) []ConfigChange {
	if msg.Model == nil || len(msg.Model.Config) == 0 {
		return nil
	}
	keys := make([]string, 0, len(msg.Model.Config))
	for k := range msg.Model.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []ConfigChange
	for _, k := range keys {
		var opt *backend.ConfigOption
		for i := range opts {
			if opts[i].ID == k {
				opt = &opts[i]
				break
			}
		}
		if opt == nil || opt.ID == "model" || opt.Category == "model" {
			continue
		}
		var v string
		switch x := msg.Model.Config[k].(type) {
		case string:
			v = x
		case nil:
			continue
		default:
			b, err := json.Marshal(x)
			if err != nil {
				continue
			}
			v = string(b)
		}
		if v == "" || v == opt.Current {
			continue
		}
		out = append(out, ConfigChange{Key: k, Value: v})
	}
	return out
}

// WorkingDirectory is the local directory an agent session of a chat
// works in: the first of the chat's working directories, else the first
// of its session's (AHP lists them as file URIs; plain absolute paths are
// accepted too). It is "" when neither has one (the bridge then uses its
// own), and an error for a URI that does not name a local directory.
func WorkingDirectory(session, chat []string) (string, error) {
	dirs := chat
	if len(dirs) == 0 {
		dirs = session
	}
	if len(dirs) == 0 || dirs[0] == "" {
		return "", nil
	}
	s := dirs[0]
	if strings.HasPrefix(s, "file:") {
		u, err := url.Parse(s)
		if err != nil {
			return "", fmt.Errorf("working directory %q is not a valid file URI: %w", s, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("working directory %q is on host %q; this bridge only reaches its own file system", s, u.Host)
		}
		s = u.Path
	} else if strings.Contains(s, "://") {
		return "", fmt.Errorf("working directory %q is not a file URI or an absolute path", s)
	}
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("working directory %q must be an absolute path or a file URI", dirs[0])
	}
	return s, nil
}

// ContextWindow returns the session/metaChanged action that records a
// chat's context window and cost (backend.ContextUsage) under
// MetaContextWindow of the session's `_meta`, and the new `_meta`. Only the
// fields the update carries change: an agent that reports the cost alone
// (or `used: null`) leaves the other figures as they were. An update that
// carries nothing, or changes nothing, gives no action.
func ContextWindow(meta map[string]any, chat string, cu backend.ContextUsage) ([]wire.StateAction, map[string]any) {
	if cu.Used == nil && cu.Size == nil && cu.Cost == nil && len(cu.Meta) == 0 {
		return nil, meta
	}
	next := maps.Clone(meta)
	if next == nil {
		next = map[string]any{}
	}
	all, _ := next[MetaContextWindow].(map[string]any)
	all = maps.Clone(all)
	if all == nil {
		all = map[string]any{}
	}
	cw, _ := all[chat].(map[string]any)
	cw = maps.Clone(cw)
	if cw == nil {
		cw = map[string]any{}
	}
	if cu.Used != nil {
		cw["used"] = *cu.Used
	}
	if cu.Size != nil {
		cw["size"] = *cu.Size
	}
	if cu.Cost != nil {
		cost := map[string]any{"amount": cu.Cost.Amount}
		if cu.Cost.Currency != "" {
			cost["currency"] = cu.Cost.Currency
		}
		cw["cost"] = cost
	}
	if len(cu.Meta) > 0 {
		cw["_meta"] = maps.Clone(cu.Meta)
	}
	if prev, ok := all[chat]; ok && metaKey(map[string]any{"w": prev}) == metaKey(map[string]any{"w": cw}) {
		// The same figures again (codex-acp repeats its usage_update two
		// or three times a turn): session/metaChanged replaces the whole
		// `_meta`, the settings schema included, so nothing is sent.
		return nil, meta
	}
	all[chat] = cw
	next[MetaContextWindow] = all
	return []wire.StateAction{metaChangedAction(next)}, next
}

// ConfigSchema returns the session/metaChanged action that records the
// config schema of the agent's settings under MetaConfigSchema of the
// session's `_meta`, and the new `_meta`; no action when it is unchanged.
//
// The properties have no `default` here: the current values are the
// session's config values, and a change of value alone does not change
// the schema.
func ConfigSchema(meta map[string]any, opts []backend.ConfigOption) ([]wire.StateAction, map[string]any) {
	sc := SessionConfig(opts).Schema
	for k, p := range sc.Properties {
		p.Default = nil
		sc.Properties[k] = p
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, meta
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, meta
	}
	// The bridge keeps the schema it sent as its JSON, not as the decoded
	// tree of maps: it is compared, and sent again, only encoded, and the
	// tree would cost every session a few KiB more (issue 17: idle
	// memory; the host's state holds its own decoded copy). Encoding the
	// tree gives the bytes a map gives (keys sorted), so what clients see
	// is unchanged.
	enc, err := json.Marshal(tree)
	if err != nil {
		return nil, meta
	}
	schema := json.RawMessage(enc)
	if metaKey(map[string]any{"s": meta[MetaConfigSchema]}) == metaKey(map[string]any{"s": schema}) {
		return nil, meta
	}
	next := maps.Clone(meta)
	if next == nil {
		next = map[string]any{}
	}
	next[MetaConfigSchema] = schema
	return []wire.StateAction{metaChangedAction(next)}, next
}

// ConfigRejected returns the session/metaChanged action that records a
// setting the agent refused under MetaConfigRejected of the session's
// `_meta`, and the new `_meta`.
func ConfigRejected(meta map[string]any, key, value string, err error) ([]wire.StateAction, map[string]any) {
	next := maps.Clone(meta)
	if next == nil {
		next = map[string]any{}
	}
	next[MetaConfigRejected] = map[string]any{"key": key, "value": value, "message": err.Error()}
	return []wire.StateAction{metaChangedAction(next)}, next
}

// ConfigValues returns the session/configChanged action that sets the
// session's config values to those of the agent's settings, replacing
// them: used to restore what the agent runs after it refused a change a
// client had made.
func ConfigValues(opts []backend.ConfigOption) wire.StateAction {
	return configChangedAction(SessionConfig(opts).Values)
}

// Notice is a system notification part for the turn turnID: something the
// user must know that the agent did not say (a setting it refused).
func Notice(turnID, markdown string) wire.StateAction {
	return responsePartAction(turnID, systemNotificationPart(markdown))
}
