package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A scenario with both passes and every row: the goals each pass
// measures, in order, with the verdicts their ratios give.
func TestGoalsOf(t *testing.T) {
	s := time.Second
	row := func(label string, wall time.Duration, ok int, cpu time.Duration) *peerRow {
		return &peerRow{label: label, n: 12, ok: ok, wall: wall, tfCPU: cpu - s/10, sdkCPU: s / 10}
	}
	// N x c: 6 s cold, 3 s warm.
	cold := passResult{pass: passCold, floor: newFloor(12, 12, 2, unitCost{wall: 3 * s, cpu: s / 2}),
		workaround: row("workaround", 6*s, 12, 8*s), tfisolate: row("tfisolate", 3300*time.Millisecond, 12, 6600*time.Millisecond), tofu: row("OpenTofu", 5*s, 12, 5*s)}
	warm := passResult{pass: passWarm, floor: newFloor(12, 12, 2, unitCost{wall: s / 2, cpu: s / 4}),
		workaround: row("workaround", 5*s, 11, 6*s), tfisolate: row("tfisolate", 2*s, 12, 3*s), tofu: &peerRow{label: "OpenTofu", skipped: "-skip tofu"}}
	gs := goalsOf([]scenarioResult{{s: floorScenario{key: "base"}, passes: []passResult{cold, warm}}})

	var got [][]string
	for _, g := range gs {
		got = append(got, g.row())
	}
	require.Equal(t, [][]string{
		// Floor 3 s (latency bound: 12 x 0.5 / 2 = 3 s too).
		{"cold apply vs floor", "base, cold apply", "1.10x", "<= 1.15x", "PASS", "1.10x", "1.00x"},
		{"cold apply vs OpenTofu", "base, cold apply", "0.66x", "<= 0.80x", "PASS", "1.32x", "1.20x"},
		// Floor: 12 x 0.25 s / 2 cores = 1.5 s.
		{"warm re-apply vs floor", "base, warm re-apply", "1.33x", "<= 1.25x", "MISS", "1.00x", "1.00x"},
		{"warm re-apply vs workaround", "base, warm re-apply", "0.40x (workaround 1/12 failed)", "<= 0.40x", "PASS", "0.50x", "0.50x"},
		{"warm re-apply vs OpenTofu", "base, warm re-apply", "n/a (OpenTofu skipped)", "<= 0.80x", "n/a", "n/a", "n/a"},
	}, got)
}

// tfisolate's own failures make its time no measure; a wide scenario
// (no workaround row, cold only) has no workaround goal.
func TestGoalsOfFailedTfisolate(t *testing.T) {
	s := time.Second
	pr := passResult{pass: passCold, floor: newFloor(48, 16, 2, unitCost{wall: 2 * s, cpu: s / 10}),
		tfisolate: &peerRow{label: "tfisolate", n: 48, ok: 47, wall: s}, tofu: &peerRow{label: "OpenTofu", n: 48, ok: 48, wall: 9 * s}}
	gs := goalsOf([]scenarioResult{{s: floorScenario{key: "wide"}, passes: []passResult{pr}}})
	require.Len(t, gs, 2)
	for _, g := range gs {
		require.Equal(t, "n/a", g.verdict())
		require.Equal(t, "tfisolate 1/48 failed", g.why)
	}
}

