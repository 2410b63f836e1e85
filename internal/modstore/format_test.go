package modstore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/format"
)

// TestNewerManifestRefusedByName: an entry whose manifest a newer
// release wrote (its version above this release's, a field this one
// does not know) is neither handed out nor refilled by Get or Replace:
// each fails naming the manifest as a newer release's, and the manifest
// is left byte for byte as it was (a refill would replace the newer
// release's entry with this one's).
func TestNewerManifestRefusedByName(t *testing.T) {
	ctx := context.Background()
	dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
	s, err := Open(dir)
	require.NoError(t, err)
	const key = "engine 1.11.4\nmod\tregistry/x/y/z\t>= 1.0.0"
	_, _, err = s.Get(ctx, key, countingFill(count, "first"))
	require.NoError(t, err)
	p := filepath.Join(s.entryPath(hashKey(key)), manifestName)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["version"], m["signed"] = 5, true
	newer, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, newer, 0o644))

	_, _, err = s.Get(ctx, key, countingFill(count, "second"))
	require.ErrorIs(t, err, format.ErrNewer)
	require.ErrorContains(t, err, p+": written by a newer release: format 5; this release reads up to 1; upgrade this job")
	_, _, err = s.Replace(ctx, key, nil, countingFill(count, "third"))
	require.ErrorIs(t, err, format.ErrNewer)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, string(newer), string(got))
	fills, err := os.ReadFile(count)
	require.NoError(t, err)
	require.Equal(t, "fill\n", string(fills), "filled once, never again over the newer entry")
}
