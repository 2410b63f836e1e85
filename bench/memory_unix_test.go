//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// The memory section at a small size: four units of a 200 MiB provider
// in a 512 MiB cgroup. With tfisolate's budget every unit succeeds and
// none is killed; without it, units are killed. The bench process itself
// (here the test binary, which serves the registry) never joins the
// cgroup: only the children that run the approaches do. (When it
// joined, the test binary under -race, four times a race-built child's
// size and larger than a provider, was the kernel's OOM victim.)
func TestRunMemorySection(t *testing.T) {
	testenv.Terraform(t)
	// Watch this process's cgroups while the section runs.
	stop, joined := make(chan struct{}), make(chan string, 1)
	go func() {
		defer close(joined)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile("/proc/self/cgroup"); err == nil && strings.Contains(string(b), "tfisolate-bench-") {
				joined <- string(b)
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var out bytes.Buffer
	args := []string{"-provider-dir", t.TempDir(), "-provider-size", "0", "-throttle", "0", "-root", t.TempDir(),
		"-skip", "cold,warm,floor,tofu,cost", "-scale", "none",
		"-memory-n", "4", "-memory-provider-mib", "200", "-memory-limit", "536870912"}
	err := run(context.Background(), args, &out)
	close(stop)
	if cg, ok := <-joined; ok {
		t.Errorf("the bench process joined the memory cgroup:\n%s", cg)
	}
	require.NoError(t, err)
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
