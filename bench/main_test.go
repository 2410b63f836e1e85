//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// The whole command at a tiny size: both comparison passes, a scaling
// point, the markdown file, and nothing left behind. The shared-dir and
// TF_DATA_DIR approaches are skipped to keep it quick: they are the same
// naive.Run as (3) and (4) with another constant.
func TestRunTiny(t *testing.T) {
	testenv.Terraform(t)
	providerDir := t.TempDir() // one provider build for every subtest
	// The floor section at its smallest: one run per floor figure, two
	// instances, and a large provider of one byte (a second registry all
	// the same).
	common := []string{"-provider-dir", providerDir, "-provider-size", "0", "-throttle", "0", "-latency", "0s",
		"-large-provider-size", "1", "-large-n", "2", "-wide-n", "3", "-wide-parallelism", "2", "-floor-reps", "1"}

	t.Run("all", func(t *testing.T) {
		root := t.TempDir()
		md := filepath.Join(t.TempDir(), "bench.md")
		var out bytes.Buffer
		args := append([]string{"-n", "2", "-skip", "shared,datadir,floor,memory,cost", "-scale", "2", "-scale-parallelism", "2", "-root", root, "-markdown", md}, common...)
		require.NoError(t, run(context.Background(), args, &out))
		s := out.String()
		if runtime.GOOS == "linux" {
			require.Regexp(t, `Steal time over the run \(CPU the virtual machine's host gave to others\): [0-9]+%\.`, s)
		}

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

		require.NotContains(t, s, "## Against the floor", "-skip floor")

		b, err := os.ReadFile(md)
		require.NoError(t, err)
		require.Equal(t, s, string(b), "-markdown holds what stdout got")
		left, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Empty(t, left, "without -keep the scratch dir is removed")
	})

	// The floor section alone, every scenario, with OpenTofu.
	t.Run("floor", func(t *testing.T) {
		tofu := testenv.Tofu(t)
		var out bytes.Buffer
		root := t.TempDir()
		args := append([]string{"-n", "2", "-skip", "cold,warm,memory,cost", "-scale", "none", "-root", root, "-tofu", tofu}, common...)
		require.NoError(t, run(context.Background(), args, &out))
		s := out.String()
		left, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Empty(t, left, "without -keep the scratch dir is removed")
		// Columns: approach, succeeded, wall, vs floor, vs workaround, vs
		// OpenTofu, terraform CPU, SDK CPU, cores used, inits, downloads.
		for _, tc := range []struct {
			scenario, pass string
			workaround     bool
		}{
			{"### base", passCold, true}, {"### base", passWarm, true},
			{"### large", passCold, true}, {"### large", passWarm, true},
			{"### wide", passCold, false},
		} {
			tbl := subsection(t, s, tc.scenario, "#### "+tc.pass)
			floor := tableRow(t, tbl, "floor")
			require.Equal(t, "1.00x", floor[3])
			rows := []string{"tfisolate", nameGated, "OpenTofu"}
			if tc.workaround {
				rows = append(rows, "workaround")
			} else {
				require.NotContains(t, tbl, "| workaround")
			}
			for _, name := range rows {
				r := tableRow(t, tbl, name)
				n := "2/2"
				if tc.scenario == "### wide" {
					n = "3/3"
				}
				require.Equal(t, n, r[1], "%s %s %s:\n%s", tc.scenario, tc.pass, name, s)
				require.Equal(t, "0", r[10], "%s %s %s: every cache is warm, nothing downloads", tc.scenario, tc.pass, name)
			}
			if tc.pass == passWarm {
				require.Equal(t, "0", floor[9], "an unchanged re-apply needs no init")
				require.Equal(t, "0", tableRow(t, tbl, "tfisolate")[9], "tfisolate skips init when nothing changed")
				require.Equal(t, "0", tableRow(t, tbl, nameGated)[9], "so does it with the core gate")
				require.Equal(t, "3", tableRow(t, tbl, "workaround")[9], "the workaround inits every instance again, after one serial init")
				require.Equal(t, "2", tableRow(t, tbl, "OpenTofu")[9])
			}
		}
		require.Contains(t, section(t, s, "### large"), "13.9 MiB provider", "the large scenario serves its own padded provider")

		goals := section(t, s, "### Goals")
		var verdicts []string
		for _, l := range strings.Split(goals, "\n") {
			if cells := strings.Split(l, "|"); len(cells) == 9 && strings.Contains(cells[2], ",") && !strings.Contains(l, "---") && !strings.Contains(l, "scenario, pass") {
				v := strings.TrimSpace(cells[5])
				require.Contains(t, []string{"PASS", "MISS"}, v, "every goal is measured when every row ran: %s", l)
				verdicts = append(verdicts, v)
			}
		}
		require.Len(t, verdicts, 17, "base and large: 2 cold + 3 warm goals, wide: 2 cold goals, and each pass's floor goal again with the core gate")
		if slices.Contains(verdicts, "MISS") {
			require.Contains(t, s, "### Where tfisolate's time goes where it misses")
		} else {
			require.NotContains(t, s, "### Where tfisolate's time goes")
		}
	})

	// Issue 24's scale suite at its smallest: every scenario runs and is
	// held to its target.
	t.Run("cost", func(t *testing.T) {
		var out bytes.Buffer
		args := append([]string{"-skip", "cold,warm,floor,memory", "-scale", "none", "-root", t.TempDir(),
			"-cost-n", "2", "-cost-parallelism", "2", "-cost-queue", "100,400", "-cost-idle", "3", "-cost-idle-units", "2",
			"-cost-affected", "10,100", "-cost-instances", "3", "-cost-files", "50", "-cost-reps", "2"}, common...)
		require.NoError(t, run(context.Background(), args, &out))
		s := out.String()
		require.Contains(t, s, "## Cost: how a Run grows")
		for _, row := range []string{"2 units, p=2, flat", "2 units, p=2, wide DAG", "queue, 400 units, stub engine",
			"beside 3 idle processes", "Affected, 100 units of 12 components", "3 instances of one 50-file component"} {
			require.Contains(t, s, row)
		}
		require.Contains(t, s, "2/2 succeeded, 2 skipped as unchanged", "skip-unchanged skips every unit of the flat run")
		// Two rounds: each cold and warm ratio is a median with the rounds'
		// range, and terraform's CPU per unit stands beside the SDK's.
		for _, shape := range []string{"flat", "wide DAG"} {
			for _, pass := range []string{"cold", "warm"} {
				require.Regexp(t, `\| 2 units, p=2, `+shape+` +\| `+pass+` Run \(2/2 succeeded, 0 skipped as unchanged\): wall, CPU \(median of 2 rounds\) +\|[^|\n]+\| +[0-9.]+x floor `+pass+` \(CPU [0-9.]+x; rounds [0-9.]+-[0-9.]+x\) +\| <= 1\.1x +\| (yes|NO) +\|`, s)
			}
			require.Regexp(t, `\| 2 units, p=2, `+shape+` +\| CPU per unit: [^|]+\| +cold [0-9.]+ ms \(terraform [0-9.]+ ms\), [0-9.]+ KiB; warm [0-9.]+ ms \(terraform [0-9.]+ ms\)`, s)
		}
		line := s[strings.Index(s, "3 instances of one 50-file component"):]
		line = line[strings.Index(line, "unchanged dry run"):]
		line = line[:strings.Index(line, "\n")]
		require.Contains(t, line, "| yes |", "the unchanged refresh reads the source once: %s", line)
	})

	t.Run("keep", func(t *testing.T) {
		root := t.TempDir()
		args := append([]string{"-skip", "cold,warm,floor,memory,cost", "-scale", "none", "-root", root, "-keep"}, common...)
		require.NoError(t, run(context.Background(), args, &bytes.Buffer{}))
		left, err := os.ReadDir(root)
		require.NoError(t, err)
		require.Len(t, left, 1, "-keep keeps the scratch dir")
	})
}
