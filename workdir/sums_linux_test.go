package workdir

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readChars is this process's rchar from /proc/self/io: every byte
// read() and pread() returned, page cache or not (read_bytes counts only
// what came from the disk, which a warm cache hides).
func readChars(t testing.TB) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// bigComponent writes a component of files*size bytes of templates
// beside its main.tf, and returns its size in bytes.
func bigComponent(t testing.TB, dir string, files, size int) int64 {
	t.Helper()
	body := strings.Repeat("x", size-1) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`resource "terraform_data" "x" {}`+"\n"), 0o644))
	total := int64(len(`resource "terraform_data" "x" {}` + "\n"))
	for i := range files {
		p := filepath.Join(dir, "templates", fmt.Sprintf("d%02d", i%16), fmt.Sprintf("f%04d.tpl", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		total += int64(size)
	}
	return total
}

// ageFiles lets the files just written grow older than the digest memo's
// racy window (50 ms): a digest is remembered only for a file last
// changed clearly before it was read. This waits for the clock, not for
// another goroutine.
func ageFiles() { time.Sleep(120 * time.Millisecond) }

// An unchanged refresh of many instances of one component reads the
// source's bytes once per Manager, not once per instance (issue 24 item
// 4): measured as the bytes this process read (/proc/self/io).
func TestPrepareUnchangedReadsSourceOnce(t *testing.T) {
	src := t.TempDir()
	size := bigComponent(t, src, 200, 16<<10)
	root := filepath.Join(t.TempDir(), "root")
	m, err := New(root)
	require.NoError(t, err)
	const n = 8
	spec := func(i int) Spec { return Spec{Stack: "s", Instance: fmt.Sprintf("i%02d", i), Source: src} }
	digests := make([]string, n)
	for i := range n {
		w := prepare(t, m, spec(i))
		digests[i] = w.Digest
		require.NoError(t, w.Close())
	}
	ageFiles()

	// A fresh Manager is a fresh process: its memo is empty.
	m, err = New(root)
	require.NoError(t, err)
	before := readChars(t)
	for i := range n {
		w := prepare(t, m, spec(i))
		require.Equal(t, digests[i], w.Digest, "unchanged")
		require.NoError(t, w.Close())
	}
	read := readChars(t) - before
	t.Logf("%d unchanged refreshes of a %d-byte source read %d bytes (%.2fx the source)", n, size, read, float64(read)/float64(size))
	require.GreaterOrEqual(t, read, size, "the first refresh reads and hashes the source")
	require.Less(t, read, size*3/2, "the source is read once for all %d instances, not once each", n)

	// Asked to, a refresh reads everything again.
	before = readChars(t)
	w, err := m.Prepare(context.Background(), Spec{Stack: "s", Instance: "i00", Source: src, Rehash: true})
	require.NoError(t, err)
	require.Equal(t, digests[0], w.Digest)
	require.NoError(t, w.Close())
	require.GreaterOrEqual(t, readChars(t)-before, size, "Rehash reads every file")
}

// A file rewritten with the same size (new content, new mtime and ctime)
// is read again and refreshed, though its digest was remembered.
func TestPrepareSeesSameSizeRewrite(t *testing.T) {
	src := t.TempDir()
	bigComponent(t, src, 8, 1<<10)
	m := newManager(t)
	spec := Spec{Stack: "s", Instance: "a", Source: src}
	w := prepare(t, m, spec)
	first := w.Digest
	require.NoError(t, w.Close())
	ageFiles()
	w = prepare(t, m, spec) // remembers every digest
	require.Equal(t, first, w.Digest)
	require.NoError(t, w.Close())

	rel := filepath.Join("templates", "d03", "f0003.tpl")
	fi, err := os.Stat(filepath.Join(src, rel))
	require.NoError(t, err)
	changed := []byte(strings.Repeat("y", int(fi.Size())-1) + "\n")
	require.NoError(t, os.WriteFile(filepath.Join(src, rel), changed, 0o644))
	// Put the mtime back too: only the ctime, which no one can set, moved.
	require.NoError(t, os.Chtimes(filepath.Join(src, rel), fi.ModTime(), fi.ModTime()))

	w = prepare(t, m, spec)
	require.NotEqual(t, first, w.Digest, "the rewrite is seen")
	got, err := os.ReadFile(filepath.Join(w.Dir, rel))
	require.NoError(t, err)
	require.Equal(t, changed, got, "and copied")
}

// Instances of one component prepared at once share the Manager's
// digests safely (run with -race) and each gets the same content.
func TestPrepareConcurrentSharesDigests(t *testing.T) {
	src := t.TempDir()
	bigComponent(t, src, 40, 1<<10)
	m := newManager(t)
	ageFiles()
	const n = 6
	digests := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for range 2 {
				w, err := m.Prepare(context.Background(), Spec{Stack: "s", Instance: fmt.Sprintf("i%d", i), Source: src})
				if err != nil {
					t.Error(err)
					return
				}
				digests[i] = w.Digest
				_ = w.Close()
			}
		})
	}
	wg.Wait()
	for _, d := range digests {
		require.Equal(t, digests[0], d)
	}
}
