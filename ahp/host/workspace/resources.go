//go:build unix

package workspace

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
// family, file: URIs only). Each method checks its params at once and
// returns the error for a bad request, or an Op that does the work: the
// host runs it in a goroutine of its own, since a file system can be
// slow. Every Op goes through the connection's sandbox (files.go),
// resourceList's and resourceResolve's also through its browse roots'
// (browsing). Their results need no translation, since no dialect the
// host speaks changed them (docs/protocol-versions.md).

// mtimeLayout is how times are sent: ISO 8601 in UTC with milliseconds,
// as the host's other timestamps.
const mtimeLayout = "2006-01-02T15:04:05.000Z"

// files is the Op that runs serve with c's sandbox.
func (ws *Workspace) files(c Client, method string, serve func(box *sandbox.Sandbox) (any, error)) Op {
	return func() (any, error) {
		box, err := ws.sandboxFor(c)
		if err == nil {
			var res any
			if res, err = serve(box); err == nil {
				return res, nil
			}
		}
		return nil, fileError(method, err)
	}
}

// browsing is files for the two read-only commands a folder picker needs
// (resourceList, resourceResolve): a path outside the connection's
// sessions is served from the browse roots when it lies under one
// (files.go). Outside both it is refused in the same words whether or not
// it exists.
func (ws *Workspace) browsing(c Client, method string, serve func(box *sandbox.Sandbox) (any, error)) Op {
	return func() (any, error) {
		box, err := ws.sandboxFor(c)
		if err != nil {
			return nil, fileError(method, err)
		}
		res, err := serve(box)
		if err == nil {
			return res, nil
		}
		if !isOutside(err) {
			return nil, fileError(method, err)
		}
		browse, berr := ws.browseFor(c)
		if berr != nil || browse == nil {
			return nil, fileError(method, err)
		}
		if res, berr = serve(browse); berr == nil {
			return res, nil
		}
		var se *sandbox.Error
		if isOutside(berr) && errors.As(berr, &se) {
			return nil, errorf(wire.CodePermissionDenied, "%s %s: permission denied: %s is not inside the working directory of a session this connection created or is subscribed to, nor under a directory the server lets clients browse",
				method, FileURI(se.Path), se.Path)
		}
		return nil, fileError(method, berr)
	}
}

// List serves resourceList: the entries of a directory.
func (ws *Workspace) List(ctx context.Context, c Client, p wire.ResourceListParams) (Op, error) {
	const method = wire.MethodResourceList
	dir, perr := paramPath(method, "uri", p.URI)
	if perr != nil {
		return nil, perr
	}
	return ws.browsing(c, method, func(box *sandbox.Sandbox) (any, error) {
		entries, err := box.List(ctx, dir)
		if err != nil {
			return nil, err
		}
		out := make([]wire.DirectoryEntry, len(entries))
		for i, e := range entries {
			out[i] = wire.DirectoryEntry{Name: e.Name, Type: string(e.Type)}
		}
		return wire.ResourceListResult{Entries: out}, nil
	}), nil
}

// Content is resourceRead's result for a file, written as the file is
// read, never held in memory: Head, then the file's data as a JSON string
// (WriteData), then Tail; together they are a wire.ResourceReadResult.
// Close releases the file, whether it was written or not.
type Content struct {
	// Head is the result up to its data: {"data":
	Head []byte
	// Tail is the result's other members and its closing brace.
	Tail    []byte
	content *sandbox.Content
}

// WriteData writes the file's data, encoded as the result says, as a JSON
// string to w, and returns how many bytes it wrote.
func (c *Content) WriteData(w io.Writer) (int64, error) {
	return sandbox.WriteJSONString(w, c.content)
}

// Close releases the file.
func (c *Content) Close() { _ = c.content.Close() }

// Read serves resourceRead for a file URI. Its op opens the file; the
// host writes the Content when the connection's writer gets to it.
func (ws *Workspace) Read(ctx context.Context, c Client, p wire.ResourceReadParams) (func() (*Content, error), error) {
	const method = wire.MethodResourceRead
	name, perr := paramPath(method, "uri", p.URI)
	if perr != nil {
		return nil, perr
	}
	enc := sandbox.EncodingAuto
	if p.Encoding != nil {
		enc = sandbox.Encoding(*p.Encoding)
	}
	return func() (*Content, error) {
		box, err := ws.sandboxFor(c)
		if err != nil {
			return nil, fileError(method, err)
		}
		content, err := box.Read(ctx, name, enc)
		if err != nil {
			return nil, fileError(method, err)
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
			return nil, errorf(wire.CodeInternalError, "%s %s: encoding the result: %v", method, p.URI, err)
		}
		tail[0] = ','
		return &Content{Head: []byte(`{"data":`), Tail: append(tail, '}'), content: content}, nil
	}, nil
}

