//go:build !unix

package host

import (
	"context"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The workspace's files are served through package sandbox, which
// confines every operation with Unix system calls (os.Root and *at
// calls). Elsewhere the resource commands are answered with
// MethodNotFound, naming why, and resourceRead still serves the
// handler's URIs.

// connFiles is a connection's file access: none here.
type connFiles struct{}

// watchSet is the host's resource watches: none here.
type watchSet struct{}

func (h *Host) noFiles(r *request) {
	h.reply(r, nil, Errorf(CodeMethodNotFound, "%s is not supported on this system: the bridge serves the workspace's files on Unix systems only", r.method))
}

func (h *Host) readFile(_ context.Context, r *request, _ wire.ResourceReadParams) { h.noFiles(r) }
func (h *Host) resourceList(_ context.Context, r *request, _ string)              { h.noFiles(r) }
func (h *Host) resourceWrite(_ context.Context, r *request, _ string)             { h.noFiles(r) }
func (h *Host) resourceResolve(_ context.Context, r *request, _ string)           { h.noFiles(r) }
func (h *Host) resourceMkdir(_ context.Context, r *request, _ string)             { h.noFiles(r) }
func (h *Host) resourceDelete(_ context.Context, r *request, _ string)            { h.noFiles(r) }
func (h *Host) resourceMove(_ context.Context, r *request, _ string)              { h.noFiles(r) }
func (h *Host) resourceCopy(_ context.Context, r *request, _ string)              { h.noFiles(r) }
func (h *Host) createResourceWatch(_ context.Context, r *request, _ string)       { h.noFiles(r) }

// The hooks where subscriptions and sessions change have nothing to do.
func (h *Host) filesCreated(*conn, string)      {}
func (h *Host) filesUnsubscribed(*conn, string) {}
func (h *Host) filesDisposed(string)            {}
func (h *Host) filesDropped(*conn)              {}
func (h *Host) enforceWatches(*conn)            {}
func (h *Host) mayWatch(*conn, []string) *Error { return nil }
func (h *Host) closeWatches()                   {}
