package modstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanRecordsTheTree(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeTree(dir, "v"))
	recs, err := scan(dir, true)
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

	cheap, err := scan(dir, false)
	require.NoError(t, err)
	for _, r := range cheap {
		require.Empty(t, r.SHA256, "the cheap scan read %s", r.Path)
	}
	require.Empty(t, diff(cheap, recs, false))
	require.False(t, stale(cheap, recs))
}

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
		name   string
		now    []record
		hashes bool
		want   string
	}{
		{"same", base, true, ""},
		{"missing", base[1:], false, "a is missing"},
		{"extra", append(append([]record(nil), base...), record{Path: "z", Mode: 0o644}), false, "z was not part"},
		{"mode", with(func(r []record) []record { r[0].Mode = 0o600; return r }), false, "a has mode -rw-------"},
		{"size", with(func(r []record) []record { r[0].Size = 2; return r }), false, "a has 2 bytes, 1 when stored"},
		{"target", with(func(r []record) []record { r[2].Target = "d"; return r }), false, `l points to "d"`},
		{"content ignored by the cheap check", with(func(r []record) []record { r[0].SHA256 = "y"; return r }), false, ""},
		{"content", with(func(r []record) []record { r[0].SHA256 = "y"; return r }), true, "a has SHA-256 y, x when stored"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := diff(tc.now, base, tc.hashes)
			if tc.want == "" {
				require.Empty(t, got)
				return
			}
			require.Contains(t, got, tc.want)
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
		{"other version", `{"version":2,"key":"k"}`, "version 2"},
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
