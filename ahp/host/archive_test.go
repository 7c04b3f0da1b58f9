package host

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ahp-bridge/ahp-bridge/ahp/wire"
	"github.com/ahp-bridge/ahp-bridge/store"
)

// listed returns the listSessions entry of uri, failing when there is none.
func listed(t *testing.T, c *testClient, uri string) wire.SessionSummary {
	t.Helper()
	var list wire.ListSessionsResult
	c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	for _, it := range list.Items {
		if it.Resource == uri {
			return it
		}
	}
	t.Fatalf("session %s is not listed", uri)
	return wire.SessionSummary{}
}

// notListed checks that listSessions does not have uri.
func notListed(t *testing.T, c *testClient, uri string) {
	t.Helper()
	var list wire.ListSessionsResult
	c.mustCall("listSessions", map[string]any{"channel": RootURI}, &list)
	for _, it := range list.Items {
		assert.NotEqual(t, uri, it.Resource, "session %s is still listed", uri)
	}
}

// summaryChangeOf waits for root/sessionSummaryChanged of session uri,
// failing on a root/sessionRemoved of it first.
func summaryChangeOf(t *testing.T, c *testClient, uri string) map[string]json.RawMessage {
	t.Helper()
	_, m := c.until("root/sessionSummaryChanged of "+uri, func(m rpcMsg) bool {
		var p struct {
			Session string                     `json:"session"`
			Changes map[string]json.RawMessage `json:"changes"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if m.Method == "root/sessionRemoved" && p.Session == uri {
			t.Fatalf("session %s was removed, not archived", uri)
		}
		_, status := p.Changes["status"]
		return m.Method == "root/sessionSummaryChanged" && p.Session == uri && status
	})
	var p struct {
		Changes map[string]json.RawMessage `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(m.Params, &p))
	return p.Changes
}

// TestDisposeArchivesWithAStore: disposeSession of a session with turns
// keeps it, archived: its rows stay, it is still listed with the archived
// flag (root/sessionSummaryChanged, not root/sessionRemoved), the handler
// released its agent, and it left memory; subscribing brings its history
// back from the store (snapshot and fetchTurns), and a turn re-attaches
// the agent. A session without turns is removed with its rows, loaded or
// only stored. The archive flag survives a restart.
func TestDisposeArchivesWithAStore(t *testing.T) {
	path := stateFile(t)
	hs, st := storedHarness(t, path, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	a := hs.newSession(c, "a")
	for _, id := range []string{"t1", "t2", "t3"} {
		richTurn(t, hs, a.chat, id)
	}
	empty := hs.newSession(c, "empty")
	stored := hs.newSession(c, "stored-empty")
	settled(t, hs, a.uri)
	c.close() // nobody subscribed: an archived session leaves memory
	eventually(t, "the client's connection is dropped", func() bool { return hs.h.Stats().Connections == 0 })

	w := hs.dial(t, "watcher")
	w.initialize(RootURI)
	require.Equal(t, 3, hs.h.Stats().Sessions)
	w.mustCall("disposeSession", map[string]any{"channel": a.uri}, nil)
	changes := summaryChangeOf(t, w, a.uri)
	var status wire.SessionStatus
	require.NoError(t, json.Unmarshal(changes["status"], &status))
	assert.True(t, status.Has(wire.SessionStatusIsArchived), "the summary carries the archived flag")
	hs.handler.waitFor(t, "DisposeSession", func(b *fakeHandler) bool { return len(b.disposed) == 1 && b.disposed[0] == a.uri })
	assert.Equal(t, 2, hs.h.Stats().Sessions, "released from memory")
	ctx, cancel := waitCtx(t)
	defer cancel()
	rec, err := st.GetSession(ctx, a.uri)
	require.NoError(t, err, "its rows stay")
	assert.Equal(t, 3, rec.Chats[0].Turns)
	assert.True(t, listed(t, w, a.uri).Status.Has(wire.SessionStatusIsArchived))

	// An empty session goes for good, as before.
	w.mustCall("disposeSession", map[string]any{"channel": empty.uri}, nil)
	w.nextNotification("root/sessionRemoved")
	_, err = st.GetSession(ctx, empty.uri)
	assert.ErrorIs(t, err, store.ErrNotFound)
	notListed(t, w, empty.uri)

	// Its history comes back from the store: the snapshot's tail, and
	// fetchTurns for the rest.
	r := hs.dial(t, "reader")
	r.initialize()
	var sess wire.SessionState
	require.NoError(t, json.Unmarshal(r.subscribe(a.uri).State, &sess))
	assert.True(t, sess.Status.Has(wire.SessionStatusIsArchived))
	var chat wire.ChatState
	require.NoError(t, json.Unmarshal(r.subscribeView(a.chat, 1).State, &chat))
	assert.Equal(t, []string{"t3"}, turnIDs(chat.Turns))
	require.NotNil(t, chat.TurnsNextCursor)
	_, rpcErr := r.call("fetchTurns", map[string]any{"channel": a.chat, "cursor": *chat.TurnsNextCursor})
	require.Nil(t, rpcErr)
	loaded := r.nextEnvelope(isAction(a.chat, wire.ActionTypeChatTurnsLoaded))
	assert.Equal(t, []string{"t1", "t2"}, turnIDs(loaded.Action.Value.(*wire.ChatTurnsLoadedAction).Turns))
	hs.handler.waitFor(t, "the archived session handed over again", func(b *fakeHandler) bool {
		return len(b.restored) == 1 && b.restored[0].Session == a.uri
	})
	// A turn runs as on any restored session.
	r.accepted(a.chat, &wire.ChatTurnStartedAction{TurnID: "t4", Message: userMsg("again")})
	r.nextEnvelope(isAction(a.chat, wire.ActionTypeChatToolCallReady))
	r.accepted(a.chat, &wire.ChatToolCallApprovedAction{TurnID: "t4", ToolCallID: "tc-t4", Confirmed: wire.ToolCallConfirmationReasonUserAction})
	r.nextEnvelope(isAction(a.chat, wire.ActionTypeChatTurnComplete))
	settled(t, hs, a.uri)
	r.close()
	w.close()

	hs, st = restart(t, hs, st, path, Options{})
	c = hs.dial(t, "c")
	c.initialize(RootURI)
	assert.True(t, listed(t, c, a.uri).Status.Has(wire.SessionStatusIsArchived), "archived across a restart")
	require.NoError(t, json.Unmarshal(c.subscribe(a.uri).State, &sess))
	assert.True(t, sess.Status.Has(wire.SessionStatusIsArchived))
	assert.Len(t, hs.readChat(t, a.chat).Turns, 4)
	// An empty session only in the store goes too.
	c.mustCall("disposeSession", map[string]any{"channel": stored.uri}, nil)
	c.nextNotification("root/sessionRemoved")
	_, err = st.GetSession(ctx, stored.uri)
	assert.ErrorIs(t, err, store.ErrNotFound)
	// Disposing the archived one again changes nothing.
	c.mustCall("disposeSession", map[string]any{"channel": a.uri}, nil)
	assert.True(t, listed(t, c, a.uri).Status.Has(wire.SessionStatusIsArchived))
	_, err = st.GetSession(ctx, a.uri)
	require.NoError(t, err)
	// Watched, it stayed in memory; once nobody watches it, it leaves.
	assert.Equal(t, 1, hs.h.Stats().Sessions)
	c.close()
	eventually(t, "the archived session leaves memory once nobody watches it", func() bool { return hs.h.Stats().Sessions == 0 })
	_, err = st.GetSession(ctx, a.uri)
	require.NoError(t, err)
}

// TestDisposeArchivesInMemory: without a store, a disposed session with
// turns stays in memory, archived and released from the agent; a turn the
// handler left running ends as cancelled; the next turn hands the session
// to the handler again (SessionRestorer) before it runs.
func TestDisposeArchivesInMemory(t *testing.T) {
	hs := newHarness(t, Options{})
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	s := hs.newSession(c, "kept")
	richTurn(t, hs, s.chat, "t1")
	// A turn waiting for its tool call's confirmation when it is disposed.
	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t2", Message: userMsg("running")})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))

	c.mustCall("disposeSession", map[string]any{"channel": s.uri}, nil)
	arch := c.nextEnvelope(isAction(s.uri, wire.ActionTypeSessionIsArchivedChanged))
	assert.True(t, arch.Action.Value.(*wire.SessionIsArchivedChangedAction).IsArchived)
	summaryChangeOf(t, c, s.uri)
	hs.handler.waitFor(t, "DisposeSession", func(b *fakeHandler) bool { return len(b.disposed) == 1 })
	ch := hs.readChat(t, s.chat)
	assert.Nil(t, ch.ActiveTurn, "the running turn ended")
	require.Equal(t, []string{"t1", "t2"}, turnIDs(ch.Turns))
	assert.Equal(t, wire.TurnStateCancelled, ch.Turns[1].State)
	assert.Equal(t, 1, hs.h.Stats().Sessions, "kept in memory: there is nowhere else")
	assert.True(t, listed(t, c, s.uri).Status.Has(wire.SessionStatusIsArchived))

	c.accepted(s.chat, &wire.ChatTurnStartedAction{TurnID: "t3", Message: userMsg("again")})
	hs.handler.waitFor(t, "the re-attach", func(b *fakeHandler) bool { return len(b.restored) == 1 && b.restored[0].Session == s.uri })
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatToolCallReady))
	c.accepted(s.chat, &wire.ChatToolCallDeniedAction{TurnID: "t3", ToolCallID: "tc-t3", Reason: wire.ToolCallCancellationReasonDenied})
	c.nextEnvelope(isAction(s.chat, wire.ActionTypeChatTurnComplete))
	hs.handler.set(func(b *fakeHandler) {
		require.Len(t, b.restored, 1, "re-attached once")
		assert.Equal(t, s.chat, b.restored[0].Chats[0].Chat)
	})

	// An empty session is removed.
	e := hs.newSession(c, "empty")
	c.mustCall("disposeSession", map[string]any{"channel": e.uri}, nil)
	c.nextNotification("root/sessionRemoved")
	notListed(t, c, e.uri)
}

// TestArchiveRetention: with ArchiveRetention set, archived sessions last
// modified before the period are deleted, live (idle, unwatched) and only
// stored, at start and on each sweep; archived sessions within the period
// and sessions that are not archived, however old, stay.
func TestArchiveRetention(t *testing.T) {
	clock := newFixedClock()
	const day = 24 * time.Hour
	path := stateFile(t)
	opts := Options{Clock: clock.now}
	hs, st := storedHarness(t, path, opts)
	c := hs.dial(t, "c")
	c.initialize(RootURI)
	oldStored := hs.newSession(c, "old-stored")
	oldLive := hs.newSession(c, "old-live")
	recent := hs.newSession(c, "recent")
	kept := hs.newSession(c, "not-archived")
	for _, s := range []testSession{oldStored, oldLive, recent, kept} {
		richTurn(t, hs, s.chat, "t1")
	}
	c.mustCall("disposeSession", map[string]any{"channel": oldStored.uri}, nil)
	c.mustCall("disposeSession", map[string]any{"channel": oldLive.uri}, nil)
	clock.advance((10 * day).Milliseconds())
	c.mustCall("disposeSession", map[string]any{"channel": recent.uri}, nil)
	settled(t, hs, recent.uri)
	c.close()

	// Off by default: nothing is deleted, however old.
	clock.advance((10 * day).Milliseconds())
	hs, st = restart(t, hs, st, path, opts)
	assert.Zero(t, hs.h.sweepArchived())
	c = hs.dial(t, "c")
	c.initialize(RootURI)
	c.subscribe(oldLive.uri) // loaded: a live archived session
	c.close()
	eventually(t, "the client's connection is dropped", func() bool { return hs.h.Stats().Connections == 0 })

	// 15 days: the two archived 20 days ago go, the one archived 10 days
	// ago and the one never archived stay.
	hs.h.opts.ArchiveRetention = 15 * day
	w := hs.dial(t, "w")
	w.initialize(RootURI)
	assert.Equal(t, 2, hs.h.sweepArchived())
	removed := []string{}
	for len(removed) < 2 {
		var p wire.SessionRemovedParams
		require.NoError(t, json.Unmarshal(w.nextNotification("root/sessionRemoved").Params, &p))
		removed = append(removed, p.Session)
	}
	assert.ElementsMatch(t, []string{oldStored.uri, oldLive.uri}, removed)
	ctx, cancel := waitCtx(t)
	defer cancel()
	for _, s := range []testSession{oldStored, oldLive} {
		_, err := st.GetSession(ctx, s.uri)
		assert.ErrorIs(t, err, store.ErrNotFound, s.uri)
		notListed(t, w, s.uri)
	}
	for _, s := range []testSession{recent, kept} {
		_, err := st.GetSession(ctx, s.uri)
		assert.NoError(t, err, s.uri)
		listed(t, w, s.uri)
	}
	w.close()

	// At start: a host opened with the setting deletes what is old.
	clock.advance((10 * day).Milliseconds())
	hs, st = restart(t, hs, st, path, Options{Clock: clock.now, ArchiveRetention: 15 * day})
	eventually(t, "the archived session is deleted at start", func() bool {
		_, err := st.GetSession(ctx, recent.uri)
		return errors.Is(err, store.ErrNotFound)
	})
	_, err := st.GetSession(ctx, kept.uri)
	assert.NoError(t, err, "never archived: kept")
}
