package acp

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"path"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/backend"
	sdk "github.com/coder/acp-go-sdk"
)

// selectionMeta is the `_meta` key under which a block carries the
// selection the user made in the attached resource.
const selectionMeta = "ahp-bridge/selection"

// promptContent builds the ACP prompt of pr for an agent with caps: the
// text, then one block per attachment, each in the richest form the agent
// says it takes (docs/mapping.md, "Attachments"). Files are looked at and
// read only through the session's working directories (attachFiles). An
// attachment the agent cannot take at all, or a file outside those
// directories, makes the whole prompt an *backend.AttachmentError: the
// agent must not answer a message whose context it silently lacks.
func (s *session) promptContent(ctx context.Context, pr backend.Prompt, caps sdk.PromptCapabilities) ([]map[string]any, error) {
	blocks := make([]map[string]any, 0, 1+len(pr.Attachments))
	if pr.Text != "" || len(pr.Attachments) == 0 {
		blocks = append(blocks, map[string]any{"type": "text", "text": pr.Text})
	}
	var files *attachFiles
	defer func() {
		if files != nil {
			files.close()
		}
	}()
	var refused []backend.RefusedAttachment
	refuse := func(at backend.Attachment, format string, args ...any) {
		refused = append(refused, backend.RefusedAttachment{Name: attachmentName(at), Reason: fmt.Sprintf(format, args...)})
	}
	for _, at := range pr.Attachments {
		switch {
		case at.AsText:
			blocks = append(blocks, withMeta(map[string]any{"type": "text", "text": at.Text}, at.Meta))
		case at.Kind == backend.AttachEmbedded:
			b, why := embeddedBlock(at, caps)
			if why != "" {
				refuse(at, "%s", why)
				continue
			}
			blocks = append(blocks, b)
		default:
			p, isFile := filePath(at.URI)
			if !isFile {
				blocks = append(blocks, linkBlock(at, ""))
				continue
			}
			if files == nil {
				files = s.openAttachFiles()
			}
			if err := files.check(ctx, p); err != nil {
				refuse(at, "%v", err)
				continue
			}
			if at.Selection == nil {
				blocks = append(blocks, linkBlock(at, ""))
				continue
			}
			text, err := files.readText(ctx, p, s.p.cfg.MaxReadBytes)
			switch {
			case err != nil:
				refuse(at, "%v", err)
			case caps.EmbeddedContext:
				blocks = append(blocks, resourceBlock(at, at.Selection.Select(text), ""))
			default:
				// The agent takes no embedded context: the link, with the
				// selected lines named where the model reads them.
				blocks = append(blocks, linkBlock(at, selectionWords(*at.Selection)))
			}
		}
	}
	if len(refused) > 0 {
		return nil, &backend.AttachmentError{Refused: refused}
	}
	return blocks, nil
}

// embeddedBlock is the block of inline data: an image or audio block when
// the agent takes that media, else an embedded resource when it takes
// embedded context, else text when the data is text. why says why the
// agent cannot take it at all.
func embeddedBlock(at backend.Attachment, caps sdk.PromptCapabilities) (b map[string]any, why string) {
	mime := strings.ToLower(at.MimeType)
	binary := at.Data != ""
	switch {
	case binary && strings.HasPrefix(mime, "image/") && caps.Image:
		return withMeta(mediaBlock("image", at), at.Meta), ""
	case binary && strings.HasPrefix(mime, "audio/") && caps.Audio:
		return withMeta(mediaBlock("audio", at), at.Meta), ""
	case caps.EmbeddedContext:
		text := at.Text
		if at.Selection != nil && !binary {
			text = at.Selection.Select(text)
		}
		return resourceBlock(at, text, at.Data), ""
	case !binary:
		var sb strings.Builder
		fmt.Fprintf(&sb, "Attached %s", attachmentName(at))
		if at.URI != "" {
			fmt.Fprintf(&sb, " (%s)", at.URI)
		}
		text := at.Text
		if at.Selection != nil {
			text = at.Selection.Select(text)
			fmt.Fprintf(&sb, ", %s", selectionWords(*at.Selection))
		}
		sb.WriteString(":\n")
		sb.WriteString(text)
		return withMeta(map[string]any{"type": "text", "text": sb.String()}, at.Meta), ""
	}
	var takes []string
	if strings.HasPrefix(mime, "image/") {
		takes = append(takes, "images (promptCapabilities.image)")
	}
	if strings.HasPrefix(mime, "audio/") {
		takes = append(takes, "audio (promptCapabilities.audio)")
	}
	takes = append(takes, "embedded resources (promptCapabilities.embeddedContext)")
	return nil, fmt.Sprintf("%s data, and the agent takes no %s", orUnknown(at.MimeType), strings.Join(takes, " and no "))
}

