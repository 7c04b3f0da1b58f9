package host

import (
	"context"

	"github.com/ahp-bridge/ahp-bridge/ahp/host/workspace"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// async answers a request from its own goroutine, so a slow backend does
// not hold up the connection's other requests. The connection admits at
// most MaxPendingRequests of them at once; further ones get an error at
// once, so a client cannot make the host start unbounded work.
func (h *Host) async(r *request, serve func() (any, *Error)) {
	c := r.c
	if !h.admit(r) {
		return
	}
	go func() {
		defer c.endRequest()
		defer func() {
			if p := recover(); p != nil {
				c.log.Error().Interface("panic", p).Str("method", r.method).Msg("the handler panicked")
				h.reply(r, nil, Errorf(CodeInternalError, "internal error in %s", r.method))
			}
		}()
		res, err := serve()
		h.reply(r, res, err)
	}()
}

// admit counts a request that will be answered asynchronously against
// the connection's limit, or answers it with an error at once. An
// admitted request must end with c.endRequest.
func (h *Host) admit(r *request) bool {
	c := r.c
	if n := c.pending.Add(1); int(n) > h.opts.MaxPendingRequests {
		c.pending.Add(-1)
		c.log.Warn().Str("method", r.method).Int("limit", h.opts.MaxPendingRequests).Msg("refused a request: too many pending requests")
		h.reply(r, nil, Errorf(CodeInternalError,
			"too many pending requests: a connection may have at most %d requests unanswered; wait for some answers first",
			h.opts.MaxPendingRequests))
		return false
	}
	c.reqWG.Add(1)
	return true
}

// completions asks the handler for the completions of a chat's input.
func (h *Host) completions(ctx context.Context, r *request, uri string) {
	var p wire.CompletionsParams
	if err := decodeParams("completions", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	if h.lookup(uri) == nil {
		h.reply(r, nil, notFoundError(uri))
		return
	}
	if h.handler == nil {
		h.reply(r, wire.CompletionsResult{Items: []wire.CompletionItem{}}, nil)
		return
	}
	h.async(r, func() (any, *Error) {
		res, err := h.handler.Completions(ctx, p)
		if err != nil {
			return nil, asRPCError(err)
		}
		if res.Items == nil {
			res.Items = []wire.CompletionItem{}
		}
		return res, nil
	})
}

func (h *Host) resourceRead(ctx context.Context, r *request, _ string) {
	var p wire.ResourceReadParams
	if err := decodeParams("resourceRead", r.params, &p); err != nil {
		h.reply(r, nil, err)
		return
	}
	if p.URI == "" {
		h.reply(r, nil, Errorf(CodeInvalidParams, "invalid params for resourceRead: uri is required"))
		return
	}
	if workspace.IsFileURI(p.URI) {
		// The workspace's files, through the connection's sandbox
		// (workspace.go); other URIs are the handler's.
		h.readFile(ctx, r, p)
		return
	}
	if h.handler == nil {
		h.reply(r, nil, Errorf(CodeNotFound, "%s not found", p.URI))
		return
	}
	h.async(r, func() (any, *Error) {
		res, err := h.handler.ResourceRead(ctx, p)
		if err != nil {
			return nil, asRPCError(err)
		}
		return res, nil
	})
}
