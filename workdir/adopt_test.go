package workdir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/atomicfile"
	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// stateOther is a state with resources of a lineage no other test state
// has.
const stateOther = `{"version":4,"serial":1,"lineage":"other-lineage","resources":[{"mode":"managed","type":"terraform_data","name":"x"}]}`

// requireNoState fails unless the instance's home holds no state file
// and no record of an adoption: a refused adoption wrote none.
func requireNoState(t *testing.T, m *Manager, stack, instance string) {
	t.Helper()
	home, err := m.Home(stack, instance)
	require.NoError(t, err)
	for _, f := range listDir(t, home) {
		require.NotContains(t, filepath.Base(f), "tfstate", "%s/%s holds %s", stack, instance, f)
	}
	require.Empty(t, readStateRecord(home).Adopted)
}

// A state adopted into one instance is adopted into no other: legacy/two
// asking for legacy/main's state is refused naming legacy/main, with
// nothing written, and so is a copy of that state in another component
// (same lineage) and another state put at the adopted file's path.
// legacy/main keeps adopting (an idempotent Prepare), and once its
// workdir is removed, legacy/two may adopt.
func TestSecondAdoptionRefused(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
	m := newManager(t)
	ctx := context.Background()
	// What a writer of the register killed mid-write leaves: swept by
	// the next write.
	leftover := filepath.Join(m.Root(), atomicfile.TempPrefix+adoptedFile+"-123")
	require.NoError(t, os.WriteFile(leftover, []byte(`{"cla`), 0o600))
	mainSpec := Spec{Stack: "legacy", Instance: "main", Source: src, AdoptState: true}
	w := prepare(t, m, mainSpec)
	require.Equal(t, stateWith2, readFileString(t, filepath.Join(w.Dir, "terraform.tfstate")))
	require.NoError(t, w.Close())
	require.NoFileExists(t, leftover)
	register := readFileString(t, filepath.Join(m.Root(), adoptedFile))

	refused := func(s Spec, file string, lineage bool) {
		t.Helper()
		_, err := m.Prepare(ctx, s)
		require.ErrorIs(t, err, ErrAdopted)
		require.ErrorIs(t, err, ErrSourceState)
		var ae *AdoptedError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "legacy", ae.Owner.Stack)
		require.Equal(t, "main", ae.Owner.Instance)
		require.Equal(t, filepath.Join(src, "terraform.tfstate"), ae.Owner.Source)
		require.Equal(t, file, ae.File.Path)
		msg := err.Error()
		require.Contains(t, msg, "instance legacy/main adopted it already")
		require.Contains(t, msg, "into instance "+s.Stack+"/"+s.Instance)
		require.Contains(t, msg, file+" (")
		require.Contains(t, msg, "Manager.Remove")
		if lineage {
			require.Contains(t, msg, "lineage src-lineage")
		}
		requireNoState(t, m, s.Stack, s.Instance)
		require.Equal(t, register, readFileString(t, filepath.Join(m.Root(), adoptedFile)), "the register is unchanged")
	}
	two := Spec{Stack: "legacy", Instance: "two", Source: src, AdoptState: true}
	refused(two, filepath.Join(src, "terraform.tfstate"), true)
	refused(two, filepath.Join(src, "terraform.tfstate"), true) // and again: nothing was left half-done

	// A copy of the state in another component: the same lineage.
	copySrc := t.TempDir()
	testenv.WriteTree(t, copySrc, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
	refused(Spec{Stack: "other", Instance: "copy", Source: copySrc, AdoptState: true}, filepath.Join(copySrc, "terraform.tfstate"), true)

	// The owner adopts again as often as it likes, and runs without
	// AdoptState: its state is its own.
	for _, adopt := range []bool{true, false} {
		mainSpec.AdoptState = adopt
		w = prepare(t, m, mainSpec)
		require.NoError(t, w.Close())
	}

	// Another state put where the adopted one was: the same file.
	testenv.WriteTree(t, src, map[string]string{"terraform.tfstate": stateOther})
	refused(two, filepath.Join(src, "terraform.tfstate"), false)
	testenv.WriteTree(t, src, map[string]string{"terraform.tfstate": stateWith2})

	// Removed, legacy/main gives the state up: legacy/two adopts it.
	require.NoError(t, m.Remove(ctx, "legacy", "main", true))
	w = prepare(t, m, two)
	require.Equal(t, stateWith2, readFileString(t, filepath.Join(w.Dir, "terraform.tfstate")))
	require.NoError(t, w.Close())
	mainSpec.AdoptState = true
	_, err := m.Prepare(ctx, mainSpec)
	var ae *AdoptedError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, Owner{Stack: "legacy", Instance: "two", ID: ae.Owner.ID, Source: filepath.Join(src, "terraform.tfstate"),
		Lineage: "src-lineage", Time: ae.Owner.Time}, ae.Owner)
}

