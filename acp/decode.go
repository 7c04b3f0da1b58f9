package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ahp-bridge/ahp-bridge/backend"
)

// Update kinds this package understands. Everything else becomes a
// backend.Custom event so nothing an agent says is lost.
const (
	kindUserMessageChunk     = "user_message_chunk"
	kindAgentMessageChunk    = "agent_message_chunk"
	kindAgentThoughtChunk    = "agent_thought_chunk"
	kindToolCall             = "tool_call"
	kindToolCallUpdate       = "tool_call_update"
	kindToolCallContentChunk = "tool_call_content_chunk"
	kindPlan                 = "plan"
	kindAvailableCommands    = "available_commands_update"
	kindCurrentModeUpdate    = "current_mode_update"
	kindConfigOptionUpdate   = "config_option_update"
	kindSessionInfoUpdate    = "session_info_update"
	kindUsageUpdate          = "usage_update"
)

// ModeOptionID is the ConfigOption ID under which a session's ACP modes
// (session/new `modes`, current_mode_update) are reported when the agent
// does not expose a config option with category "mode".
const ModeOptionID = "mode"

// ModelOptionID is the ConfigOption ID under which the models an agent
// reports outside config options (session/new `models`) are reported when
// it does not expose a config option with category "model".
const ModelOptionID = "model"

// DecodeUpdate turns the `update` object of an ACP session/update
// notification into backend events. It works on the raw JSON rather than on
// acp-go-sdk's types so that ACP v2 kinds (tool_call_content_chunk),
// `_`-prefixed custom kinds, statuses and tool kinds survive unchanged.
//
// Unknown and custom kinds become a single backend.Custom event. A
// current_mode_update becomes a ConfigChanged carrying only the mode option
// (ID ModeOptionID, Current set, no Values); the session merges it into its
// full settings before passing it on. The function is pure: it never does
// I/O and never panics on bad input; malformed JSON yields an error.
func DecodeUpdate(raw json.RawMessage) ([]backend.Event, error) {
	_, evs, err := decodeUpdate(raw)
	return evs, err
}

