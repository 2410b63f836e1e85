package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/runner"
)

type report struct {
	Report    runner.Report `json:"report"`
	Downloads int           `json:"provider_downloads"`
}

func runJSON(t *testing.T, args ...string) report {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), append(args, "-json", "-progress", "lines"), &out))
	var rep report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	return rep
}

// The main job end to end: apply, a second run that finds nothing to do
// and downloads nothing, then destroy.
func TestRunApplyTwiceThenDestroy(t *testing.T) {
	testenv.Terraform(t)
	root := t.TempDir()
	common := []string{"-root", root, "-n", "3", "-latency", "0s", "-provider-size", "0"}

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), append(common, "-progress", "lines"), &out))
	require.Contains(t, out.String(), "tfisolate: 3/3 succeeded")
	require.Regexp(t, `tfisolate: 3/3 succeeded in \S+ with (terraform|tofu) \d+\.\d+\.\d+;`, out.String(), "the summary names the engine that ran")
	require.Contains(t, out.String(), "provider downloads this run: 1")
	for i := 1; i <= 3; i++ {
		require.Contains(t, out.String(), "plat-ue2-dev/elasticache/redis-cluster-"+string(rune('0'+i))+"  succeeded")
	}

	plan := runJSON(t, append(common, "-command", "plan")...)
	require.Equal(t, 3, plan.Report.Count(runner.Succeeded))
	require.Zero(t, plan.Downloads, "a warm cache downloads nothing")
	for _, r := range plan.Report.Results {
		require.False(t, r.HasChanges, "second run of %s must have nothing to change", r.Unit)
		require.FileExists(t, r.Log)
	}

	destroy := runJSON(t, append(common, "-command", "destroy")...)
	require.Equal(t, 3, destroy.Report.Count(runner.Succeeded))

	// The component source the example wrote was never written by a run.
	src := filepath.Join(root, "infra", filepath.FromSlash(demo.Component))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		require.True(t, strings.HasSuffix(e.Name(), ".tf"), "run left %s in the component source", e.Name())
	}
}

// -compare prints the naive run's outcome before tfisolate's.
func TestRunCompare(t *testing.T) {
	testenv.Terraform(t)
	var out bytes.Buffer
	err := run(context.Background(), []string{"-root", t.TempDir(), "-n", "4", "-latency", "0s", "-provider-size", "0", "-compare", "-progress", "lines"}, &out)
	require.NoError(t, err)
	s := out.String()
	naive := strings.Index(s, "naive: ")
	ours := strings.Index(s, "tfisolate: 4/4 succeeded")
	require.True(t, naive >= 0 && ours > naive, "want the naive outcome, then tfisolate's 4/4:\n%s", s)
	require.Regexp(t, `naive: \d+/4 succeeded`, s)
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-command", "bogus"},
		{"-n", "0"},
		{"-parallelism", "-1"},
		{"-progress", "fancy"},
		{"extra"},
		{"-online", "-compare"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
	}
}
