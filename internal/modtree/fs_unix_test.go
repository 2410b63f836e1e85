//go:build unix

package modtree

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/testenv"
)

// A FIFO named like a configuration file is never opened: the walk
// returns, the FIFO is listed as skipped and the rest still parses.
func TestWalkSkipsFIFO(t *testing.T) {
	root := t.TempDir()
	testenv.WriteTree(t, root, map[string]string{"main.tf": `module "m" { source = "./m" }`, "m/main.tf": `output "o" { value = 1 }`})
	fifo := filepath.Join(root, "hang.tf")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	t.Cleanup(func() { unblockFIFO(fifo) })

	done := make(chan *Tree, 1)
	go func() { done <- Walk(root, TerraformFiles) }()
	var tr *Tree
	select {
	case tr = <-done:
	case <-time.After(time.Minute): // a watchdog for a hang, not a timing assertion
		t.Fatal("Walk blocked on a FIFO")
	}
	require.NoError(t, tr.Err())
	require.Equal(t, []string{"hang.tf"}, tr.Modules[root].Skipped)
	require.Equal(t, []string{"m"}, keys(tr.Calls))

	_, err := OpenRegular(fifo)
	require.ErrorIs(t, err, ErrNotRegular)
	b, err := ReadBackend(root, nil, TerraformFiles)
	require.NoError(t, err)
	require.True(t, b.Local())
}

// unblockFIFO lets a reader stuck in open(2) go, so a failing test does not
// leave a goroutine blocked for the rest of the run.
func unblockFIFO(p string) {
	if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}
