package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/runner"
)

// TestMain turns the test binary into a worker when run started it as one
// (run re-executes its own executable, which under go test is this binary).
func TestMain(m *testing.M) {
	if cfg, ok := os.LookupEnv(workerEnv); ok {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := worker(ctx, cfg, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Three processes apply instances 1-4, 3-6 and 5-8 with one cache and one
// workdir root, from a cold cache.
func TestRunThreeProcessesOverlapping(t *testing.T) {
	testenv.Terraform(t)
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"-root", t.TempDir(), "-latency", "0s", "-provider-size", "0", "-json"}, &stdout)
	require.NoError(t, err, stdout.String())
	var out outcome
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), stdout.String())

	// Every process succeeded with exactly its instances.
	require.Len(t, out.Processes, 3)
	var cacheDownloads int64
	for p, pr := range out.Processes {
		require.Empty(t, pr.Error, "process %d", pr.Process)
		require.Equal(t, p+1, pr.Process)
		require.NotNil(t, pr.Report, "process %d sent no report", pr.Process)
		require.Equal(t, "apply", pr.Report.Command)
		var got []string
		for _, u := range pr.Report.Results {
			require.Equal(t, runner.Succeeded, u.Status, "process %d, %s: %v", pr.Process, u.Unit, u.Err)
			require.True(t, u.Started)
			require.FileExists(t, u.Log)
			got = append(got, u.Unit)
		}
		var want []string
		for i := 2*p + 1; i <= 2*p+4; i++ {
			want = append(want, demo.Instance(i))
		}
		require.ElementsMatch(t, want, got, "process %d", pr.Process)
		cacheDownloads += pr.Cache.Downloads
	}

	// One download for all processes: the registry served the package
	// once, and exactly one process's cache installed it.
	require.True(t, out.ColdCache)
	require.Equal(t, 1, out.Downloads, "registry downloads on a cold cache")
	require.EqualValues(t, 1, cacheDownloads, "installs across processes")

	// An instance two processes share was worked on by one at a time: the
	// spans each held its instance lock for never overlap.
	spans := map[string][]span{}
	for _, pr := range out.Processes {
		for _, u := range pr.Report.Results {
			sp := pr.Spans[u.Unit]
			require.False(t, sp.Locked.IsZero() || sp.Applied.IsZero(), "%s has no lock or apply time", u.Unit)
			require.False(t, sp.Applied.Before(sp.Locked))
			spans[u.Unit] = append(spans[u.Unit], sp)
		}
	}
	for _, i := range []int{3, 4, 5, 6} {
		s := spans[demo.Instance(i)]
		require.Len(t, s, 2, "instance %d is in two processes' sets", i)
		a, b := s[0], s[1]
		require.True(t, a.Applied.Before(b.Locked) || b.Applied.Before(a.Locked),
			"%s: two processes held it at once: [%s, %s] and [%s, %s]", demo.Instance(i), a.Locked, a.Applied, b.Locked, b.Applied)
	}

	// Every instance's state holds its own resources.
	require.Len(t, out.Instances, 8)
	for k, st := range out.Instances {
		i := k + 1
		require.Empty(t, st.Error, st.Instance)
		require.Equal(t, demo.Instance(i), st.Instance)
		require.Equal(t, []string{"module.redis.terraform_data.provisioning", "module.redis.tfitest_item.cluster"}, st.Resources, st.Instance)
		require.Equal(t, fmt.Sprintf("%s-redis-cluster-%d", demo.Stack, i), st.Name)
	}

	// The text view says the same.
	var text bytes.Buffer
	printOutcome(&text, &out)
	require.Contains(t, text.String(), "provider downloads from the registry: 1 (cold cache")
	require.Contains(t, text.String(), "elasticache/redis-cluster-3  applied by process 1 and 2  2 resources")
	require.Contains(t, text.String(), "every process applied every one of its instances")
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-procs", "0"},
		{"-per", "0"},
		{"-step", "-1"},
		{"-parallelism", "-1"},
		{"-latency", "-1s"},
		{"-provider-size", "-1"},
		{"extra"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
	}
}

// A worker with a config it cannot read says so and reports nothing.
func TestWorkerRejectsBadConfig(t *testing.T) {
	var out bytes.Buffer
	err := worker(context.Background(), "{not json", &out, &bytes.Buffer{})
	require.ErrorContains(t, err, workerEnv)
	require.Empty(t, out.String())
}
