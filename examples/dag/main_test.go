package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/workdir"
)

// span is when a unit started and ended, as printed: the line numbers
// (the order of events) and the printed times.
type span struct {
	startLine, endLine int
	start, end         float64
	status             string
}

var eventLine = regexp.MustCompile(`^\s+(\d+\.\d{3})s  (start|end)\s+(\S+)(?:\s+(\S+))?$`)

// timelines parses the printed start/end lines of each command section.
func timelines(t *testing.T, out string) map[string]map[string]*span {
	t.Helper()
	all := map[string]map[string]*span{}
	var cur map[string]*span
	for n, line := range strings.Split(out, "\n") {
		if line == "apply:" || line == "destroy:" {
			cur = map[string]*span{}
			all[strings.TrimSuffix(line, ":")] = cur
			continue
		}
		m := eventLine.FindStringSubmatch(line)
		if m == nil || cur == nil {
			continue
		}
		at, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		s := cur[m[3]]
		if s == nil {
			s = &span{startLine: -1, endLine: -1}
			cur[m[3]] = s
		}
		if m[2] == "start" {
			require.Equal(t, -1, s.startLine, "%s started twice", m[3])
			s.startLine, s.start = n, at
		} else {
			require.Equal(t, -1, s.endLine, "%s ended twice", m[3])
			s.endLine, s.end, s.status = n, at, m[4]
		}
	}
	return all
}

// requireAfter checks that every unit started only after all of the units
// it must wait for had ended, both in event order and in printed time.
func requireAfter(t *testing.T, cmd string, spans map[string]*span, waitsFor map[string][]string) {
	t.Helper()
	for u, deps := range waitsFor {
		for _, d := range deps {
			su, sd := spans[unitID(u)], spans[unitID(d)]
			require.Greater(t, su.startLine, sd.endLine, "%s: %s started before %s ended", cmd, u, d)
			require.GreaterOrEqual(t, su.start, sd.end, "%s: %s started at %.3fs, before %s ended at %.3fs", cmd, u, su.start, d, sd.end)
		}
	}
}

var flowLine = regexp.MustCompile(`^  (\S+)\s+(outputs|received)\s+(.*)$`)

// dataFlow parses the printed data flow: what each unit output or
// received, by unit ID.
func dataFlow(out string) map[string]string {
	flow := map[string]string{}
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch m := flowLine.FindStringSubmatch(line); {
		case line == "data flow:":
			in = true
		case in && m != nil:
			flow[m[1]] = m[2] + " " + m[3]
		default:
			in = false
		}
	}
	return flow
}

func TestRunAppliesInDependencyOrderPassesOutputsAndDestroysInReverse(t *testing.T) {
	testenv.Terraform(t)
	root := t.TempDir()
	var out bytes.Buffer
	err := run(context.Background(), []string{"-root", root, "-latency", "0s"}, &out)
	s := out.String()
	require.NoError(t, err, s)
	t.Log("\n" + s)

	// The dry-run waves.
	require.Contains(t, s, `apply order (dry run):
  wave 1: plat-ue2-dev/elasticache/redis-cluster-3, plat-ue2-dev/network/vpc
  wave 2: plat-ue2-dev/elasticache/redis-cluster-1, plat-ue2-dev/elasticache/redis-cluster-2
`)
	require.Contains(t, s, `destroy order (dry run):
  wave 1: plat-ue2-dev/elasticache/redis-cluster-1, plat-ue2-dev/elasticache/redis-cluster-2, plat-ue2-dev/elasticache/redis-cluster-3
  wave 2: plat-ue2-dev/network/vpc
`)

	// The real order, from the runner's events.
	tls := timelines(t, s)
	for _, cmd := range []string{"apply", "destroy"} {
		spans := tls[cmd]
		require.Len(t, spans, 4, "%s: want start and end of four units", cmd)
		for u, sp := range spans {
			require.True(t, sp.startLine >= 0 && sp.endLine > sp.startLine, "%s: %s has no start or no end after it", cmd, u)
			require.Equal(t, "succeeded", sp.status, "%s: %s", cmd, u)
		}
		require.Contains(t, s, cmd+": 4/4 succeeded")
	}
	requireAfter(t, "apply", tls["apply"], map[string][]string{
		cluster1: {vpc},
		cluster2: {vpc},
	})
	requireAfter(t, "destroy", tls["destroy"], map[string][]string{
		vpc: {cluster1, cluster2},
	})

	// The VPC's outputs (ids are "item-" + name with the test provider)
	// reached both clusters in it, through terraform: what is printed is
	// each cluster's own outputs after its apply.
	want := `vpc_id="item-plat-ue2-dev-network-vpc" subnet_ids=["item-plat-ue2-dev-network-vpc-us-east-2a","item-plat-ue2-dev-network-vpc-us-east-2b"]`
	require.Equal(t, map[string]string{
		unitID(vpc):      "outputs " + want,
		unitID(cluster1): "received " + want,
		unitID(cluster2): "received " + want,
		unitID(cluster3): "received nothing (not in the VPC)",
	}, dataFlow(s))

	// Both commands really ran: every instance has a state, and destroy
	// left it without resources.
	wds, err := workdir.New(filepath.Join(root, "workdirs"))
	require.NoError(t, err)
	infra := filepath.Join(root, "infra")
	for _, u := range stackUnits(filepath.Join(infra, filepath.FromSlash(demo.VPCComponent)), filepath.Join(infra, filepath.FromSlash(demo.Component)), 0) {
		w, err := wds.Prepare(context.Background(), u.Workdir)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(w.Dir, "terraform.tfstate"))
		require.NoError(t, w.Close())
		require.NoError(t, err, "%s has no state: never applied", u.Workdir.Instance)
		var st struct {
			Serial    int   `json:"serial"`
			Resources []any `json:"resources"`
		}
		require.NoError(t, json.Unmarshal(b, &st))
		require.Positive(t, st.Serial, u.Workdir.Instance)
		require.Empty(t, st.Resources, "%s: destroy left resources", u.Workdir.Instance)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-parallelism", "0"},
		{"-latency", "-1s"},
		{"-provider-size", "-1"},
		{"extra"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
	}
}
