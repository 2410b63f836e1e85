//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testenv"
)

// The memory section at a small size: four units of a 200 MiB provider
// in a 512 MiB cgroup. With tfisolate's budget every unit succeeds and
// none is killed; without it, units are killed.
func TestRunMemorySection(t *testing.T) {
	testenv.Terraform(t)
	if raceOn {
		// The bench process runs in the cgroup with the units; under the
		// race detector it is the largest process there, and the kernel
		// would kill it rather than a provider. The runner's own cgroup
		// test (TestMemoryBudgetPreventsOOMKillsInACgroup) runs under it.
		t.Skip("the memory section's cgroup holds this process too: under -race it outgrows the providers")
	}
	var out bytes.Buffer
	args := []string{"-provider-dir", t.TempDir(), "-provider-size", "0", "-throttle", "0", "-root", t.TempDir(),
		"-skip", "cold,warm,floor,tofu,cost", "-scale", "none",
		"-memory-n", "4", "-memory-provider-mib", "200", "-memory-limit", "536870912"}
	require.NoError(t, run(context.Background(), args, &out))
	s := out.String()
	t.Log(s)
	require.Contains(t, s, "## Memory: 4 units of a provider holding 200 MiB, in a 512.0 MiB memory cgroup")
	if os.Geteuid() != 0 {
		require.Contains(t, s, "Skipped: making a memory cgroup needs root")
		return
	}
	if regexp.MustCompile(`(?m)^Skipped: `).MatchString(s) {
		t.Skipf("no memory cgroup on this machine: %s", s)
	}
	require.Regexp(t, `\| tfisolate \(memory budget\) +\| +4/4 \| +0 \|`, s)
	require.Regexp(t, `\| tfisolate \(parallelism 4, no budget\) +\| +[0-4]/4 \| +[1-9]\d* \|`, s, "without a budget the kernel kills units")
	require.Regexp(t, `\| OpenTofu +\| skipped: -skip tofu`, s)
}
