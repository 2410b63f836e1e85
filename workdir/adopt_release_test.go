package workdir

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// releaseV0 is the fixture of what the release before the root's
// register of adoptions left on disk (testdata/adoption-v0, captured by
// running that release: see its capture/main.go): a component whose
// state plain terraform wrote, and the home of fleet/unit-2 after that
// release adopted the state into it, its own record the only trace.
const releaseV0 = "testdata/adoption-v0"

// v0Source copies the fixture's component (main.tf and the state plain
// terraform 1.11.4 wrote for it) to a new dir and returns the dir.
func v0Source(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	for _, name := range []string{"main.tf", "terraform.tfstate"} {
		b, err := os.ReadFile(filepath.Join(releaseV0, "source", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(src, name), b, 0o644))
	}
	return src
}

// v0AdoptUnit2 does to root what the release before the register did
// when fleet/unit-2 adopted the state of the component at src: it writes
// the home that release left, byte for byte and mode for mode, with the
// component's path where the capture's was. That release never read or
// wrote ROOT/.adopted.json. It returns the home's ID.
func v0AdoptUnit2(t *testing.T, root, src string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(releaseV0, "modes"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		mode, rel, ok := strings.Cut(sc.Text(), " ")
		require.True(t, ok, sc.Text())
		perm, err := strconv.ParseUint(mode, 8, 32)
		require.NoError(t, err)
		dst := filepath.Join(root, filepath.FromSlash(rel))
		b, err := os.ReadFile(filepath.Join(releaseV0, "root", filepath.FromSlash(rel)))
		if err != nil { // a dir: only files are in the fixture
			require.NoError(t, os.MkdirAll(dst, 0o700))
		} else {
			require.NoError(t, os.WriteFile(dst, []byte(strings.ReplaceAll(string(b), "@SOURCE@", src)), 0o600))
		}
		require.NoError(t, os.Chmod(dst, os.FileMode(perm)))
	}
	require.NoError(t, sc.Err())
	id, err := ID("fleet", "unit-2")
	require.NoError(t, err)
	require.DirExists(t, filepath.Join(root, id), "the fixture is fleet/unit-2's home")
	return id
}

// v0Remove does what Manager.Remove of the release before the register
// did: the deletion of the home by remove.go's remove, which that
// release ran the same way, and nothing else (giving up the instance's
// claims in the register came with the register).
func v0Remove(t *testing.T, m *Manager, instance string) {
	t.Helper()
	id, err := ID("fleet", instance)
	require.NoError(t, err)
	require.NoError(t, m.remove(id, true))
}

