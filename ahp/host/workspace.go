package host

import "strings"

// Where the workspace's files are served (see README "Browsing the
// workspace from a client"):
//
//   - files.go: what a connection may touch (a sandbox per connection over
//     the working directories of its sessions);
//   - resources.go: the resource* commands on file: URIs, and
//     resourceRead's streamed answer (stream.go);
//   - resourcewatch.go: createResourceWatch and its ahp-resource-watch:
//     channels.
//
// They need package sandbox, which works on Unix systems;
// resources_other.go answers elsewhere that files are not served.

// watchScheme is the scheme of resource-watch channels.
const watchScheme = "ahp-resource-watch:"

// DefaultMaxWatchDirectories is Options.MaxWatchDirectories' default.
const DefaultMaxWatchDirectories = 10000

// maxWatchesPerConn bounds the resource watches one connection may have
// created and not yet released, so that a client cannot use up the
// system's watches by creating watches it never subscribes to. Each
// watch costs an inotify instance on Linux, of which a user has 128 by
// default (fs.inotify.max_user_instances).
const maxWatchesPerConn = 64

// isFileURI reports whether uri is a file: URI, which resourceRead serves
// from the workspace rather than asking the handler.
func isFileURI(uri string) bool {
	return len(uri) >= 5 && strings.EqualFold(uri[:5], "file:")
}
