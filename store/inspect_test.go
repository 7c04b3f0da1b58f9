package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The export's shape is a promise to whoever scripts against it: this test
// pins it byte for byte.
func TestExportShape(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := Session{
		URI: "copilot:/s1", Provider: "acp:claude", Title: "Fix the <build>",
		WorkingDirs: []string{"/home/u/p"},
		Config:      json.RawMessage(`{"model": "opus"}`),
		Summary:     json.RawMessage(`{"status":1}`),
		Created:     at(0), Modified: at(60),
	}
	c1 := Chat{URI: "copilot:/s1/c1", SessionURI: sess.URI, ACPSessionID: "acp-1", Summary: json.RawMessage(`{"title":"main"}`), Created: at(1)}
	c2 := Chat{URI: "copilot:/s1/c2", SessionURI: sess.URI, Created: at(2)}
	require.NoError(t, s.PutSession(ctx, sess, c1, c2))
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: c1.URI, Turn: Turn{ID: "t1", Data: json.RawMessage(`{"message": "hi",  "parts": []}`), EndedAt: at(10)}}))
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: c1.URI, Turn: Turn{ID: "t2", Data: json.RawMessage(`{"message":"more"}`), EndedAt: at(20)}}))
	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{{ChatURI: c1.URI, TurnID: "t3", Data: json.RawMessage(`{"partial":true}`), Updated: at(30)}}))

	doc, err := Export(ctx, s, sess.URI)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, doc.Encode(&buf))
	const want = `{
  "format": "ahp-bridge/session-export",
  "version": 1,
  "session": {
    "uri": "copilot:/s1",
    "provider": "acp:claude",
    "title": "Fix the <build>",
    "workingDirectories": [
      "/home/u/p"
    ],
    "config": {
      "model": "opus"
    },
    "summary": {
      "status": 1
    },
    "created": "2026-05-28T20:26:40.123456789Z",
    "modified": "2026-05-28T20:27:40.123456789Z"
  },
  "chats": [
    {
      "uri": "copilot:/s1/c1",
      "acpSessionId": "acp-1",
      "created": "2026-05-28T20:26:41.123456789Z",
      "summary": {
        "title": "main"
      },
      "turns": [
        {
          "id": "t1",
          "endedAt": "2026-05-28T20:26:50.123456789Z",
          "turn": {
            "message": "hi",
            "parts": []
          }
        },
        {
          "id": "t2",
          "endedAt": "2026-05-28T20:27:00.123456789Z",
          "turn": {
            "message": "more"
          }
        }
      ],
      "activeTurn": {
        "turnId": "t3",
        "updated": "2026-05-28T20:27:10.123456789Z",
        "state": {
          "partial": true
        }
      }
    },
    {
      "uri": "copilot:/s1/c2",
      "created": "2026-05-28T20:26:42.123456789Z",
      "turns": []
    }
  ]
}
`
	assert.Equal(t, want, buf.String())

	// And it reads back as the same document.
	var back SessionExport
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, ExportFormat, back.Format)
	require.Len(t, back.Chats, 2)
	assert.Len(t, back.Chats[0].Turns, 2)
}

// An export holds every turn of a chat, oldest first, across the pages it
// is read in.
func TestExportReadsAllPages(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	n := MaxPageSize*2 + 3
	seedSessions(t, s, 1, n, 64)
	doc, err := Export(ctx, s, seedURI(0))
	require.NoError(t, err)
	require.Len(t, doc.Chats, 1)
	require.Len(t, doc.Chats[0].Turns, n)
	for i, tr := range doc.Chats[0].Turns {
		require.Equal(t, fmt.Sprintf("t%d", i+1), tr.ID)
	}
	assert.Nil(t, doc.Chats[0].ActiveTurn)
}

func TestExportNamesInvalidJSON(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	chat := testChat(sess.URI, 1)
	require.NoError(t, s.PutSession(ctx, sess, chat))
	require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: chat.URI, Turn: Turn{ID: "bad", Data: json.RawMessage(`{"truncated":`), EndedAt: at(1)}}))
	_, err := Export(ctx, s, sess.URI)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "turn bad of chat "+chat.URI+" is not valid JSON")

	_, err = Export(ctx, s, "copilot:/nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestShow(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	c1, c2 := testChat(sess.URI, 1), testChat(sess.URI, 2)
	require.NoError(t, s.PutSession(ctx, sess, c1, c2))
	for _, id := range []string{"t1", "t2"} {
		require.NoError(t, s.AppendTurn(ctx, TurnCommit{ChatURI: c1.URI, Turn: Turn{ID: id, Data: json.RawMessage(`{}`), EndedAt: at(1)}}))
	}
	require.NoError(t, s.PutCheckpoints(ctx, []Checkpoint{{ChatURI: c2.URI, TurnID: "a", Data: json.RawMessage(`{"x":1}`), Updated: at(5)}}))

	info, err := Show(ctx, s, sess.URI)
	require.NoError(t, err)
	assert.Equal(t, SessionInfo{Session: sess, Chats: []ChatInfo{
		{ChatRecord: ChatRecord{Chat: c1, Turns: 2}},
		{ChatRecord: ChatRecord{Chat: c2}, ActiveTurn: &ActiveTurnInfo{TurnID: "a", Updated: at(5), Bytes: 7}},
	}}, info)
	_, err = Show(ctx, s, "copilot:/nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestEachSession(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	n := MaxPageSize + 5
	seedSessions(t, s, n, 0, 0)
	var seen []string
	require.NoError(t, EachSession(ctx, s, func(sess Session) error {
		seen = append(seen, sess.URI)
		return nil
	}))
	require.Len(t, seen, n)
	assert.Equal(t, seedURI(n-1), seen[0], "most recently modified first")
	assert.Equal(t, seedURI(0), seen[n-1])

	stop := errors.New("enough")
	calls := 0
	err := EachSession(ctx, s, func(Session) error { calls++; return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)
}
