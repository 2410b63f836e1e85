//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testenv"
)

// section is the text of out from the line starting with heading up to the
// next heading of any level.
func section(t *testing.T, out, heading string) string {
	t.Helper()
	i := strings.Index(out, "\n"+heading)
	require.GreaterOrEqual(t, i, 0, "no %q in:\n%s", heading, out)
	rest := out[i+1:]
	if j := strings.Index(rest[len(heading):], "\n#"); j >= 0 {
		rest = rest[:len(heading)+j]
	}
	return rest
}

// tableRow returns the cells of the table row in s whose first cell starts with
// prefix.
func tableRow(t *testing.T, s, prefix string) []string {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], prefix) {
			return cells
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, s)
	return nil
}

// The whole command at a tiny size: both comparison passes, a scaling
// point, the markdown file, and nothing left behind. The shared-dir and
// TF_DATA_DIR approaches are skipped to keep it quick: they are the same
// naive.Run as (3) and (4) with another constant.
func TestRunTiny(t *testing.T) {
	testenv.Terraform(t)
	providerDir := t.TempDir() // one provider build for every subtest
	common := []string{"-provider-dir", providerDir, "-provider-size", "0", "-throttle", "0", "-latency", "0s"}

	t.Run("all", func(t *testing.T) {
		root := t.TempDir()
		md := filepath.Join(t.TempDir(), "bench.md")
		var out bytes.Buffer
		args := append([]string{"-n", "2", "-skip", "shared,datadir", "-scale", "2", "-scale-parallelism", "2", "-root", root, "-markdown", md}, common...)
		require.NoError(t, run(context.Background(), args, &out))
		s := out.String()

		cold := section(t, s, "### Cold")
		warm := section(t, s, "### Warm")
		for _, tbl := range []string{cold, warm} {
			for _, a := range approaches {
				if a.name != nameShared && a.name != nameDataDir {
					tableRow(t, tbl, a.label[:3])
				}
			}
			require.NotContains(t, tbl, "| (1)", "-skip shared")
			// Columns: approach, succeeded, wall, vs (3), vs (4), terraform
			// CPU, bench CPU, downloads, disk.
			pre := tableRow(t, tbl, "(3)")
			require.Equal(t, "1.00x", pre[3], "(3) against itself")
			seq := tableRow(t, tbl, "(4)")
			require.Regexp(t, `^[0-2]/2$`, seq[1])
			if seq[1] != "2/2" {
				// Sequential runs cannot race, but terraform can still fail
				// on a starved machine; the report says why.
				t.Logf("sequential runs failed:\n%s", s)
			}
			require.Equal(t, "1.00x", seq[4], "(4) against itself")
		}
		ours := tableRow(t, cold, "(5)")
		require.Equal(t, "2/2", ours[1])
		require.Equal(t, "1", ours[7], "tfisolate downloads the provider once into an empty cache")
		require.NotEqual(t, "0.0 MiB", ours[8], "the cache holds the provider")
		ours = tableRow(t, warm, "(5)")
		require.Equal(t, "2/2", ours[1])
		require.Equal(t, "0", ours[7], "a warm cache downloads nothing")

		scale := section(t, s, "## Scaling")
		pt := tableRow(t, scale, "2")
		// units, parallelism, succeeded, wall, ideal, ...
		require.Equal(t, []string{"2", "2", "2/2"}, pt[:3])
		require.Equal(t, "0", pt[len(pt)-1], "scaling runs from a warm cache")
		for _, i := range []int{8, 9, 10, 11} {
			require.NotEqual(t, "n/a", pt[i], "every terraform process is tied to its unit")
		}
		procs, err := strconv.ParseFloat(pt[12], 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, procs, 2.0, "the wrapper saw at least init and apply of every unit")

		b, err := os.ReadFile(md)
		require.NoError(t, err)
		require.Equal(t, s, string(b), "-markdown holds what stdout got")
		left, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Empty(t, left, "without -keep the scratch dir is removed")
	})

	t.Run("keep", func(t *testing.T) {
		root := t.TempDir()
		args := append([]string{"-skip", "cold,warm", "-scale", "none", "-root", root, "-keep"}, common...)
		require.NoError(t, run(context.Background(), args, &bytes.Buffer{}))
		left, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Len(t, left, 1, "-keep keeps the scratch dir")
	})
}
