package mapping

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// ResourceScheme is the URI scheme of the resources a Turn publishes (diff
// texts, images): `ahp-bridge:/<turn>/<toolcall>/<n>/old|new` and
// `ahp-bridge:/<turn>/content/<n>` (segments path-escaped). The bridge
// answers resourceRead for them from Turn.Resource.
const ResourceScheme = "ahp-bridge"

// TerminalChannel is the AHP terminal channel URI of a backend terminal.
func TerminalChannel(terminalID string) string {
	return "ahp-terminal:/" + pathSeg(terminalID)
}

// pathSeg escapes an id for use as one URI path segment.
func pathSeg(s string) string { return url.PathEscape(s) }

// DiffURI is the URI under which a Turn publishes one side ("old" or "new")
// of the n-th content item of a tool call.
func DiffURI(turnID, toolCallID string, n int, side string) string {
	return fmt.Sprintf("%s:/%s/%s/%d/%s", ResourceScheme, pathSeg(turnID), pathSeg(toolCallID), n, side)
}

// FileURI turns a backend path into a file URI (paths that already are
// URIs are kept).
func FileURI(path string) string {
	if strings.Contains(path, "://") {
		return path
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	return u.String()
}

// toolContent converts a tool call's content to AHP, publishing diff texts.
func (t *Turn) toolContent(ts *toolState) []wire.ToolResultContent {
	if len(ts.content) == 0 {
		return nil
	}
	out := make([]wire.ToolResultContent, 0, len(ts.content))
	for i, c := range ts.content {
		out = append(out, t.convertContent(ts, i, c)...)
	}
	return out
}

// convertContent converts one ACP tool-call content item: text → text;
// other blocks → embedded or referenced resources; diff → fileEdit plus a
// text summary; terminal → terminal content (with the exit code once the
// terminal has exited); anything else → its JSON as text, so it is never
// lost.
func (t *Turn) convertContent(ts *toolState, n int, c backend.ToolContent) []wire.ToolResultContent {
	switch c.Type {
	case "content":
		if c.Block == nil {
			return []wire.ToolResultContent{textContent(c.Text)}
		}
		return []wire.ToolResultContent{blockContent(*c.Block)}
	case "diff":
		edit, added, removed := t.fileEdit(ts, n, c)
		return []wire.ToolResultContent{fileEditContent(edit), textContent(diffSummary(c, added, removed))}
	case "terminal":
		var exit *int64
		if code, ok := t.exits[c.TerminalID]; ok {
			exit = &code
		}
		return []wire.ToolResultContent{terminalContent(TerminalChannel(c.TerminalID), "Terminal "+c.TerminalID, exit)}
	}
	return []wire.ToolResultContent{textContent(fmt.Sprintf("[%s]\n%s", orDefault(c.Type, "unknown content"), fenceJSON(c.Raw)))}
}

func blockContent(b backend.ContentBlock) wire.ToolResultContent {
	switch {
	case b.Type == "text":
		return textContent(b.Text)
	case b.Data != "":
		return embeddedContent(b.Data, orDefault(b.MimeType, "application/octet-stream"))
	case b.Text != "":
		return embeddedContent(base64.StdEncoding.EncodeToString([]byte(b.Text)), orDefault(b.MimeType, "text/plain"))
	case b.URI != "":
		return resourceContent(b.URI, b.MimeType)
	}
	return textContent(rawBlock(b.Type, b.Raw))
}

// fileEdit publishes the old and new text of a diff and describes it.
func (t *Turn) fileEdit(ts *toolState, n int, c backend.ToolContent) (edit fileEditFields, added, removed int64) {
	file := FileURI(c.Path)
	newURI := DiffURI(t.id, ts.ahpID, n, "new")
	t.resources[newURI] = Resource{Data: c.NewText, ContentType: "text/plain"}
	edit.after = &fileSide{uri: file, ref: newURI, size: int64(len(c.NewText))}
	old := ""
	// A created file has no "before" side, even when the agent gave an
	// empty OldText for it (backend.ToolContent.Created).
	if c.OldText != nil && !c.Created {
		old = *c.OldText
		oldURI := DiffURI(t.id, ts.ahpID, n, "old")
		t.resources[oldURI] = Resource{Data: old, ContentType: "text/plain"}
		edit.before = &fileSide{uri: file, ref: oldURI, size: int64(len(old))}
	}
	added, removed = lineDiff(old, c.NewText)
	edit.added, edit.removed = added, removed
	return edit, added, removed
}

// edits returns the file edits of a tool call's diffs, for the confirmation
// preview.
func (t *Turn) edits(ts *toolState) []fileEditFields {
	var out []fileEditFields
	for i, c := range ts.content {
		if c.Type == "diff" {
			e, _, _ := t.fileEdit(ts, i, c)
			out = append(out, e)
		}
	}
	return out
}

func diffSummary(c backend.ToolContent, added, removed int64) string {
	verb := "Edited"
	if c.OldText == nil || c.Created {
		verb = "Created"
	}
	return fmt.Sprintf("%s %s (+%d -%d)", verb, c.Path, added, removed)
}

// lineDiff counts added and removed lines between two texts. It matches
// equal lines as a multiset, which is exact for pure insertions/deletions and
// a close estimate for moves; it is only display metadata.
func lineDiff(oldText, newText string) (added, removed int64) {
	count := map[string]int64{}
	for _, l := range splitLines(oldText) {
		count[l]++
	}
	for _, l := range splitLines(newText) {
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	for _, n := range count {
		removed += n
	}
	return added, removed
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// blockLink renders a linked resource as markdown: an image inline, anything
// else as a link.
func blockLink(b backend.ContentBlock) string {
	name := orDefault(b.Name, b.URI)
	if b.Type == "image" || strings.HasPrefix(b.MimeType, "image/") {
		return fmt.Sprintf("![%s](%s)", escapeMarkdown(name), b.URI)
	}
	return fmt.Sprintf("[%s](%s)", escapeMarkdown(name), b.URI)
}

func escapeMarkdown(s string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`).Replace(s)
}

// rawBlock shows a content block nothing else could show.
func rawBlock(typ string, raw json.RawMessage) string {
	return fmt.Sprintf("Unsupported content `%s`:\n\n%s", orDefault(typ, "unknown"), fenceJSON(raw))
}

// fenceJSON renders raw JSON in a code block (indented when valid).
func fenceJSON(raw json.RawMessage) string {
	text := string(raw)
	var v any
	if err := json.Unmarshal(raw, &v); err == nil {
		if b, err := json.MarshalIndent(v, "", "  "); err == nil {
			text = string(b)
		}
	}
	if text == "" {
		text = "null"
	}
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + "json\n" + text + "\n" + fence
}

// rawValue decodes raw JSON for a `_meta` value, keeping invalid JSON as a
// string.
func rawValue(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
}

func base64Size(data string) int64 {
	return int64(base64.StdEncoding.DecodedLen(len(data)))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ReadResult is the `resourceRead` answer for the resource, in the encoding
// the client asked for when it can be honoured: text can be sent as utf-8 or
// base64; binary data only as base64 (AHP requires it), so a utf-8 request
// for binary data gets base64.
func (r Resource) ReadResult(want wire.ContentEncoding) wire.ResourceReadResult {
	res := wire.ResourceReadResult{Data: r.Data, Encoding: wire.ContentEncodingUtf8}
	if r.ContentType != "" {
		res.ContentType = wire.Ptr(r.ContentType)
	}
	switch {
	case r.Base64:
		res.Encoding = wire.ContentEncodingBase64
	case want == wire.ContentEncodingBase64:
		res.Data = base64.StdEncoding.EncodeToString([]byte(r.Data))
		res.Encoding = wire.ContentEncodingBase64
	}
	return res
}
