//go:build !unix

package workspace

import (
	"context"
	"io"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
)

// The workspace's files are served through package sandbox, which
// confines every operation with Unix system calls (os.Root and *at
// calls). Elsewhere the resource commands are answered with
// MethodNotFound, naming why, and there are no watches.

// Files is a connection's file access: none here.
type Files struct{}

// Created does nothing here.
func (*Files) Created(string) {}

// Forget reports that there is nothing to bring in line.
func (*Files) Forget(string) bool { return false }

// Close does nothing here.
func (*Files) Close() {}

// watchSet is the host's resource watches: none here.
type watchSet struct{}

// Watch is a resource watch: never started here.
type Watch struct{}

// Close does nothing here.
func (*Watch) Close() {}

// Content is resourceRead's result for a file: never made here.
type Content struct {
	// Head is the result up to its data.
	Head []byte
	// Tail is the result's other members and its closing brace.
	Tail []byte
}

// WriteData writes nothing here.
func (*Content) WriteData(io.Writer) (int64, error) { return 0, nil }

// Close does nothing here.
func (*Content) Close() {}

// unsupported is the answer to every resource command.
func unsupported(method string) *Error {
	return errorf(wire.CodeMethodNotFound, "%s is not supported on this system: the bridge serves the workspace's files on Unix systems only", method)
}

// List answers that files are not served here.
func (*Workspace) List(context.Context, Client, wire.ResourceListParams) (Op, error) {
	return nil, unsupported(wire.MethodResourceList)
}

// Read answers that files are not served here.
func (*Workspace) Read(context.Context, Client, wire.ResourceReadParams) (func() (*Content, error), error) {
	return nil, unsupported(wire.MethodResourceRead)
}

// Write answers that files are not served here.
func (*Workspace) Write(context.Context, Client, wire.ResourceWriteParams) (Op, error) {
	return nil, unsupported(wire.MethodResourceWrite)
}

// Resolve answers that files are not served here.
func (*Workspace) Resolve(context.Context, Client, wire.ResourceResolveParams) (Op, error) {
	return nil, unsupported(wire.MethodResourceResolve)
}

// Mkdir answers that files are not served here.
func (*Workspace) Mkdir(context.Context, Client, wire.ResourceMkdirParams) (Op, error) {
	return nil, unsupported(wire.MethodResourceMkdir)
}

// Delete answers that files are not served here.
func (*Workspace) Delete(context.Context, Client, wire.ResourceDeleteParams) (Op, error) {
	return nil, unsupported(wire.MethodResourceDelete)
}

// Move answers that files are not served here.
func (*Workspace) Move(context.Context, Client, wire.ResourceMoveParams) (Op, error) {
	return nil, unsupported(wire.MethodResourceMove)
}

// Copy answers that files are not served here.
func (*Workspace) Copy(context.Context, Client, wire.ResourceCopyParams) (Op, error) {
	return nil, unsupported(wire.MethodResourceCopy)
}

// Watch answers that files are not served here.
func (*Workspace) Watch(context.Context, Client, wire.CreateResourceWatchParams) (func() (*Watch, error), error) {
	return nil, unsupported(wire.MethodCreateResourceWatch)
}

// RunWatch is never reached here.
func (*Workspace) RunWatch(string, *Watch, func([]wire.ResourceChange)) bool { return false }

// MaySee reports true: there are no watches here.
func (*Workspace) MaySee(context.Context, Client, string) bool { return true }

// Subscribing passes: there are no watches here.
func (*Workspace) Subscribing(context.Context, Client, string) error { return nil }

// UnseenCreated returns nothing: there are no watches here.
func (*Workspace) UnseenCreated(context.Context, Client) []string { return nil }

// Orphan returns nothing: there are no watches here.
func (*Workspace) Orphan(*Files) []string { return nil }

// ReleasableWatch reports false: there are no watches here.
func (*Workspace) ReleasableWatch(string, bool) bool { return false }

// StopWatch does nothing here.
func (*Workspace) StopWatch(string) {}

// CloseWatches returns nothing: there are no watches here.
func (*Workspace) CloseWatches() []string { return nil }

// WaitWatches returns at once here.
func (*Workspace) WaitWatches() {}

// WatchStats reports none here.
func (*Workspace) WatchStats() (watches, dirs int) { return 0, 0 }
