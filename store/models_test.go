package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A provider's models survive a reopen, a later report replaces them, and
// each provider keeps its own.
func TestProviderModelsRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := testPath(t)
	s := openTest(t, path, Options{})

	_, err := s.ProviderModels(ctx, "claude")
	require.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, s.PutProviderModels(ctx, "claude", json.RawMessage(`[{"id":"opus","provider":"claude","name":"Opus"}]`)))
	require.NoError(t, s.PutProviderModels(ctx, "claude", json.RawMessage(`[{"id":"sonnet","provider":"claude","name":"Sonnet"}]`)))
	require.NoError(t, s.PutProviderModels(ctx, "codex", json.RawMessage(`[]`)))
	require.Error(t, s.PutProviderModels(ctx, "codex", json.RawMessage(`[{`)), "not JSON")
	require.NoError(t, s.Close())

	s = openTest(t, path, Options{ReadOnly: true})
	got, err := s.ProviderModels(ctx, "claude")
	require.NoError(t, err)
	require.JSONEq(t, `[{"id":"sonnet","provider":"claude","name":"Sonnet"}]`, string(got))
	got, err = s.ProviderModels(ctx, "codex")
	require.NoError(t, err)
	require.JSONEq(t, `[]`, string(got))
}