// An adoption killed after its claim and its copy, before the
// instance's record, leaves a claim the copy bears out: another instance
// is refused, and the instance's next adoption finishes the job,
// claiming once. One killed before its copy leaves a claim nothing bears
// out (the instance holds nothing it could run on): another instance
// adopts, and the first is then refused naming it.
func TestAdoptionKilledAfterClaimFinishes(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
	m := newManager(t)
	ctx := context.Background()
	mainSpec := Spec{Stack: "legacy", Instance: "main", Source: src, AdoptState: true}
	w := prepare(t, m, mainSpec)
	require.NoError(t, w.Close())
	// What a kill after the copy left: the claim and the copy, no record.
	require.NoError(t, os.Remove(stateRecordPath(w.Home)))

	two := Spec{Stack: "legacy", Instance: "two", Source: src, AdoptState: true}
	_, err := m.Prepare(ctx, two)
	require.ErrorIs(t, err, ErrAdopted)
	require.Contains(t, err.Error(), "instance legacy/main adopted it already")

	w = prepare(t, m, mainSpec)
	require.Equal(t, stateWith2, readFileString(t, filepath.Join(w.Dir, "terraform.tfstate")))
	require.Len(t, readStateRecord(w.Home).Adopted, 1)
	require.NoError(t, w.Close())
	reg, _, err := m.readAdopted()
	require.NoError(t, err)
	require.Len(t, reg.Claims, 1)
	require.Equal(t, "main", reg.Claims[0].Instance)

	// What a kill before the copy left: the claim alone.
	require.NoError(t, os.Remove(filepath.Join(w.Dir, "terraform.tfstate")))
	require.NoError(t, os.Remove(stateRecordPath(w.Home)))
	w2 := prepare(t, m, two)
	require.Equal(t, stateWith2, readFileString(t, filepath.Join(w2.Dir, "terraform.tfstate")))
	require.NoError(t, w2.Close())
	_, err = m.Prepare(ctx, mainSpec)
	var ae *AdoptedError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "two", ae.Owner.Instance)
	require.Len(t, ae.Owners, 1)
	reg, _, err = m.readAdopted()
	require.NoError(t, err)
	require.Len(t, reg.Claims, 1)
	require.Equal(t, "two", reg.Claims[0].Instance)
}

// A root whose adoptions were recorded only in the instances' own
// records (an older version) gets its register from them: the second
// adoption is refused, naming the owner by its workdir; a record the
// effective user did not write (another's mode) is not believed.
func TestAdoptionRegisterFromInstanceRecords(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
	m := newManager(t)
	w := prepare(t, m, Spec{Stack: "legacy", Instance: "main", Source: src, AdoptState: true})
	require.NoError(t, w.Close())
	require.NoError(t, os.Remove(filepath.Join(m.Root(), adoptedFile)))

	two := Spec{Stack: "legacy", Instance: "two", Source: src, AdoptState: true}
	_, err := m.Prepare(context.Background(), two)
	require.ErrorIs(t, err, ErrAdopted)
	require.Contains(t, err.Error(), "the instance with workdir "+w.ID+" adopted it already")
	requireNoState(t, m, "legacy", "two")
	require.NoFileExists(t, filepath.Join(m.Root(), adoptedFile), "a refusal writes nothing")

	if os.Geteuid() == 0 {
		return // root's writes are believed whatever the mode
	}
	require.NoError(t, os.Chmod(stateRecordPath(w.Home), 0o666))
	w2 := prepare(t, m, two)
	require.Equal(t, stateWith2, readFileString(t, filepath.Join(w2.Dir, "terraform.tfstate")),
		"a record others could have written names no owner")
}

