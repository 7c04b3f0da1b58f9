package mapping

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/reducer"
	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/backend"
)

func TestChangesetURI(t *testing.T) {
	assert.Equal(t, "ahp-changeset:/abc/session", ChangesetURI("ahp-session:/abc"))
	assert.Equal(t, "ahp-changeset:/x/y/session", ChangesetURI("custom:/x/y"))
}

// TestChangesThreeEdits: a diff that completes, a file written through the
// client, and a diff told twice (as a diff and as the write that made it)
// give three files whose counts are those of before → now; a diff of a
// call that was denied changes nothing; a file edited back to what it was
// leaves the changeset.
func TestChangesThreeEdits(t *testing.T) {
	c := NewChanges(ChangesetURI("ahp-session:/s1"), "/w")
	st := NewChangesetState()
	apply := func(acts []wire.StateAction) {
		for _, a := range acts {
			reducer.Changeset(&st, a, func() int64 { return 0 })
		}
	}
	old := func(s string) *string { return &s }

	// 1. An edit of a.txt, shown while asking, then completed.
	apply(c.Observe("chat", backend.ToolCall{ID: "e1", Status: backend.ToolPending, ContentMode: backend.ContentReplace,
		Content: []backend.ToolContent{{Type: "diff", Path: "a.txt", OldText: old("one\ntwo\n"), NewText: "one\n2\n"}}}))
	require.Empty(t, st.Files, "nothing changed before the call completed")
	apply(c.Observe("chat", backend.ToolCall{ID: "e1", Update: true, Status: backend.ToolCompleted}))
	// 2. A new file written through the client.
	apply(c.Observe("chat", backend.FileEdited{Path: "/w/new.txt", New: "x\ny\n"}))
	// 3. An edit of c.txt reported as a diff and as the write.
	apply(c.Observe("chat", backend.ToolCall{ID: "e3", Status: backend.ToolCompleted, ContentMode: backend.ContentReplace,
		Content: []backend.ToolContent{{Type: "diff", Path: "/w/c.txt", OldText: old("a\n"), NewText: "a\nb\nc\n"}}}))
	assert.Empty(t, c.Observe("chat", backend.FileEdited{Path: "/w/c.txt", Old: old("a\n"), New: "a\nb\nc\n"}), "the same edit twice")
	// A denied edit.
	apply(c.Observe("chat", backend.ToolCall{ID: "e4", Status: backend.ToolPending, ContentMode: backend.ContentReplace,
		Content: []backend.ToolContent{{Type: "diff", Path: "/w/d.txt", OldText: old(""), NewText: "no\n"}}}))
	apply(c.Observe("chat", backend.ToolCall{ID: "e4", Update: true, Status: backend.ToolFailed}))

	require.Len(t, st.Files, 3)
	ids := []string{st.Files[0].ID, st.Files[1].ID, st.Files[2].ID}
	assert.Equal(t, []string{"file:///w/a.txt", "file:///w/new.txt", "file:///w/c.txt"}, ids)
	assert.Equal(t, int64(1), *st.Files[0].Edit.Diff.Added)
	assert.Equal(t, int64(1), *st.Files[0].Edit.Diff.Removed)
	assert.Nil(t, st.Files[1].Edit.Before, "a created file has no before side")
	assert.Equal(t, int64(2), *st.Files[2].Edit.Diff.Added)
	sum := c.Summary()
	assert.Equal(t, wire.ChangesSummary{Additions: wire.Ptr(int64(5)), Deletions: wire.Ptr(int64(1)), Files: wire.Ptr(int64(3))}, sum)

	// The contents are served.
	before, ok := c.Resource(st.Files[0].Edit.Before.Content.URI)
	require.True(t, ok)
	assert.Equal(t, "one\ntwo\n", before.Data)
	after, ok := c.Resource(st.Files[0].Edit.After.Content.URI)
	require.True(t, ok)
	assert.Equal(t, "one\n2\n", after.Data)

	// a.txt edited again: one entry still, before as at first, the new after.
	apply(c.Observe("chat", backend.FileEdited{Path: "/w/a.txt", Old: old("one\n2\n"), New: "one\n2\nthree\n"}))
	require.Len(t, st.Files, 3)
	after, ok = c.Resource(st.Files[0].Edit.After.Content.URI)
	require.True(t, ok)
	assert.Equal(t, "one\n2\nthree\n", after.Data)
	before, _ = c.Resource(st.Files[0].Edit.Before.Content.URI)
	assert.Equal(t, "one\ntwo\n", before.Data)

	// c.txt back to what it was: it leaves the changeset.
	apply(c.Observe("chat", backend.FileEdited{Path: "/w/c.txt", Old: old("a\nb\nc\n"), New: "a\n"}))
	require.Len(t, st.Files, 2)
	assert.Equal(t, int64(2), *c.Summary().Files)
}
