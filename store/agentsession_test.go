package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chat is found by its agent session only under its session's provider,
// and no longer once its session is deleted.
func TestHasAgentSession(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testPath(t), Options{})
	sess := testSession(1)
	require.NoError(t, s.PutSession(ctx, sess, testChat(sess.URI, 7)))

	for _, c := range []struct {
		provider, id string
		want         bool
	}{
		{sess.Provider, "acp-7", true},
		{sess.Provider, "acp-8", false},
		{"acp:other", "acp-7", false},
	} {
		got, err := s.HasAgentSession(ctx, c.provider, c.id)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%s %s", c.provider, c.id)
	}
	require.NoError(t, s.DeleteSession(ctx, sess.URI))
	got, err := s.HasAgentSession(ctx, sess.Provider, "acp-7")
	require.NoError(t, err)
	assert.False(t, got, "gone with its session")
}
