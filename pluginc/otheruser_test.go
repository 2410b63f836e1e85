//go:build unix

package pluginc

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/treesum"
)

// The other user of a shared machine is this test binary, copied where
// uid 65534 can run it and re-executed as that user with -test.run
// pointing at TestOtherUserChild and envOther naming a file that says
// what to do.
const (
	envOther = "PLUGINC_OTHER_USER"
	otherID  = 65534 // nobody/nogroup
)

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
	spec := os.Getenv(envOther)
	if spec == "" {
		t.Skip("helper process acting as another user")
	}
	b, err := os.ReadFile(spec)
	require.NoError(t, err)
	var acts []otherAct
	require.NoError(t, json.Unmarshal(b, &acts))
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
	if os.Geteuid() != 0 {
		t.Skip("needs root: it plays a second user (uid 65534) in a child process; CI runs the tests as root")
	}
}

// asOther does acts as uid/gid 65534 in a child process.
func asOther(t *testing.T, acts ...otherAct) {
	t.Helper()
	needRoot(t)
	bin := otherUserBinary(t)
	b, err := json.Marshal(acts)
	require.NoError(t, err)
	cmd := exec.Command(bin, "-test.run=^TestOtherUserChild$", "-test.count=1")
	cmd.Dir = filepath.Dir(bin)
	spec := filepath.Join(filepath.Dir(bin), "acts.json")
	require.NoError(t, os.WriteFile(spec, b, 0o644))
	cmd.Env = append(os.Environ(), envOther+"="+spec)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherID, Gid: otherID, Groups: []uint32{}}}
	require.NoError(t, cmd.Run(), "the other user's process:\n%s", out.String())
}

// otherUserBinary copies this test binary into a dir uid 65534 can read
// (go test's own build dir is private).
func otherUserBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pluginc-other-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	bin := filepath.Join(dir, "pluginc.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	return bin
}

// reachable makes a private test dir (and the one t.TempDir made it in)
// traversable by the other user, as a home or a CI workspace is.
func reachable(t *testing.T, dir string) string {
	t.Helper()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}
