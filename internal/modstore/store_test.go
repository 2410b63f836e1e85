package modstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tfisolate/tfisolate/internal/store"
)

func TestOpen(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	cases := []struct {
		name    string
		dir     string
		opts    []Option
		wantErr error
		wantMsg string
	}{
		{name: "new dir", dir: filepath.Join(t.TempDir(), "a", "b")},
		{name: "nil logger", dir: t.TempDir(), opts: []Option{WithLogger(nil)}},
		{name: "empty path", dir: "", wantErr: ErrInvalidDir, wantMsg: "empty"},
		{name: "a file", dir: file, wantErr: ErrInvalidDir, wantMsg: file},
		{name: "zero retry", dir: t.TempDir(), opts: []Option{WithLockRetry(0)}, wantMsg: "WithLockRetry(0s)"},
		{name: "nil option", dir: t.TempDir(), opts: []Option{nil}, wantMsg: "nil Option"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.dir, tc.opts...)
			if tc.wantMsg == "" {
				require.NoError(t, err)
				require.True(t, filepath.IsAbs(s.Dir()))
				for _, d := range []string{locksDir, tmpDir} {
					require.DirExists(t, filepath.Join(tc.dir, stateDir, d))
				}
				return
			}
			require.Error(t, err)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
			require.Contains(t, err.Error(), tc.wantMsg)
		})
	}
}

func TestGetRefusesBadInput(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	ran := false
	fill := func(context.Context, string) error { ran = true; return nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		key     string
		fill    func(context.Context, string) error
		wantErr error
		wantMsg string
	}{
		{name: "empty key", ctx: context.Background(), key: "", fill: fill, wantErr: ErrInvalidKey},
		{name: "nil fill", ctx: context.Background(), key: "k1", fill: nil, wantErr: ErrNilFill, wantMsg: `key "k1"`},
		{name: "done ctx", ctx: cancelled, key: "k2", fill: fill, wantErr: context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Get(tc.ctx, tc.key, tc.fill)
			require.ErrorIs(t, err, tc.wantErr)
			require.Contains(t, err.Error(), tc.wantMsg)
		})
	}
	require.False(t, ran, "fill ran for bad input")
	require.Equal(t, Stats{}, s.Stats())
	requireNoEntries(t, s.Dir())
}

func TestGetFillsOnceThenHits(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	count := filepath.Join(t.TempDir(), "fills")
	key := "a key\nspanning lines, with ../ and \x00 in it"
	dir, filled, err := s.Get(context.Background(), key, countingFill(count, "v1"))
	require.NoError(t, err)
	require.True(t, filled)
	require.Equal(t, filepath.Join(s.Dir(), hashKey(key), treeDir), dir)
	requireTree(t, dir, "v1")

	again, filled, err := s.Get(context.Background(), key, countingFill(count, "v2"))
	require.NoError(t, err)
	require.False(t, filled)
	require.Equal(t, dir, again)
	requireTree(t, again, "v1")

	// Another Store on the same dir (as another process would) hits too.
	s2, err := Open(s.Dir())
	require.NoError(t, err)
	_, filled, err = s2.Get(context.Background(), key, countingFill(count, "v3"))
	require.NoError(t, err)
	require.False(t, filled)

	require.Equal(t, 1, countLines(t, count))
	require.Equal(t, Stats{Fills: 1, Hits: 1}, s.Stats())
	require.Equal(t, Stats{Hits: 1}, s2.Stats())
	m, err := readManifest(filepath.Join(s.Dir(), hashKey(key), manifestName))
	require.NoError(t, err)
	require.Equal(t, key, m.Key)
	requireNoLeftovers(t, s.Dir())
}

func TestGetKeysAreSeparate(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	a, _, err := s.Get(context.Background(), "a", countingFill(filepath.Join(t.TempDir(), "n"), "A"))
	require.NoError(t, err)
	b, _, err := s.Get(context.Background(), "b", countingFill(filepath.Join(t.TempDir(), "n"), "B"))
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	requireTree(t, a, "A")
	requireTree(t, b, "B")
}

