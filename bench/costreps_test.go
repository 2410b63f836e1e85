//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rs          []float64
		med, lo, hi float64
	}{
		{"none", nil, 0, 0, 0},
		{"one round", []float64{1.2}, 1.2, 1.2, 1.2},
		{"odd", []float64{1.3, 1.0, 1.1}, 1.1, 1.0, 1.3},
		{"even", []float64{1.4, 1.0, 1.2, 1.1}, 1.15, 1.0, 1.4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.rs...)
			med, lo, hi := spread(tc.rs)
			require.InDelta(t, tc.med, med, 1e-9)
			require.InDelta(t, tc.lo, lo, 1e-9)
			require.InDelta(t, tc.hi, hi, 1e-9)
			require.Equal(t, in, tc.rs, "spread leaves its input in order")
		})
	}
}

// A ratio is taken round by round against the floor pass beside it, not
// against the floors' median: here each Run is 1.1x its own round's
// floor while the floor drifts by half between rounds.
func TestVersusPairsEachRoundWithItsFloor(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	floors := []spent{{ms(1000), ms(2000)}, {ms(1500), ms(3000)}, {ms(2000), ms(4000)}}
	runs := []spent{{ms(1100), ms(2100)}, {ms(1650), ms(3150)}, {ms(2400), ms(4200)}}
	s, wall := versus(runs, floors, "floor cold")
	require.InDelta(t, 1.1, wall, 1e-9)
	require.Equal(t, "1.10x floor cold (CPU 1.05x; rounds 1.10-1.20x)", s)

	s, wall = versus(runs[:1], floors[:1], "floor warm")
	require.InDelta(t, 1.1, wall, 1e-9)
	require.Equal(t, "1.10x floor warm (CPU 1.05x; 1 round)", s)
}

func TestCostRepsFlag(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 3, o.costReps, "three rounds by default")
	o, err = parseFlags([]string{"-cost-reps", "1"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 1, o.costReps)
	for _, v := range []string{"0", "-1"} {
		_, err := parseFlags([]string{"-cost-reps", v}, io.Discard)
		require.ErrorContains(t, err, "-cost-reps "+v+": want at least 1")
	}
}

// TestFloorShapedRunsTheRootFirst runs the floor's passes with a stand-in
// engine that logs when it starts and ends in which dir: in the wide
// DAG's order the root's dir has ended before any other starts; in the
// flat order all run p at a time.
func TestFloorShapedRunsTheRootFirst(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "log")
	tf := filepath.Join(dir, "tf")
	require.NoError(t, os.WriteFile(tf, []byte("#!/bin/sh\necho \"start $(basename \"$PWD\")\" >> "+logFile+"\necho \"end $(basename \"$PWD\")\" >> "+logFile+"\n"), 0o755))
	dirs, err := floorDirs(filepath.Join(dir, "floor"), 6)
	require.NoError(t, err)
	e := &env{tf: tf}

	_, err = e.floorShaped(context.Background(), dirs, 4, true, false, tfApply)
	require.NoError(t, err)
	b, err := os.ReadFile(logFile)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 12)
	require.Equal(t, []string{"start u00000", "end u00000"}, lines[:2], "the root's dir alone first:\n%s", b)

	require.NoError(t, os.Remove(logFile))
	_, err = e.floorShaped(context.Background(), dirs, 4, false, false, tfApply)
	require.NoError(t, err)
	b, err = os.ReadFile(logFile)
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(string(b)), "\n"), 12)
}
