package mapping

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

// ChangesetURI is the channel of a session's changeset: every file the
// agent changed in the session, from what it held before the first change
// to what it holds now.
func ChangesetURI(sessionURI string) string {
	id := sessionURI
	if i := strings.Index(id, ":"); i >= 0 {
		id = id[i+1:]
	}
	return "ahp-changeset:/" + strings.TrimLeft(id, "/") + "/session"
}

// ChangesetCatalogue is the session's changeset catalogue
// (session/changesetsChanged): the one static changeset at uri.
func ChangesetCatalogue(uri string) wire.StateAction {
	return act(&wire.SessionChangesetsChangedAction{Changesets: []wire.Changeset{{
		Label:       "Session changes",
		URITemplate: uri,
		Description: wire.Ptr("Every file the agent changed in this session, from before its first change to now"),
		ChangeKind:  "session",
	}}})
}

// NewChangesetState is the changeset's state when the session starts:
// ready, and empty.
func NewChangesetState() wire.ChangesetState {
	return wire.ChangesetState{Status: wire.ChangesetStatusReady, Files: []wire.ChangesetFile{}}
}

// Changes keeps a session's changeset from the agent's events (Observe):
// the diffs of tool calls that completed, and the files the agent wrote
// through the client (backend.FileEdited). A file is one entry, whatever
// the number of edits: its content before the first edit and its content
// now. An edit reported twice (a diff, and the write that made it) changes
// nothing the second time; a file edited back to what it was leaves the
// changeset. Each content is published for resourceRead (Resource).
//
// Changes is not safe for concurrent use; the bridge calls it under the
// chat's lock.
type Changes struct {
	uri   string // the changeset channel
	cwd   string // relative diff paths are taken from it
	files []*changedFile
	// tools are the contents of the tool calls of the session's chats
	// seen so far, by chat and id, until each completes.
	tools     map[string][]backend.ToolContent
	resources map[string]Resource
	next      int
}

type changedFile struct {
	n       int
	path    string
	before  *string // nil: the file did not exist
	after   string
	version int
	removed bool
}

// NewChanges starts the changeset of the session whose changeset channel is
// uri; cwd resolves relative paths.
func NewChanges(uri, cwd string) *Changes {
	return &Changes{uri: uri, cwd: cwd, tools: map[string][]backend.ToolContent{}, resources: map[string]Resource{}}
}

// URI is the changeset's channel.
func (c *Changes) URI() string { return c.uri }

// Observe takes one event of a chat (key tells the chats apart: their tool
// call ids may repeat) and returns the changeset/* actions it makes due.
func (c *Changes) Observe(key string, ev backend.Event) []wire.StateAction {
	switch e := ev.(type) {
	case backend.FileEdited:
		return c.join(e.Path, e.Old, e.New)
	case backend.ToolCall:
		id := key + "\x00" + e.ID
		switch e.ContentMode {
		case backend.ContentReplace:
			c.tools[id] = append([]backend.ToolContent(nil), e.Content...)
		case backend.ContentAppend:
			c.tools[id] = append(c.tools[id], e.Content...)
		}
		if e.Status != backend.ToolCompleted {
			if e.Status == backend.ToolFailed {
				delete(c.tools, id)
			}
			return nil
		}
		// Only a call that completed changed its files: a diff shown while
		// the user is asked, then denied, changed nothing.
		var acts []wire.StateAction
		for _, tc := range c.tools[id] {
			if tc.Type != "diff" || tc.Path == "" {
				continue
			}
			old := tc.OldText
			if tc.Created {
				old = nil
			}
			acts = append(acts, c.join(tc.Path, old, tc.NewText)...)
		}
		delete(c.tools, id)
		return acts
	}
	return nil
}

// join records one edit of path.
func (c *Changes) join(path string, old *string, text string) []wire.StateAction {
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) && c.cwd != "" {
		path = filepath.Join(c.cwd, path)
	}
	path = filepath.Clean(path)
	var f *changedFile
	for _, x := range c.files {
		if x.path == path {
			f = x
			break
		}
	}
	switch {
	case f == nil:
		c.next++
		f = &changedFile{n: c.next, path: path, after: text}
		if old != nil {
			before := *old
			f.before = &before
			c.resources[c.ref(f, "before", 0)] = Resource{Data: before, ContentType: "text/plain"}
		}
		c.files = append(c.files, f)
	case f.after == text && !f.removed:
		return nil // the same edit, told twice
	default:
		f.after = text
	}
	f.version++
	if f.before != nil && *f.before == f.after {
		// Back to what it was: nothing of the file is changed any more.
		f.removed = true
		return []wire.StateAction{act(&wire.ChangesetFileRemovedAction{FileID: FileURI(f.path)})}
	}
	f.removed = false
	c.resources[c.ref(f, "after", f.version)] = Resource{Data: f.after, ContentType: "text/plain"}
	return []wire.StateAction{act(&wire.ChangesetFileSetAction{File: c.file(f)})}
}

// ref is the URI under which a side of a file's content is served.
func (c *Changes) ref(f *changedFile, side string, version int) string {
	base := fmt.Sprintf("ahp-bridge:/changes/%s/%d/%s", pathSeg(strings.TrimPrefix(c.uri, "ahp-changeset:/")), f.n, side)
	if side == "after" {
		return fmt.Sprintf("%s/%d", base, version)
	}
	return base
}

func (c *Changes) file(f *changedFile) wire.ChangesetFile {
	e := fileEditFields{after: &fileSide{uri: FileURI(f.path), ref: c.ref(f, "after", f.version), size: int64(len(f.after))}}
	old := ""
	if f.before != nil {
		old = *f.before
		e.before = &fileSide{uri: FileURI(f.path), ref: c.ref(f, "before", 0), size: int64(len(old))}
	}
	e.added, e.removed = lineDiff(old, f.after)
	before, after, diff := e.wire()
	return wire.ChangesetFile{ID: FileURI(f.path), Edit: wire.FileEdit{Before: before, After: after, Diff: diff}}
}

// Summary is SessionSummary.changes: the lines added and removed over the
// changed files, and their number.
func (c *Changes) Summary() wire.ChangesSummary {
	var adds, dels, files int64
	for _, f := range c.files {
		if f.removed {
			continue
		}
		old := ""
		if f.before != nil {
			old = *f.before
		}
		a, d := lineDiff(old, f.after)
		adds, dels, files = adds+a, dels+d, files+1
	}
	return wire.ChangesSummary{Additions: wire.Ptr(adds), Deletions: wire.Ptr(dels), Files: wire.Ptr(files)}
}

// Resource returns a content the changeset published.
func (c *Changes) Resource(uri string) (Resource, bool) {
	r, ok := c.resources[uri]
	return r, ok
}