func orUnknown(mime string) string {
	if mime == "" {
		return "binary"
	}
	return mime
}

func mediaBlock(kind string, at backend.Attachment) map[string]any {
	b := map[string]any{"type": kind, "data": at.Data, "mimeType": at.MimeType}
	if at.URI != "" && kind == "image" {
		b["uri"] = at.URI
	}
	return b
}

// resourceBlock is an embedded resource: text, or blob (base64) when blob
// is set.
func resourceBlock(at backend.Attachment, text, blob string) map[string]any {
	uri := at.URI
	if uri == "" {
		uri = "attachment:" + url.PathEscape(attachmentName(at))
	}
	res := map[string]any{"uri": uri}
	if blob != "" {
		res["blob"] = blob
	} else {
		res["text"] = text
	}
	if at.MimeType != "" {
		res["mimeType"] = at.MimeType
	}
	meta := at.Meta
	if at.Selection != nil {
		meta = maps.Clone(meta)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[selectionMeta] = selectionJSON(*at.Selection)
	}
	return withMeta(map[string]any{"type": "resource", "resource": res}, meta)
}

// linkBlock is a resource link; description, when set, is shown to the
// model with it.
func linkBlock(at backend.Attachment, description string) map[string]any {
	name := at.Name
	if name == "" {
		name = path.Base(at.URI)
	}
	b := map[string]any{"type": "resource_link", "name": name, "uri": at.URI}
	if at.MimeType != "" {
		b["mimeType"] = at.MimeType
	}
	if description != "" {
		b["description"] = description
	}
	meta := at.Meta
	if at.Selection != nil {
		meta = maps.Clone(meta)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[selectionMeta] = selectionJSON(*at.Selection)
	}
	return withMeta(b, meta)
}

func withMeta(b map[string]any, meta map[string]any) map[string]any {
	if len(meta) > 0 {
		b["_meta"] = meta
	}
	return b
}

func selectionJSON(r backend.Range) map[string]any {
	return map[string]any{
		"start": map[string]any{"line": r.StartLine, "character": r.StartChar},
		"end":   map[string]any{"line": r.EndLine, "character": r.EndChar},
	}
}

// selectionWords names a selection for a model, in 1-based lines as
// editors show them.
func selectionWords(r backend.Range) string {
	if r.StartLine == r.EndLine {
		return fmt.Sprintf("line %d selected", r.StartLine+1)
	}
	return fmt.Sprintf("lines %d–%d selected", r.StartLine+1, r.EndLine+1)
}

func attachmentName(at backend.Attachment) string {
	switch {
	case at.Name != "":
		return at.Name
	case at.URI != "":
		return at.URI
	}
	return "attachment"
}

// filePath returns the local path of a file URI (or of an absolute path
// given as one).
func filePath(uri string) (string, bool) {
	if strings.HasPrefix(uri, "/") {
		return uri, true
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	return u.Path, u.Path != ""
}

// roots returns the session's working directories as local paths.
func (s *session) roots() []string {
	var out []string
	for _, r := range s.opts.Roots {
		if p, ok := filePath(r); ok {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		out = []string{s.cwd}
	}
	return out
}