// TestGoroutinesFillOnce: many goroutines of one Store, and of a second
// Store on the same dir (which excludes the first through the flock, as
// another process would), Get one key at once; fill runs once.
func TestGoroutinesFillOnce(t *testing.T) {
	const n = 16
	dir := t.TempDir()
	stores := make([]*Store, 2)
	for i := range stores {
		var err error
		stores[i], err = Open(dir)
		require.NoError(t, err)
	}
	var fills atomic.Int32
	release := make(chan struct{})
	fill := func(ctx context.Context, d string) error {
		fills.Add(1)
		<-release
		return writeTree(d, "v")
	}
	type out struct {
		dir    string
		filled bool
		err    error
	}
	outs := make([]out, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			o := &outs[i]
			o.dir, o.filled, o.err = stores[i%2].Get(context.Background(), "k", fill)
		})
	}
	close(release)
	wg.Wait()
	require.Equal(t, int32(1), fills.Load())
	filled := 0
	for _, o := range outs {
		require.NoError(t, o.err)
		require.Equal(t, outs[0].dir, o.dir)
		if o.filled {
			filled++
		}
	}
	require.Equal(t, 1, filled)
	total := stores[0].Stats().Hits + stores[1].Stats().Hits
	require.Equal(t, int64(n-1), total)
	requireTree(t, outs[0].dir, "v")
}

func TestFillErrorStoresNothing(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	count := filepath.Join(t.TempDir(), "fills")
	boom := errors.New("boom")
	_, filled, err := s.Get(context.Background(), "k", func(ctx context.Context, dir string) error {
		appendLine(count, "fill")
		// Half a tree, with a read-only dir, then the failure.
		if err := writeTree(dir, "half"); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dir, "sub"), 0o555); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, ErrFill)
	require.Contains(t, err.Error(), `key "k"`)
	require.False(t, filled)
	requireNoEntries(t, s.Dir())
	requireNoLeftovers(t, s.Dir())
	require.Equal(t, Stats{}, s.Stats())

	dir, filled, err := s.Get(context.Background(), "k", countingFill(count, "v"))
	require.NoError(t, err)
	require.True(t, filled)
	requireTree(t, dir, "v")
	require.Equal(t, 2, countLines(t, count))
	require.Equal(t, Stats{Fills: 1}, s.Stats())
}

// TestFillErrorIsSharedThenForgotten: Gets of one Store waiting for a
// failing fill get its error, naming the shared attempt; the next Get
// fills again.
func TestFillErrorIsSharedThenForgotten(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	boom := errors.New("boom")
	var fills atomic.Int32
	release := make(chan struct{})
	fail := func(context.Context, string) error {
		fills.Add(1)
		<-release
		return boom
	}
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = s.Get(context.Background(), "k", fail) })
	}
	close(release)
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, boom)
		require.ErrorIs(t, err, ErrFill)
	}
	require.GreaterOrEqual(t, fills.Load(), int32(1))
	requireNoEntries(t, s.Dir())
	_, filled, err := s.Get(context.Background(), "k", countingFill(filepath.Join(t.TempDir(), "n"), "v"))
	require.NoError(t, err)
	require.True(t, filled)
}

