package bundle

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/format"
)

// TestGoldenBundlesRefusedAsOlder: the plan bundles earlier releases
// wrote (internal/format/testdata: 12ea26b's without a backend or parts,
// 9ece32c's with both, under the same format name), with and without a
// MAC, are refused by name as an older release's, never as damaged or
// altered: which fields their digest covered cannot be told from their
// name, and a plan is applied only from what was verified (invariant
// 15).
func TestGoldenBundlesRefusedAsOlder(t *testing.T) {
	paths, err := filepath.Glob("../format/testdata/*/bundle*/*.tfplan-bundle")
	require.NoError(t, err)
	require.Len(t, paths, 4)
	for _, p := range paths {
		for _, key := range [][]byte{nil, []byte("golden-key")} {
			m, members, err := Read[record](p, "golden/app", key)
			require.Nil(t, m)
			require.Nil(t, members)
			var refused *RefusedError
			require.ErrorAs(t, err, &refused, p)
			require.Contains(t, err.Error(), "written by an older release: format 1; this release reads format 2 only", p)
			require.Contains(t, err.Error(), "export the plan again with this release")
			require.NotContains(t, err.Error(), "damaged")
			require.NotErrorIs(t, err, format.ErrNewer)
		}
	}
}

// TestNewerBundleRefusedByName: a bundle of a newer format (this
// release's, its format raised and resealed as a newer release would
// write it, with a field this release does not know) is refused as a
// newer release's, by name, whether or not its manifest decodes as this
// release's, and the file is left byte for byte as it was.
func TestNewerBundleRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch func(manifest string) string
	}{
		{"fields it does not know", func(m string) string {
			return strings.Replace(m, `"format":"tfisolate-plan-bundle/2"`, `"format":"tfisolate-plan-bundle/3","signers":["x"]`, 1)
		}},
		{"fields of another type", func(m string) string {
			return strings.Replace(strings.Replace(m, `"format":"tfisolate-plan-bundle/2"`, `"format":"tfisolate-plan-bundle/12"`, 1),
				`"unit":"stack/item"`, `"unit":{"name":"stack/item"}`, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTest(t, testKey)
			m, entries := readRaw(t, p)
			mb, err := json.Marshal(m)
			require.NoError(t, err)
			patched := tc.patch(string(mb))
			require.NotEqual(t, string(mb), patched)
			writeRawManifest(t, p, []byte(patched), entries...)
			before, err := os.ReadFile(p)
			require.NoError(t, err)

			got, members, err := Read[record](p, "stack/item", testKey)
			require.Nil(t, got)
			require.Nil(t, members)
			require.ErrorIs(t, err, format.ErrNewer)
			var newer *format.NewerError
			require.ErrorAs(t, err, &newer)
			require.Equal(t, p, newer.Record)
			require.Equal(t, Version, newer.Reads)
			want := "; this release reads up to 2; upgrade this job"
			require.Contains(t, err.Error(), p+": written by a newer release: format ")
			require.True(t, strings.HasSuffix(err.Error(), want), err.Error())
			require.NotContains(t, err.Error(), "damaged")
			after, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, before, after, "the newer bundle was left as it was")
		})
	}
}

func TestVersionOf(t *testing.T) {
	for name, want := range map[string]int{"tfisolate-plan-bundle/1": 1, "tfisolate-plan-bundle/2": 2, "tfisolate-plan-bundle/17": 17,
		"tfisolate-plan-bundle/0": 0, "tfisolate-plan-bundle/-1": 0, "tfisolate-plan-bundle/+3": 0, "tfisolate-plan-bundle/": 0, "x/2": 0} {
		v, ok := versionOf(name)
		require.Equal(t, want, v*map[bool]int{true: 1, false: 0}[ok], name)
	}
	require.True(t, errors.Is(&format.NewerError{}, format.ErrNewer))
}
