package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/runner"
)

// TestMain turns the test binary into the mirror or an apply job when run
// started it as one (run re-executes its own executable, under go test
// this binary).
func TestMain(m *testing.M) {
	var err error
	if spec, ok := os.LookupEnv(mirrorEnv); ok {
		err = serveMirror(spec, os.Stdin, os.Stdout)
	} else if spec, ok := os.LookupEnv(jobEnv); ok {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = runApplyJob(ctx, spec, os.Stdout)
		stop()
	} else {
		os.Exit(m.Run())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

var (
	mirrorLine = regexp.MustCompile(`(?m)^mirror: pid (\d+) serves the provider cache at https://127\.0\.0\.1:\d+/ and the module store at https://127\.0\.0\.1:\d+/modules/$`)
	matrixLine = regexp.MustCompile(`(?m)^plan job: 13 bundles; matrix (.*)$`)
	jobLine    = regexp.MustCompile(`(?m)^wave (\d) job (\d): (\d+) units, ran (\S+)-(\S+)$`)
	unitLine   = regexp.MustCompile(`(?m)^wave (\d) job (\d): pid (\d+): (\S+) (\S+), changed: (true|false)$`)
)

// span is when an apply job's process ran, from the fleet's start.
type span struct{ from, to time.Duration }

// The fleet: a mirror process; the plan job's 13 bundles fanned out into
// a wave of the VPC and a wave of 3 jobs of 4 clusters; every job a
// process of its own with its own root, the three of wave 2 running at
// once; every unit applied exactly once, by the job of its matrix cell,
// into the one shared backend; the provider downloaded from upstream
// once, by the mirror, every machine installing it from there. A second
// run of the whole fleet plans no change (the plan job sees the states
// the apply jobs wrote), applies none and downloads nothing.
func TestRunFleet(t *testing.T) {
	testenv.Terraform(t)
	root := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-root", root}, &out), out.String())
	s := out.String()
	t.Log("\n" + s)

	mirror := mirrorLine.FindStringSubmatch(s)
	require.NotNil(t, mirror, "no mirror")
	m := matrixLine.FindStringSubmatch(s)
	require.NotNil(t, m, "no matrix printed")
	var fan runner.FanOutPlan
	require.NoError(t, json.Unmarshal([]byte(m[1]), &fan))
	require.Len(t, fan.Waves, 2)
	require.Equal(t, [][]string{{"plat-ue2-dev/network/vpc"}}, fan.Waves[0].Jobs)
	require.Len(t, fan.Waves[1].Jobs, 3)
	cell := map[string]string{} // unit -> "wave job" of its matrix cell
	for w, wave := range fan.Waves {
		for j, ids := range wave.Jobs {
			for _, id := range ids {
				require.NotContains(t, cell, id, "%s in two cells", id)
				cell[id] = fmt.Sprintf("%d %d", w+1, j+1)
			}
		}
	}
	require.Len(t, cell, 13)
	bundles, err := filepath.Glob(filepath.Join(root, "artifact", "*"))
	require.NoError(t, err)
	require.Len(t, bundles, 13, "the artifact holds a bundle per unit")

	// Each unit applied once, by its cell's process, and changed something.
	pids := map[string]string{} // "wave job" -> pid
	applied := map[string]bool{}
	for _, u := range unitLine.FindAllStringSubmatch(s, -1) {
		at := u[1] + " " + u[2]
		require.Equal(t, cell[u[4]], at, "%s applied outside its cell", u[4])
		require.False(t, applied[u[4]], "%s applied twice", u[4])
		applied[u[4]] = true
		require.Equal(t, "succeeded", u[5], u[4])
		require.Equal(t, "true", u[6], "%s: its plan created it", u[4])
		if p, ok := pids[at]; ok {
			require.Equal(t, p, u[3], "job %s is one process", at)
		}
		pids[at] = u[3]
		require.NotEqual(t, strconv.Itoa(os.Getpid()), u[3], "a job runs in a process of its own")
	}
	require.Len(t, applied, 13)
	require.Len(t, pids, 4, "a process per job")
	distinct := map[string]bool{}
	for _, p := range pids {
		distinct[p] = true
	}
	require.Len(t, distinct, 4, "a process per job")
	require.NotContains(t, distinct, mirror[1], "the mirror is a process of its own")

	// The three jobs of wave 2 ran at once, each with its own root.
	var wave2 []span
	for _, j := range jobLine.FindAllStringSubmatch(s, -1) {
		from, err := time.ParseDuration(j[4])
		require.NoError(t, err)
		to, err := time.ParseDuration(j[5])
		require.NoError(t, err)
		if j[1] == "2" {
			wave2 = append(wave2, span{from, to})
		}
		require.DirExists(t, filepath.Join(root, "wave"+j[1]+"-job"+j[2], "workdirs"))
	}
	require.Len(t, wave2, 3)
	for _, a := range wave2 {
		for _, b := range wave2 {
			require.Less(t, a.from, b.to, "wave 2's jobs overlap: %v", wave2)
		}
	}

	// One shared backend holds every state.
	states, err := filepath.Glob(filepath.Join(root, "state", "*.tfstate"))
	require.NoError(t, err)
	require.Len(t, states, 13)
	for _, st := range states {
		b, err := os.ReadFile(st)
		require.NoError(t, err)
		require.Contains(t, string(b), `"type": "tfitest_item"`, "%s holds its unit's resources", st)
	}
	require.Contains(t, s, "fleet: every job succeeded, every state in "+filepath.Join(root, "state")+"; 1 provider downloads upstream; 1 module downloads upstream;", "only the mirror downloads")

	// The same fleet again: nothing to change, nothing to download.
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-root", root}, &out), out.String())
	s = out.String()
	lines := unitLine.FindAllStringSubmatch(s, -1)
	require.Len(t, lines, 13)
	for _, u := range lines {
		require.Equal(t, "succeeded", u[5], u[4])
		require.Equal(t, "false", u[6], "%s: an empty plan changes nothing", u[4])
	}
	require.Contains(t, s, "; 0 provider downloads upstream; 0 module downloads upstream;", "every machine's cache and store are warm")
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-jobs", "3"}, {"extra"}, {"-root"}} {
		require.Error(t, run(context.Background(), args, &bytes.Buffer{}), "%v", args)
	}
}

// The mirror or an apply job with orders it cannot read says so and runs
// nothing.
func TestRejectsBadOrders(t *testing.T) {
	require.ErrorContains(t, serveMirror("{not json", nil, &bytes.Buffer{}), mirrorEnv)
	t.Setenv(keyEnv, "00")
	require.ErrorContains(t, runApplyJob(context.Background(), "{not json", &bytes.Buffer{}), jobEnv)
	t.Setenv(keyEnv, "not hex")
	require.ErrorContains(t, runApplyJob(context.Background(), `{"Env": {}}`, &bytes.Buffer{}), keyEnv)
}
