package pluginc

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewerInstallRecordRefusedByName: a cache entry whose install
// record a newer release wrote (its version above this release's, a
// field this one does not know) is neither used nor reinstalled over:
// Ensure fails naming the record as a newer release's (ErrNewerFormat),
// downloads nothing, and the record and the package are left as they
// were. The record this release writes names its version.
func TestNewerInstallRecordRefusedByName(t *testing.T) {
	in := install(t)
	var m map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, in.meta), &m))
	require.Equal(t, float64(metaVersion), m["version"], "the record names its version")
	m["version"], m["attestations"] = 9, []string{"x"}
	newer, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in.meta, newer, 0o644))

	c := in.f.open(t, in.dir)
	_, err = c.Ensure(context.Background(), Requirement{Provider: in.f.p})
	require.ErrorIs(t, err, ErrNewerFormat)
	require.ErrorContains(t, err, in.meta+": written by a newer release: format 9; this release reads up to 2; upgrade this job")
	require.NotContains(t, err.Error(), "damaged")
	require.Equal(t, int64(0), c.Stats().Downloads)
	require.Equal(t, string(newer), string(mustRead(t, in.meta)))
	require.Equal(t, in.clean, mustRead(t, in.bin))
}