// The register itself is believed only as the SDK writes it: one others
// could have written, or one that is not JSON, stops an adoption by
// name, copying nothing.
func TestAdoptionRegisterRefusedUnlessOwn(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		is            error
		says          string
	}{
		{"writable by others", `{"claims":[]}`, 0o666, ErrUnsafePath, "others could have written it"},
		{"not json", `{"claims":[`, 0o600, nil, "cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.is == ErrUnsafePath && os.Geteuid() == 0 {
				t.Skip("root's writes are believed whatever the mode")
			}
			src := t.TempDir()
			testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
			m := newManager(t)
			p := filepath.Join(m.Root(), adoptedFile)
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o600))
			require.NoError(t, os.Chmod(p, tc.mode))
			_, err := m.Prepare(context.Background(), Spec{Stack: "legacy", Instance: "main", Source: src, AdoptState: true})
			require.Error(t, err)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			require.Contains(t, err.Error(), p)
			require.Contains(t, err.Error(), tc.says)
			requireNoState(t, m, "legacy", "main")
			require.Equal(t, tc.content, readFileString(t, p))
		})
	}
}

// Two processes adopting one state into two instances at the same
// moment end with exactly one owner: each child stops right before the
// root's adoption lock, its own checks done (both found the state free),
// and both go on together. The one that loses is refused naming the
// winner, and holds no state.
func TestAdoptionRaceAcrossProcesses(t *testing.T) {
	src := t.TempDir()
	testenv.WriteTree(t, src, map[string]string{"main.tf": `resource "terraform_data" "a" {}`, "terraform.tfstate": stateWith2})
	root := filepath.Join(t.TempDir(), "root")
	m, err := New(root)
	require.NoError(t, err)
	names := []string{"a", "b"}
	type kid struct {
		name string
		proc *childproc.Proc
	}
	var kids []kid
	for _, n := range names {
		kids = append(kids, kid{n, startChild(t, "adopt", root, Spec{Stack: "legacy", Instance: n, Source: src})})
	}
	for _, k := range kids {
		k.proc.Expect(t, "at-lock")
	}
	for _, k := range kids {
		_, err := fmt.Fprintln(k.proc.Stdin, "go")
		require.NoError(t, err)
	}
	var winners, losers []string
	lines := map[string]string{}
	for _, k := range kids {
		l := k.proc.Next(t)
		require.NoError(t, k.proc.Wait())
		lines[k.name] = l
		switch {
		case l == "adopted":
			winners = append(winners, k.name)
		case strings.HasPrefix(l, "refused "):
			losers = append(losers, k.name)
		default:
			t.Fatalf("child %s: %s", k.name, l)
		}
	}
	require.Len(t, winners, 1, "exactly one owner: %v", lines)
	require.Len(t, losers, 1, "%v", lines)
	win, lose := winners[0], losers[0]
	require.Contains(t, lines[lose], "owner=legacy/"+win+" ")
	require.Contains(t, lines[lose], "instance legacy/"+win+" adopted it already")

	home, err := m.Home("legacy", win)
	require.NoError(t, err)
	require.Equal(t, stateWith2, readFileString(t, filepath.Join(home, srcDir, "terraform.tfstate")))
	requireNoState(t, m, "legacy", lose)
	reg, _, err := m.readAdopted()
	require.NoError(t, err)
	require.Len(t, reg.Claims, 1)
	require.Equal(t, win, reg.Claims[0].Instance)
}
