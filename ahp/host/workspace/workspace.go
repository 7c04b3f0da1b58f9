// Package workspace serves the workspace's files to AHP clients: the
// resource* commands on file: URIs (read, write, list, resolve, mkdir,
// delete, move, copy) and resource watches, each confined to what one
// connection may touch.
//
// It knows nothing of the host's sequencer, channels or replay: the host
// (package host) decodes a request, hands its params to a Workspace
// method with the connection as a Client, and sends the answer; a resource
// watch's changes come back to the host through the function it gives
// Workspace.RunWatch, and the host sequences them on the watch's channel.
//
//   - files.go: what a connection may touch (a sandbox per connection over
//     the working directories of its sessions, and the browse roots);
//   - resources.go: the commands;
//   - watch.go: resource watches (package watch) and their globs;
//   - uri.go: file URIs and paths.
//
// The commands need package sandbox, which works on Unix systems;
// other.go answers elsewhere that files are not served.
package workspace

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"
)

// Options configure a Workspace.
type Options struct {
	// ReadOnly refuses every change to the files (resourceWrite,
	// resourceMkdir, …) with PermissionDenied.
	ReadOnly bool
	// BrowseRoots are directories (absolute paths or local file: URIs)
	// any connection may list and resolve in, for a folder picker before
	// any session exists; nothing else is served from them.
	BrowseRoots []string
	// MaxWatchDirectories bounds the directories one resource watch may
	// watch; a larger tree is refused when the watch is created.
	MaxWatchDirectories int
	// MaxWatchesPerConn bounds the resource watches one connection may
	// have created and not yet released (default 64).
	MaxWatchesPerConn int
	// Logger logs what the workspace itself does (watches released,
	// watch errors).
	Logger zerolog.Logger
}

// maxWatchesPerConn is Options.MaxWatchesPerConn's default: a client
// cannot use up the system's watches by creating watches it never
// subscribes to. Each watch costs an inotify instance on Linux, of which
// a user has 128 by default (fs.inotify.max_user_instances).
const maxWatchesPerConn = 64

// Workspace serves the files to every connection of a host, and holds
// the host's resource watches. Its methods may be called concurrently.
type Workspace struct {
	opts    Options
	watches watchSet // resource watches (watch.go)
}

// New returns a Workspace.
func New(opts Options) *Workspace {
	if opts.MaxWatchesPerConn <= 0 {
		opts.MaxWatchesPerConn = maxWatchesPerConn
	}
	return &Workspace{opts: opts}
}

// Client is one connection as the workspace sees it. The host implements
// it for its connections.
type Client interface {
	// Files is the connection's file access, which the host keeps with
	// the connection for its lifetime and releases with Files.Close.
	Files() *Files
	// WorkingDirectories returns the working directories (absolute paths
	// or file: URIs, as sessions keep them) of the sessions among created
	// that still exist and of the sessions the connection is subscribed
	// to (directly or through one of their chats), and which of created
	// no longer exist.
	WorkingDirectories(created []string) (dirs, gone []string)
	// Logger is the connection's logger.
	Logger() *zerolog.Logger
}

// Op is a command whose params were checked: it does the file work and
// returns the command's result, or an *Error. The host runs it in a
// goroutine of its own, since a file system can be slow.
type Op func() (any, error)

// Error is a refusal with the AHP error code (wire.Code…) the client is
// answered with.
type Error struct {
	Code    int
	Message string
}

// Error implements error.
func (e *Error) Error() string { return e.Message }

// errorf builds an *Error with a formatted message.
func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// IsFileURI reports whether uri is a file: URI, which resourceRead serves
// from the workspace rather than asking the host's handler.
func IsFileURI(uri string) bool {
	return len(uri) >= 5 && strings.EqualFold(uri[:5], "file:")
}
