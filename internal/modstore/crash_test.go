package modstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKilledFillLeavesNoEntry SIGKILLs a process at each point of a fill
// (inside fill with half a tree written, after fill, after the sync,
// after the rename, and while setting a damaged entry aside), then Gets
// the key in this process: before the rename, no entry is ever used and
// fill runs again; after it, the entry is complete and is a hit. Either
// way the killed process's temp dirs are swept and its partial tree is
// never returned.
func TestKilledFillLeavesNoEntry(t *testing.T) {
	cases := []struct {
		point   string
		damaged bool // start from a damaged entry, which the child sets aside
		stored  bool // the killed process's entry survives
	}{
		{point: "fill"},
		{point: "filled"},
		{point: "synced"},
		{point: "renamed", stored: true},
		{point: "aside", damaged: true},
	}
	for _, tc := range cases {
		t.Run(tc.point, func(t *testing.T) {
			dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
			const key = "crash-key"
			// Opened before the crash, so its Get (not Open) sweeps.
			s, err := Open(dir)
			require.NoError(t, err)
			fills := 0
			if tc.damaged {
				_, _, err := s.Get(context.Background(), key, countingFill(count, "old"))
				require.NoError(t, err)
				require.NoError(t, os.Remove(filepath.Join(s.treePath(hashKey(key)), "main.tf")))
				fills++
			}

			c := startChild(t, "crash", envDir+"="+dir, envKey+"="+key, envCount+"="+count,
				envContent+"=first", envPoint+"="+tc.point)
			c.Expect(t, "at "+tc.point)
			kill(t, c)
			if tc.point != "aside" { // aside is before the child's fill
				fills++
			}
			require.Equal(t, fills, countLines(t, count))

			entry := s.entryPath(hashKey(key))
			if tc.stored {
				requireTree(t, s.treePath(hashKey(key)), "first")
			} else {
				_, err := os.Lstat(entry)
				require.ErrorIs(t, err, os.ErrNotExist, "a killed fill left an entry")
				ents, err := os.ReadDir(filepath.Join(dir, stateDir, tmpDir))
				require.NoError(t, err)
				require.NotEmpty(t, ents, "the killed process left no temp dir to sweep")
			}

			got, filled, err := s.Get(context.Background(), key, countingFill(count, "second"))
			require.NoError(t, err)
			if tc.stored {
				require.False(t, filled)
				requireTree(t, got, "first")
				require.Equal(t, Stats{Hits: 1}, s.Stats().sub(statsAfter(tc.damaged)))
			} else {
				fills++
				require.True(t, filled)
				requireTree(t, got, "second") // no "partial", nothing of "first"
				require.Equal(t, Stats{Fills: 1}, s.Stats().sub(statsAfter(tc.damaged)))
			}
			require.Equal(t, fills, countLines(t, count))
			requireNoLeftovers(t, dir)
		})
	}
}

// statsAfter is what the Store counted before the crash: one fill when
// the case started from a (then damaged) entry.
func statsAfter(damaged bool) Stats {
	if damaged {
		return Stats{Fills: 1}
	}
	return Stats{}
}

// sub returns s minus o, field by field.
func (s Stats) sub(o Stats) Stats {
	return Stats{Fills: s.Fills - o.Fills, Hits: s.Hits - o.Hits, Waits: s.Waits - o.Waits, Repairs: s.Repairs - o.Repairs,
		Replaces: s.Replaces - o.Replaces, Recopies: s.Recopies - o.Recopies}
}

// TestOpenSweepsLeftoversOfDeadProcesses: leftovers of a fill killed
// midway are removed by the next Open, for a key nobody Gets again.
func TestOpenSweepsLeftoversOfDeadProcesses(t *testing.T) {
	dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
	c := startChild(t, "crash", envDir+"="+dir, envKey+"="+"k", envCount+"="+count,
		envContent+"=first", envPoint+"=fill")
	c.Expect(t, "at fill")
	kill(t, c)
	ents, err := os.ReadDir(filepath.Join(dir, stateDir, tmpDir))
	require.NoError(t, err)
	require.Len(t, ents, 1)

	// Not a name the store makes: left alone.
	foreign := filepath.Join(dir, stateDir, tmpDir, "notours.txt")
	require.NoError(t, os.WriteFile(foreign, nil, 0o644))

	_, err = Open(dir)
	require.NoError(t, err)
	require.FileExists(t, foreign)
	require.NoError(t, os.Remove(foreign))
	requireNoLeftovers(t, dir)
	_, err = os.Lstat(filepath.Join(dir, hashKey("k")))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// countingFill returns a fill that appends a line to count and writes
// writeTree(dir, content).
func countingFill(count, content string) func(context.Context, string) error {
	return func(_ context.Context, dir string) error {
		appendLine(count, "fill")
		return writeTree(dir, content)
	}
}
