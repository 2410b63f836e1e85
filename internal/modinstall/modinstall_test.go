package modinstall

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/modmanifest"
	"github.com/tfisolate/tfisolate/internal/modtree"
)

// TestInstallNeverOlder: a snapshot holding an older version of a
// module the data dir has is not copied in when neverOlder is set (the
// data dir keeps its own, byte for byte), and is with neverOlder unset
// (Args.Upgrade: a fresh resolution, as terraform init -upgrade makes).
// A newer snapshot is copied in either way.
func TestInstallNeverOlder(t *testing.T) {
	const src = "registry.tfisolate.test/tfisolate/greet/tfitest"
	snapshot := func(t *testing.T, ver string) Snapshot {
		dir := filepath.Join(t.TempDir(), "modules")
		origin := filepath.Join("/leader", "data", "modules")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "greet"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "greet", "main.tf"), []byte("# "+ver+"\n"), 0o644))
		m := fmt.Sprintf(`{"Modules":[{"Key":"","Source":"","Dir":"."},{"Key":"greet","Source":%q,"Version":%q,"Dir":%q}]}`,
			src, ver, filepath.ToSlash(filepath.Join(origin, "greet")))
		require.NoError(t, os.WriteFile(filepath.Join(dir, modmanifest.Name), []byte(m), 0o644))
		return Snapshot{Dir: dir, Origin: origin, Workdir: "/leader/work"}
	}
	calls := []modtree.Call{{Key: "greet", Source: src, Version: ">= 1.0.0"}}
	version := func(t *testing.T, dataDir string) string {
		return readFile(t, filepath.Join(dataDir, Dir, "greet", "main.tf"))
	}
	dataDir := t.TempDir()
	inst, err := Install(snapshot(t, "1.1.0"), dataDir, calls, true)
	require.NoError(t, err)
	require.True(t, inst.Copied)
	require.Equal(t, "# 1.1.0\n", version(t, dataDir))
	before := readFile(t, filepath.Join(dataDir, Dir, modmanifest.Name))

	inst, err = Install(snapshot(t, "1.0.0"), dataDir, calls, true)
	require.NoError(t, err)
	require.False(t, inst.Copied)
	require.Equal(t, []string{"module.greet " + src + ": 1.1.0, the set has 1.0.0"}, inst.Older)
	require.Len(t, inst.Have, 2)
	require.Equal(t, "# 1.1.0\n", version(t, dataDir), "the unit keeps its newer module")
	require.Equal(t, before, readFile(t, filepath.Join(dataDir, Dir, modmanifest.Name)))

	inst, err = Install(snapshot(t, "1.2.0"), dataDir, calls, true)
	require.NoError(t, err)
	require.True(t, inst.Copied)
	require.Equal(t, "# 1.2.0\n", version(t, dataDir))

	inst, err = Install(snapshot(t, "1.0.0"), dataDir, calls, false)
	require.NoError(t, err)
	require.True(t, inst.Copied, "an upgrade's fresh resolution is installed as it is")
	require.Empty(t, inst.Older)
	require.Equal(t, "# 1.0.0\n", version(t, dataDir))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestOrigin: the origin record of a stored set reads back with the
// set's own dir, and its JSON form is the one stored sets already hold.
func TestOrigin(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteOrigin(dir, Snapshot{Dir: "/ignored", Origin: "/leader/data/modules", Workdir: "/leader/work"}))
	require.JSONEq(t, `{"origin":"/leader/data/modules","workdir":"/leader/work"}`, readFile(t, filepath.Join(dir, originName)))
	snap, err := ReadOrigin(dir)
	require.NoError(t, err)
	require.Equal(t, Snapshot{Dir: dir, Origin: "/leader/data/modules", Workdir: "/leader/work"}, snap)

	_, err = ReadOrigin(t.TempDir())
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestInstallRecoversFromCrash: leftovers of an Install killed midway
// are removed, and the origin record is not copied into the data dir.
func TestInstallRecoversFromCrash(t *testing.T) {
	const src = "registry.tfisolate.test/tfisolate/greet/tfitest"
	snap := Snapshot{Dir: filepath.Join(t.TempDir(), "modules"), Origin: "/leader/data/modules", Workdir: "/leader/work"}
	require.NoError(t, os.MkdirAll(filepath.Join(snap.Dir, "greet"), 0o755))
	m := fmt.Sprintf(`{"Modules":[{"Key":"greet","Source":%q,"Version":"1.0.0","Dir":"/leader/data/modules/greet"}]}`, src)
	require.NoError(t, os.WriteFile(filepath.Join(snap.Dir, modmanifest.Name), []byte(m), 0o644))
	require.NoError(t, WriteOrigin(snap.Dir, snap))

	dataDir := t.TempDir()
	for _, l := range []string{".modules-new-1", ".modules-old-2"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dataDir, l, "x"), 0o755))
	}
	inst, err := Install(snap, dataDir, nil, true)
	require.NoError(t, err)
	require.True(t, inst.Copied)
	entries, err := os.ReadDir(dataDir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, Dir, entries[0].Name())
	require.NoFileExists(t, filepath.Join(dataDir, Dir, originName))
	recs, err := modmanifest.Parse([]byte(readFile(t, filepath.Join(dataDir, Dir, modmanifest.Name))))
	require.NoError(t, err)
	require.Equal(t, filepath.ToSlash(filepath.Join(dataDir, Dir, "greet")), recs[0].Dir)

	inst, err = Install(snap, dataDir, nil, true)
	require.NoError(t, err)
	require.Equal(t, Installed{}, inst, "the same manifest: nothing to do")
}
