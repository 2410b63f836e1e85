package testprovider_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testprovider"
)

// paddedSize is what the tests pad to: the size of a real provider.
const paddedSize = 20 << 20

func TestBuildOnceAcrossGoroutines(t *testing.T) {
	const n = 8
	bins := make([]*testprovider.Binary, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { bins[i] = testprovider.Build(t) })
	}
	wg.Wait()
	for _, b := range bins {
		require.Same(t, bins[0], b, "every caller must get the one build")
	}
	st, err := os.Stat(bins[0].Path)
	require.NoError(t, err)
	require.Equal(t, st.Size(), bins[0].Size)
	require.NotZero(t, st.Mode().Perm()&0o100, "the binary must be executable")
	require.Equal(t, fileSHA256(t, bins[0].Path), bins[0].SHA256)
}

func TestWithPadding(t *testing.T) {
	plain := testprovider.Build(t)
	padded := testprovider.Build(t, testprovider.WithPadding(paddedSize))
	require.Same(t, padded, testprovider.Build(t, testprovider.WithPadding(paddedSize)))
	require.NotEqual(t, plain.Path, padded.Path)
	require.GreaterOrEqual(t, padded.Size, int64(paddedSize))
	require.Equal(t, plain.Size+paddedSize, padded.Size)
	require.Equal(t, fileSHA256(t, padded.Path), padded.SHA256)

	// The padding is deterministic: a different size shares its prefix.
	small := testprovider.Build(t, testprovider.WithPadding(4096))
	require.Equal(t, readPrefix(t, small.Path, small.Size), readPrefix(t, padded.Path, small.Size))

	// ... and incompressible, so zipping cannot hide it.
	zip := padded.Zip(t, "1.0.0")
	st, err := os.Stat(zip)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(paddedSize))

	require.Same(t, plain, testprovider.Build(t, testprovider.WithPadding(0)), "no padding is the plain build")
}

// TestPaddedBinaryServes starts the padded provider as Terraform would and
// waits for go-plugin's handshake line: trailing data must not stop it.
func TestPaddedBinaryServes(t *testing.T) {
	bin := testprovider.Build(t, testprovider.WithPadding(paddedSize))
	cmd := exec.Command(bin.Path)
	cmd.Env = append(os.Environ(),
		"TF_PLUGIN_MAGIC_COOKIE=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
		"PLUGIN_PROTOCOL_VERSIONS=6",
		"TMPDIR="+t.TempDir(), // go-plugin's socket lands here and is removed with it
	)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	// core protocol 1, plugin protocol 6, then network and address.
	require.True(t, strings.HasPrefix(line, "1|6|"), "handshake: %q", line)
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

func readPrefix(t *testing.T, path string, n int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var buf bytes.Buffer
	_, err = io.CopyN(&buf, f, n)
	require.NoError(t, err)
	return buf.Bytes()
}

func TestBuildToReusesACompleteBuild(t *testing.T) {
	dir := t.TempDir()
	first, err := testprovider.BuildTo(dir, testprovider.WithPadding(1024))
	require.NoError(t, err)
	plain := testprovider.Build(t)
	require.Equal(t, plain.Size+1024, first.Size)

	// A leftover temp dir from a killed build must not be taken for a build.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".tmp-dead"), 0o755))
	again, err := testprovider.BuildTo(dir, testprovider.WithPadding(1024))
	require.NoError(t, err)
	require.Equal(t, first.SHA256, again.SHA256)
	require.Equal(t, first.Path, again.Path)
}
