package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/harness/demo"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// planRow is one row of the printed plan table.
type planRow struct {
	add, change, destroy int
	file                 string
}

var planLine = regexp.MustCompile(`^(\S+)\s+\+(\d+) ~(\d+) -(\d+)\s+(\S+)$`)

func planRows(t *testing.T, out string) map[string]planRow {
	t.Helper()
	rows := map[string]planRow{}
	for _, line := range strings.Split(out, "\n") {
		m := planLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var r planRow
		for k, p := range []*int{&r.add, &r.change, &r.destroy} {
			n, err := strconv.Atoi(m[2+k])
			require.NoError(t, err)
			*p = n
		}
		r.file = m[5]
		_, dup := rows[m[1]]
		require.False(t, dup, "%s planned twice", m[1])
		rows[m[1]] = r
	}
	return rows
}

// Twelve saved plans of two resources each, exactly those plans applied
// (each cluster's output printed, the spent plan files gone), and a
// second run whose plans are all empty applies nothing.
func TestRunPlansThenAppliesTheSavedPlans(t *testing.T) {
	testenv.Terraform(t)
	root := t.TempDir()
	args := []string{"-root", root, "-latency", "0s"}

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), args, &out), out.String())
	s := out.String()
	t.Log("\n" + s)
	rows := planRows(t, s)
	require.Len(t, rows, 12, "want a plan row per instance")
	workdirs := filepath.Join(root, "workdirs") + string(filepath.Separator)
	for i := 1; i <= 12; i++ {
		id := demo.Stack + "/" + demo.Instance(i)
		r, ok := rows[id]
		require.True(t, ok, "no plan row for %s", id)
		require.Equal(t, planRow{add: 2, file: r.file}, r, "%s: want the cluster and its provisioning created", id)
		require.True(t, strings.HasPrefix(r.file, workdirs), "%s: plan file %s is not in its workdir", id, r.file)
		require.NoFileExists(t, r.file, "%s: an applied plan is spent and removed", id)
		applied := fmt.Sprintf(`(?m)^%s\s+succeeded\s+cluster_id="item-%s-redis-cluster-%d"$`, regexp.QuoteMeta(id), demo.Stack, i)
		require.Regexp(t, applied, s)
	}
	require.Contains(t, s, "plan: 12/12 saved")
	require.Contains(t, s, "+24 ~0 -0")
	require.Contains(t, s, "applying the 12 saved plans with changes")
	require.Contains(t, s, "apply: 12/12 applied")

	out.Reset()
	require.NoError(t, run(context.Background(), args, &out), out.String())
	s = out.String()
	rows = planRows(t, s)
	require.Len(t, rows, 12)
	for id, r := range rows {
		require.Equal(t, planRow{file: r.file}, r, "%s: the second plan must be empty", id)
		require.FileExists(t, r.file, "%s: an unapplied plan is kept", id)
	}
	require.Contains(t, s, "no changes: nothing to apply")
	require.NotContains(t, s, "apply:")
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "0"},
		{"-parallelism", "-1"},
		{"-latency", "-1s"},
		{"extra"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{})
		require.Error(t, err, "%v", args)
	}
}
