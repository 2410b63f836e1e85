package modstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

func TestScanRecordsTheTree(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeTree(dir, "v"))
	recs, err := recordTree(dir)
	require.NoError(t, err)
	var paths []string
	for _, r := range recs {
		paths = append(paths, r.Path)
		switch r.Path {
		case "main.tf":
			require.True(t, r.Mode.IsRegular())
			require.Equal(t, int64(len("v main.tf\n")), r.Size)
			require.Len(t, r.SHA256, 64)
		case "sub/link.tf":
			require.Equal(t, "a.tf", r.Target)
		case "sub/run.sh":
			require.Equal(t, os.FileMode(0o755), r.Mode.Perm())
		case "sub/empty":
			require.True(t, r.Mode.IsDir())
		}
	}
	require.Equal(t, []string{"main.tf", "sub", "sub/a.tf", "sub/empty", "sub/link.tf", "sub/run.sh"}, paths)

	cheap, changes, err := verify(dir, recs, false)
	require.NoError(t, err)
	for _, r := range cheap {
		require.Empty(t, r.SHA256, "the cheap check read %s", r.Path)
	}
	require.Empty(t, changes)
	full, changes, err := verify(dir, recs, true)
	require.NoError(t, err)
	require.Empty(t, changes)
	require.Equal(t, recs, full)
}

// TestDiff: how a tree found differs from its manifest is told in the
// store's words; the cheap check (no hashes in what it found) never
// reports content.
func TestDiff(t *testing.T) {
	base := []record{
		{Path: "a", Mode: 0o644, Size: 1, SHA256: "x"},
		{Path: "d", Mode: os.ModeDir | 0o755},
		{Path: "l", Mode: os.ModeSymlink | 0o777, Target: "a"},
	}
	with := func(edit func([]record) []record) []record {
		c := append([]record(nil), base...)
		return edit(c)
	}
	cases := []struct {
		name string
		now  []record
		want string
	}{
		{"same", base, ""},
		{"missing", base[1:], "a is missing"},
		{"extra", append(append([]record(nil), base...), record{Path: "z", Mode: 0o644}), "z was not part"},
		{"mode", with(func(r []record) []record { r[0].Mode = 0o600; return r }), "a has mode -rw-------"},
		{"size", with(func(r []record) []record { r[0].Size = 2; return r }), "a has 2 bytes, 1 when stored"},
		{"target", with(func(r []record) []record { r[2].Target = "d"; return r }), `l points to "d"`},
		{"content unknown to the cheap check", with(func(r []record) []record { r[0].SHA256 = ""; return r }), ""},
		{"content", with(func(r []record) []record { r[0].SHA256 = "y"; return r }), "a has SHA-256 y, x when stored"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changes := treesum.Compare(base, tc.now)
			if tc.want == "" {
				require.False(t, changes.Damaged(), changes.Describe(storeWords))
				return
			}
			require.True(t, changes.Damaged())
			require.Contains(t, changes.Describe(storeWords), tc.want)
		})
	}
}

func TestReadManifestRefusesBadRecords(t *testing.T) {
	sum := strings.Repeat("a", 64)
	cases := []struct {
		name, body, want string
	}{
		{"ok", `{"version":1,"key":"k","files":[{"path":"a","mode":420,"size":1,"sha256":"` + sum + `"}]}`, ""},
		{"not json", `{`, "unexpected end"},
		{"older version", `{"version":0,"key":"k"}`, "has version 0, want 1"},
		{"newer version", `{"version":2,"key":"k"}`, "written by a newer release: format 2; this release reads up to 1"},
		{"file without hash", `{"version":1,"key":"k","files":[{"path":"a","mode":420}]}`, "a has no SHA-256"},
		{"unsorted", `{"version":1,"key":"k","files":[{"path":"b","mode":2147484141},{"path":"a","mode":2147484141}]}`, "not sorted"},
		{"duplicate", `{"version":1,"key":"k","files":[{"path":"a","mode":2147484141},{"path":"a","mode":2147484141}]}`, "not sorted and unique"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), manifestName)
			require.NoError(t, os.WriteFile(p, []byte(tc.body), 0o644))
			m, err := readManifest(p)
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, "k", m.Key)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, p)
		})
	}
}