// decodeUpdate is DecodeUpdate that also reports the update's kind.
func decodeUpdate(raw json.RawMessage) (string, []backend.Event, error) {
	if kind, ev, ok := decodeTextChunk(raw); ok {
		return kind, []backend.Event{ev}, nil
	}
	var head struct {
		SessionUpdate *string `json:"sessionUpdate"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "", nil, fmt.Errorf("decoding session update: %w", err)
	}
	if head.SessionUpdate == nil {
		return "", nil, errors.New("session update has no sessionUpdate kind")
	}
	kind := *head.SessionUpdate
	evs, err := decodeKind(kind, raw)
	if err != nil {
		return kind, nil, fmt.Errorf("session update %q: %w", kind, err)
	}
	return kind, evs, nil
}

// decodeTextChunk is the streaming hot path: an agent_message_chunk or
// agent_thought_chunk with a text block, decoded in one pass instead of
// three (kind, content, block). It reports false for anything else, which
// then takes the general path; for what it accepts, the result is the
// event the general path would produce (a text block's other members —
// annotations, _meta — are not carried by TextChunk/ThoughtChunk there
// either).
func decodeTextChunk(raw json.RawMessage) (string, backend.Event, bool) {
	var u struct {
		SessionUpdate string `json:"sessionUpdate"`
		Content       *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &u) != nil || u.Content == nil || u.Content.Type != "text" {
		return "", nil, false
	}
	switch u.SessionUpdate {
	case kindAgentMessageChunk:
		return u.SessionUpdate, backend.TextChunk{Text: u.Content.Text}, true
	case kindAgentThoughtChunk:
		return u.SessionUpdate, backend.ThoughtChunk{Text: u.Content.Text}, true
	}
	return "", nil, false
}

func decodeKind(kind string, raw json.RawMessage) ([]backend.Event, error) {
	switch kind {
	case kindAgentMessageChunk, kindAgentThoughtChunk:
		var u struct {
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		if isNull(u.Content) {
			return nil, errors.New("content is missing")
		}
		blk, err := decodeContentBlock(u.Content)
		if err != nil {
			return nil, err
		}
		if blk.Type == "text" {
			if kind == kindAgentThoughtChunk {
				return []backend.Event{backend.ThoughtChunk{Text: blk.Text}}, nil
			}
			return []backend.Event{backend.TextChunk{Text: blk.Text}}, nil
		}
		return []backend.Event{blk}, nil
	case kindToolCall, kindToolCallUpdate:
		tc, err := decodeToolCall(raw, kind == kindToolCallUpdate)
		if err != nil {
			return nil, err
		}
		return []backend.Event{tc}, nil
	case kindToolCallContentChunk:
		var u struct {
			ToolCallID *string         `json:"toolCallId"`
			Content    json.RawMessage `json:"content"`
			Meta       map[string]any  `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		if u.ToolCallID == nil {
			return nil, errors.New("toolCallId is missing")
		}
		if isNull(u.Content) {
			return nil, errors.New("content is missing")
		}
		c, err := decodeToolContent(u.Content)
		if err != nil {
			return nil, err
		}
		return []backend.Event{backend.ToolCall{
			ID: *u.ToolCallID, Update: true, ContentMode: backend.ContentAppend,
			Content: []backend.ToolContent{c}, Meta: u.Meta,
		}}, nil
	case kindPlan:
		var u struct {
			Entries []struct {
				Content  string `json:"content"`
				Priority string `json:"priority"`
				Status   string `json:"status"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		p := backend.Plan{Entries: make([]backend.PlanEntry, 0, len(u.Entries))}
		for _, e := range u.Entries {
			p.Entries = append(p.Entries, backend.PlanEntry(e))
		}
		return []backend.Event{p}, nil
	case kindAvailableCommands:
		var u struct {
			AvailableCommands []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Input       *struct {
					Hint string `json:"hint"`
				} `json:"input"`
			} `json:"availableCommands"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		cc := backend.CommandsChanged{Commands: make([]backend.Command, 0, len(u.AvailableCommands))}
		for _, c := range u.AvailableCommands {
			cmd := backend.Command{Name: c.Name, Description: c.Description}
			if c.Input != nil {
				cmd.InputHint = c.Input.Hint
			}
			cc.Commands = append(cc.Commands, cmd)
		}
		return []backend.Event{cc}, nil
	case kindCurrentModeUpdate:
		var u struct {
			CurrentModeID *string `json:"currentModeId"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		if u.CurrentModeID == nil {
			return nil, errors.New("currentModeId is missing")
		}
		return []backend.Event{backend.ConfigChanged{Options: []backend.ConfigOption{{
			ID: ModeOptionID, Name: "Mode", Category: "mode", Current: *u.CurrentModeID,
		}}}}, nil
	case kindConfigOptionUpdate:
		var u struct {
			ConfigOptions json.RawMessage `json:"configOptions"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		opts, err := DecodeConfigOptions(u.ConfigOptions)
		if err != nil {
			return nil, err
		}
		return []backend.Event{backend.ConfigChanged{Options: opts}}, nil
	case kindSessionInfoUpdate:
		var u struct {
			Title json.RawMessage `json:"title"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		if u.Title == nil {
			// Only other metadata (updatedAt, _meta) changed.
			return nil, nil
		}
		var title *string
		if err := json.Unmarshal(u.Title, &title); err != nil {
			return nil, fmt.Errorf("title: %w", err)
		}
		if title == nil {
			return []backend.Event{backend.TitleChanged{}}, nil
		}
		return []backend.Event{backend.TitleChanged{Title: *title}}, nil
	case kindUsageUpdate:
		// The context window (tokens the conversation occupies, the
		// window's size) and the session's cost: not tokens a turn spent.
		// claude-agent-acp sends `used: null` at times: a figure it does
		// not know, left out without a word.
		var u struct {
			Used *float64 `json:"used"`
			Size *float64 `json:"size"`
			Cost *struct {
				Amount   *float64 `json:"amount"`
				Currency string   `json:"currency"`
			} `json:"cost"`
			Meta map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, err
		}
		cu := backend.ContextUsage{Used: tokenCount(u.Used), Size: tokenCount(u.Size), Meta: u.Meta}
		if u.Cost != nil && u.Cost.Amount != nil {
			cu.Cost = &backend.Cost{Amount: *u.Cost.Amount, Currency: u.Cost.Currency}
		}
		if cu.Used == nil && cu.Size == nil && cu.Cost == nil {
			return nil, nil
		}
		return []backend.Event{cu}, nil
	default:
		// user_message_chunk (replayed user input), unstable plan_update /
		// plan_removed, `_`-custom kinds and future kinds.
		return []backend.Event{backend.Custom{Kind: kind, Raw: cloneRaw(raw)}}, nil
	}
}

// decodeContentBlock decodes an ACP ContentBlock. Text blocks come back
// with Type "text" and Text set.
func decodeContentBlock(raw json.RawMessage) (backend.ContentBlock, error) {
	var b struct {
		Type     *string `json:"type"`
		Text     string  `json:"text"`
		Data     string  `json:"data"`
		MimeType *string `json:"mimeType"`
		URI      *string `json:"uri"`
		Name     string  `json:"name"`
		Resource *struct {
			URI      string  `json:"uri"`
			MimeType *string `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return backend.ContentBlock{}, fmt.Errorf("content block: %w", err)
	}
	if b.Type == nil {
		return backend.ContentBlock{}, errors.New("content block has no type")
	}
	out := backend.ContentBlock{Type: *b.Type, Raw: cloneRaw(raw), Name: b.Name}
	if b.MimeType != nil {
		out.MimeType = *b.MimeType
	}
	if b.URI != nil {
		out.URI = *b.URI
	}
	switch *b.Type {
	case "text":
		out.Text = b.Text
		out.Raw = nil
	case "image", "audio":
		out.Data = b.Data
	case "resource":
		if b.Resource != nil {
			out.URI = b.Resource.URI
			if b.Resource.MimeType != nil {
				out.MimeType = *b.Resource.MimeType
			}
			if b.Resource.Text != nil {
				out.Text = *b.Resource.Text
			}
			if b.Resource.Blob != nil {
				out.Data = *b.Resource.Blob
			}
		}
	}
	return out, nil
}

// decodeToolCall decodes a tool_call, a tool_call_update, or the toolCall of
// a session/request_permission request.
func decodeToolCall(raw json.RawMessage, update bool) (backend.ToolCall, error) {
	var u struct {
		ToolCallID *string         `json:"toolCallId"`
		Title      *string         `json:"title"`
		Kind       *string         `json:"kind"`
		Status     *string         `json:"status"`
		Content    json.RawMessage `json:"content"`
		Locations  []struct {
			Path string `json:"path"`
			Line *int   `json:"line"`
		} `json:"locations"`
		RawInput  json.RawMessage `json:"rawInput"`
		RawOutput json.RawMessage `json:"rawOutput"`
		Meta      map[string]any  `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return backend.ToolCall{}, err
	}
	if u.ToolCallID == nil {
		return backend.ToolCall{}, errors.New("toolCallId is missing")
	}
	tc := backend.ToolCall{ID: *u.ToolCallID, Update: update, Meta: u.Meta}
	if u.Title != nil {
		tc.Title = *u.Title
	}
	if u.Kind != nil {
		tc.Kind = *u.Kind
	}
	if u.Status != nil {
		tc.Status = backend.ToolStatus(*u.Status)
	} else if !update {
		// ACP: a new tool call's status defaults to pending.
		tc.Status = backend.ToolPending
	}
	if !isNull(u.RawInput) && !isEmptyObject(u.RawInput) {
		// claude-code-acp reports a call as the model starts it, with the
		// input `{}` that is still to stream: that says nothing.
		tc.RawInput = cloneRaw(u.RawInput)
	}
	if !isNull(u.RawOutput) {
		tc.RawOutput = cloneRaw(u.RawOutput)
	}
	if u.Locations != nil {
		// Present and empty clears the locations; absent leaves them.
		tc.Locations = make([]backend.Location, 0, len(u.Locations))
		for _, l := range u.Locations {
			tc.Locations = append(tc.Locations, backend.Location(l))
		}
	}
	switch {
	case u.Content == nil:
		// Absent: the content stays as it is.
		tc.ContentMode = backend.ContentUnchanged
	case isNull(u.Content):
		// null clears the content.
		tc.ContentMode = backend.ContentReplace
		tc.Content = []backend.ToolContent{}
	default:
		var items []json.RawMessage
		if err := json.Unmarshal(u.Content, &items); err != nil {
			return backend.ToolCall{}, fmt.Errorf("content: %w", err)
		}
		tc.ContentMode = backend.ContentReplace
		tc.Content = make([]backend.ToolContent, 0, len(items))
		for i, it := range items {
			c, err := decodeToolContent(it)
			if err != nil {
				return backend.ToolCall{}, fmt.Errorf("content[%d]: %w", i, err)
			}
			tc.Content = append(tc.Content, c)
		}
	}
	return tc, nil
}

// decodeToolContent decodes one ToolCallContent item. Unknown types keep
// their JSON in Raw.
func decodeToolContent(raw json.RawMessage) (backend.ToolContent, error) {
	var c struct {
		Type       *string         `json:"type"`
		Content    json.RawMessage `json:"content"`
		Path       string          `json:"path"`
		OldText    *string         `json:"oldText"`
		NewText    string          `json:"newText"`
		TerminalID string          `json:"terminalId"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return backend.ToolContent{}, fmt.Errorf("tool call content: %w", err)
	}
	if c.Type == nil {
		return backend.ToolContent{}, errors.New("tool call content has no type")
	}
	out := backend.ToolContent{Type: *c.Type, Raw: cloneRaw(raw)}
	switch *c.Type {
	case "content":
		if isNull(c.Content) {
			return backend.ToolContent{}, errors.New("tool call content has no content block")
		}
		blk, err := decodeContentBlock(c.Content)
		if err != nil {
			return backend.ToolContent{}, err
		}
		if blk.Type == "text" {
			out.Text = blk.Text
		} else {
			out.Block = &blk
		}
	case "diff":
		out.Path = c.Path
		out.OldText = c.OldText
		out.NewText = c.NewText
	case "terminal":
		out.TerminalID = c.TerminalID
	}
	return out, nil
}

// DecodeConfigOptions decodes an ACP `configOptions` array (from
// session/new, session/set_config_option or config_option_update). Select
// options keep their values (grouped values are flattened); boolean options
// get the values "true" and "false". A missing or null array yields no
// options.
func DecodeConfigOptions(raw json.RawMessage) ([]backend.ConfigOption, error) {
	if isNull(raw) {
		return []backend.ConfigOption{}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("configOptions: %w", err)
	}
	out := make([]backend.ConfigOption, 0, len(items))
	for i, it := range items {
		o, err := decodeConfigOption(it)
		if err != nil {
			return nil, fmt.Errorf("configOptions[%d]: %w", i, err)
		}
		out = append(out, o)
	}
	return out, nil
}

type configValue struct {
	Value       string          `json:"value"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Group       *string         `json:"group"`
	Options     json.RawMessage `json:"options"`
}

func decodeConfigOption(raw json.RawMessage) (backend.ConfigOption, error) {
	var o struct {
		ID           *string         `json:"id"`
		Name         string          `json:"name"`
		Description  *string         `json:"description"`
		Category     *string         `json:"category"`
		Type         string          `json:"type"`
		CurrentValue json.RawMessage `json:"currentValue"`
		Options      json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return backend.ConfigOption{}, err
	}
	if o.ID == nil {
		return backend.ConfigOption{}, errors.New("config option has no id")
	}
	out := backend.ConfigOption{ID: *o.ID, Name: o.Name}
	if o.Description != nil {
		out.Description = *o.Description
	}
	if o.Category != nil {
		out.Category = *o.Category
	}
	out.Current = scalarString(o.CurrentValue)
	switch o.Type {
	case "boolean":
		out.Values = []backend.ConfigValue{{ID: "true", Name: "On"}, {ID: "false", Name: "Off"}}
	default:
		vals, err := decodeConfigValues(o.Options, 0)
		if err != nil {
			return backend.ConfigOption{}, err
		}
		out.Values = vals
	}
	return out, nil
}

// decodeConfigValues flattens ungrouped and grouped select values.
func decodeConfigValues(raw json.RawMessage, depth int) ([]backend.ConfigValue, error) {
	if isNull(raw) {
		return nil, nil
	}
	if depth > 1 {
		return nil, errors.New("config values nested too deep")
	}
	var items []configValue
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	var out []backend.ConfigValue
	for _, v := range items {
		if v.Group != nil {
			sub, err := decodeConfigValues(v.Options, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		cv := backend.ConfigValue{ID: v.Value, Name: v.Name}
		if v.Description != nil {
			cv.Description = *v.Description
		}
		out = append(out, cv)
	}
	return out, nil
}

// DecodeModes decodes an ACP SessionModeState (`modes` of session/new) into
// a config option with ID ModeOptionID and category "mode". A missing or
// null value yields nil.
func DecodeModes(raw json.RawMessage) (*backend.ConfigOption, error) {
	if isNull(raw) {
		return nil, nil
	}
	var m struct {
		CurrentModeID  string `json:"currentModeId"`
		AvailableModes []struct {
			ID          string  `json:"id"`
			Name        string  `json:"name"`
			Description *string `json:"description"`
		} `json:"availableModes"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("modes: %w", err)
	}
	o := &backend.ConfigOption{ID: ModeOptionID, Name: "Mode", Category: "mode", Current: m.CurrentModeID}
	for _, am := range m.AvailableModes {
		v := backend.ConfigValue{ID: am.ID, Name: am.Name}
		if am.Description != nil {
			v.Description = *am.Description
		}
		o.Values = append(o.Values, v)
	}
	return o, nil
}

// DecodeModels decodes the `models` of a session/new result, which
// claude-code-acp and claude-agent-acp send outside the ACP schema
// ({availableModels: [{modelId, name, description}], currentModelId}),
// into a config option with ID ModelOptionID and category "model". A
// missing or null value yields nil.
func DecodeModels(raw json.RawMessage) (*backend.ConfigOption, error) {
	if isNull(raw) {
		return nil, nil
	}
	var m struct {
		CurrentModelID  string `json:"currentModelId"`
		AvailableModels []struct {
			ModelID     string  `json:"modelId"`
			Name        string  `json:"name"`
			Description *string `json:"description"`
		} `json:"availableModels"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	o := &backend.ConfigOption{ID: ModelOptionID, Name: "Model", Category: "model", Current: m.CurrentModelID}
	for _, am := range m.AvailableModels {
		v := backend.ConfigValue{ID: am.ModelID, Name: am.Name}
		if v.Name == "" {
			v.Name = am.ModelID
		}
		if am.Description != nil {
			v.Description = *am.Description
		}
		o.Values = append(o.Values, v)
	}
	return o, nil
}

// DecodePromptUsage decodes the `usage` of a session/prompt result (ACP,
// unstable: inputTokens, outputTokens, cachedReadTokens,
// cachedWriteTokens, thoughtTokens, totalTokens). Only counts the agent
// sent are set and marked in Reported; a missing or null value, or one
// without any count, yields nil.
func DecodePromptUsage(raw json.RawMessage) (*backend.Usage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var u struct {
		InputTokens       *float64 `json:"inputTokens"`
		OutputTokens      *float64 `json:"outputTokens"`
		CachedReadTokens  *float64 `json:"cachedReadTokens"`
		CachedWriteTokens *float64 `json:"cachedWriteTokens"`
		ThoughtTokens     *float64 `json:"thoughtTokens"`
		TotalTokens       *float64 `json:"totalTokens"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	out := &backend.Usage{}
	for _, f := range []struct {
		v    *float64
		dst  *int64
		flag backend.UsageFields
	}{
		{u.InputTokens, &out.InputTokens, backend.UsageInput},
		{u.OutputTokens, &out.OutputTokens, backend.UsageOutput},
		{u.CachedReadTokens, &out.CachedInputTokens, backend.UsageCacheRead},
		{u.CachedWriteTokens, &out.CacheWriteTokens, backend.UsageCacheWrite},
		{u.ThoughtTokens, &out.ThoughtTokens, backend.UsageThought},
		{u.TotalTokens, &out.TotalTokens, backend.UsageTotal},
	} {
		if n := tokenCount(f.v); n != nil {
			*f.dst = *n
			out.Reported |= f.flag
		}
	}
	if out.Reported == 0 {
		return nil, nil
	}
	return out, nil
}

// DecodeQuotaUsage decodes the token counts Gemini CLI puts in its prompt
// result's `_meta.quota` instead of `usage` (acpSession.ts:
// {token_count: {input_tokens, output_tokens}, model_usage: [{model,
// token_count}]}). The model is set when the turn used exactly one. A
// missing or unreadable quota, or one without counts, yields nil.
func DecodeQuotaUsage(raw json.RawMessage) *backend.Usage {
	if isNull(raw) {
		return nil
	}
	type counts struct {
		InputTokens  *float64 `json:"input_tokens"`
		OutputTokens *float64 `json:"output_tokens"`
	}
	var q struct {
		TokenCount *counts `json:"token_count"`
		ModelUsage []struct {
			Model string `json:"model"`
		} `json:"model_usage"`
	}
	if json.Unmarshal(raw, &q) != nil || q.TokenCount == nil {
		return nil
	}
	out := &backend.Usage{}
	if n := tokenCount(q.TokenCount.InputTokens); n != nil {
		out.InputTokens, out.Reported = *n, out.Reported|backend.UsageInput
	}
	if n := tokenCount(q.TokenCount.OutputTokens); n != nil {
		out.OutputTokens, out.Reported = *n, out.Reported|backend.UsageOutput
	}
	if out.Reported == 0 {
		return nil
	}
	if len(q.ModelUsage) == 1 {
		out.Model = q.ModelUsage[0].Model
	}
	return out
}

// tokenCount turns a JSON number into a count of tokens. Agents written in
// JavaScript may send any number, so fractions are cut and negative or
// absurd values dropped rather than shown.
func tokenCount(v *float64) *int64 {
	if v == nil || *v < 0 || *v > 1e15 {
		return nil
	}
	n := int64(*v)
	return &n
}

// scalarString renders a JSON string, bool or number as a string.
func scalarString(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b)
	}
	return string(bytes.TrimSpace(raw))
}

// isEmptyObject reports whether raw is the JSON object {}.
func isEmptyObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return false
	}
	return len(bytes.TrimSpace(t[1:len(t)-1])) == 0
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func cloneRaw(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	return append(json.RawMessage(nil), bytes.TrimSpace(raw)...)
}