// Write serves resourceWrite: a file is created when missing, then
// truncated, appended to or spliced into as the mode says, optionally
// only if it is still the version the client read (ifMatch) or only if it
// is new (createOnly).
func (ws *Workspace) Write(ctx context.Context, c Client, p wire.ResourceWriteParams) (Op, error) {
	const method = wire.MethodResourceWrite
	name, perr := paramPath(method, "uri", p.URI)
	if perr != nil {
		return nil, perr
	}
	var data []byte
	switch p.Encoding {
	case wire.ContentEncodingUtf8:
		data = []byte(p.Data)
	case wire.ContentEncodingBase64:
		var err error
		if data, err = decodeBase64(p.Data); err != nil {
			return nil, errorf(wire.CodeInvalidParams, "invalid params for %s: data is not valid base64: %v", method, err)
		}
	default:
		return nil, errorf(wire.CodeInvalidParams, "invalid params for %s: encoding must be %q or %q, got %q",
			method, wire.ContentEncodingUtf8, wire.ContentEncodingBase64, p.Encoding)
	}
	opts := sandbox.WriteOptions{
		Mode:       sandbox.WriteMode(deref(p.Mode)),
		Position:   deref(p.Position),
		CreateOnly: deref(p.CreateOnly),
		IfMatch:    deref(p.IfMatch),
	}
	return ws.files(c, method, func(box *sandbox.Sandbox) (any, error) {
		if _, err := box.Write(ctx, name, bytes.NewReader(data), opts); err != nil {
			return nil, err
		}
		return wire.ResourceWriteResult{}, nil
	}), nil
}

// decodeBase64 reads standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	if strings.HasSuffix(s, "=") || len(s)%4 == 0 {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// Resolve serves resourceResolve, stat and realpath in one; a missing
// path is NotFound.
func (ws *Workspace) Resolve(ctx context.Context, c Client, p wire.ResourceResolveParams) (Op, error) {
	const method = wire.MethodResourceResolve
	name, perr := paramPath(method, "uri", p.URI)
	if perr != nil {
		return nil, perr
	}
	follow := p.FollowSymlinks == nil || *p.FollowSymlinks
	return ws.browsing(c, method, func(box *sandbox.Sandbox) (any, error) {
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
			res.URI = FileURI(info.Path)
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
	}), nil
}

// Mkdir serves resourceMkdir: a directory and its missing parents.
func (ws *Workspace) Mkdir(ctx context.Context, c Client, p wire.ResourceMkdirParams) (Op, error) {
	const method = wire.MethodResourceMkdir
	name, perr := paramPath(method, "uri", p.URI)
	if perr != nil {
		return nil, perr
	}
	return ws.files(c, method, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceMkdirResult{}, box.Mkdir(ctx, name)
	}), nil
}

// Delete serves resourceDelete: a file, link or directory; a directory
// with contents only when asked to be recursive.
func (ws *Workspace) Delete(ctx context.Context, c Client, p wire.ResourceDeleteParams) (Op, error) {
	const method = wire.MethodResourceDelete
	name, perr := paramPath(method, "uri", p.URI)
	if perr != nil {
		return nil, perr
	}
	return ws.files(c, method, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceDeleteResult{}, box.Delete(ctx, name, deref(p.Recursive))
	}), nil
}

// Move serves resourceMove: a file or directory renamed, anywhere in the
// connection's directories.
func (ws *Workspace) Move(ctx context.Context, c Client, p wire.ResourceMoveParams) (Op, error) {
	const method = wire.MethodResourceMove
	src, dst, perr := twoPaths(method, p.Source, p.Destination)
	if perr != nil {
		return nil, perr
	}
	return ws.files(c, method, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceMoveResult{}, box.Move(ctx, src, dst, deref(p.FailIfExists))
	}), nil
}

// Copy serves resourceCopy: a file or a directory tree copied.
func (ws *Workspace) Copy(ctx context.Context, c Client, p wire.ResourceCopyParams) (Op, error) {
	const method = wire.MethodResourceCopy
	src, dst, perr := twoPaths(method, p.Source, p.Destination)
	if perr != nil {
		return nil, perr
	}
	return ws.files(c, method, func(box *sandbox.Sandbox) (any, error) {
		return wire.ResourceCopyResult{}, box.Copy(ctx, src, dst, deref(p.FailIfExists))
	}), nil
}

// twoPaths reads the params of the commands with a source and a
// destination (resourceMove, resourceCopy).
func twoPaths(method, source, destination string) (string, string, *Error) {
	src, perr := paramPath(method, "source", source)
	if perr != nil {
		return "", "", perr
	}
	dst, perr := paramPath(method, "destination", destination)
	if perr != nil {
		return "", "", perr
	}
	return src, dst, nil
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
