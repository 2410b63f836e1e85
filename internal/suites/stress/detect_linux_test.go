//go:build linux

package stress

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
	"github.com/tfisolate/tfisolate/internal/testkit/testregistry"
)

// TestHostKilledDetectingLeavesNoTemp SIGKILLs a host while the runner
// asks its engine for its version (the first thing a Run does, in a
// working dir of its own under the host's TMPDIR), through a shim that
// holds `version` until released. The dir outlives the host; the next
// Run, in another host with the same TMPDIR, removes it with the run dirs
// of dead hosts: once it is done, TMPDIR is empty. Found by TestSoak,
// whose first fault kills a host early.
func TestHostKilledDetectingLeavesNoTemp(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test; skipped under -short")
	}
	tf := testenv.Terraform(t)
	dir := t.TempDir()
	t.Cleanup(func() { killLeftovers(t, dir) })
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	src := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "main.tf"), []byte(`
variable "name" { type = string }
variable "gen" { type = string }
variable "latency_seconds" { type = number }
resource "terraform_data" "x" { input = var.gen }
`), 0o644))
	reg := testregistry.Start(t)
	caFile := filepath.Join(dir, "ca.pem")
	require.NoError(t, reg.WriteCAFile(caFile))

	gate := filepath.Join(dir, "gate")
	require.NoError(t, os.Mkdir(gate, 0o755))
	for _, n := range []string{"started", "release"} {
		require.NoError(t, syscall.Mkfifo(filepath.Join(gate, n), 0o644))
	}
	shim := filepath.Join(dir, "bin", "terraform")
	require.NoError(t, os.Mkdir(filepath.Dir(shim), 0o755))
	require.NoError(t, os.WriteFile(shim, []byte("#!/bin/sh\n"+
		"if [ \"$1\" = version ]; then echo started > "+gate+"/started; cat "+gate+"/release > /dev/null; fi\n"+
		"exec \""+tf+"\" \"$@\"\n"), 0o755))

	cfg := soakHostConfig{
		Root: filepath.Join(dir, "workdirs"), Cache: filepath.Join(dir, "cache"), Source: src,
		RegistryHost: reg.Host(), RegistryAddr: reg.Addr(), CAFile: caFile,
		Engines: map[string]string{"terraform": shim}, Units: []soakUnit{{N: 1, Engine: "terraform"}},
		Gen: "first", Parallelism: 1, LockTimeout: 10 * time.Second, CrashedEngineWait: -1,
		LogDir: filepath.Join(dir, "logs"),
	}
	host := func(cfg soakHostConfig) *childproc.Proc {
		b, err := json.Marshal(cfg)
		require.NoError(t, err)
		return childproc.Start(t, soakHostRole, childproc.WithEnv(soakHostEnv+"="+string(b), "TMPDIR="+tmp),
			childproc.WithStderr(nil), childproc.WithSysProcAttr(&syscall.SysProcAttr{Setpgid: true}))
	}

	// The first host is killed while its engine reports its version.
	first := host(cfg)
	started := make(chan struct{})
	go func() {
		// Opening a fifo for reading blocks until the shim opens it; read
		// to the end, or the shim's write would get SIGPIPE.
		if f, err := os.Open(filepath.Join(gate, "started")); err == nil {
			_, _ = io.Copy(io.Discard, f)
			f.Close()
		}
		close(started)
	}()
	t.Cleanup(func() {
		// Ends the wait above if the shim never came.
		if f, err := os.OpenFile(filepath.Join(gate, "started"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-started
	})
	select {
	case <-started:
	case <-first.Done():
		t.Fatalf("the host ended before it ran its engine: %v", first.Wait())
	case <-time.After(2 * time.Minute):
		t.Fatal("the host did not run its engine within 2 minutes")
	}
	require.NoError(t, first.Cmd.Process.Signal(syscall.SIGKILL))
	<-first.Done()
	left := tempEntries(t, tmp)
	require.NotEmpty(t, left, "the killed host left nothing in its TMPDIR: the test no longer kills it mid-detection")
	t.Logf("left in TMPDIR by the killed host: %v", left)
	// Let the shim finish, as the engine would on its own.
	f, err := os.OpenFile(filepath.Join(gate, "release"), os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	deadline := time.Now().Add(time.Minute)
	for len(leftovers(tmp)) > 0 {
		require.True(t, time.Now().Before(deadline), "the shim still runs a minute after its release: %v", leftovers(tmp))
		time.Sleep(20 * time.Millisecond) // polling a bounded condition
	}

	// The next host's Run sweeps what the dead host left.
	cfg.Engines["terraform"], cfg.Gen = tf, "second"
	second := host(cfg)
	err = second.Wait()
	out := second.Output()
	require.NoError(t, err, "the second host:\n%s", out)
	require.Contains(t, out, `"Status":"succeeded"`)
	require.Empty(t, tempEntries(t, tmp), "left in the hosts' TMPDIR after the next Run")
}

// tempEntries lists the names under dir.
func tempEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