// Two releases take turns on one workdir root. Today's release adopts a
// state plain terraform wrote into fleet/unit-1; the release before the
// root's register (its on-disk effect, captured from it) lets
// fleet/unit-2 adopt the same state, leaving the register as it was;
// today's release runs unit-2 on it (plain terraform plans no change:
// unit-2 manages that infrastructure), and its Prepare gives the register
// unit-2's name. The register is never believed over the instances' own
// records: unit-3 is refused naming both owners, and once unit-1 is
// removed, unit-4 is refused naming unit-2, the owner the register did
// not know, and not unit-1. On a second root the older release removes
// the owner: unit-4 may adopt (the removed owner is no owner), and after
// the older release adopts into unit-2, unit-5 is refused naming unit-4
// and unit-2 (by its workdir ID: today's release never ran it), never
// unit-1.
func TestAdoptionAcrossReleases(t *testing.T) {
	bin := testenv.Terraform(t)
	cli := filepath.Join(t.TempDir(), "empty.tfrc")
	require.NoError(t, os.WriteFile(cli, nil, 0o644))
	env := testenv.TerraformEnv(cli)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	unit := func(src, name string) Spec {
		return Spec{Stack: "fleet", Instance: name, Source: src, AdoptState: true}
	}
	// refused asks to adopt into name and wants the refusal to name
	// exactly the owners (stack/instance, or the workdir ID of one the
	// register never named), copying nothing.
	refused := func(t *testing.T, m *Manager, src, name string, owners ...string) {
		t.Helper()
		_, err := m.Prepare(ctx, unit(src, name))
		require.ErrorIs(t, err, ErrAdopted)
		var ae *AdoptedError
		require.ErrorAs(t, err, &ae)
		var got []string
		for _, o := range ae.Owners {
			got = append(got, o.String())
		}
		require.ElementsMatch(t, owners, got)
		require.Equal(t, ae.Owners[0], ae.Owner)
		for _, o := range owners {
			require.Contains(t, err.Error(), o)
		}
		requireNoState(t, m, "fleet", name)
	}
	lineage := readState(filepath.Join(releaseV0, "source", "terraform.tfstate")).lineage
	require.NotEmpty(t, lineage)

	t.Run("owner removed by today's release", func(t *testing.T) {
		src := v0Source(t)
		m := newManager(t)
		w1 := prepare(t, m, unit(src, "unit-1"))
		require.NoError(t, w1.Close())
		register := readFileString(t, filepath.Join(m.Root(), adoptedFile))

		id2 := v0AdoptUnit2(t, m.Root(), src)
		require.Equal(t, register, readFileString(t, filepath.Join(m.Root(), adoptedFile)), "the older release never touches the register")
		w2 := prepare(t, m, Spec{Stack: "fleet", Instance: "unit-2", Source: src})
		mustTerraform(t, ctx, bin, w2, env, "init", "-input=false", "-no-color")
		mustTerraform(t, ctx, bin, w2, env, "plan", "-input=false", "-no-color", "-detailed-exitcode")
		require.Equal(t, []string{"terraform_data.legacy"}, stateList(t, ctx, bin, w2, env))
		require.Equal(t, lineage, readState(filepath.Join(w2.Dir, "terraform.tfstate")).lineage)
		require.NoError(t, w2.Close())

		reg, _, err := m.readAdopted()
		require.NoError(t, err)
		require.Len(t, reg.Claims, 2, "today's Prepare of unit-2 names it in the register")
		require.Equal(t, claim{Stack: "fleet", Instance: "unit-2", ID: id2, Source: filepath.Join(src, "terraform.tfstate"),
			Real: realPath(filepath.Join(src, "terraform.tfstate")), Lineage: lineage, Time: reg.Claims[1].Time}, reg.Claims[1])

		refused(t, m, src, "unit-3", "instance fleet/unit-1", "instance fleet/unit-2")
		require.NoError(t, m.Remove(ctx, "fleet", "unit-1", true))
		refused(t, m, src, "unit-4", "instance fleet/unit-2")
		_, err = m.Prepare(ctx, unit(src, "unit-4"))
		require.NotContains(t, err.Error(), "unit-1", "a removed owner is no owner")
	})

	t.Run("owner removed by the older release", func(t *testing.T) {
		src := v0Source(t)
		m := newManager(t)
		w1 := prepare(t, m, unit(src, "unit-1"))
		require.NoError(t, w1.Close())
		v0Remove(t, m, "unit-1")

		w4 := prepare(t, m, unit(src, "unit-4"))
		require.Equal(t, lineage, readState(filepath.Join(w4.Dir, "terraform.tfstate")).lineage)
		require.NoError(t, w4.Close())
		reg, _, err := m.readAdopted()
		require.NoError(t, err)
		require.Len(t, reg.Claims, 1, "the register is mended: the removed owner's claim is gone")
		require.Equal(t, "unit-4", reg.Claims[0].Instance)

		id2 := v0AdoptUnit2(t, m.Root(), src)
		refused(t, m, src, "unit-5", "instance fleet/unit-4", "the instance with workdir "+id2)
		_, err = m.Prepare(ctx, unit(src, "unit-5"))
		require.NotContains(t, err.Error(), "unit-1")
		require.Contains(t, err.Error(), "adopted it more than once")
		require.Contains(t, err.Error(), "The owners, ")
	})
}
