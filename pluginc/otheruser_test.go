//go:build unix

package pluginc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/otheruser"
	"github.com/tfisolate/tfisolate/internal/treesum"
)

// The other user of a shared machine is this test binary, re-run as uid
// 65534 by internal/testkit/otheruser with -test.run pointing at
// TestOtherUserChild and the acts to do.
const otherID = otheruser.ID // nobody/nogroup

// otherAct is one thing the other user does.
type otherAct struct {
	Mkdir string // create this dir (and its parents), mode 0775 before the umask
	// Plant: write Files into the package dir Entry, then an install
	// record at Meta that matches them exactly and claims Zip and Extra.
	Entry, Meta string
	Files       map[string][]byte
	Zip         string
	Extra       []string
	RecordOnly  bool // write only the record, of the files already in Entry
}

// TestOtherUserChild is not a test: it is the body of the other user's
// process.
func TestOtherUserChild(t *testing.T) {
	var acts []otherAct
	if !otheruser.Spec(t, &acts) {
		return
	}
	for _, a := range acts {
		if a.Mkdir != "" {
			require.NoError(t, os.MkdirAll(a.Mkdir, 0o775))
		}
		if a.Entry == "" {
			continue
		}
		if !a.RecordOnly {
			require.NoError(t, os.MkdirAll(a.Entry, 0o755))
		}
		for name, b := range a.Files {
			tmp := filepath.Join(a.Entry, "."+name+".new")
			require.NoError(t, os.WriteFile(tmp, b, 0o755))
			require.NoError(t, os.Rename(tmp, filepath.Join(a.Entry, name)))
		}
		files, err := treesum.Record(a.Entry)
		require.NoError(t, err)
		h1, err := h1Of(files)
		require.NoError(t, err)
		m := meta{Hashes: sortedUnique(append([]string{h1}, a.Extra...)), Zip: a.Zip, Source: "registry", H1: h1, Files: files}
		b, err := json.Marshal(&m)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(a.Meta), 0o755))
		tmp := a.Meta + ".new"
		require.NoError(t, os.WriteFile(tmp, b, 0o644))
		require.NoError(t, os.Rename(tmp, a.Meta))
	}
}

// needRoot skips a test that plays a second user when not root.
func needRoot(t *testing.T) {
	t.Helper()
	otheruser.NeedRoot(t)
}

// asOther does acts as uid/gid 65534 in a child process.
func asOther(t *testing.T, acts ...otherAct) {
	t.Helper()
	otheruser.Do(t, "TestOtherUserChild", acts)
}

// reachable makes a private test dir (and the one t.TempDir made it in)
// traversable by the other user, as a home or a CI workspace is.
func reachable(t *testing.T, dir string) string {
	t.Helper()
	return otheruser.Reachable(t, dir)
}
