package modstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/testkit/childproc"
)

// TestProcessesFillOnce: 4 processes x 4 goroutines Get one key of an
// empty store at once. The fill is held until every other process has
// found the key locked and every Get of every process is past its first
// look at the disk; fill then runs exactly once in total and everyone
// gets the same dir and content.
func TestProcessesFillOnce(t *testing.T) {
	const procs = 4
	dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
	key := "registry.example/acme/vpc/aws 1.2.3\nmodule.vpc"
	var children []*childproc.Proc
	var results []string
	for i := range procs {
		res := filepath.Join(t.TempDir(), fmt.Sprintf("result-%d.json", i))
		results = append(results, res)
		children = append(children, startChild(t, "race",
			envDir+"="+dir, envKey+"="+key, envCount+"="+count, envContent+"=v1", envResult+"="+res))
	}
	for _, c := range children {
		c.Expect(t, "ready")
	}
	for _, c := range children {
		_, err := c.Stdin.Write([]byte("start\n"))
		require.NoError(t, err)
	}
	var filler *childproc.Proc
	waiting := 0
	for _, c := range children {
		switch l := c.Next(t); l {
		case "filling":
			require.Nil(t, filler, "two processes filling at once")
			filler = c
		case "waiting":
			waiting++
		default:
			t.Fatalf("unexpected child line %q", l)
		}
	}
	require.NotNil(t, filler)
	require.Equal(t, procs-1, waiting)
	_, err := filler.Stdin.Write([]byte("go\n"))
	require.NoError(t, err)
	for _, c := range children {
		require.NoError(t, c.Wait())
	}

	require.Equal(t, 1, countLines(t, count), "fill ran more than once")
	var total Stats
	filled, dirs := 0, map[string]bool{}
	for _, r := range results {
		b, err := os.ReadFile(r)
		require.NoError(t, err)
		var res childResult
		require.NoError(t, json.Unmarshal(b, &res))
		require.Len(t, res.Gets, raceGoroutines)
		for _, g := range res.Gets {
			dirs[g.Dir] = true
			require.Equal(t, wantTree("v1"), g.Tree)
			if g.Filled {
				filled++
			}
		}
		total.Fills += res.Stats.Fills
		total.Hits += res.Stats.Hits
		total.Waits += res.Stats.Waits
	}
	require.Len(t, dirs, 1, "processes got different dirs")
	require.Equal(t, 1, filled)
	require.Equal(t, int64(1), total.Fills)
	require.Equal(t, int64(procs*raceGoroutines-1), total.Hits)
	require.GreaterOrEqual(t, total.Waits, int64(procs-1))
	requireNoLeftovers(t, dir)
}

// TestWaitForOtherProcessHonoursContext: while another process fills the
// key, a Get whose ctx is cancelled returns ctx's error at once: the other
// process still holds the key's lock when it returns. The other fill then
// completes and is what the next Get gets.
func TestWaitForOtherProcessHonoursContext(t *testing.T) {
	dir, count := t.TempDir(), filepath.Join(t.TempDir(), "fills")
	const key = "k"
	holder := startChild(t, "hold", envDir+"="+dir, envKey+"="+key, envCount+"="+count, envContent+"=held")
	holder.Expect(t, "filling")

	s, err := Open(dir)
	require.NoError(t, err)
	waiting := make(chan struct{})
	s.testHookWait = func() { close(waiting) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Get(ctx, key, func(context.Context, string) error {
			return fmt.Errorf("fill must not run while another process holds the key")
		})
		done <- err
	}()
	<-waiting
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), `key "k"`)

	// Returned while the holder's fill was still under way.
	lk := flock.New(filepath.Join(dir, stateDir, locksDir, hashKey(key)+".lock"))
	ok, err := lk.TryLock()
	require.NoError(t, err)
	require.False(t, ok, "the other process no longer holds the key's lock")
	require.Equal(t, Stats{Waits: 1}, s.Stats())

	require.NoError(t, holder.Stdin.Close())
	holder.Expect(t, "done")
	require.NoError(t, holder.Wait())
	got, filled, err := s.Get(context.Background(), key, func(context.Context, string) error {
		return fmt.Errorf("fill must not run: the other process stored the entry")
	})
	require.NoError(t, err)
	require.False(t, filled)
	requireTree(t, got, "held")
	require.Equal(t, 1, countLines(t, count))
}

// requireTree checks that dir holds what writeTree(dir, content) writes,
// and nothing else.
func requireTree(t *testing.T, dir, content string) {
	t.Helper()
	got, err := readTree(dir)
	require.NoError(t, err)
	require.Equal(t, wantTree(content), got)
}

// requireNoLeftovers checks that the store holds no temp files: nothing in
// its tmp dir, no temp manifest in an entry.
func requireNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, stateDir, tmpDir))
	require.NoError(t, err)
	require.Empty(t, ents, "temp leftovers in the store")
	stray, err := filepath.Glob(filepath.Join(dir, "*", ".tmp-*"))
	require.NoError(t, err)
	require.Empty(t, stray, "temp manifests in an entry")
}
