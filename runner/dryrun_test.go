package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// placeTerraform wraps terraform in a script that records, for every
// process, its working directory and its command, and returns the
// script and a function that returns (and forgets) the records as
// "DIR CMD" lines, the engine probe (version) left out.
func placeTerraform(t *testing.T, real string) (string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	wrapper := filepath.Join(dir, "terraform")
	script := fmt.Sprintf("#!/bin/sh\necho \"$PWD $1\" >> %q\nexec %q \"$@\"\n", log, real)
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	return wrapper, func() []string {
		b, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		require.NoError(t, os.Remove(log))
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" && !strings.HasSuffix(l, " version") {
				out = append(out, l)
			}
		}
		return out
	}
}

const dryRunComponent = `
variable "name" { type = string }
resource "terraform_data" "x" { input = var.name }
output "name" { value = var.name }
`

// TestDryRun: DryRun says, per selected unit in Run's order, whether it
// would be skipped as unchanged, whether init would run and why, and
// which dependency outputs it waits for, and starts no terraform
// process; the Run that follows does what it said (issue 24).
func TestDryRun(t *testing.T) {
	w := newWorld(t)
	wrapper, calls := placeTerraform(t, w.tf)
	src := w.component(t, "dry", dryRunComponent)
	unit := func(inst, name string) Unit {
		return Unit{ID: inst, Workdir: workdirSpec("dry", inst, src, files(t, map[string]any{"name": name}, filepath.Join(w.dir, inst+".tfstate")))}
	}
	a, c := unit("a", "one"), unit("c", "three")
	b := unit("b", "")
	b.DependsOn = []string{"a"}
	b.Generate = func(_ context.Context, deps map[string]Result) (map[string][]byte, error) {
		return map[string][]byte{"b.auto.tfvars.json": []byte(`{"name": ` + string(deps["a"].Outputs["name"].Value) + `}`)}, nil
	}
	units := []Unit{b, c, a}
	r, err := New(WithWorkdirs(w.wd), WithTerraform(wrapper), WithSkipUnchanged())
	require.NoError(t, err)
	ctx := testCtx(t)
	_, err = r.Binary(ctx)
	require.NoError(t, err)

	// initRuns maps each unit to whether a terraform init ran in its
	// workdir, from the processes recorded.
	initRuns := func(recs []string) map[string]bool {
		out := map[string]bool{}
		for _, u := range units {
			home, err := w.wd.Home("dry", u.ID)
			require.NoError(t, err)
			for _, l := range recs {
				if strings.HasPrefix(l, home+string(filepath.Separator)) && strings.HasSuffix(l, " init") {
					out[u.ID] = true
				}
			}
		}
		return out
	}
	dry := func() []DryRunStep {
		t.Helper()
		steps, err := r.DryRun(ctx, Apply, units)
		require.NoError(t, err)
		require.Empty(t, calls(), "a dry run starts no terraform process")
		var order []string
		for _, s := range steps {
			order = append(order, s.ID)
		}
		require.Equal(t, []string{"a", "c", "b"}, order, "Run's order: by wave, then by ID")
		require.Equal(t, []string{"a"}, steps[2].WaitsFor)
		require.NotEmpty(t, steps[2].Unknown, "b's generated files wait for a's outputs")
		require.True(t, steps[0].Outputs, "a's outputs feed b's Generate")
		return steps
	}
	// matches checks that a Run did what the dry run said of the units
	// it could decide.
	matches := func(steps []DryRunStep, rep *Report) {
		t.Helper()
		ran := initRuns(calls())
		byID := map[string]Result{}
		for _, res := range rep.Results {
			byID[res.Unit] = res
		}
		for _, s := range steps {
			if s.Unknown != "" {
				continue
			}
			require.Equal(t, s.Unchanged, byID[s.ID].Unchanged, "unit %s: unchanged", s.ID)
			require.Equal(t, s.Init, ran[s.ID], "unit %s: init (%s)", s.ID, s.InitReason)
		}
	}

	first := dry()
	for _, s := range first[:2] {
		require.False(t, s.Unchanged, s.ID)
		require.True(t, s.Init, s.ID)
		require.Equal(t, "no record of an earlier successful init", s.InitReason)
	}
	rep, err := r.Run(ctx, Apply, units...)
	require.NoError(t, err)
	matches(first, rep)

	second := dry()
	require.True(t, second[0].Unchanged && second[0].Skip && !second[0].Init, "a: unchanged, skipped, outputs read without init: %+v", second[0])
	require.True(t, second[1].Unchanged && second[1].Skip && !second[1].Init, "c: unchanged, skipped: %+v", second[1])
	rep, err = r.Run(ctx, Apply, units...)
	require.NoError(t, err)
	matches(second, rep)

	// A changed variable: c is applied again, without init.
	units[1].Workdir.Files = files(t, map[string]any{"name": "four"}, filepath.Join(w.dir, "c.tfstate"))
	third := dry()
	require.False(t, third[1].Unchanged)
	require.False(t, third[1].Init, "a variable is nothing init depends on")
	rep, err = r.Run(ctx, Apply, units...)
	require.NoError(t, err)
	matches(third, rep)

	// A changed backend: init must run again, and says why.
	units[1].Workdir.Files = files(t, map[string]any{"name": "four"}, filepath.Join(w.dir, "c2.tfstate"))
	fourth := dry()
	require.True(t, fourth[1].Init)
	require.Equal(t, "the backend configuration changed", fourth[1].InitReason)
}
