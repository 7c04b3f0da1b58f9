package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client's record is stored, replaced, read back after the file is
// reopened, and pruned once it was last seen before the cut-off.
func TestClientRecords(t *testing.T) {
	ctx := t.Context()
	path := testPath(t)
	s := openTest(t, path, Options{})
	_, err := s.GetClient(ctx, "vscode")
	require.ErrorIs(t, err, ErrNotFound)

	old := Client{ID: "old", ProtocolVersion: "0.3.0", Seen: time.Unix(100, 0)}
	require.NoError(t, s.PutClient(ctx, old))
	vs := Client{ID: "vscode", ProtocolVersion: "0.7.0", Subscriptions: []string{"ahp-root://", "copilot:/1"}, Seen: time.Unix(200, 0)}
	require.NoError(t, s.PutClient(ctx, vs))
	vs.ProtocolVersion, vs.Subscriptions, vs.Seen = "1.0.0", []string{"ahp-root://", "copilot:/2", "ahp-chat://default/x"}, time.Unix(300, 0)
	require.NoError(t, s.PutClient(ctx, vs))
	require.NoError(t, s.Close())

	s = openTest(t, path, Options{})
	got, err := s.GetClient(ctx, "vscode")
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.ProtocolVersion)
	assert.Equal(t, vs.Subscriptions, got.Subscriptions)
	assert.True(t, got.Seen.Equal(vs.Seen))
	got, err = s.GetClient(ctx, "old")
	require.NoError(t, err)
	assert.Equal(t, []string{}, got.Subscriptions, "none stored as an empty list")

	n, err := s.PruneClients(ctx, time.Unix(250, 0))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, err = s.GetClient(ctx, "old")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = s.GetClient(ctx, "vscode")
	require.NoError(t, err, "seen after the cut-off: kept")

	many := make([]string, MaxClientSubscriptions+5)
	for i := range many {
		many[i] = "s:/" + time.Duration(i).String()
	}
	require.NoError(t, s.PutClient(ctx, Client{ID: "greedy", ProtocolVersion: "1.0.0", Subscriptions: many, Seen: time.Unix(400, 0)}))
	got, err = s.GetClient(ctx, "greedy")
	require.NoError(t, err)
	assert.Len(t, got.Subscriptions, MaxClientSubscriptions, "bounded")
	require.Error(t, s.PutClient(ctx, Client{ProtocolVersion: "1.0.0"}), "a client without an id")
}
