//go:build unix

package host

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/sandbox"
)

// The resource commands on the workspace's files (AHP's resource*
// family, file: URIs only). Every one goes through the connection's
// sandbox (files.go), resourceList and resourceResolve also through its
// browse roots' (serveBrowsing), and runs in a goroutine of its own
// (async), since a file system can be slow; their results need no
// translation, since no dialect this host speaks changed them
// (docs/protocol-versions.md).

// mtimeLayout is how times are sent: ISO 8601 in UTC with milliseconds,
// as the host's other timestamps.
const mtimeLayout = "2006-01-02T15:04:05.000Z"

// serveFiles answers r with serve's result, run with the connection's
// sandbox.
func (h *Host) serveFiles(r *request, serve func(box *sandbox.Sandbox) (any, error)) {
	h.async(r, func() (any, *Error) {
		box, err := h.sandboxFor(r.c)
		if err == nil {
			var res any
			if res, err = serve(box); err == nil {
				return res, nil
			}
		}
		return nil, fileError(r.method, err)
	})
}

// serveBrowsing is serveFiles for the two read-only commands a folder
// picker needs (resourceList, resourceResolve): a path outside the
// connection's sessions is served from the browse roots when it lies
// under one (files.go). Outside both it is refused in the same words
// whether or not it exists.
func (h *Host) serveBrowsing(r *request, serve func(box *sandbox.Sandbox) (any, error)) {
	h.async(r, func() (any, *Error) {
		box, err := h.sandboxFor(r.c)
		if err != nil {
			return nil, fileError(r.method, err)
		}
		res, err := serve(box)
		if err == nil {
			return res, nil
		}
		if !isOutside(err) {
			return nil, fileError(r.method, err)
		}
		browse, berr := h.browseFor(r.c)
		if berr != nil || browse == nil {
			return nil, fileError(r.method, err)
		}
		if res, berr = serve(browse); berr == nil {
			return res, nil
		}
		var se *sandbox.Error
		if isOutside(berr) && errors.As(berr, &se) {
			return nil, Errorf(CodePermissionDenied, "%s %s: permission denied: %s is not inside the working directory of a session this connection created or is subscribed to, nor under a directory the server lets clients browse",
				r.method, fileURI(se.Path), se.Path)
		}
		return nil, fileError(r.method, berr)
	})
}

// resourceList lists a directory.
func (h *Host) resourceList(ctx context.Context, r *request, _ string) {
	var p wire.ResourceListParams
	dir, ok := h.pathParams(r, &p, func() string { return p.URI })
	if !ok {
		return
	}
	h.serveBrowsing(r, func(box *sandbox.Sandbox) (any, error) {
		entries, err := box.List(ctx, dir)
		if err != nil {
			return nil, err
		}
		out := make([]wire.DirectoryEntry, len(entries))
		for i, e := range entries {
			out[i] = wire.DirectoryEntry{Name: e.Name, Type: string(e.Type)}
		}
		return wire.ResourceListResult{Entries: out}, nil
	})
}

// readFile answers resourceRead for a file URI. The result is streamed:
// the file is read, encoded and written to the connection as one pass
// when the connection's writer gets to it, never held in memory.
func (h *Host) readFile(ctx context.Context, r *request, p wire.ResourceReadParams) {
	name, perr := paramPath(r.method, "uri", p.URI)
	if perr != nil {
		h.reply(r, nil, perr)
		return
	}
	enc := sandbox.EncodingAuto
	if p.Encoding != nil {
		enc = sandbox.Encoding(*p.Encoding)
	}
	h.asyncStream(r, func() (*streamOut, *Error) {
		box, err := h.sandboxFor(r.c)
		if err != nil {
			return nil, fileError(r.method, err)
		}
		content, err := box.Read(ctx, name, enc)
		if err != nil {
			return nil, fileError(r.method, err)
		}
		// {"data":<streamed>,"encoding":…,"contentType":…}: the same
		// members as wire.ResourceReadResult, data first so that it can
		// be streamed.
		rest := struct {
			Encoding    wire.ContentEncoding `json:"encoding"`
			ContentType string               `json:"contentType,omitempty"`
		}{wire.ContentEncoding(content.Encoding), content.ContentType}
		tail, err := json.Marshal(rest)
		if err != nil {
			_ = content.Close()
			return nil, Errorf(CodeInternalError, "%s %s: encoding the result: %v", r.method, p.URI, err)
		}
		tail[0] = ','
		return &streamOut{
			head:    append(responseHead(r.id), `{"data":`...),
			tail:    append(tail, '}'),
			body:    func(w io.Writer) (int64, error) { return sandbox.WriteJSONString(w, content) },
			release: func() { _ = content.Close() },
		}, nil
	})
}

