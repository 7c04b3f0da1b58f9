package host

import (
	"context"
	"errors"
	"strings"

	"github.com/rs/zerolog"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/workspace"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The workspace's files (see README "Browsing the workspace from a
// client") are served by package workspace; this file is the host's side
// of it: the resource* commands decoded, run in a goroutine each (async)
// and answered, resourceRead's answer streamed (stream.go), and a
// resource watch's ahp-resource-watch: channel, whose changes are
// sequenced like any server action. A connection is a workspace.Client:
// it keeps its workspace.Files and tells the workspace which working
// directories it may touch.
//
// The hooks where subscriptions and sessions change (filesCreated,
// filesUnsubscribed, filesDisposed, filesDropped) bring each
// connection's access in line, and end its subscriptions to the watches
// it may no longer see.

// watchScheme is the scheme of resource-watch channels.
const watchScheme = "ahp-resource-watch:"

// DefaultMaxWatchDirectories is Options.MaxWatchDirectories' default.
const DefaultMaxWatchDirectories = 10000

// newWorkspace is the workspace of a host with opts.
func newWorkspace(opts Options, log zerolog.Logger) *workspace.Workspace {
	return workspace.New(workspace.Options{
		ReadOnly:            opts.ReadOnlyFiles,
		BrowseRoots:         append([]string{opts.DefaultDirectory}, opts.BrowseRoots...),
		MaxWatchDirectories: opts.MaxWatchDirectories,
		MaxWatchesPerConn:   opts.maxWatchesPerConn,
		Logger:              log,
	})
}

// Files implements workspace.Client.
func (c *conn) Files() *workspace.Files { return &c.files }

// Logger implements workspace.Client.
func (c *conn) Logger() *zerolog.Logger { return &c.log }

// WorkingDirectories implements workspace.Client: the directories of the
// sessions among created that still exist and of those c is subscribed
// to, directly or through one of their chats.
func (c *conn) WorkingDirectories(created []string) (dirs, gone []string) {
	h := c.h
	// The sessions, under the sequencer lock; their directories, under
	// each group's (which comes first in the lock order, so not inside).
	h.mu.Lock()
	groups := map[*sessionGroup]struct{}{}
	for _, s := range created {
		if ch := h.channels[s]; ch != nil && ch.kind == chanSession {
			groups[ch.group] = struct{}{}
		} else {
			gone = append(gone, s)
		}
	}
	for _, ch := range c.subs {
		if ch.kind == chanSession || ch.kind == chanChat {
			groups[ch.group] = struct{}{}
		}
	}
	h.mu.Unlock()
	for g := range groups {
		g.mu.Lock()
		if !g.session.removed {
			dirs = append(dirs, g.session.session.WorkingDirectories...)
		}
		g.mu.Unlock()
	}
	return dirs, gone
}

// workspaceError is the JSON-RPC error for the workspace's.
func workspaceError(err error) *Error {
	var we *workspace.Error
	if errors.As(err, &we) {
		return &Error{Code: we.Code, Message: we.Message}
	}
	return asRPCError(err)
}

// fileCommand answers r, a resource command: its params decoded, checked
// by serve (a Workspace method), and the checked command run in a
// goroutine of its own.
func fileCommand[P any](h *Host, ctx context.Context, r *request, serve func(context.Context, workspace.Client, P) (workspace.Op, error)) {
	var p P
	if err := decodeParams(r.method, r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	op, err := serve(ctx, r.c, p)
	if err != nil {
		h.reply(r, nil, workspaceError(err))
		return
	}
	h.async(r, func() (any, *Error) {
		res, err := op()
		if err != nil {
			return nil, workspaceError(err)
		}
		return res, nil
	})
}

// readFile answers resourceRead for a file URI. The result is streamed:
// the file is read, encoded and written to the connection as one pass
// when the connection's writer gets to it, never held in memory.
func (h *Host) readFile(ctx context.Context, r *request, p wire.ResourceReadParams) {
	open, err := h.ws.Read(ctx, r.c, p)
	if err != nil {
		h.reply(r, nil, workspaceError(err))
		return
	}
	h.asyncStream(r, func() (*streamOut, *Error) {
		content, err := open()
		if err != nil {
			return nil, workspaceError(err)
		}
		return &streamOut{
			head:    append(responseHead(r.id), content.Head...),
			tail:    content.Tail,
			body:    content.WriteData,
			release: content.Close,
		}, nil
	})
}

// resourceList lists a directory.
func (h *Host) resourceList(ctx context.Context, r *request, _ string) {
	fileCommand(h, ctx, r, h.ws.List)
}

// resourceWrite writes a file.
func (h *Host) resourceWrite(ctx context.Context, r *request, _ string) {
	fileCommand(h, ctx, r, h.ws.Write)
}

// resourceResolve is stat and realpath in one.
func (h *Host) resourceResolve(ctx context.Context, r *request, _ string) {
	fileCommand(h, ctx, r, h.ws.Resolve)
}

// resourceMkdir creates a directory and its missing parents.
func (h *Host) resourceMkdir(ctx context.Context, r *request, _ string) {
	fileCommand(h, ctx, r, h.ws.Mkdir)
}

// resourceDelete removes a file, link or directory.
func (h *Host) resourceDelete(ctx context.Context, r *request, _ string) {
	fileCommand(h, ctx, r, h.ws.Delete)
}

// resourceMove renames a file or directory.
func (h *Host) resourceMove(ctx context.Context, r *request, _ string) {
	fileCommand(h, ctx, r, h.ws.Move)
}

// resourceCopy copies a file or a directory tree.
func (h *Host) resourceCopy(ctx context.Context, r *request, _ string) {
	fileCommand(h, ctx, r, h.ws.Copy)
}

// createResourceWatch starts a watch and answers with its channel, an
// ahp-resource-watch: channel whose state is the watch's descriptor and
// whose actions are the changes the workspace reports.
func (h *Host) createResourceWatch(ctx context.Context, r *request, _ string) {
	var p wire.CreateResourceWatchParams
	if err := decodeParams(r.method, r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	start, err := h.ws.Watch(ctx, r.c, p)
	if err != nil {
		h.reply(r, nil, workspaceError(err))
		return
	}
	h.async(r, func() (any, *Error) {
		w, err := start()
		if err != nil {
			return nil, workspaceError(err)
		}
		uri := watchScheme + "/" + h.opts.NewID()
		ch := newChannel(uri, chanResourceWatch)
		ch.watch = &wire.ResourceWatchState{Root: p.URI, Recursive: deref(p.Recursive), Excludes: p.Excludes, Includes: p.Includes}
		h.mu.Lock()
		_, taken := h.channels[uri]
		if !h.closed && !taken {
			h.channels[uri] = ch
		}
		h.mu.Unlock()
		if taken {
			w.Close()
		}
		if taken || !h.ws.RunWatch(uri, w, func(changes []wire.ResourceChange) { h.reportChanges(ch, changes) }) {
			h.mu.Lock()
			if !taken {
				delete(h.channels, uri)
			}
			h.mu.Unlock()
			return nil, Errorf(CodeInternalError, "%s %s: the server is shutting down", r.method, p.URI)
		}
		return wire.CreateResourceWatchResult{Channel: uri}, nil
	})
}

// reportChanges sequences a batch of a watch's changes on its channel as
// resourceWatch/changed.
func (h *Host) reportChanges(ch *channel, items []wire.ResourceChange) {
	a := wire.Action(&wire.ResourceWatchChangedAction{Changes: wire.ResourceChangeList{Items: items}})
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.removed {
		if _, err := h.applyLocked(ch, a, nil, nil); err != nil {
			h.log.Error().Err(err).Str("channel", ch.uri).Msg("failed to report file changes")
		}
	}
}

// mayWatch checks, before a subscription, that c may see every resource
// watch among the host channels names.
func (h *Host) mayWatch(c *conn, names []string) *Error {
	for _, n := range names {
		if !strings.HasPrefix(n, watchScheme) {
			continue
		}
		if err := h.ws.Subscribing(h.ctx, c, n); err != nil {
			return workspaceError(err)
		}
	}
	return nil
}

// enforceWatches ends c's subscriptions to the resource watches it may
// no longer see (the session that let it has gone, or it unsubscribed
// from it), releasing those nobody else watches, and releases the
// watches c created, never subscribed to and may no longer see.
func (h *Host) enforceWatches(c *conn) {
	for _, uri := range h.ws.UnseenCreated(h.ctx, c) {
		h.releaseIfIdle(uri, true)
	}
	h.mu.Lock()
	mine := map[string]*channel{}
	for uri, ch := range c.subs {
		if ch.kind == chanResourceWatch {
			mine[uri] = ch
		}
	}
	h.mu.Unlock()
	for uri, ch := range mine {
		if h.ws.MaySee(h.ctx, c, uri) {
			continue
		}
		h.mu.Lock()
		ch.dropSub(c)
		delete(c.subs, uri)
		h.mu.Unlock()
		c.log.Info().Str("channel", uri).Str("root", ch.watch.Root).Msg("ended a subscription to a resource watch: the connection may no longer see the watched path")
		h.releaseIfIdle(uri, false)
	}
}

// dropWatches ends an ended connection's part in resource watches: its
// subscriptions end, and the watches it created that nobody watches are
// released.
func (h *Host) dropWatches(c *conn) {
	h.mu.Lock()
	var uris []string
	for uri, ch := range c.subs {
		if ch.kind == chanResourceWatch {
			ch.dropSub(c)
			delete(c.subs, uri)
			uris = append(uris, uri)
		}
	}
	h.mu.Unlock()
	uris = append(uris, h.ws.Orphan(&c.files)...)
	for _, uri := range uris {
		h.releaseIfIdle(uri, true)
	}
}

// releaseIfIdle releases the watch uri when nobody is subscribed to it,
// and somebody was (the last one left) or force is set (its creator has
// gone). The check and the removal of the channel are one step under the
// channel's lock, so a subscription cannot slip in between.
func (h *Host) releaseIfIdle(uri string, force bool) {
	if !h.ws.ReleasableWatch(uri, force) {
		return
	}
	h.mu.Lock()
	ch := h.channels[uri]
	h.mu.Unlock()
	if ch == nil || ch.kind != chanResourceWatch {
		return // removed already: whoever removed it stops the watch
	}
	ch.mu.Lock()
	h.mu.Lock()
	idle := len(ch.subs) == 0
	h.mu.Unlock()
	if !idle || ch.removed {
		ch.mu.Unlock()
		return
	}
	h.removeChannelLocked(ch)
	ch.mu.Unlock()
	h.ws.StopWatch(uri)
}

// closeWatches releases every watch; Host.Close calls it.
func (h *Host) closeWatches() {
	for _, uri := range h.ws.CloseWatches() {
		h.mu.Lock()
		ch := h.channels[uri]
		h.mu.Unlock()
		if ch != nil && ch.kind == chanResourceWatch {
			ch.mu.Lock()
			if !ch.removed {
				h.removeChannelLocked(ch)
			}
			ch.mu.Unlock()
		}
		h.ws.StopWatch(uri)
	}
	h.ws.WaitWatches()
}

// watchStats reports the live watches and the directories they watch.
func (h *Host) watchStats() (watches, dirs int) { return h.ws.WatchStats() }

// filesCreated grants c the working directories of a session it created.
func (h *Host) filesCreated(c *conn, session string) { c.files.Created(session) }

// filesUnsubscribed takes back what an ended subscription granted: a
// session's directories (unless another subscription or the session's
// creation still grants them), and a resource watch nobody watches any
// more is released.
func (h *Host) filesUnsubscribed(c *conn, uri string) {
	if strings.HasPrefix(uri, watchScheme) {
		h.releaseIfIdle(uri, false)
		return
	}
	if c.files.Forget(uri) {
		h.enforceWatches(c)
	}
}

// filesDisposed takes a disposed session's directories back from every
// connection that had them.
func (h *Host) filesDisposed(session string) {
	h.mu.Lock()
	conns := make([]*conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		if c.files.Forget(session) {
			h.enforceWatches(c)
		}
	}
}

// filesDropped releases an ended connection's file access: its sandbox,
// its subscriptions to resource watches, and the watches it created that
// nobody watches. Called before dropConn forgets its subscriptions.
func (h *Host) filesDropped(c *conn) {
	c.files.Close()
	h.dropWatches(c)
}
