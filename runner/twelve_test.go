package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/workdir"
)

// TestTwelveInstances is the scenario from the design: twelve instances of
// one component in one stack, an empty cache, applied in parallel.
func TestTwelveInstances(t *testing.T) {
	w := newWorld(t)
	src := w.component(t, "redis", itemComponent)
	states := filepath.Join(w.dir, "states")
	var units []Unit
	for i := range 12 {
		inst := fmt.Sprintf("elasticache/redis-cluster-%02d", i)
		units = append(units, Unit{Workdir: workdir.Spec{
			Stack: "plat-ue2-dev", Instance: inst, Source: src,
			Files: files(t, map[string]any{"name": inst}, filepath.Join(states, fmt.Sprintf("%02d.tfstate", i))),
		}})
	}
	rec := &recorder{}
	out := &syncBuffer{}
	r := w.runner(t, WithParallelism(12), WithEvents(rec.add), WithOutput(out))
	rep, err := r.Run(testCtx(t), Apply, units...)
	require.NoError(t, err)

	require.Len(t, rep.Results, 12)
	var lockFile []byte
	for i, res := range rep.Results {
		inst := units[i].Workdir.Instance
		require.Equal(t, "plat-ue2-dev/"+inst, res.Unit)
		require.Equal(t, Succeeded, res.Status, "%s: %v", res.Unit, res.Err)
		// Each unit's state holds its own resource.
		items := stateResources(t, filepath.Join(states, fmt.Sprintf("%02d.tfstate", i)))
		require.Len(t, items, 1)
		require.Equal(t, inst, items["tfitest_item.this"]["name"])
		require.Equal(t, "item-"+inst, items["tfitest_item.this"]["id"])
		// The log is the unit's own.
		log, err := os.ReadFile(res.Log)
		require.NoError(t, err)
		require.Contains(t, string(log), "Apply complete! Resources: 1 added")
		// Every instance got the same lock file.
		lf := lockFileOf(t, w, "plat-ue2-dev", inst)
		if lockFile == nil {
			lockFile = lf
		}
		require.Equal(t, string(lockFile), string(lf))
		var phases []Phase
		for _, e := range rec.events {
			if e.Unit == res.Unit {
				phases = append(phases, e.Phase)
			}
		}
		require.Equal(t, []Phase{PhaseQueued, PhasePrepare, PhaseInit, PhaseApply, PhaseDone}, phases)
	}
	require.Contains(t, string(lockFile), `provider "registry.tfisolate.test/tfisolate/tfitest"`)
	require.Contains(t, string(lockFile), `version     = "1.0.0"`)

	// One download of the one provider package, for twelve units.
	require.Equal(t, 1, w.reg.Downloads(w.pkg.Key()))
	require.Equal(t, 1, w.reg.TotalDownloads())
	require.EqualValues(t, 1, w.cache.Stats().Downloads)

	// The combined stream: every line carries exactly one unit prefix.
	prefix := regexp.MustCompile(`^\[plat-ue2-dev/elasticache/redis-cluster-\d\d\] `)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Greater(t, len(lines), 12)
	for _, l := range lines {
		require.Regexp(t, prefix, l)
		require.NotContains(t, prefix.ReplaceAllString(l, ""), "[plat-ue2-dev/", "interleaved line %q", l)
	}
}

// lockFileOf finds the instance's .terraform.lock.hcl in its workdir.
func lockFileOf(t *testing.T, w *world, stack, instance string) []byte {
	t.Helper()
	home, err := w.wd.Home(stack, instance)
	require.NoError(t, err)
	var found []byte
	require.NoError(t, filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == lockFileName && found == nil {
			found, err = os.ReadFile(p)
		}
		return err
	}))
	require.NotNil(t, found, "no lock file under %s", home)
	return found
}
