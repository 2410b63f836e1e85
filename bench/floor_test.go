package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFloorTime(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name            string
		n, p, cores     int
		wall, cpu       time.Duration
		latency, cpuBnd time.Duration
		bound           string
		withWait        time.Duration
	}{
		// 12 units at once, 2 s each, 0.5 CPU-s each on 2 cores: the
		// CPU bound is higher than one unit's wall time.
		{"CPU over one wave", 12, 12, 2, 2 * s, s / 2, 2 * s, 3 * s, "CPU", 4500 * time.Millisecond},
		{"one wave", 12, 12, 2, 4 * s, s / 2, 4 * s, 3 * s, "latency", 6500 * time.Millisecond},
		// 48 units at 16: three waves.
		{"waves round up", 48, 16, 2, 2 * s, s / 10, 6 * s, 2400 * time.Millisecond, "latency", 6 * s},
		{"partial wave", 49, 16, 2, 2 * s, s / 10, 8 * s, 2450 * time.Millisecond, "latency", 8 * s},
		// No latency: 12 x 1.5 CPU-s over 2 cores.
		{"CPU bound", 12, 12, 2, 1500 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond, 9 * s, "CPU", 9 * s},
		{"one core", 3, 1, 1, s, s, 3 * s, 3 * s, "latency", 3 * s},
		{"zero counts as one", 0, 0, 0, s, s, s, s, "latency", s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFloor(tc.n, tc.p, tc.cores, unitCost{wall: tc.wall, cpu: tc.cpu})
			require.Equal(t, tc.latency, f.latency)
			require.Equal(t, tc.cpuBnd, f.cpu)
			require.Equal(t, max(tc.latency, tc.cpuBnd), f.value())
			require.Equal(t, tc.bound, f.bound())
			require.Equal(t, tc.withWait, f.withWait())
		})
	}
}

func TestMedian(t *testing.T) {
	require.Equal(t, time.Duration(0), median(nil))
	require.Equal(t, 3*time.Second, median([]time.Duration{5 * time.Second, time.Second, 3 * time.Second}))
	in := []time.Duration{4, 1, 3, 2}
	require.Equal(t, time.Duration(2), median(in), "even count: mean of the middle two, rounded down")
	require.Equal(t, []time.Duration{4, 1, 3, 2}, in, "the input is not reordered")
	c := costOf([]time.Duration{3, 1, 2}, []time.Duration{10, 30, 20})
	require.Equal(t, unitCost{wall: 2, cpu: 20, runs: 3}, c)
}

func TestGoalVerdict(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name    string
		a, b    time.Duration
		target  float64
		verdict string
		shown   string
	}{
		{"under", 3 * s, 4 * s, 1.15, "PASS", "0.75x"},
		{"exactly at target", 5 * s, 4 * s, 1.25, "PASS", "1.25x"},
		{"over", 5 * s, 4 * s, 1.15, "MISS", "1.25x"},
		{"ratio target below one", 2 * s, 4 * s, 0.4, "MISS", "0.50x"},
		{"no baseline", 3 * s, 0, 0.8, "n/a", "n/a"},
		{"not measured", 0, 4 * s, 0.8, "n/a", "n/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGoal("cold apply vs floor", "12 units", tc.a, tc.b, tc.target)
			require.Equal(t, tc.verdict, g.verdict())
			require.Equal(t, tc.verdict == "MISS", g.missed())
			require.Equal(t, []string{"cold apply vs floor", "12 units", tc.shown, "<= " + fmtRatio(tc.target), tc.verdict, "n/a", "n/a"}, g.row())
			g.cpu, g.floorCPU = 1.2, 0.5
			require.Equal(t, []string{"1.20x", "0.50x"}, g.row()[5:], "the CPU ratios, when known")
		})
	}
	g := newGoal("vs OpenTofu", "large", s, 0, 0.8)
	g.why = "tofu skipped"
	require.Equal(t, "n/a (tofu skipped)", g.row()[2])
}

func TestFmtRatio(t *testing.T) {
	require.Equal(t, "1.15x", fmtRatio(1.149999))
	require.Equal(t, "0.40x", fmtRatio(0.4))
	r, ok := ratioOf(3*time.Second, 2*time.Second)
	require.True(t, ok)
	require.InDelta(t, 1.5, r, 1e-9)
}