// The pass table has a floor row at 1.00x and each row's ratios against
// the floor, the workaround and OpenTofu; the goals table marks misses
// and explains them.
func TestPrintPassAndGoals(t *testing.T) {
	s := time.Second
	pr := passResult{pass: passWarm, floor: newFloor(12, 12, 2, unitCost{wall: s, cpu: s / 2}),
		workaround: &peerRow{label: "workaround", n: 12, ok: 12, wall: 8 * s, tfCPU: 10 * s, inits: 13, errs: map[string]int{}},
		tfisolate: &peerRow{label: "tfisolate", n: 12, ok: 12, wall: 4 * s, tfCPU: 6 * s, sdkCPU: s, errs: map[string]int{},
			split: &phaseSplit{units: 12, prepare: 40 * time.Millisecond, command: 3 * s, inTF: 3 * s, outside: 60 * time.Millisecond, procs: 1, tied: true}},
		tofu: &peerRow{label: "OpenTofu", n: 12, ok: 10, wall: 5 * s, inits: 12, errs: map[string]int{"Error: boom": 2}},
	}
	var b bytes.Buffer
	printPass(&b, pr)
	out := b.String()
	require.Contains(t, out, "Floor = max(ceil(12/12) x 1.00 s, 12 x 0.50 s / 2 cores) = max(1.00 s, 3.00 s) = **3.00 s** (CPU bound).")
	// approach, succeeded, wall, vs floor, vs workaround, vs OpenTofu, terraform CPU, SDK CPU, cores used, inits, downloads
	require.Equal(t, []string{"floor (terraform alone)", "-", "3.00 s", "1.00x", "0.38x", "0.60x", "6.00 s", "-", "2.00", "0", "0"}, tableRow(t, out, "floor"))
	require.Equal(t, []string{"tfisolate", "12/12", "4.00 s", "1.33x", "0.50x", "0.80x", "6.00 s", "1.00 s", "1.75", "0", "0"}, tableRow(t, out, "tfisolate"))
	require.Contains(t, out, "- OpenTofu: 2 failed: 2x `Error: boom`")

	b.Reset()
	printGoals(&b, []scenarioResult{{s: floorScenario{key: "base"}, passes: []passResult{pr}}}, time.Millisecond)
	out = b.String()
	// CPU: tfisolate 7 s, N x c 6 s, workaround 10 s, OpenTofu none recorded.
	require.Equal(t, []string{"warm re-apply vs floor", "base, warm re-apply", "1.33x", "<= 1.25x", "MISS", "1.17x", "1.00x"}, tableRow(t, out, "warm re-apply vs floor"))
	require.Equal(t, []string{"warm re-apply vs workaround", "base, warm re-apply", "0.50x", "<= 0.40x", "MISS", "0.70x", "0.60x"}, tableRow(t, out, "warm re-apply vs workaround"))
	require.Equal(t, []string{"warm re-apply vs OpenTofu", "base, warm re-apply", "0.80x (OpenTofu 2/12 failed)", "<= 0.80x", "PASS", "n/a", "n/a"}, tableRow(t, out, "warm re-apply vs OpenTofu"))
	miss := tableRow(t, out, "base, warm re-apply")
	// 3 s of CPU bound and one unit's wait (1 s less its 0.5 s of CPU).
	require.Equal(t, "3.50 s (1.14x)", miss[3])
	require.Equal(t, "CPU", miss[4])
	require.Equal(t, "1.17x", miss[8], "CPU used (7 s) against N x c (6 s)")
	// 4 s against a 3 s floor = (7/6) x (2 / 1.75).
	require.Contains(t, out, "4.00 s against a CPU-bound floor of 3.00 s (1.33x). = CPU factor 1.17x")
	require.Contains(t, out, "x core factor 1.14x (1.75 of the 2 cores used)")
	require.True(t, strings.Contains(out, "60 ms of it outside terraform"), out)
}

// Without a miss, no breakdown is printed.
func TestPrintGoalsAllPass(t *testing.T) {
	s := time.Second
	pr := passResult{pass: passCold, floor: newFloor(2, 2, 2, unitCost{wall: s, cpu: s / 2}),
		tfisolate: &peerRow{label: "tfisolate", n: 2, ok: 2, wall: s}, tofu: &peerRow{label: "OpenTofu", n: 2, ok: 2, wall: 2 * s}}
	var b bytes.Buffer
	printGoals(&b, []scenarioResult{{s: floorScenario{key: "base"}, passes: []passResult{pr}}}, 0)
	require.Contains(t, b.String(), "PASS")
	require.NotContains(t, b.String(), "MISS")
	require.NotContains(t, b.String(), "Where tfisolate's time goes")
}
