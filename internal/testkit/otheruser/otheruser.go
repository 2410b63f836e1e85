// Package otheruser plays a second user of a shared machine in tests: the
// test binary runs, as root, a child copy of itself switched to uid/gid
// 65534 (nobody/nogroup) with syscall.SysProcAttr.Credential, no extra
// tool, to do what another user of the machine could do (create a dir
// first at a fixed path, plant files). Tests that need it skip with a
// clear message when not run as root; CI runs them as root.
//
// A package's tests declare one child test that reads its instructions:
//
//	func TestOtherUserChild(t *testing.T) {
//		var acts []act
//		if !otheruser.Spec(t, &acts) {
//			return // skipped: not the child
//		}
//		... // do acts as uid 65534
//	}
//
// and run it with otheruser.Do(t, "TestOtherUserChild", acts).
package otheruser

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ID is the other user's uid and gid.
const ID = 65534

// envSpec names the file holding the child's instructions.
const envSpec = "TFISOLATE_OTHER_USER_SPEC"

// NeedRoot skips a test that plays a second user when not root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it plays a second user (uid 65534) in a child process; CI runs the tests as root")
	}
}

// Spec reads the instructions Do gave the child into v and reports true
// in the child; elsewhere it skips t (the child test is not a test of its
// own) and reports false.
func Spec(t testing.TB, v any) bool {
	t.Helper()
	path := os.Getenv(envSpec)
	if path == "" {
		t.Skip("helper process acting as another user")
		return false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the other user's instructions: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("read the other user's instructions %s: %v", path, err)
	}
	return true
}

// Do runs the test named child of this test binary as uid/gid 65534 (no
// supplementary groups), with spec (JSON-encoded) for Spec to read, and
// fails t if the child fails. It skips t when not root.
func Do(t testing.TB, child string, spec any) {
	t.Helper()
	NeedRoot(t)
	bin := binary(t)
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatalf("encode the other user's instructions: %v", err)
	}
	specPath := filepath.Join(filepath.Dir(bin), "spec.json")
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+child+"$", "-test.count=1")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), envSpec+"="+specPath)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setCredential(cmd, ID)
	if err := cmd.Run(); err != nil {
		t.Fatalf("the other user's process (%s): %v\n%s", child, err, out.String())
	}
}

// binary copies this test binary into a dir uid 65534 can read (go
// test's own build dir is private) and returns its path.
func binary(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tfisolate-other-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Reachable makes a private test dir (and the one t.TempDir made it in)
// traversable by the other user, as a home or a CI workspace is (0755:
// readable, not writable), and returns it.
func Reachable(t testing.TB, dir string) string {
	t.Helper()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Tmp returns a fresh dir that works as /tmp does: sticky and writable by
// everyone, so the other user can create a dir first at a fixed path in
// it.
func Tmp(t testing.TB) string {
	t.Helper()
	dir := Reachable(t, t.TempDir())
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}