// resourceWrite writes a file: created when missing, then truncated,
// appended to or spliced into as the mode says, optionally only if it is
// still the version the client read (ifMatch) or only if it is new
// (createOnly).
func (h *Host) resourceWrite(ctx context.Context, r *request, _ string) {
	var p wire.ResourceWriteParams
	name, ok := h.pathParams(r, &p, func() string { return p.URI })
	if !ok {
		return
	}
	var data []byte
	switch p.Encoding {
	case wire.ContentEncodingUtf8:
		data = []byte(p.Data)
	case wire.ContentEncodingBase64:
		var err error
		if data, err = decodeBase64(p.Data); err != nil {
			h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for %s: data is not valid base64: %v", r.method, err))
			return
		}
	default:
		h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for %s: encoding must be %q or %q, got %q",
			r.method, wire.ContentEncodingUtf8, wire.ContentEncodingBase64, p.Encoding))
		return
	}
	opts := sandbox.WriteOptions{
		Mode:       sandbox.WriteMode(deref(p.Mode)),
		Position:   deref(p.Position),
		CreateOnly: deref(p.CreateOnly),
		IfMatch:    deref(p.IfMatch),
	}
	h.serveFiles(r, func(box *sandbox.Sandbox) (any, error) {
		if _, err := box.Write(ctx, name, bytes.NewReader(data), opts); err != nil {
			return nil, err
		}
		return wire.ResourceWriteResult{}, nil
	})
}

// decodeBase64 reads standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	if strings.HasSuffix(s, "=") || len(s)%4 == 0 {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// resourceResolve is stat and realpath in one; a missing path is
// NotFound.
func (h *Host) resourceResolve(ctx context.Context, r *request, _ string) {
	var p wire.ResourceResolveParams
	name, ok := h.pathParams(r, &p, func() string { return p.URI })
	if !ok {
		return
	}
	follow := p.FollowSymlinks == nil || *p.FollowSymlinks
	h.serveBrowsing(r, func(box *sandbox.Sandbox) (any, error) {
		info, err := box.Resolve(ctx, name, follow)
		if err != nil {
			return nil, err
		}
		res := wire.ResourceResolveResult{
			URI:   p.URI, // spec: the URI as asked when links are not followed
			Type:  wire.ResourceType(info.Type),
			Mtime: wire.Ptr(info.ModTime.UTC().Format(mtimeLayout)),
		}
		if follow {
			res.URI = fileURI(info.Path)
		}
		if info.Type == sandbox.TypeFile {
			res.Size = wire.Ptr(info.Size)
		}
		if info.ContentType != "" {
			res.ContentType = wire.Ptr(info.ContentType)
		}
		if info.ETag != "" {
			res.Etag = wire.Ptr(info.ETag)
		}
		return res, nil
	})
}

// resourceMkdir creates a directory and its missing parents.
func (h *Host) resourceMkdir(ctx context.Context, r *request, _ string) {
	var p wire.ResourceMkdirParams
	name, ok := h.pathParams(r, &p, func() string { return p.URI })
	if !ok {
		return
	}
	h.serveFiles(r, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceMkdirResult{}, box.Mkdir(ctx, name)
	})
}

// resourceDelete removes a file, link or directory; a directory with
// contents only when asked to be recursive.
func (h *Host) resourceDelete(ctx context.Context, r *request, _ string) {
	var p wire.ResourceDeleteParams
	name, ok := h.pathParams(r, &p, func() string { return p.URI })
	if !ok {
		return
	}
	h.serveFiles(r, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceDeleteResult{}, box.Delete(ctx, name, deref(p.Recursive))
	})
}

// resourceMove renames a file or directory, anywhere in the connection's
// directories.
func (h *Host) resourceMove(ctx context.Context, r *request, _ string) {
	var p wire.ResourceMoveParams
	src, dst, ok := h.twoPathParams(r, &p, func() (string, string) { return p.Source, p.Destination })
	if !ok {
		return
	}
	h.serveFiles(r, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceMoveResult{}, box.Move(ctx, src, dst, deref(p.FailIfExists))
	})
}

// resourceCopy copies a file or a directory tree.
func (h *Host) resourceCopy(ctx context.Context, r *request, _ string) {
	var p wire.ResourceCopyParams
	src, dst, ok := h.twoPathParams(r, &p, func() (string, string) { return p.Source, p.Destination })
	if !ok {
		return
	}
	h.serveFiles(r, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceCopyResult{}, box.Copy(ctx, src, dst, deref(p.FailIfExists))
	})
}

// pathParams decodes r's params into p and resolves the file URI that uri
// reads from it (after decoding). On a bad request it has replied and
// returns false.
func (h *Host) pathParams(r *request, p any, uri func() string) (string, bool) {
	if err := decodeParams(r.method, r.params, p); err != nil {
		h.reply(r, nil, err)
		return "", false
	}
	name, perr := paramPath(r.method, "uri", uri())
	if perr != nil {
		h.reply(r, nil, perr)
		return "", false
	}
	return name, true
}

// twoPathParams is pathParams for the commands with a source and a
// destination (resourceMove, resourceCopy).
func (h *Host) twoPathParams(r *request, p any, paths func() (string, string)) (string, string, bool) {
	if err := decodeParams(r.method, r.params, p); err != nil {
		h.reply(r, nil, err)
		return "", "", false
	}
	source, destination := paths()
	src, perr := paramPath(r.method, "source", source)
	if perr == nil {
		var dst string
		if dst, perr = paramPath(r.method, "destination", destination); perr == nil {
			return src, dst, true
		}
	}
	h.reply(r, nil, perr)
	return "", "", false
}