func TestFillCancelledStoresNothing(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err = s.Get(ctx, "k", func(ctx context.Context, dir string) error {
		require.NoError(t, writeTree(dir, "half"))
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	requireNoEntries(t, s.Dir())
	requireNoLeftovers(t, s.Dir())
}

// TestDamagedEntryIsRefilled: an entry changed after it was stored is
// never handed out: the next Get refills it under the key's lock.
func TestDamagedEntryIsRefilled(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, entry string)
		why    string // what the warning names
	}{
		{"file removed", func(t *testing.T, e string) {
			require.NoError(t, os.Remove(filepath.Join(e, treeDir, "sub", "a.tf")))
		}, "sub/a.tf is missing"},
		{"file changed in place, same size", func(t *testing.T, e string) {
			p := filepath.Join(e, treeDir, "main.tf")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, []byte(strings.ToUpper(string(b))), 0o644))
			// File times have the filesystem's clock granularity, and this
			// write may fall in the tick of the fill's: move them as a
			// later write would.
			later := time.Now().Add(time.Hour)
			require.NoError(t, os.Chtimes(p, later, later))
		}, "main.tf has SHA-256"},
		{"file replaced, same size", func(t *testing.T, e string) {
			p := filepath.Join(e, treeDir, "main.tf")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			replaceFile(t, p, []byte(strings.ToUpper(string(b))))
		}, "main.tf has SHA-256"},
		{"file changed, other size", func(t *testing.T, e string) {
			require.NoError(t, os.WriteFile(filepath.Join(e, treeDir, "main.tf"), []byte("x"), 0o644))
		}, "main.tf has 1 bytes"},
		{"file replaced, same content", func(t *testing.T, e string) {
			// A new inode with the same bytes: the stamps move, the
			// content decides, and the entry is kept (why "" below).
			p := filepath.Join(e, treeDir, "main.tf")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			replaceFile(t, p, b)
		}, ""},
		{"mode changed", func(t *testing.T, e string) {
			require.NoError(t, os.Chmod(filepath.Join(e, treeDir, "sub", "run.sh"), 0o644))
		}, "sub/run.sh has mode"},
		{"file added", func(t *testing.T, e string) {
			require.NoError(t, os.WriteFile(filepath.Join(e, treeDir, "extra.tf"), nil, 0o644))
		}, "extra.tf was not part of the stored tree"},
		{"dir removed", func(t *testing.T, e string) {
			require.NoError(t, os.Remove(filepath.Join(e, treeDir, "sub", "empty")))
		}, "sub/empty is missing"},
		{"symlink retargeted", func(t *testing.T, e string) {
			p := filepath.Join(e, treeDir, "sub", "link.tf")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("run.sh", p))
		}, "sub/link.tf points to"},
		{"tree removed", func(t *testing.T, e string) {
			require.NoError(t, os.RemoveAll(filepath.Join(e, treeDir)))
		}, "tree directory is missing"},
		{"manifest removed", func(t *testing.T, e string) {
			require.NoError(t, os.Remove(filepath.Join(e, manifestName)))
		}, "manifest is missing"},
		{"manifest garbled", func(t *testing.T, e string) {
			require.NoError(t, os.WriteFile(filepath.Join(e, manifestName), []byte("{not json"), 0o644))
		}, "manifest is missing or unreadable"},
		{"manifest of another key", func(t *testing.T, e string) {
			// What a hash collision, or an entry copied to another name,
			// looks like.
			editManifest(t, e, func(m *manifest) { m.Key = "other" })
		}, "stored for another key"},
		{"entry is a file", func(t *testing.T, e string) {
			require.NoError(t, store.RemoveAll(e))
			require.NoError(t, os.WriteFile(e, nil, 0o644))
		}, "not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &strings.Builder{}
			var mu sync.Mutex
			s, err := Open(t.TempDir(), WithLogger(newTestLogger(logs, &mu)))
			require.NoError(t, err)
			count := filepath.Join(t.TempDir(), "fills")
			dir, _, err := s.Get(context.Background(), "k", countingFill(count, "v1"))
			require.NoError(t, err)
			tc.damage(t, s.entryPath(hashKey("k")))

			got, filled, err := s.Get(context.Background(), "k", countingFill(count, "v2"))
			require.NoError(t, err)
			require.Equal(t, dir, got)
			mu.Lock()
			defer mu.Unlock()
			if tc.why == "" { // kept
				require.False(t, filled)
				requireTree(t, got, "v1")
				require.Equal(t, Stats{Fills: 1, Hits: 1}, s.Stats())
				require.Equal(t, 1, countLines(t, count))
				require.Contains(t, logs.String(), "re-verified")
				require.Equal(t, entryOK, s.check(hashKey("k"), "k", false).state, "the new stamps were not recorded")
				return
			}
			require.True(t, filled)
			requireTree(t, got, "v2")
			require.Equal(t, Stats{Fills: 2, Repairs: 1}, s.Stats())
			require.Equal(t, 2, countLines(t, count))
			require.Contains(t, logs.String(), tc.why)
			requireNoLeftovers(t, s.Dir())
		})
	}
}

// TestDamagedEntryRefillFails: a damaged entry whose refill fails is
// gone (never handed out), and the error says both what was wrong and
// why the refill failed.
func TestDamagedEntryRefillFails(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	_, _, err = s.Get(context.Background(), "k", countingFill(filepath.Join(t.TempDir(), "n"), "v1"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(s.treePath(hashKey("k")), "main.tf")))
	boom := errors.New("boom")
	_, _, err = s.Get(context.Background(), "k", func(context.Context, string) error { return boom })
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, ErrFill)
	require.ErrorIs(t, err, ErrDamagedEntry)
	require.ErrorContains(t, err, "main.tf is missing")
	requireNoEntries(t, s.Dir())
	requireNoLeftovers(t, s.Dir())
}

