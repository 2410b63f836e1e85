//go:build unix

package stress

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	stressProcs     = 4
	stressInstances = 25
	stressRounds    = 3
	// stressParallelism is per process. Four processes at 3 make 12
	// terraform runs at once, which a 2-core CI machine under -race still
	// gets through in minutes; the counts of the issue stay as they are.
	stressParallelism = 3
)

// TestStressProcesses runs four runner processes that all apply the SAME
// 25 instances, from one workdir root and one provider cache that starts
// empty, three rounds over. Same instances rather than overlapping sets:
// it is the worst case for every lock at once (each instance's flock has
// four contenders every round, the provider package's flock has four in
// the first round, and every process computes its lock file while the
// others run terraform in the same cache), and "zero failures" then means
// every process waited its turn instead of failing on a held lock.
func TestStressProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test; skipped under -short")
	}
	w := newWorld(t)
	instances := span(stressInstances)
	cfg := w.config(instances, stressParallelism, 0)
	var downloads int64
	for round := 1; round <= stressRounds; round++ {
		start := time.Now()
		procs := make([]*proc, stressProcs)
		for i := range procs {
			procs[i] = startProc(t, fmt.Sprintf("round %d process %d", round, i), cfg, nil)
		}
		var waited time.Duration
		for _, p := range procs {
			res := p.requireSucceeded(t, stressInstances)
			downloads += res.Downloads
			for _, u := range res.Results {
				waited += u.LockWait
			}
		}
		t.Logf("round %d: %d processes x %d instances in %s (lock waits summed over units: %s)",
			round, stressProcs, stressInstances, time.Since(start).Round(time.Millisecond), waited.Round(time.Millisecond))
		// Exactly one download of the one package, in the first round,
		// as the registry saw it and as the processes counted it.
		require.Equal(t, 1, w.prov.TotalDownloads(), "registry downloads after round %d", round)
		require.EqualValues(t, 1, downloads, "downloads the processes report after round %d", round)
	}
	w.requireStates(t, instances)
	w.requireOneCompletePackage(t)
}