// TestTouchedEntryIsKept: a file whose stamps moved but whose content did
// not (a touch, a restore) costs one full check under the lock, not a
// refill.
func TestTouchedEntryIsKept(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	count := filepath.Join(t.TempDir(), "fills")
	dir, _, err := s.Get(context.Background(), "k", countingFill(count, "v1"))
	require.NoError(t, err)
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "main.tf"), old, old))
	require.Equal(t, entryStale, s.check(hashKey("k"), "k", false).state)

	_, filled, err := s.Get(context.Background(), "k", countingFill(count, "v2"))
	require.NoError(t, err)
	require.False(t, filled)
	requireTree(t, dir, "v1")
	require.Equal(t, entryOK, s.check(hashKey("k"), "k", false).state)
	require.Equal(t, 1, countLines(t, count))
}

// TestFullCheck: a difference only the content shows (here the manifest's
// hash of a file, since on this platform any write to the file itself
// moves its stamps) passes the cheap check but not WithFullCheck.
func TestFullCheck(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(t.TempDir(), "fills")
	cheap, err := Open(dir)
	require.NoError(t, err)
	_, _, err = cheap.Get(context.Background(), "k", countingFill(count, "v1"))
	require.NoError(t, err)
	editManifest(t, cheap.entryPath(hashKey("k")), func(m *manifest) {
		for i := range m.Files {
			if m.Files[i].Path == "main.tf" {
				m.Files[i].SHA256 = strings.Repeat("0", 64)
			}
		}
	})
	_, filled, err := cheap.Get(context.Background(), "k", countingFill(count, "v2"))
	require.NoError(t, err)
	require.False(t, filled, "the cheap check read a file")

	full, err := Open(dir, WithFullCheck())
	require.NoError(t, err)
	got, filled, err := full.Get(context.Background(), "k", countingFill(count, "v2"))
	require.NoError(t, err)
	require.True(t, filled)
	requireTree(t, got, "v2")
	require.Equal(t, Stats{Fills: 1, Repairs: 1}, full.Stats())

	_, filled, err = full.Get(context.Background(), "k", countingFill(count, "v3"))
	require.NoError(t, err)
	require.False(t, filled)
	require.Equal(t, 2, countLines(t, count))
}

// TestReadOnlyTreesAreRemovable: a fill may leave read-only dirs; a
// damaged entry holding them is still replaced.
func TestReadOnlyTreesAreRemovable(t *testing.T) {
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.RemoveAll(s.Dir()) })
	fill := func(_ context.Context, dir string) error {
		if err := writeTree(dir, "v"); err != nil {
			return err
		}
		return os.Chmod(filepath.Join(dir, "sub"), 0o555)
	}
	_, filled, err := s.Get(context.Background(), "k", fill)
	require.NoError(t, err)
	require.True(t, filled)
	require.NoError(t, os.Remove(filepath.Join(s.entryPath(hashKey("k")), manifestName)))
	_, filled, err = s.Get(context.Background(), "k", fill)
	require.NoError(t, err)
	require.True(t, filled)
	require.Equal(t, Stats{Fills: 2, Repairs: 1}, s.Stats())
	requireNoLeftovers(t, s.Dir())
}

func TestKeyName(t *testing.T) {
	cases := []struct{ key, want string }{
		{"k", `key "k"`},
		{"a\nb", `key "a\nb"`},
		{strings.Repeat("x", 100), `key "` + strings.Repeat("x", 80) + `..."`},
		{strings.Repeat("x", 79) + "é", `key "` + strings.Repeat("x", 79) + `..."`},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, keyName(tc.key), "key %q", tc.key)
	}
}

// editManifest rewrites an entry's manifest in place.
func editManifest(t *testing.T, entry string, edit func(*manifest)) {
	t.Helper()
	p := filepath.Join(entry, manifestName)
	m, err := readManifest(p)
	require.NoError(t, err)
	edit(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

// requireNoEntries checks that the store holds no entry.
func requireNoEntries(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		require.Equal(t, stateDir, e.Name(), fmt.Sprintf("unexpected entry %s", e.Name()))
	}
}

// replaceFile replaces p by a new file (a new inode, created while the
// old one still exists) holding data, with p's mode.
func replaceFile(t *testing.T, p string, data []byte) {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	tmp := p + ".new"
	require.NoError(t, os.WriteFile(tmp, data, fi.Mode().Perm()))
	require.NoError(t, os.Rename(tmp, p))
}
